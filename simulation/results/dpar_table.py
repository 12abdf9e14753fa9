"""DPAR's Table 1 and figures from a results store (Zhang et al. 2024, §4).

Every cell is our mean ± sample std of the test accuracy over the final runs, beside the
paper's number and the **sound ε** the runs' privacy reports state (the accountant's ε under
standard amplification by q′), since the paper's ε is its linear q′·(ε_pr + ε_sgd) convention.
The budget-ratio figure (the paper's Figs. 2–6) uses every finished run, search runs included:
a ``ratio`` grid's search runs are exactly accuracy against the DP-APPR share of ε.
"""

from __future__ import annotations

import statistics
import tomllib
from collections import defaultdict
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from .tables import save_figure

#: Table 1's methods in the paper's column order, and their labels.
METHODS = {
    "dpar-features": "Features",
    "dpar-em0": "DPAR-EM0",
    "dpar-em1": "DPAR-EM1",
    "dpar-gm": "DPAR-GM",
    "dpar-nodp": "DPARNoDP",
}
DATASET_LABELS = {"cora-ml": "Cora-ML", "coauthor-cs": "CS", "coauthor-physics": "Physics"}
#: A cell "reproduces" when our mean is within this many points of the paper's.
WITHIN = 3.0


def paper_table1() -> dict[tuple[str, str, float], float]:
    """(dataset, protocol, ε) → the paper's accuracy in %; DPARNoDP's ε key is 0."""
    text = resources.files(__package__).joinpath("paper_numbers.toml").read_text("utf-8")
    table = tomllib.loads(text)["dpar_table1"]
    return {
        (ds, method, float(eps)): float(acc)
        for ds, methods in table.items()
        for method, cells in methods.items()
        for eps, acc in cells.items()
    }


def _protocol(row: dict[str, Any]) -> str:
    return row.get("protocol") or ""


def dpar_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Finished DPAR runs (any phase)."""
    return [
        r
        for r in rows
        if _protocol(r) in METHODS and r.get("status") == "done" and r.get("test_acc") is not None
    ]


def _privacy(row: dict[str, Any]) -> dict[str, Any]:
    return row.get("privacy") or {}


def table1_cells(rows: Iterable[dict[str, Any]]) -> dict[tuple[str, str, float], dict[str, Any]]:
    """(dataset, protocol, ε) → mean/std/n of test accuracy (%), δ and the mean sound ε, over
    the final runs (all runs when none is marked final). DPARNoDP's ε key is 0."""
    rows = dpar_rows(rows)
    final = [r for r in rows if (r.get("extra") or {}).get("phase") == "final"] or rows
    groups: dict[tuple[str, str, float], list[dict[str, Any]]] = defaultdict(list)
    for r in final:
        eps = 0.0 if _protocol(r) == "dpar-nodp" else float(r["epsilon"])
        groups[(r["dataset"], _protocol(r), eps)].append(r)
    out = {}
    for key, group in groups.items():
        accs = [100.0 * float(r["test_acc"]) for r in group]
        sound = [_privacy(r).get("epsilon") for r in group]
        sound = [float(s) for s in sound if isinstance(s, int | float)]
        out[key] = {
            "mean": statistics.fmean(accs),
            "std": statistics.stdev(accs) if len(accs) > 1 else float("nan"),
            "n": len(accs),
            "delta": (group[0].get("config") or {}).get("delta"),
            # The worst run's proven ε (D, and so the bound, differs run by run).
            "sound_epsilon": max(sound) if sound else None,
            "pr_share": sorted({(r.get("config") or {}).get("pr_share") for r in group}),
        }
    return out


