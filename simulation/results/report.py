"""Tables and figures of the papers, built from a results store (``ldpgraph report``).

Every number comes from finished runs in the store: a cell (dataset, protocol, model, ε and
the swept parameter) is the mean ± sample std of the test accuracy of its final runs (rows a
sweep marked ``phase = "final"``; a store without phases uses every finished run;
:mod:`.report_cells`). The HoGS paper's Table III and its reproduction (:mod:`.hogs_report`),
each other paper's own report (DPAR, PrivDPR, PPGSL, DPGGAN and the comparison), the figures
(:mod:`.report_figures`), the other metric sections (``metrics.md``, :mod:`.report_metrics`)
and a summary of every cell are written side by side, with an index naming the command.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .hogs_report import (
    BLINK_GNN_FACEBOOK,
    PAPER_TABLE3,
    blink_facebook_markdown,
    reproduction_markdown,
    table3_markdown,
    write_hogs_report,
)
from .report_cells import (
    DATASET_LABELS,
    REFERENCE_LINES,
    aggregate,
    cell_key,
    final_rows,
    method_label,
    method_of,
    summary_rows,
)
from .report_figures import SWEPT_PREFIXES, plot_bars, plot_swept, plot_vs, write_figures
from .report_metrics import (
    NOT_REPORTED,
    SECTION_SUMMARY,
    aggregate_metrics,
    metrics_markdown,
    write_metrics_report,
)

__all__ = [
    "BLINK_GNN_FACEBOOK",
    "DATASET_LABELS",
    "NOT_REPORTED",
    "PAPER_TABLE3",
    "REFERENCE_LINES",
    "SECTION_SUMMARY",
    "SWEPT_PREFIXES",
    "aggregate",
    "aggregate_metrics",
    "blink_facebook_markdown",
    "cell_key",
    "final_rows",
    "method_label",
    "method_of",
    "metrics_markdown",
    "plot_bars",
    "plot_swept",
    "plot_vs",
    "reproduction_markdown",
    "summary_rows",
    "table3_markdown",
    "write_report",
]

#: What a part of the report returns: the paths it wrote and its lines of the index.
Written = tuple[list[Path], list[str]]


def _paper_reports() -> tuple[Callable[[list[dict[str, Any]], Path], Written], ...]:
    """Each paper's own report (its files and its lines of the index), in the index's order."""
    from . import compare_table, dpar_table, dpggan_table, ppgsl_figs, privdpr_table

    return (
        dpar_table.write_dpar_report,
        privdpr_table.write_privdpr_report,
        ppgsl_figs.write_ppgsl_report,
        dpggan_table.write_dpggan_report,
        compare_table.write_comparison_report,
    )


def _write_summary(agg: dict[tuple, dict], out_dir: Path) -> Path:
    """``summary.md``: every cell's test accuracy, mean ± std over its runs."""
    summary = out_dir / "summary.md"
    lines = [
        "| dataset | protocol | model | ε | test accuracy (%) | runs |",
        "|---|---|---|---|---|---|",
    ]
    for r in summary_rows(agg):
        lines.append(
            f"| {r['dataset']} | {r['protocol']} | {r['model']} | {r['epsilon']:g} | "
            f"{r['mean']:.1f} ± {r['std']:.1f} | {r['n']} |"
        )
    summary.write_text("\n".join(lines) + "\n")
    return summary


def write_report(
    rows: list[dict[str, Any]],
    out_dir: Path,
    *,
    title: str = "ldpgraph results",
    substitutes: dict[str, str] | None = None,
    command: str = "",
) -> list[Path]:
    """Write the figures (PNG) and tables (Markdown) the rows support into ``out_dir``, and an
    index ``README.md`` naming the command that made them. Returns the written paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    all_rows = [r for r in rows if r.get("status") == "done"]
    rows = final_rows(rows)
    index = [f"# {title}", ""]
    if command:
        index += ["Made with:", "", "```", command, "```", ""]
    index.append(f"{len(rows)} finished final runs.")
    agg = aggregate(rows)
    written: list[Path] = []
    parts: list[Callable[[], Written]] = [
        lambda: write_hogs_report(agg, out_dir, substitutes),
        *(lambda write=write: write(all_rows, out_dir) for write in _paper_reports()),
        lambda: write_figures(agg, out_dir),
        lambda: write_metrics_report(rows, out_dir),
    ]
    for part in parts:
        more_written, more_index = part()
        written += more_written
        index += more_index
    written.append(_write_summary(agg, out_dir))
    readme = out_dir / "README.md"
    readme.write_text("\n".join(index) + "\n")
    return [readme, *written]
