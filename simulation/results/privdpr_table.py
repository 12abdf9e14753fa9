"""PrivDPR's Tables 2–6 and Figs. 2–5 from a results store (Zhang et al., KDD 2025, §6).

Graph statistics are the relative error of each statistic against the original graph, averaged
over a cell's final runs (the paper's MRE), and the degree KS; the columns of Tables 2 and 3 are
read from each run's configuration (``wn_scale``, ``dpr_hidden``), not from entry names, so any
experiment file that varies them fills the tables. Link prediction (Tables 4–5) is the ``lp``
metric's ROC-AUC, node classification (Table 6) the test accuracy (Micro-F1 of a single-label
task). Beside every cell: the paper's number, the ε dp-accounting states for the same noise,
and whether V learned anything from the graph (the non-private diagnostics).
"""

from __future__ import annotations

import math
import statistics
import tomllib
from collections import defaultdict
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from .tables import save_figure

PROTOCOLS = ("privdpr", "dpr-nodp")
#: The paper's statistics in its order: graph_stats key → label.
STATS = {
    "triangles": "TC",
    "wedges": "WC",
    "claws": "CC",
    "rede": "REDE",
    "cpl": "CPL",
    "diameter": "Diameter",
    "lcc": "LCC",
    "degree_ks": "KS",
}
#: The rows of Tables 2 and 3.
TABLE_STATS = ("triangles", "rede", "cpl", "degree_ks")
DATASET_LABELS = {
    "privdpr-cora": "Cora",
    "privdpr-citeseer": "Citeseer",
    "privdpr-p2p": "p2p",
    "privdpr-chicago": "Chicago",
    "cora": "Cora",
    "citeseer": "Citeseer",
}
#: The paper's defaults: s (wn_scale), d (dpr_hidden), and the ε of Tables 2-3.
DEFAULT_SCALE, DEFAULT_HIDDEN, TABLE_EPSILON = 8.0, 64, 3.2


def paper_numbers() -> dict[str, Any]:
    """The ``privdpr_*`` sections of paper_numbers.toml."""
    text = resources.files(__package__).joinpath("paper_numbers.toml").read_text("utf-8")
    return {k: v for k, v in tomllib.loads(text).items() if k.startswith("privdpr_")}


def privdpr_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Finished PrivDPR / DPR (No DP) runs; the final ones when any run is marked final."""
    done = [r for r in rows if r.get("protocol") in PROTOCOLS and r.get("status") == "done"]
    final = [r for r in done if (r.get("extra") or {}).get("phase") == "final"]
    return final or done


def _cfg(row: dict[str, Any]) -> dict[str, Any]:
    return row.get("config") or {}


def _stat_values(row: dict[str, Any]) -> dict[str, float]:
    """statistic → the run's relative error (degree_ks: the KS statistic itself)."""
    stats = (row.get("metrics") or {}).get("graph_stats") or {}
    out = {}
    for key in STATS:
        value = stats.get(key)
        if isinstance(value, dict):
            value = value.get("re")
        if isinstance(value, int | float) and math.isfinite(value):
            out[key] = float(value)
    return out


def _mean_std(values: list[float]) -> tuple[float, float, int]:
    if not values:
        return math.nan, math.nan, 0
    std = statistics.stdev(values) if len(values) > 1 else math.nan
    return statistics.fmean(values), std, len(values)


def _fmt(values: list[float], digits: int = 4) -> str:
    mean, std, n = _mean_std(values)
    if n == 0:
        return "–"
    text = f"{mean:.{digits}f}"
    return text + ("" if std != std else f" ± {std:.{digits}f}") + f" ({n})"


def stat_cells(rows: Iterable[dict[str, Any]]) -> dict[tuple, dict[str, list[float]]]:
    """(dataset, protocol, ε, s, d) → statistic → the runs' values (dpr-nodp's ε key is 0)."""
    cells: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in privdpr_rows(rows):
        values = _stat_values(r)
        if not values:
            continue
        c = _cfg(r)
        eps = 0.0 if r["protocol"] == "dpr-nodp" else float(r["epsilon"])
        key = (
            r["dataset"], r["protocol"], eps,
            float(c.get("wn_scale", DEFAULT_SCALE)), int(c.get("dpr_hidden", DEFAULT_HIDDEN)),
        )  # fmt: skip
        for stat, value in values.items():
            cells[key][stat].append(value)
    return cells


def _datasets(keys: Iterable[tuple]) -> list[str]:
    have = {k[0] for k in keys}
    order = [d for d in DATASET_LABELS if d in have]
    return order + sorted(have - set(order))


