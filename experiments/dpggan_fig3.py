"""DPGGAN paper (Yang et al., IJCAI 2021), Figure 3 (link privacy): the table and the plot from
the JSON lines of ``experiments/dpggan_nodp.py linkpriv`` runs.

The paper's Figure 3 plots the AUC of hidden links predicted from the generated networks
against ε (and q); it prints no values. Here: for each data set, the pooled AUC of the hidden
20 % of the edges against as many sampled non-edges, ranked by the degree-aligned generated
graph (its adjacency and its common neighbours), mean ± sd over the seeds, against ε for
DPGGAN and DPGVAE trained the paper's way (proven ε ∞: the paper's ε is its convention's),
with the non-private training (σ = 0, no clipping) at the right edge, the references on the
original 80 % graph (common neighbours, the degree product that the alignment alone carries)
and chance (0.5) as lines.

    python experiments/dpggan_fig3.py docs/reproduction/dpggan/runs-issue34.jsonl \
        --out docs/reproduction/dpggan

Prints the Markdown table; writes ``fig3-link-privacy.png`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

#: The generated graph's scorers (what the release reveals) and the references on the original.
GENERATED = ("gen_adj", "gen_cn")
REFERENCES = ("orig_cn", "orig_aa", "orig_pa")
#: The official code's node2vec + MLP predictor (``linkpriv --node2vec``; last and best epoch),
#: on the generated graphs and on the original 80 %: in the rows that ran it only.
NODE2VEC = ("gen_n2v", "gen_n2v_max", "orig_n2v", "orig_n2v_max")
NAMES = {"gvae": "DPGVAE", "ggan": "DPGGAN"}


def load(paths: list[Path]) -> list[dict]:
    """The ``linkpriv`` rows of the JSON-lines files (other lines are left out). A later row of
    the same run (data set, model, training, ε, seed: a rerun with ``--node2vec``) is merged
    into the earlier one, its keys winning: one row per run."""
    rows: dict[tuple, dict] = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                if row.get("experiment") == "linkpriv":
                    eps = row["epsilon"] if row["training"] != "nodp" else None
                    key = (row["dataset"], row["model"], row["training"], eps, row["seed"])
                    rows[key] = {**rows.get(key, {}), **row}
    return list(rows.values())


def summarise(rows: list[dict]) -> list[dict]:
    """One cell per (data set, model, training, ε): mean and sd over the seeds."""
    cells: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        eps = r["epsilon"] if r["training"] != "nodp" else None
        cells[(r["dataset"], r["model"], r["training"], eps)].append(r)
    out = []
    for (dataset, model, training, eps), rs in sorted(cells.items(), key=_order):
        cell = {"dataset": dataset, "model": model, "training": training, "epsilon": eps,
                "seeds": sorted(r["seed"] for r in rs), "pairs": rs[0]["pairs"],
                "train_s": float(np.mean([r["train_s"] for r in rs]))}  # fmt: skip
        for key in GENERATED + REFERENCES + NODE2VEC:
            values = np.array([r[key] for r in rs if key in r], dtype=float)
            cell[key + "_n"] = len(values)
            cell[key] = float(values.mean()) if len(values) else None
            cell[key + "_sd"] = float(values.std(ddof=1)) if len(values) > 1 else 0.0
        out.append(cell)
    return out


def _order(item: tuple) -> tuple:
    (dataset, model, training, eps), _ = item
    return (dataset, model, {"paper": 0, "bounded": 1, "nodp": 2}[training], eps or 0.0)


def _fmt(cell: dict, key: str) -> str:
    if cell[key] is None:
        return "–"
    n = cell[key + "_n"]
    sd = f" ± {cell[key + '_sd']:.3f}" if n > 1 else ""
    seeds = f" ({n} seed{'s' if n > 1 else ''})" if n != len(cell["seeds"]) else ""
    return f"{cell[key]:.3f}{sd}{seeds}"


def _n2v(cell: dict, prefix: str) -> str:
    if cell[f"{prefix}_n2v"] is None:
        return "–"
    return f"{_fmt(cell, prefix + '_n2v')} ({_fmt(cell, prefix + '_n2v_max')})"


def table(summary: list[dict]) -> str:
    """The Markdown table of the page."""
    head = ("| data set | model | training | ε (paper's convention) | proven ε | seeds "
            "| generated adjacency | CN in the generated graph | CN on the original 80 % "
            "| degree product on the original | node2vec + MLP on the generated, last "
            "(best) epoch | node2vec + MLP on the original 80 %, last (best) epoch "
            "| train (s, mean over the seeds) |")  # fmt: skip
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
    for c in summary:
        if c["training"] == "nodp":
            name, eps, proven = c["model"].upper() + " (no DP)", "–", "– (no privacy)"
        elif c["training"] == "bounded":
            name, eps, proven = NAMES[c["model"]], "–", f"{c['epsilon']:g}"
        else:
            name, eps, proven = NAMES[c["model"]], f"{c['epsilon']:g}", "∞"
        lines.append(f"| {c['dataset'].removesuffix('-collection')} | {name} | {c['training']} "
                     f"| {eps} | {proven} | {len(c['seeds'])} | {_fmt(c, 'gen_adj')} "
                     f"| {_fmt(c, 'gen_cn')} | {_fmt(c, 'orig_cn')} | {_fmt(c, 'orig_pa')} "
                     f"| {_n2v(c, 'gen')} | {_n2v(c, 'orig')} | {c['train_s']:.0f} |")  # fmt: skip
    return "\n".join(lines)


def figure(summary: list[dict], out: Path) -> Path:
    """AUC against ε, one panel per data set (the paper's training; no-DP at the right)."""
    import matplotlib

    matplotlib.use("Agg")  # a script may choose the backend; library code never does
    import matplotlib.pyplot as plt

    datasets = sorted({c["dataset"] for c in summary})
    fig, axes = plt.subplots(1, len(datasets), figsize=(5.2 * len(datasets), 3.8), squeeze=False)
    styles = {"ggan": ("tab:red", "o"), "gvae": ("tab:blue", "s")}
    for ax, dataset in zip(axes[0], datasets, strict=True):
        cells = [c for c in summary if c["dataset"] == dataset]
        paper = [c for c in cells if c["training"] == "paper"]
        eps_values = sorted({c["epsilon"] for c in paper}) or [1.0]
        right = max(eps_values) * 10  # where the no-DP point goes
        for model, (color, marker) in styles.items():
            for key, line in (("gen_adj", "-"), ("gen_cn", ":")):
                pts = sorted((c for c in paper if c["model"] == model), key=lambda c: c["epsilon"])
                label = f"{NAMES[model]}, {'adjacency' if key == 'gen_adj' else 'CN'}"
                if pts:
                    ax.errorbar([c["epsilon"] for c in pts], [c[key] for c in pts],
                                yerr=[c[key + "_sd"] for c in pts], fmt=marker + line,
                                color=color, capsize=3, ms=4, label=label)  # fmt: skip
                for c in cells:
                    if c["training"] == "nodp" and c["model"] == model:
                        ax.errorbar([right], [c[key]], yerr=[c[key + "_sd"]], fmt=marker,
                                    color=color, mfc="none" if key == "gen_cn" else color,
                                    capsize=3, ms=6)  # fmt: skip
        ref = cells[0]
        ax.axhline(ref["orig_cn"], color="k", ls="--", lw=1, label="CN on the original 80 %")
        ax.axhline(ref["orig_pa"], color="grey", ls="-.", lw=1,
                   label="degree product on the original")  # fmt: skip
        ax.axhline(0.5, color="grey", ls=":", lw=1, label="chance")
        ax.set_xscale("log")
        ticks = [*eps_values, right]
        ax.set_xticks(ticks, [f"{e:g}" for e in eps_values] + ["no DP"])
        ax.set_xlabel("ε (the paper's convention; proven ε ∞)")
        ax.set_ylabel("AUC of hidden links (lower: more private)")
        ax.set_title(dataset.removesuffix("-collection").upper(), fontsize=10)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("DPGGAN Figure 3: hidden links ranked by the aligned generated graph")
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    path = out / "fig3-link-privacy.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="JSON-lines files of linkpriv runs")
    ap.add_argument("--out", type=Path, default=None, help="folder for the figure (none: no plot)")
    args = ap.parse_args(argv)
    summary = summarise(load(args.runs))
    if not summary:
        ap.error("no linkpriv rows in the given files")
    if args.out is not None:
        print(f"wrote {figure(summary, args.out)}", file=sys.stderr)
    print(table(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
