"""The metric sections of a report (``metrics.md``): every section but accuracy, per cell.

Every metric section of the runs (``graph_stats``, ``lp``, ``attack``, …) becomes a table of
the cells with the mean ± std of each of its numeric values over the cell's final runs
(:func:`aggregate_metrics`). A section may be summarised by some of its values only
(:data:`SECTION_SUMMARY`): the graph statistics by the relative error of each statistic, whose
mean is the paper's MRE, and the degree KS.
"""

from __future__ import annotations

import fnmatch
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .report_cells import cell_key, method_label
from .tables import mean_std, metric_columns

#: Which values of a metric section a report shows (fnmatch patterns over its dotted keys) and
#: how it labels them; a section not named here shows every numeric value under its own key.
#: ``accuracy`` is the tables and figures above; ``training`` and ``skipped_metrics`` are no
#: measurement of the release.
SECTION_SUMMARY: dict[str, tuple[tuple[str, str], ...]] = {
    "graph_stats": (("*.re", "{} MRE"), ("degree_ks", "degree KS")),
}
NOT_REPORTED = ("accuracy", "training", "skipped_metrics", "metric_stand_ins")


def _summarised(section: str, column: str) -> str | None:
    """The label of ``column`` (a dotted key inside ``section``) in a report, or None when the
    report leaves it out."""
    rules = SECTION_SUMMARY.get(section)
    if rules is None:
        return column
    for pattern, label in rules:
        if fnmatch.fnmatchcase(column, pattern):
            return label.format(column.rsplit(".", 1)[0])
    return None


def aggregate_metrics(
    rows: Iterable[dict[str, Any]], by: Sequence[str] = ()
) -> dict[str, dict[tuple, dict[str, dict]]]:
    """Section → cell → label → {mean, std, n} of every reported numeric value of the metric
    sections (:data:`SECTION_SUMMARY`, less :data:`NOT_REPORTED`), over the given rows. A value
    a run does not have (an RE undefined for it) is left out of that value's n only."""
    values: dict[str, dict[tuple, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for r in rows:
        key = cell_key(r, by)
        for column, value in metric_columns(r).items():
            section, _, rest = column.partition(".")
            if section in NOT_REPORTED:
                continue
            label = _summarised(section, rest)
            if label is not None:
                values[section][key][label].append(value)
    return {
        section: {
            key: {label: mean_std(v) for label, v in labels.items()}
            for key, labels in cells.items()
        }
        for section, cells in values.items()
    }


def _cell_text(cell: dict | None, runs: int) -> str:
    if not cell or cell["mean"] is None:
        return "–"
    text = f"{cell['mean']:.4g}" + (f" ± {cell['std']:.2g}" if cell["std"] is not None else "")
    return text + (f" (n={cell['n']})" if cell["n"] != runs else "")


def metrics_markdown(agg: dict[str, dict[tuple, dict[str, dict]]]) -> str:
    """One table per metric section: a row per cell, a column per reported value, each cell
    mean ± std over its final runs (with n where fewer runs have the value)."""
    parts = []
    for section, cells in agg.items():
        labels: dict[str, None] = {}
        for per_cell in cells.values():
            labels.update(dict.fromkeys(per_cell))
        head = ["dataset", "method", "model", "ε", "runs", *labels]
        lines = [
            f"## {section}",
            "",
            "| " + " | ".join(head) + " |",
            "|" + "---|" * len(head),
        ]
        for key in sorted(cells, key=lambda k: tuple(str(x) for x in k)):
            per_cell = cells[key]
            runs = max(c["n"] for c in per_cell.values())
            row = [str(key[0]), method_label(str(key[1])), str(key[2]), f"{key[3]:g}", str(runs)]
            row += [_cell_text(per_cell.get(label), runs) for label in labels]
            lines.append("| " + " | ".join(row) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def write_metrics_report(rows: list[dict[str, Any]], out_dir: Path) -> tuple[list[Path], list[str]]:
    """``metrics.md`` when the final ``rows`` have any reported metric section; returns the
    written paths and the index lines."""
    magg = aggregate_metrics(rows)
    if not magg:
        return [], []
    mpath = out_dir / "metrics.md"
    mpath.write_text(
        "# Metrics of the final runs\n\nPer cell, mean ± sample std over its final runs "
        "(n where fewer runs have a value). Graph statistics: the mean relative error of "
        "each statistic (MRE) and the mean degree KS; accuracy: summary.md.\n\n"
        + metrics_markdown(magg)
        + "\n"
    )
    return [mpath], ["", f"Other metrics: [{mpath.name}]({mpath.name}) ({', '.join(magg)})."]
