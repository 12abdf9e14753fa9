"""PPGSL's privacy–utility frontier report (the paper's Figs. 2–5 shape): the table of every
cell and attack, and the frontier plots, from the cells of :mod:`.ppgsl_frontier` (which says
which attack AUC each method is read on, and why).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .ppgsl_frontier import (
    ATTACKS,
    BASELINES,
    DATASET_LABELS,
    GRAPH_ATTACKS,
    ORIGINAL,
    PROTOCOLS,
    SHARED_ATTACK,
    VIEWS,
    attack_section,
    family_order,
    family_parameter,
    frontier_cells,
    frontier_series,
    max_graph,
    mean_std,
    point_of,
    ppgsl_datasets,
    ppgsl_rows,
    row_values,
    stated_points,
)
from .tables import save_figure

__all__ = [
    "ATTACKS",
    "BASELINES",
    "DATASET_LABELS",
    "GRAPH_ATTACKS",
    "NOTE",
    "ORIGINAL",
    "PROTOCOLS",
    "SHARED_ATTACK",
    "VIEWS",
    "attack_section",
    "family_parameter",
    "frontier_cells",
    "frontier_markdown",
    "frontier_series",
    "max_graph",
    "plot_frontier",
    "point_of",
    "ppgsl_datasets",
    "ppgsl_rows",
    "row_values",
    "stated_points",
    "write_ppgsl_report",
]


def _fmt(values: Sequence[float] | None, runs: int) -> str:
    if not values:
        return "—"
    mean, std = mean_std(values)
    text = f"{mean:.3f}" + ("" if std is None else f" ± {std:.3f}")
    return text + ("" if len(values) == runs else f" (n={len(values)})")


def _attack_label(name: str) -> str:
    return ATTACKS.get(name) or name.replace("_", " ").capitalize()


def _param_text(family: str, param: float | None) -> str:
    return "—" if param is None else f"{family_parameter(family)} = {param:g}"


def frontier_markdown(cells: dict[tuple, dict[str, Any]], dataset: str) -> str:
    """One line per (method, parameter) on ``dataset``: LP AUC, NC accuracy, each attack's AUC
    and ``max_graph`` on the method's targets, and ``max_graph`` on the hidden links; the
    paper's stated point last where it has one."""
    keys = sorted(
        (k for k in cells if k[0] == dataset),
        key=lambda k: (family_order(k[1]), -math.inf if k[2] is None else k[2]),
    )
    head = ["method", "parameter", "attack targets", "runs", "LP AUC", "NC acc",
            *ATTACKS.values(), "max_graph (attack)", "max_graph, hidden links"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key in keys:
        cell = cells[key]
        values, runs = cell["values"], cell["runs"]
        best = ", ".join(_attack_label(name) for name, _ in cell["best"].most_common())
        strongest = _fmt(values.get("max_graph"), runs)
        if best and strongest != "—":
            strongest += f" ({best})"
        row = [
            key[1],
            _param_text(key[1], key[2]),
            cell["targets"],
            str(runs),
            _fmt(values.get("lp"), runs),
            _fmt(values.get("nc"), runs),
            *(_fmt(values.get(a), runs) for a in ATTACKS),
            strongest,
            _fmt(values.get("hidden_max_graph"), runs),
        ]
        lines.append("| " + " | ".join(row) + " |")
    stated = stated_points().get(dataset)
    if stated:
        row = ["paper (stated, PPGSL k=1)", "—", "sensitive", "—", f"{stated['lp_auc']:.2f}",
               f"{stated['nc_f1']:.2f} (F1)", "—", "—", "—", f"≈ {stated['attack_auc']:.2f}",
               "—", "—", "—", "—", "—", "— (most of the 8 ≈ 0.50)", "—"]  # fmt: skip
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


#: The two panels: the utility on x (a column of the cells), its axis label, and the key of
#: the paper's stated point on that axis.
PANELS = (
    ("lp", "link prediction AUC", "lp_auc"),
    ("nc", "node classification accuracy", "nc_f1"),
)


def _draw_family(ax: Any, family: str, points: list[dict[str, Any]], colour: str) -> None:
    """One method family's points joined in parameter order and annotated with it (the
    original graph as one square marker)."""
    if family == ORIGINAL:
        style = {"marker": "s", "markersize": 8, "linestyle": "none"}
    else:
        style = {"marker": "o", "linestyle": "-" if family.startswith("PPGSL") else "--"}
    targets = "protected links" if family.startswith("PPGSL") else "hidden links"
    ax.errorbar(
        [p["x"] for p in points],
        [p["y"] for p in points],
        xerr=[p["xerr"] or 0.0 for p in points],
        yerr=[p["yerr"] or 0.0 for p in points],
        color=colour,
        capsize=2,
        label=f"{family} ({targets})",
        **style,
    )
    if family == ORIGINAL:
        return
    symbol = family_parameter(family)
    for p in points:
        ax.annotate(
            f"{symbol}={p['param']:g}",
            (p["x"], p["y"]),
            xytext=(3, 3),
            textcoords="offset points",
            fontsize=6,
            color=colour,
        )


def _draw_panel(
    ax: Any,
    series: dict[str, list[dict[str, Any]]],
    xlabel: str,
    stated: dict[str, float] | None,
    paper_x: str,
    colours: Sequence[str],
) -> None:
    """One panel: every family, the paper's stated point as a star, the chance line."""
    for i, (family, points) in enumerate(series.items()):
        colour = "k" if family == ORIGINAL else colours[i % len(colours)]
        _draw_family(ax, family, points, colour)
    if stated:
        ax.plot(
            [stated[paper_x]],
            [stated["attack_auc"]],
            marker="*",
            markersize=14,
            color="gold",
            markeredgecolor="k",
            linestyle="none",
            label=f"paper's stated point (attack ≈ {stated['attack_auc']:.2f} at LP AUC "
            f"{stated['lp_auc']:.2f}, NC F1 {stated['nc_f1']:.2f})",
        )
    ax.axhline(0.5, color="0.5", linestyle=":", linewidth=1, label="chance (0.5)")
    ax.set_xlabel(xlabel)
    ax.margins(x=0.12, y=0.08)  # room for the star and the annotations at the edges
    ax.grid(alpha=0.3)


def plot_frontier(cells: dict[tuple, dict[str, Any]], dataset: str, view: str, out: Path) -> Path:
    """Two panels, attack AUC (``view``: ``max_graph`` or an attack key) against LP AUC and
    against NC accuracy: one line per method family joined in parameter order and annotated
    with it, the original graph as one marker, the paper's stated point as a star, and the
    chance line at 0.5."""
    import matplotlib.pyplot as plt

    stated = stated_points().get(dataset)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (x, xlabel, paper_x) in zip(axes, PANELS, strict=True):
        series = frontier_series(cells, dataset, x, view)
        _draw_panel(ax, series, xlabel, stated, paper_x, colours)
    axes[0].set_ylabel(
        f"attack AUC: {VIEWS.get(view, ATTACKS.get(view, view))}\n"
        "PPGSL: on its protected links; others: on hidden links"
    )
    # one legend for both panels, below them, so that it hides no point
    handles: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=4, fontsize=7)
    fig.suptitle(
        f"PPGSL privacy–utility frontier, {DATASET_LABELS.get(dataset, dataset)}: "
        f"{VIEWS.get(view, view)} (lower is more private)",
        fontsize=10,
    )
    rows = math.ceil(len(handles) / 4)
    return save_figure(fig, out, dpi=110, rect=(0, 0.04 + 0.035 * rows, 1, 1))


