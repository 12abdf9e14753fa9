"""Reading a results store's rows: summaries grouped by configuration, text tables for the
terminal, flat CSV columns and JSON (what ``ldpgraph results`` prints).

A run's columns are its flattened record (:func:`flatten_row`): ``config.tau``,
``privacy.epsilon``, ``timings.total`` and one dotted column per value of every metric section
(``accuracy.test``, ``graph_stats.triangles.re``, ``lp.auc``, ``attack.max``, …); the numeric
values of the metric sections are its *metric columns* (:func:`metric_columns`), which
``--group`` averages and ``--columns`` shows.
"""

from __future__ import annotations

import csv
import fnmatch
import json
import math
import os
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO, Any

from .store import json_default

#: Run columns first in a CSV, before the flattened JSON ones.
_CSV_HEAD = (
    "id",
    "run_key",
    "config_hash",
    "sweep",
    "status",
    "attempts",
    "started_at",
    "finished_at",
    "host",
    "git_commit",
    "git_dirty",
)


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list | tuple):
        out[prefix] = json.dumps(value, default=json_default, ensure_ascii=False)
    else:
        out[prefix] = value


#: Metric sections that are no measurement of the release (left out of the metric columns).
NOT_MEASURED = ("training", "skipped_metrics", "metric_stand_ins")


def flatten_row(row: dict[str, Any]) -> dict[str, Any]:
    """One run as a flat dict with dotted column names (lists as JSON text)."""
    out = {c: row.get(c) for c in _CSV_HEAD}
    metrics = row.get("metrics") or {}
    _flatten("config", row.get("config") or {}, out)
    _flatten("accuracy", metrics.get("accuracy") or {}, out)
    _flatten("training", metrics.get("training") or {}, out)
    for name, section in metrics.items():
        if name not in ("accuracy", "training"):
            _flatten(name, section if isinstance(section, dict) else {"value": section}, out)
    for c in ("privacy", "graph", "release", "timings", "versions"):
        _flatten(c, row.get(c) or {}, out)
    _flatten("", row.get("extra") or {}, out)
    for c in ("fingerprint", "command", "error"):
        out[c] = row.get(c)
    return out


def write_csv(path_or_file: str | os.PathLike[str] | IO[str], dicts: list[dict]) -> int:
    """Write flat dicts as CSV; the columns are their keys in order of first appearance."""
    columns: dict[str, None] = {}
    flat = []
    for d in dicts:
        f: dict[str, Any] = {}
        _flatten("", d, f)
        flat.append(f)
        columns.update(dict.fromkeys(f))

    def write(fh: IO[str]) -> None:
        w = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
        w.writeheader()
        w.writerows(flat)

    if isinstance(path_or_file, str | os.PathLike):
        path = Path(path_or_file)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="", encoding="utf-8") as fh:
            write(fh)
    else:
        write(path_or_file)
    return len(flat)


