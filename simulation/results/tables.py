"""Reading a results store's rows: summaries grouped by configuration, text tables for the
terminal, flat CSV columns and JSON (what ``ldpgraph results`` prints)."""

from __future__ import annotations

import csv
import io
import json
import os
import statistics
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


def flatten_row(row: dict[str, Any]) -> dict[str, Any]:
    """One run as a flat dict with dotted column names (lists as JSON text)."""
    out = {c: row.get(c) for c in _CSV_HEAD}
    metrics = row.get("metrics") or {}
    _flatten("config", row.get("config") or {}, out)
    _flatten("accuracy", metrics.get("accuracy") or {}, out)
    _flatten("training", metrics.get("training") or {}, out)
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


def group_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Aggregate finished runs by ``config_hash``: n runs, their seeds, mean and sample std of
    test and validation accuracy (std None for a single run)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        if r["status"] == "done" and r.get("test_acc") is not None:
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
            "n": len(rs),
            "seeds": sorted(r["seed"] for r in rs),
        }
        for name in ("test", "val"):
            vals = [r[f"{name}_acc"] for r in rs if r.get(f"{name}_acc") is not None]
            entry[f"{name}_mean"] = statistics.fmean(vals) if vals else None
            entry[f"{name}_std"] = statistics.stdev(vals) if len(vals) > 1 else None
        entry["config"] = config
        out.append(entry)
    return out


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


def format_runs(rows: list[dict[str, Any]]) -> str:
    """A text table of runs: id, sweep, protocol, dataset, model, ε, seed, val, test (in %),
    status, finished."""
    body = [
        [
            str(r["id"]),
            r.get("sweep") or "-",
            r.get("protocol") or "-",
            r.get("dataset") or "-",
            r.get("model") or "-",
            "-" if r.get("epsilon") is None else f"{r['epsilon']:g}",
            "-" if r.get("seed") is None else str(r["seed"]),
            _pct(r.get("val_acc")),
            _pct(r.get("test_acc")),
            r["status"],
            (r.get("finished_at") or "-").replace("T", " ")[:16],
        ]
        for r in rows
    ]
    headers = ["id", "sweep", "protocol", "dataset", "model", "ε", "seed", "val%", "test%"]
    return _table([*headers, "status", "finished"], body, right={0, 5, 6, 7, 8})


def format_groups(groups: list[dict[str, Any]]) -> str:
    """A text table of :func:`group_rows`: mean ± std of test and validation accuracy (%)."""

    def pm(mean: float | None, std: float | None) -> str:
        return _pct(mean) + (" ± " + _pct(std) if std is not None else "")

    body = [
        [
            g["config_hash"][:12],
            g["protocol"] or "-",
            g["dataset"] or "-",
            g["model"] or "-",
            "-" if g["epsilon"] is None else f"{g['epsilon']:g}",
            str(g["n"]),
            pm(g["test_mean"], g["test_std"]),
            pm(g["val_mean"], g["val_std"]),
        ]
        for g in groups
    ]
    headers = ["config", "protocol", "dataset", "model", "ε", "n", "test%", "val%"]
    return _table(headers, body, right={4, 5, 6, 7})


def dumps_rows(rows: list[dict[str, Any]]) -> str:
    """Rows or groups as indented JSON."""
    buf = io.StringIO()
    json.dump(rows, buf, indent=2, default=json_default, ensure_ascii=False)
    return buf.getvalue()
