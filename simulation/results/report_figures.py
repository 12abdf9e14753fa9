"""The HoGS paper's figures from a report's cells: accuracy against ε, bars at one ε (the
ablation), and accuracy against a swept parameter (the privacy split δ, Fig. 8; the edge
threshold τ, Fig. 9). Every figure carries the non-private bound (``none``) and the
feature-only floor (``features-only``) as dashed lines whenever the store has them.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from .report_cells import DATASET_LABELS, REFERENCE_LINES, method_label
from .tables import save_figure

#: Sweep variants named ``<prefix><value>`` (experiments/hogs-fig8.toml, hogs-fig9.toml): the
#: paper plots accuracy against the value, one line per ε.
SWEPT_PREFIXES = {"hogs-d": "privacy split δ", "hogs-t": "edge threshold τ"}


def plot_vs(
    agg: dict[tuple, dict],
    dataset: str,
    model: str,
    out: Path,
    *,
    x_index: int = 3,
    xlabel: str = "ε asked (the paper's ε under its convention; proven ε: see the tables)",
    title: str | None = None,
    methods: Sequence[str] | None = None,
) -> Path:
    """Test accuracy against ε (or a swept parameter at ``x_index`` of the cell key), one line
    with error bars per method, the non-private bound and the MLP floor dashed."""
    import matplotlib.pyplot as plt

    series: dict[str, list[tuple[float, dict]]] = defaultdict(list)
    for key, cell in agg.items():
        if key[0] == dataset and key[2] in (model, "mlp"):
            method = key[1]
            if methods is not None and method not in methods and method not in REFERENCE_LINES:
                continue
            if key[2] == "mlp" and method != "features-only":
                continue
            series[method].append((float(key[x_index]), cell))
    fig, ax = plt.subplots(figsize=(4.2, 3.2), dpi=110)
    for method, pts in sorted(series.items(), key=lambda kv: kv[0] in REFERENCE_LINES):
        pts.sort(key=lambda p: p[0])
        xs = [p[0] for p in pts]
        ys = [p[1]["mean"] for p in pts]
        es = [p[1]["std"] for p in pts]
        style = dict(linestyle="--", marker=None) if method in REFERENCE_LINES else dict(marker="o")
        ax.errorbar(xs, ys, yerr=es, capsize=3, label=method_label(method), **style)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title or f"{DATASET_LABELS.get(dataset, dataset)} — {model.upper()}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return save_figure(fig, out)


def plot_bars(agg: dict[tuple, dict], dataset: str, model: str, epsilon: float, out: Path) -> Path:
    """One bar per method at a single ε (the ablation figure), with error bars; the
    non-private bound and the MLP floor as dashed horizontal lines."""
    import matplotlib.pyplot as plt

    bars, lines = [], []
    for key, cell in sorted(agg.items(), key=lambda kv: str(kv[0])):
        if key[0] != dataset or float(key[3]) != float(epsilon):
            continue
        if key[1] == "features-only" and key[2] == "mlp":
            lines.append((key[1], cell))
        elif key[2] == model:
            (lines if key[1] in REFERENCE_LINES else bars).append((key[1], cell))
    fig, ax = plt.subplots(figsize=(4.2, 3.2), dpi=110)
    xs = range(len(bars))
    ax.bar(
        xs,
        [c["mean"] for _, c in bars],
        yerr=[c["std"] for _, c in bars],
        capsize=3,
        color="tab:blue",
    )
    ax.set_xticks(list(xs), [method_label(m) for m, _ in bars], rotation=20, fontsize=7)
    for (method, cell), color in zip(lines, ("tab:green", "tab:red"), strict=False):
        ax.axhline(cell["mean"], linestyle="--", color=color, label=method_label(method))
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(
        f"{DATASET_LABELS.get(dataset, dataset)} — {model.upper()}, ε = {epsilon:g}", fontsize=9
    )
    ax.grid(alpha=0.3, axis="y")
    if lines:
        ax.legend(fontsize=7)
    return save_figure(fig, out)


def plot_swept(
    agg: dict[tuple, dict], dataset: str, model: str, prefix: str, xlabel: str, out: Path
) -> Path:
    """Accuracy against a swept parameter (variants ``prefix<value>``), one line per ε, the
    non-private bound dashed and the MLP floor as a band over the ε values."""
    import matplotlib.pyplot as plt

    lines: dict[float, list[tuple[float, dict]]] = defaultdict(list)
    bound, floor = [], []
    for key, cell in agg.items():
        if key[0] != dataset:
            continue
        if key[1].startswith(prefix) and key[2] == model:
            lines[float(key[3])].append((float(key[1][len(prefix) :]), cell))
        elif key[1] == "none" and key[2] == model:
            bound.append(cell["mean"])
        elif key[1] == "features-only" and key[2] == "mlp":
            floor.append(cell["mean"])
    fig, ax = plt.subplots(figsize=(4.2, 3.2), dpi=110)
    for eps, pts in sorted(lines.items()):
        pts.sort(key=lambda p: p[0])
        ax.errorbar(
            [p[0] for p in pts],
            [p[1]["mean"] for p in pts],
            yerr=[p[1]["std"] for p in pts],
            capsize=3,
            marker="o",
            label=f"ε = {eps:g}",
        )
    if bound:
        ax.axhline(statistics.fmean(bound), linestyle="--", color="k", label="non-private")
    if floor:
        ax.axhspan(min(floor), max(floor), color="grey", alpha=0.25, label="MLP floor (over ε)")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(f"{DATASET_LABELS.get(dataset, dataset)} — {model.upper()}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, ncol=2)
    return save_figure(fig, out)


def write_figures(agg: dict[tuple, dict], out_dir: Path) -> tuple[list[Path], list[str]]:
    """Per dataset and model: accuracy against ε (bars at the one ε when only one was run),
    and against each swept parameter the cells have; returns the paths and the index lines."""
    written: list[Path] = []
    index: list[str] = []
    for dataset in sorted({k[0] for k in agg}):
        for model in sorted({k[2] for k in agg if k[0] == dataset and k[2] != "mlp"}):
            eps_values = sorted({k[3] for k in agg if k[0] == dataset and k[2] == model})
            if len(eps_values) > 1:
                path = plot_vs(agg, dataset, model, out_dir / f"acc-vs-eps-{dataset}-{model}.png")
            else:
                path = plot_bars(
                    agg,
                    dataset,
                    model,
                    eps_values[0],
                    out_dir / f"acc-at-eps{eps_values[0]:g}-{dataset}-{model}.png",
                )
            written.append(path)
            index += ["", f"![{dataset} {model}]({path.name})"]
            for prefix, label in SWEPT_PREFIXES.items():
                if any(k[0] == dataset and k[1].startswith(prefix) for k in agg):
                    name = f"acc-vs-{prefix.removeprefix('hogs-')}-{dataset}-{model}.png"
                    path = plot_swept(agg, dataset, model, prefix, label, out_dir / name)
                    written.append(path)
                    index += ["", f"![{dataset} {model} vs {label}]({path.name})"]
    return written, index