def table1_markdown(rows: Iterable[dict[str, Any]]) -> tuple[str, dict[str, int]]:
    """Our Table 1 beside the paper's, one line per (dataset, ε, method), and the counts of
    compared cells and cells within :data:`WITHIN` points."""
    cells = table1_cells(rows)
    paper = paper_table1()
    lines = [
        "| dataset | ε (paper's) | δ | method | ours (%) | runs | paper (%) | ours − paper | "
        "sound ε |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    compared = within = 0
    datasets = [d for d in DATASET_LABELS if any(k[0] == d for k in cells)]
    datasets += sorted({k[0] for k in cells} - set(datasets))
    for ds in datasets:
        for eps in sorted({k[2] for k in cells if k[0] == ds} | {0.0}):
            for method, label in METHODS.items():
                cell = cells.get((ds, method, eps))
                theirs = paper.get((ds, method, eps))
                if cell is None and (theirs is None or method == "dpar-nodp" and eps):
                    continue
                if (method == "dpar-nodp") != (eps == 0.0):
                    continue
                ours = "not run" if cell is None else _fmt(cell)
                diff = ""
                if cell is not None and theirs is not None:
                    compared += 1
                    gap = cell["mean"] - theirs
                    within += abs(gap) <= WITHIN
                    diff = f"{gap:+.1f}" + (" ✓" if abs(gap) <= WITHIN else "")
                sound = (
                    "∞"
                    if method == "dpar-nodp"
                    else "–"
                    if cell is None or cell["sound_epsilon"] is None
                    else f"{cell['sound_epsilon']:.2f}"
                )
                delta = "" if cell is None or cell["delta"] is None else f"{cell['delta']:g}"
                lines.append(
                    f"| {DATASET_LABELS.get(ds, ds)} | {'–' if eps == 0 else f'{eps:g}'} | "
                    f"{delta} | {label} | {ours} | {'' if cell is None else cell['n']} | "
                    f"{'–' if theirs is None else f'{theirs:.1f}'} | {diff} | {sound} |"
                )
    return "\n".join(lines), {"compared": compared, "within": within}


def _fmt(cell: dict[str, Any]) -> str:
    std = cell["std"]
    return f"{cell['mean']:.1f}" + ("" if std != std else f" ± {std:.1f}")


def plot_accuracy_vs_epsilon(rows: Iterable[dict[str, Any]], dataset: str, out: Path) -> Path:
    """Test accuracy against the paper's ε, one line per method (final runs), the paper's
    Table 1 cells as crosses and DPARNoDP as a dashed line."""
    import matplotlib.pyplot as plt

    cells = table1_cells(rows)
    paper = paper_table1()
    fig, ax = plt.subplots(figsize=(4.6, 3.4), dpi=110)
    colours = dict(zip(METHODS, plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False))
    for method, label in METHODS.items():
        if method == "dpar-nodp":
            continue
        pts = sorted((k[2], c) for k, c in cells.items() if k[0] == dataset and k[1] == method)
        if pts:
            ax.errorbar(
                [p[0] for p in pts],
                [p[1]["mean"] for p in pts],
                yerr=[0.0 if p[1]["std"] != p[1]["std"] else p[1]["std"] for p in pts],
                marker="o",
                capsize=3,
                color=colours[method],
                label=label,
            )
        theirs = sorted((k[2], v) for k, v in paper.items() if k[0] == dataset and k[1] == method)
        if theirs:
            ax.scatter(
                [p[0] for p in theirs],
                [p[1] for p in theirs],
                marker="x",
                s=40,
                color=colours[method],
                label=f"{label} (paper)",
            )
    nodp = cells.get((dataset, "dpar-nodp", 0.0))
    if nodp:
        ax.axhline(nodp["mean"], linestyle="--", color="k", label="DPARNoDP")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("ε (paper's convention; sound ε is larger, see table)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(f"DPAR, {DATASET_LABELS.get(dataset, dataset)}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    return save_figure(fig, out)


def ratio_cells(rows: Iterable[dict[str, Any]], dataset: str) -> dict[tuple, dict[str, float]]:
    """(protocol, ε, DP-APPR share) → mean/std/n of test accuracy (%), over every finished run
    of the DP-APPR variants on ``dataset`` (search runs included)."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for r in dpar_rows(rows):
        if r["dataset"] != dataset or _protocol(r) not in ("dpar-em0", "dpar-em1", "dpar-gm"):
            continue
        share = (r.get("config") or {}).get("pr_share")
        if share is not None:
            groups[(_protocol(r), float(r["epsilon"]), float(share))].append(
                100.0 * float(r["test_acc"])
            )
    return {
        k: {
            "mean": statistics.fmean(v),
            "std": statistics.stdev(v) if len(v) > 1 else 0.0,
            "n": len(v),
        }
        for k, v in groups.items()
    }


def plot_budget_ratio(rows: Iterable[dict[str, Any]], dataset: str, out: Path) -> Path | None:
    """The paper's Figs. 2–6: test accuracy against the share of ε spent on DP-APPR, one line
    per (variant, ε). None when the store has fewer than two shares for the data set."""
    cells = ratio_cells(rows, dataset)
    if len({k[2] for k in cells}) < 2:
        return None
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.6, 3.4), dpi=110)
    for method in ("dpar-em0", "dpar-em1", "dpar-gm"):
        for eps in sorted({k[1] for k in cells if k[0] == method}):
            pts = sorted((k[2], c) for k, c in cells.items() if k[0] == method and k[1] == eps)
            if len(pts) < 2:
                continue  # one share (e.g. a Table 1 cell at another ε): no line to draw
            ax.errorbar(
                [p[0] for p in pts],
                [p[1]["mean"] for p in pts],
                yerr=[p[1]["std"] for p in pts],
                marker="o",
                capsize=3,
                linestyle="-" if eps >= 4 else ":",
                label=f"{METHODS[method]}, ε = {eps:g}",
            )
    ax.set_xlabel("share of ε spent on DP-APPR (pr_share)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(f"DPAR budget ratio, {DATASET_LABELS.get(dataset, dataset)}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    return save_figure(fig, out)


def write_dpar_report(rows: list[dict[str, Any]], out_dir: Path) -> tuple[list[Path], list[str]]:
    """DPAR's Table 1 (``dpar-table1.md``) and figures into ``out_dir``; returns the written
    paths and the lines for the report's index."""
    rows = dpar_rows(rows)
    if not rows:
        return [], []
    md, counts = table1_markdown(rows)
    table = out_dir / "dpar-table1.md"
    note = (
        f"\n\n{counts['within']} of {counts['compared']} compared cells are within "
        f"{WITHIN:g} points of the paper. ε is the paper's convention (q′·(ε_pr + ε_sgd)); "
        "'sound ε' is what the accountant gives under standard amplification by q′ (the run's "
        "privacy report). The paper publishes no std.\n"
    )
    table.write_text(md + note)
    written = [table]
    index = ["", "## DPAR, Table 1", "", md + note]
    for ds in sorted({r["dataset"] for r in rows}):
        label = DATASET_LABELS.get(ds, ds)
        if len({float(r["epsilon"]) for r in rows if r["dataset"] == ds}) > 1:
            p = plot_accuracy_vs_epsilon(rows, ds, out_dir / f"dpar-acc-vs-eps-{ds}.png")
            written.append(p)
            index += ["", f"![DPAR {label}: accuracy against ε]({p.name})"]
        p = plot_budget_ratio(rows, ds, out_dir / f"dpar-budget-ratio-{ds}.png")
        if p is not None:
            written.append(p)
            index += ["", f"![DPAR {label}: accuracy against the DP-APPR share]({p.name})"]
    return written, index