def sweep_table_markdown(rows: Iterable[dict[str, Any]], which: str) -> str:
    """Table 2 (``which="s"``: columns s ∈ {2, 4, 6, 8} at d = 64) or Table 3 (``"d"``: d ∈
    {64, …, 512} at s = 8), ε = 3.2: ours (mean over runs) beside the paper's per cell, and
    each row's sample SD over its columns (the paper's SD column)."""
    cells = stat_cells(rows)
    paper = paper_numbers()["privdpr_table2" if which == "s" else "privdpr_table3"]
    columns: list[float] = [2.0, 4.0, 6.0, 8.0] if which == "s" else [64, 128, 256, 512]

    def key_of(ds: str, col: float) -> tuple:
        if which == "s":
            return (ds, "privdpr", TABLE_EPSILON, float(col), DEFAULT_HIDDEN)
        return (ds, "privdpr", TABLE_EPSILON, DEFAULT_SCALE, int(col))

    head = [f"{which}={c:g}" for c in columns]
    lines = [
        "| dataset | statistic | " + " | ".join(head) + " | SD (ours) | SD (paper) |",
        "|---|---|" + "---|" * (len(columns) + 2),
    ]
    found = False
    for ds in _datasets(cells):
        for stat in TABLE_STATS:
            theirs = paper.get(ds, {}).get(stat, {})
            ours_row, theirs_row, out = [], [], []
            for col in columns:
                key = key_of(ds, col)
                values = cells[key][stat] if key in cells else []
                mean = _mean_std(values)[0]
                paper_value = theirs.get(f"{col:g}")
                if values:
                    found = True
                    ours_row.append(mean)
                if paper_value is not None:
                    theirs_row.append(paper_value)
                out.append(
                    ("–" if not values else f"{mean:.4f}")
                    + ("" if paper_value is None else f" ({paper_value:.4f})")
                )
            sd = f"{statistics.stdev(ours_row):.2e}" if len(ours_row) > 1 else "–"
            psd = f"{statistics.stdev(theirs_row):.2e}" if len(theirs_row) > 1 else "–"
            label = DATASET_LABELS.get(ds, ds)
            lines.append(f"| {label} | {STATS[stat]} | " + " | ".join(out) + f" | {sd} | {psd} |")
    return "\n".join(lines) if found else ""