NOTE = (
    "Per cell: mean over the final runs (± sample std where several; n where fewer runs have "
    "the value). AUCs are fractions. **Attack targets**: PPGSL's attacks are on the sensitive "
    "links its curator knew and kept out of the release (`attack.protected`, the paper's "
    "quantity); every other method's on the links hidden before collection (`attack`), which "
    "no method saw: for the baselines exactly the paper's situation. The last column is every "
    "method on the hidden links, the same targets for all. **max_graph** is the strongest "
    "attack that reads the released graph (all but feature cosine, which a structural defence "
    "cannot move), named; GAE-cos (GAE+sim) is the paper's Figs. 2-3 attack. NC accuracy is "
    "the paper's NC F1 (micro-F1 of a single-label task). PPGSL, Random and the original have "
    "no ε."
)


def write_ppgsl_report(rows: list[dict[str, Any]], out_dir: Path) -> tuple[list[Path], list[str]]:
    """``ppgsl-frontier.md`` and, per data set with PPGSL runs, the frontier in both attack
    views (``ppgsl-frontier-<dataset>.png``: max_graph; ``ppgsl-frontier-gae-<dataset>.png``:
    GAE+sim); returns the written paths and the index lines."""
    cells = frontier_cells(rows)
    datasets = ppgsl_datasets(cells)
    if not datasets:
        return [], []
    parts = ["# PPGSL: privacy–utility frontier (the paper's Figs. 2–5 shape)", "", NOTE, ""]
    written: list[Path] = []
    figures: list[str] = []
    for ds in datasets:
        label = DATASET_LABELS.get(ds, ds)
        parts += [f"## {label}", "", frontier_markdown(cells, ds), ""]
        for view, name in (("max_graph", f"ppgsl-frontier-{ds}.png"),
                           (SHARED_ATTACK, f"ppgsl-frontier-gae-{ds}.png")):  # fmt: skip
            path = plot_frontier(cells, ds, view, out_dir / name)
            written.append(path)
            parts += [f"![{label}: {VIEWS[view]}]({path.name})", ""]
            figures += ["", f"![PPGSL {label}: {VIEWS[view]}]({path.name})"]
    table = out_dir / "ppgsl-frontier.md"
    table.write_text("\n".join(parts))
    index = [
        "",
        "## PPGSL: privacy–utility frontier",
        "",
        f"Every cell and attack: [{table.name}]({table.name}). Attack AUC on PPGSL's protected "
        "links, on the hidden links for the baselines and the original graph.",
        *figures,
    ]
    return [table, *written], index