def _number(value: Any) -> float | None:
    """A finite number, else None (booleans, text, NaN and ∞ are no measurement to average)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def metric_columns(row: dict[str, Any]) -> dict[str, float]:
    """The numeric values of a run's metric sections (all but :data:`NOT_MEASURED`), by
    dotted column name: ``accuracy.test``, ``graph_stats.cpl.re``, ``lp.auc``, …"""
    flat: dict[str, Any] = {}
    for name, section in (row.get("metrics") or {}).items():
        if name not in NOT_MEASURED:
            _flatten(name, section if isinstance(section, dict) else {"value": section}, flat)
    return {k: v for k, v in ((k, _number(v)) for k, v in flat.items()) if v is not None}


def mean_std(values: Sequence[float]) -> dict[str, Any]:
    """{mean, std, n}: the sample std (None for one value); mean None for none."""
    return {
        "mean": statistics.fmean(values) if values else None,
        "std": statistics.stdev(values) if len(values) > 1 else None,
        "n": len(values),
    }


class ColumnError(ValueError):
    """A ``--columns`` name that no selected run has; the message is one line."""


def resolve_columns(patterns: Iterable[str], rows: list[dict[str, Any]]) -> list[str]:
    """The columns of ``rows`` that ``patterns`` name (dotted names of :func:`flatten_row`, with
    fnmatch wildcards: ``graph_stats.*.re``), in the order named; a name that matches no column
    of any row is an error that names the metric sections there are."""
    from ldpgraph.protocols.params import did_you_mean

    known: dict[str, None] = {}
    for r in rows:
        known.update(dict.fromkeys(flatten_row(r)))
    sections = dict.fromkeys(c.partition(".")[0] for c in available_columns(rows))
    out: dict[str, None] = {}
    for pattern in patterns:
        hits = [c for c in known if fnmatch.fnmatchcase(c, pattern)]
        if not hits:
            hint = did_you_mean(pattern, list(known))
            raise ColumnError(
                f"no run has a column {pattern!r}{hint}; the runs have the metric sections "
                f"{', '.join(sections) or 'none'} (--list-columns lists their columns)"
            )
        out.update(dict.fromkeys(hits))
    return list(out)


def available_columns(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Every metric column of ``rows`` with the number of runs that have it, in first-seen
    order."""
    counts: dict[str, int] = {}
    for r in rows:
        for c in metric_columns(r):
            counts[c] = counts.get(c, 0) + 1
    return counts


def format_available(rows: list[dict[str, Any]]) -> str:
    """The metric columns of ``rows`` by section (metric family), each with how many runs have
    it: what ``--columns`` can show."""
    by_section: dict[str, list[str]] = {}
    for column, n in available_columns(rows).items():
        section, _, rest = column.partition(".")
        by_section.setdefault(section, []).append(f"{rest} ({n})" if rest else f"({n})")
    if not by_section:
        return "no metric columns"
    return "\n".join(f"{s}: {', '.join(cols)}" for s, cols in by_section.items())


def group_rows(rows: list[dict[str, Any]], columns: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Aggregate finished runs by ``config_hash``: n runs, their seeds, mean and sample std of
    test and validation accuracy (std None for a single run), and ``metrics``: {mean, std, n}
    of every metric column and of the given ``columns``."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["status"] == "done":
            groups.setdefault(r["config_hash"], []).append(r)
    out = []
    for h, rs in groups.items():
        config = {k: v for k, v in rs[0]["config"].items() if k != "seed"}
        entry: dict[str, Any] = {
            "config_hash": h,
            "protocol": rs[0]["protocol"],
            "dataset": rs[0]["dataset"],
            "model": rs[0]["model"],
            "epsilon": rs[0]["epsilon"],
            "proven_epsilon": proven_epsilon(rs),
            "n": len(rs),
            "seeds": sorted(r["seed"] for r in rs),
        }
        for name in ("test", "val"):
            vals = [r[f"{name}_acc"] for r in rs if r.get(f"{name}_acc") is not None]
            entry[f"{name}_mean"] = statistics.fmean(vals) if vals else None
            entry[f"{name}_std"] = statistics.stdev(vals) if len(vals) > 1 else None
        values: dict[str, list[float]] = {}
        for r in rs:
            found = metric_columns(r)
            if columns:
                flat = flatten_row(r)
                found.update({c: v for c in columns if (v := _number(flat.get(c))) is not None})
            for c, v in found.items():
                values.setdefault(c, []).append(v)
        entry["metrics"] = {c: mean_std(v) for c, v in values.items()}
        entry["config"] = config
        out.append(entry)
    return out


def proven_epsilon(rows: Sequence[dict[str, Any]]) -> float | None:
    """The largest headline ε (``privacy.epsilon``: the proven bound, ∞ without a proof) of
    ``rows``, or None if none has a privacy report. The requested ε is the ``epsilon`` column;
    under the paper's convention the two differ."""
    values = [
        float(e)
        for r in rows
        if isinstance(e := (r.get("privacy") or {}).get("epsilon"), int | float)
    ]
    return max(values) if values else None


def _eps(v: float | None) -> str:
    return "-" if v is None else ("∞" if math.isinf(v) else f"{v:.4g}")


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f}"