def figure_markdown(rows: Iterable[dict[str, Any]], dataset: str) -> str:
    """Figs. 2-5 as a table: every statistic's MRE (KS) against ε at s = 8, d = 64, ours
    (mean ± std (runs)) beside the paper's digitised value; DPR (No DP) as the last column."""
    cells = stat_cells(rows)
    fig = paper_numbers()["privdpr_figures"].get(dataset, {})
    eps_values = sorted(
        {k[2] for k in cells if k[0] == dataset and k[1] == "privdpr"}
        | {float(e) for e in fig.get("privdpr", {}).get("cpl", {})}
    )
    head = [f"ε = {e:g}" for e in eps_values] + ["DPR (No DP)"]
    lines = ["| statistic | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for stat, label in STATS.items():
        out = []
        for eps in eps_values:
            key = (dataset, "privdpr", eps, DEFAULT_SCALE, DEFAULT_HIDDEN)
            theirs = fig.get("privdpr", {}).get(stat, {}).get(f"{eps:g}")
            out.append(_fmt(cells[key][stat] if key in cells else [], 3) + _paper(theirs))
        nodp = [v for k, c in cells.items() if k[0] == dataset and k[1] == "dpr-nodp"
                for v in c.get(stat, [])]  # fmt: skip
        theirs = fig.get("dpr-nodp", {}).get(stat, {}).get("3.2")
        out.append(_fmt(nodp, 3) + _paper(theirs))
        lines.append(f"| {label} | " + " | ".join(out) + " |")
    return "\n".join(lines)


def _paper(value: float | None) -> str:
    return "" if value is None else f" [{value:.3g}]"


def plot_figure(rows: Iterable[dict[str, Any]], dataset: str, out: Path) -> Path:
    """Figs. 2-5's shape: eight panels (MRE of each statistic, degree KS) against ε, ours
    with error bars, the paper's PrivDPR as crosses, DPR (No DP) as horizontal lines (ours
    solid grey, the paper's dashed)."""
    import matplotlib.pyplot as plt

    cells = stat_cells(rows)
    fig_paper = paper_numbers()["privdpr_figures"].get(dataset, {})
    fig, axes = plt.subplots(2, 4, figsize=(15, 6.5))
    for ax, (stat, label) in zip(axes.ravel(), STATS.items(), strict=True):
        keys = sorted(
            (k for k in cells if k[0] == dataset and k[1] == "privdpr"
             and k[3] == DEFAULT_SCALE and k[4] == DEFAULT_HIDDEN and cells[k].get(stat)),
            key=lambda k: k[2],
        )  # fmt: skip
        if keys:
            xs = [k[2] for k in keys]
            ms = [_mean_std(cells[k][stat]) for k in keys]
            ax.errorbar(xs, [m[0] for m in ms], yerr=[0 if m[1] != m[1] else m[1] for m in ms],
                        marker="o", label="PrivDPR (ours)", capsize=3)  # fmt: skip
        theirs = fig_paper.get("privdpr", {}).get(stat, {})
        if theirs:
            ax.plot([float(e) for e in theirs], list(theirs.values()), "x", color="C3",
                    label="PrivDPR (paper)")  # fmt: skip
        nodp = [v for k, c in cells.items() if k[0] == dataset and k[1] == "dpr-nodp"
                for v in c.get(stat, [])]  # fmt: skip
        if nodp:
            ax.axhline(statistics.fmean(nodp), color="0.4", label="DPR (No DP, ours)")
        their_nodp = fig_paper.get("dpr-nodp", {}).get(stat, {}).get("3.2")
        if their_nodp is not None:
            ax.axhline(their_nodp, color="C3", ls="--", lw=1, label="DPR (No DP, paper)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("ε (paper's)")
        ax.set_title(f"{label} [{'KS_D' if stat == 'degree_ks' else 'MRE'}]")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(f"PrivDPR on {DATASET_LABELS.get(dataset, dataset)}: graph statistics vs ε")
    return save_figure(fig, out, dpi=110)


def lp_markdown(rows: Iterable[dict[str, Any]]) -> str:
    """Tables 4-5: LP AUC per data set and ε, ours beside the paper's PrivDPR and baselines."""
    groups: dict[tuple[str, float], list[float]] = defaultdict(list)
    dot: dict[tuple[str, float], list[float]] = defaultdict(list)
    for r in privdpr_rows(rows):
        lp = (r.get("metrics") or {}).get("lp") or {}
        # The paper's figure is its learned scorer's: ``auc_learned`` where the record has the
        # heuristic scorers beside it (its ``auc`` is then the best of them).
        learned = lp.get("auc_learned", lp.get("auc"))
        if isinstance(learned, int | float):
            groups[(r["dataset"], float(r["epsilon"]))].append(float(learned))
            if isinstance(lp.get("auc_dot"), int | float):
                dot[(r["dataset"], float(r["epsilon"]))].append(float(lp["auc_dot"]))
    if not groups:
        return ""
    paper = paper_numbers()
    tables = {0.1: paper["privdpr_table4"], 3.2: paper["privdpr_table5"]}
    lines = [
        "| dataset | ε | ours: AUC (GAE scorer) | ours: AUC (V_i·V_j) | paper PrivDPR | paper GAP "
        "| paper DPGGAN | paper DPGVAE |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for ds in _datasets(groups):
        for eps in sorted({k[1] for k in groups if k[0] == ds}):
            t = tables.get(eps, {})

            def theirs(alg: str, t: dict = t, ds: str = ds) -> str:
                v = t.get(alg, {}).get(ds)
                return "–" if v is None else f"{v[0]:.4f} ± {v[1]:.4f}"

            lines.append(
                f"| {DATASET_LABELS.get(ds, ds)} | {eps:g} | {_fmt(groups[(ds, eps)])} | "
                f"{_fmt(dot[(ds, eps)])} | {theirs('privdpr')} | {theirs('gap')} | "
                f"{theirs('dpggan')} | {theirs('dpgvae')} |"
            )
    return "\n".join(lines)


def nc_markdown(rows: Iterable[dict[str, Any]]) -> str:
    """Table 6: node-classification Micro-F1 (test accuracy) on Cora and CiteSeer."""
    groups: dict[tuple[str, float, str], list[float]] = defaultdict(list)
    for r in privdpr_rows(rows):
        if r.get("test_acc") is not None and r["dataset"] in ("cora", "citeseer"):
            groups[(r["dataset"], float(r["epsilon"]), r["model"])].append(float(r["test_acc"]))
    if not groups:
        return ""
    paper = paper_numbers()["privdpr_table6"]
    lines = [
        "| dataset | ε | model on the release | ours: Micro-F1 | paper PrivDPR | paper GAP | "
        "paper DPGGAN | paper DPGVAE |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (ds, eps, model), values in sorted(groups.items()):

        def theirs(alg: str, ds: str = ds, eps: float = eps) -> str:
            v = paper.get(alg, {}).get(f"{ds}@{eps:g}")
            return "–" if v is None else f"{v[0]:.4f} ± {v[1]:.4f}"

        lines.append(
            f"| {DATASET_LABELS.get(ds, ds)} | {eps:g} | {model} | {_fmt(values)} | "
            f"{theirs('privdpr')} | {theirs('gap')} | {theirs('dpggan')} | {theirs('dpgvae')} |"
        )
    return "\n".join(lines)


def diagnostics_markdown(rows: Iterable[dict[str, Any]]) -> str:
    """Did V learn anything from the graph? Per data set and ε (the runs with the
    non-private diagnostics): V's change by the graph against the same noise on the empty
    graph, the gradient's size against the noise's, the network's output spread, and the
    edge-score z of V (≈ N(0, 1) when V ignores the graph); beside it the sound ε."""
    groups: dict[tuple[str, str, float], list[dict[str, Any]]] = defaultdict(list)
    for r in privdpr_rows(rows):
        diag = (r.get("release") or {}).get("diagnostics")
        if diag:
            eps = 0.0 if r["protocol"] == "dpr-nodp" else float(r["epsilon"])
            method = (r.get("extra") or {}).get("entry") or r["protocol"]
            groups[(r["dataset"], method, eps)].append(
                {**diag, "sound": (r.get("privacy") or {}).get("epsilon")}
            )
    if not groups:
        return ""

    def col(items: list[dict[str, Any]], key: str) -> str:
        values = [float(d[key]) for d in items if isinstance(d.get(key), int | float)]
        if not values:
            return "–"
        return f"{max(abs(v) for v in values):.2g}"

    lines = [
        "| dataset | method | ε (paper's) | sound ε (dp-accounting) | runs "
        "| max ‖V(G) − V(∅)‖/‖V₀‖ | max ‖∇_V‖/‖noise‖ | max f spread | max abs edge-score z |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (ds, proto, eps), items in sorted(groups.items()):
        sound = [float(d["sound"]) for d in items if isinstance(d.get("sound"), int | float)]
        shown = f"{statistics.fmean(sound):.3g}" if sound else "–"
        if proto.startswith("dpr-nodp"):
            shown = "∞"
        lines.append(
            f"| {DATASET_LABELS.get(ds, ds)} ({ds}) | {proto} | "
            f"{'–' if proto.startswith('dpr-nodp') else f'{eps:g}'} | {shown} | {len(items)} | "
            f"{col(items, 'v_graph_effect')} | {col(items, 'signal_to_noise')} | "
            f"{col(items, 'f_spread')} | {col(items, 'edge_score_z')} |"
        )
    return "\n".join(lines)


def write_privdpr_report(rows: list[dict[str, Any]], out_dir: Path) -> tuple[list[Path], list[str]]:
    """``privdpr-tables.md`` and one figure per data set with graph statistics, when the rows
    hold PrivDPR runs; returns the written paths and the index lines."""
    if not privdpr_rows(rows):
        return [], []
    parts = ["# PrivDPR: Tables 2-6 and Figs. 2-5 beside the paper", ""]
    parts += [
        "Ours: mean over the final runs (± sample std, (runs)); the paper's number in "
        "parentheses or brackets. MRE = mean relative error of the statistic against the "
        "original graph; KS = the degree-distribution KS statistic.",
        "",
    ]
    written: list[Path] = []
    for which, title in (
        ("s", "Table 2: MRE and KS against the weight-normalisation scale s (ε = 3.2, d = 64)"),
        ("d", "Table 3: MRE and KS against the hidden width d (ε = 3.2, s = 8)"),
    ):
        md = sweep_table_markdown(rows, which)
        if md:
            parts += [f"## {title}", "", "ours (paper)", "", md, ""]
    cells = stat_cells(rows)
    for ds in _datasets(k for k in cells if k[1] == "privdpr"):
        label = DATASET_LABELS.get(ds, ds)
        parts += [f"## Graph statistics against ε on {label} (the paper's Fig. for {ds})", ""]
        parts += ["ours [paper, digitised]", "", figure_markdown(rows, ds), ""]
        path = plot_figure(rows, ds, out_dir / f"privdpr-stats-vs-eps-{ds}.png")
        written.append(path)
        parts += [f"![{label}]({path.name})", ""]
    for title, md in (
        ("Tables 4-5: link prediction (ROC-AUC)", lp_markdown(rows)),
        ("Table 6: node classification (Micro-F1)", nc_markdown(rows)),
        ("Did V learn from the graph? (non-private diagnostics)",
         diagnostics_markdown(rows)),
    ):  # fmt: skip
        if md:
            parts += [f"## {title}", "", md, ""]
    path = out_dir / "privdpr-tables.md"
    path.write_text("\n".join(parts))
    written.insert(0, path)
    index = ["", "## PrivDPR", "", f"Tables 2-6 and Figs. 2-5: [{path.name}]({path.name})."]
    return written, index