def _table(headers: list[str], body: list[list[str]], right: set[int]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in body)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return "\n".join([line(headers), *(line(r) for r in body)])


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def format_runs(rows: list[dict[str, Any]], columns: Sequence[str] = ()) -> str:
    """A text table of runs: id, sweep, protocol, dataset, model, ε asked and proven (the
    headline ``privacy.epsilon``, ∞ without a proof), seed, val, test (in %),
    the given ``columns`` (:func:`flatten_row` names), status, finished."""
    flat = [flatten_row(r) for r in rows] if columns else [{} for _ in rows]
    body = [
        [
            str(r["id"]),
            r.get("sweep") or "-",
            r.get("protocol") or "-",
            r.get("dataset") or "-",
            r.get("model") or "-",
            "-" if r.get("epsilon") is None else f"{r['epsilon']:g}",
            _eps(proven_epsilon([r])),
            "-" if r.get("seed") is None else str(r["seed"]),
            _pct(r.get("val_acc")),
            _pct(r.get("test_acc")),
            *(_cell(f.get(c)) for c in columns),
            r["status"],
            (r.get("finished_at") or "-").replace("T", " ")[:16],
        ]
        for r, f in zip(rows, flat, strict=True)
    ]
    headers = ["id", "sweep", "protocol", "dataset", "model", "ε_asked", "ε_proven", "seed"]
    headers += ["val%", "test%"]
    right = {0, 5, 6, 7, 8, 9, *range(10, 10 + len(columns))}
    return _table([*headers, *columns, "status", "finished"], body, right=right)


def format_groups(groups: list[dict[str, Any]], columns: Sequence[str] = ()) -> str:
    """A text table of :func:`group_rows`: mean ± std of test and validation accuracy (%) and
    of the given ``columns``."""

    def pm(mean: float | None, std: float | None) -> str:
        return _pct(mean) + (" ± " + _pct(std) if std is not None else "")

    def pm_column(g: dict[str, Any], column: str) -> str:
        cell = (g.get("metrics") or {}).get(column)
        if not cell or cell["mean"] is None:
            return "-"
        text = _cell(cell["mean"]) + (f" ± {cell['std']:.2g}" if cell["std"] is not None else "")
        return text + (f" (n={cell['n']})" if cell["n"] != g["n"] else "")

    body = [
        [
            g["config_hash"][:12],
            g["protocol"] or "-",
            g["dataset"] or "-",
            g["model"] or "-",
            "-" if g["epsilon"] is None else f"{g['epsilon']:g}",
            _eps(g.get("proven_epsilon")),
            str(g["n"]),
            pm(g["test_mean"], g["test_std"]),
            pm(g["val_mean"], g["val_std"]),
            *(pm_column(g, c) for c in columns),
        ]
        for g in groups
    ]
    headers = ["config", "protocol", "dataset", "model", "ε_asked", "ε_proven", "n", "test%"]
    headers += ["val%", *columns]
    return _table(headers, body, right={4, 5, 6, 7, 8, *range(9, 9 + len(columns))})


def dumps_rows(rows: list[dict[str, Any]]) -> str:
    """Rows or groups as indented, strict JSON (∞ as ``"Infinity"``: server.record.to_json)."""
    from ldpgraph.server.record import to_json

    return to_json(rows, indent=2, ensure_ascii=False)


def save_figure(fig, out: Path, dpi: float | None = None, rect: tuple | None = None) -> Path:
    """Lay out ``fig``, write it to ``out`` (its folder made), close it: every report figure
    ends this way. ``rect``: the area ``tight_layout`` may use (room for a legend below)."""
    import matplotlib.pyplot as plt

    fig.tight_layout(**({} if rect is None else {"rect": rect}))
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, **({} if dpi is None else {"dpi": dpi}))
    plt.close(fig)
    return out
