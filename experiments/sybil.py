"""Poisoning, measured: Sybil nodes against HoGS, with and without consistency screening.

For each dataset, ε, seed and attack (a share k of the nodes controlled by the attacker of
:mod:`ldpgraph.simulation.adversary`, ``flood`` or ``stealth``), the nodes' reports are
collected once through the local backend (the honest nodes' reports are the same for every k
at one seed), and HoGS reconstructs them twice: screening off and on
(``consistency_alpha``, server-side post-processing). Each release is trained on and scored
by the run's own harness (:func:`ldpgraph.simulation.pipeline.train_release`), plus:

* ``acc_honest``: test accuracy over the honest test nodes (Sybils' labels left out);
* ``degree_mae``: mean |released degree − true degree| over honest nodes;
* ``precision``/``recall``: of the released edges against the graph the nodes held
  (``recall_honest``: of the true edges between two honest nodes);
* ``fake_edges``: released edges between a Sybil and an honest node that are not true edges;
* ``flagged_sybils``/``flagged_honest``: what the screening left out.

    python experiments/sybil.py                      # Cora, ε 4 and 8, k 0/1/5/10 %, 2 seeds
    python experiments/sybil.py --datasets cora citeseer --seeds 0 1 2
    python experiments/sybil.py --plot-only          # figures and table from the JSON

Writes ``docs/poisoning/results.json``, the figures ``docs/poisoning/*.png`` and prints the
Markdown table that ``docs/poisoning.md`` holds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "docs" / "poisoning"


def edge_keys(edges: np.ndarray, n: int) -> np.ndarray:
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    lo, hi = np.minimum(e[:, 0], e[:, 1]), np.maximum(e[:, 0], e[:, 1])
    return np.unique(lo * n + hi)


def graph_metrics(release, graph, sybils: np.ndarray) -> dict:
    """Degree and edge estimates of ``release`` against ``graph`` (what the nodes held)."""
    n = graph.num_nodes
    honest = np.ones(n, dtype=bool)
    honest[sybils] = False
    got = edge_keys(release.edges, n)
    true = edge_keys(graph.edges, n)
    hit = np.isin(got, true)
    deg_rel = np.bincount(np.concatenate([got // n, got % n]), minlength=n)
    deg_true = graph.degrees()
    u, v = got // n, got % n
    touches = honest[u] != honest[v]
    both = honest[true // n] & honest[true % n]
    return {
        "degree_mae": float(np.abs(deg_rel - deg_true)[honest].mean()),
        "precision": float(hit.mean()) if got.size else float("nan"),
        "recall": float(np.isin(true, got).mean()),
        "recall_honest": float(np.isin(true[both], got).mean()),
        "released_edges": int(got.size),
        "fake_edges": int((touches & ~hit).sum()),
    }


def honest_accuracy(config, prepared, release, sybils) -> dict:
    """Test accuracy over the honest test nodes (a Sybil's own label says nothing of the
    attack's effect), by the harness's own training and selection."""
    from ldpgraph.simulation.pipeline import train_release

    split = prepared.split
    test = np.setdiff1d(split.test, sybils)
    record = train_release(config, prepared.original, replace(split, test=test), release)
    return {"acc_honest": record["accuracy"]["test"]}


def run_cell(config, prepared, attack, alpha_values, no_train: bool = False) -> list[dict]:
    """One collection (with ``attack``) reconstructed once per screening level
    (``no_train``: the graph metrics only, no accuracy)."""
    from ldpgraph.protocols.registry import make_protocol, uses_public_features
    from ldpgraph.simulation.adversary import SybilCollector, describe
    from ldpgraph.simulation.backends.local import LocalCollector, ReplayCollector, run_protocol
    from ldpgraph.simulation.pipeline import curator_view

    graph = prepared.graph
    settings = config.node_settings()
    sybil = SybilCollector(LocalCollector(graph, config.seed, settings), attack, graph)
    replay = ReplayCollector(sybil)
    rows = []
    for alpha in alpha_values:
        cfg = replace(config, consistency_alpha=alpha)
        protocol = make_protocol(cfg.protocol, **cfg.protocol_params())
        curator = curator_view(graph, uses_public_features(cfg.protocol), prepared.split)
        t0 = time.perf_counter()
        release, _ = run_protocol(protocol, graph, curator, cfg.seed, None, settings, replay)
        seconds = time.perf_counter() - t0
        plan = sybil.plan
        sybils = plan.sybils
        screening = release.stats.get("consistency", {})
        flagged = np.asarray(screening.get("suspect_ids", []), dtype=np.int64)
        row = {
            "dataset": cfg.dataset,
            "epsilon": cfg.epsilon,
            "seed": cfg.seed,
            "fraction": attack.fraction,
            "attack": describe(plan) if sybils.size else {"mode": "none", "sybils": 0},
            "alpha": alpha,
            "flagged_sybils": int(np.isin(flagged, sybils).sum()),
            "flagged_honest": int((~np.isin(flagged, sybils)).sum()),
            "reconstruct_seconds": round(seconds, 3),
            **graph_metrics(release, graph, sybils),
            **({} if no_train else honest_accuracy(cfg, prepared, release, sybils)),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def experiment(args: argparse.Namespace, sink=None) -> list[dict]:
    """Every cell, seed by seed (so a cut-short run still covers every ε and k at the first
    seeds); ``sink(rows)`` after each cell (the results file is written as the run goes)."""
    from ldpgraph.simulation.adversary import SybilAttack
    from ldpgraph.simulation.config import RunConfig
    from ldpgraph.simulation.datasets import load_dataset
    from ldpgraph.simulation.pipeline import prepare

    rows: list[dict] = []
    graphs = {name: load_dataset(name) for name in args.datasets}
    for seed in args.seeds:
        for dataset, graph in graphs.items():
            for eps in args.epsilons:
                config = RunConfig(
                    protocol="hogs", dataset=dataset, epsilon=eps, seed=seed, epochs=args.epochs
                )
                config.validate()
                prepared = prepare(config, graph=graph)
                for frac in args.fractions:
                    modes = ["flood"] if frac == 0 else list(args.modes)
                    if frac not in args.stealth_fractions and "stealth" in modes:
                        modes.remove("stealth")
                    for mode in modes:
                        attack = SybilAttack(
                            frac / 100.0,
                            mode=mode,
                            targets=args.targets,
                            fanout=args.fanout,
                            seed=seed,
                        )
                        alphas = (0.0, args.alpha)
                        rows += run_cell(config, prepared, attack, alphas, args.no_train)
                        if sink is not None:
                            sink(rows)
    return rows


def summarise(rows: list[dict]) -> list[dict]:
    """Means over seeds, one row per (dataset, ε, k, mode, α)."""
    groups: dict[tuple, list[dict]] = {}
    seen = set()
    for r in rows:
        mode = r["attack"]["mode"] + ("/any" if r["attack"].get("targets_of") == "any" else "")
        key = (r["dataset"], r["epsilon"], r["fraction"], mode, r["alpha"])
        # The same cell from two merged files (deterministic): keep one, the trained one.
        if (key, r["seed"]) in seen:
            if "acc_honest" in r:
                group = groups[key]
                group[:] = [g for g in group if g["seed"] != r["seed"]] + [r]
            continue
        seen.add((key, r["seed"]))
        groups.setdefault(key, []).append(r)
    out = []
    fields = ("acc_honest", "degree_mae", "precision", "recall", "recall_honest", "fake_edges",
              "flagged_sybils", "flagged_honest", "released_edges")  # fmt: skip
    for key, group in sorted(groups.items()):
        row = dict(zip(("dataset", "epsilon", "fraction", "mode", "alpha"), key, strict=True))
        for f in fields:
            vals = [g[f] for g in group if f in g]
            row[f] = float(np.mean(vals)) if vals else float("nan")
            row[f + "_sd"] = float(np.std(vals)) if vals else float("nan")
        row["seeds"] = len(group)
        row["acc_seeds"] = sum("acc_honest" in g for g in group)
        out.append(row)
    return out


def table(summary: list[dict]) -> str:
    head = ("| dataset | ε | k | attack | screening | test acc (honest nodes) | degree MAE | "
            "edge precision | edge recall (honest pairs) | fake edges | "
            "Sybils / honest left out | seeds (trained) |")  # fmt: skip
    lines = [head, "|" + "---|" * 12]
    for r in summary:
        mode = "none" if r["fraction"] == 0 else r["mode"]
        lines.append(
            f"| {r['dataset']} | {r['epsilon']:g} | {r['fraction'] * 100:g} % | {mode} | "
            f"{'on' if r['alpha'] > 0 else 'off'} | "
            f"{r['acc_honest']:.3f} ± {r['acc_honest_sd']:.3f} | {r['degree_mae']:.2f} | "
            f"{r['precision']:.3f} | {r['recall']:.3f} ({r['recall_honest']:.3f}) | "
            f"{r['fake_edges']:.0f} | "
            f"{r['flagged_sybils']:.0f} / {r['flagged_honest']:.2g} | "
            f"{r['seeds']} ({r['acc_seeds']}) |"
        )
    return "\n".join(lines)


#: (attack, screening on, line style) of each curve.
CURVES = (
    ("flood", 0, "-o"),
    ("flood", 1, "--o"),
    ("stealth", 0, "-s"),
    ("stealth", 1, "--s"),
    ("flood/any", 0, "-^"),
    ("flood/any", 1, "--^"),
)


def figures(summary: list[dict], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")  # a script may choose the backend; library code never does
    import matplotlib.pyplot as plt

    paths = []
    metrics = (("acc_honest", "test accuracy (honest nodes)"),
               ("fake_edges", "released fake Sybil–honest edges"),
               ("degree_mae", "degree MAE (honest nodes)"),
               ("precision", "released-edge precision"))  # fmt: skip
    for dataset in sorted({r["dataset"] for r in summary}):
        for eps in sorted({r["epsilon"] for r in summary if r["dataset"] == dataset}):
            fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.4))
            for ax, (metric, label) in zip(axes, metrics, strict=True):
                for mode, alpha, style in CURVES:
                    pts = [r for r in summary if r["dataset"] == dataset
                           and r["epsilon"] == eps and (r["alpha"] > 0) == bool(alpha)
                           and (r["mode"] == mode or r["fraction"] == 0)]  # fmt: skip
                    pts.sort(key=lambda r: r["fraction"])
                    if len(pts) < 2:
                        continue
                    xs = [100 * r["fraction"] for r in pts]
                    ys = [r[metric] for r in pts]
                    err = [r[metric + "_sd"] for r in pts]
                    name = f"{mode}, screening {'on' if alpha else 'off'}"
                    ax.errorbar(xs, ys, yerr=err, fmt=style, capsize=3, label=name, ms=4)
                if metric == "fake_edges":
                    ax.set_yscale("symlog", linthresh=10)
                ax.set_xlabel("Sybil nodes k (%)")
                ax.set_title(label, fontsize=10)
                ax.grid(alpha=0.3)
            axes[0].legend(fontsize=8)
            fig.suptitle(f"HoGS on {dataset}, ε = {eps:g}: Sybil poisoning and screening")
            fig.tight_layout()
            path = out / f"sybil-{dataset}-eps{eps:g}.png"
            fig.savefig(path, dpi=110)
            plt.close(fig)
            paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["cora"])
    ap.add_argument("--epsilons", nargs="+", type=float, default=[4.0, 8.0])
    ap.add_argument("--fractions", nargs="+", type=float, default=[0, 1, 5, 10],
                    help="Sybil shares in percent")  # fmt: skip
    ap.add_argument("--modes", nargs="+", default=["flood", "stealth"])
    ap.add_argument("--stealth-fractions", nargs="+", type=float, default=[5, 10],
                    help="the shares (percent) at which the stealth attack also runs")  # fmt: skip
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    ap.add_argument(
        "--targets",
        choices=("class", "any"),
        default="class",
        help="the attacked nodes: one class's honest nodes, or any honest node",
    )
    ap.add_argument(
        "--fanout",
        type=int,
        default=None,
        help="claims per Sybil (default: every target in flood, (n-1)p in stealth)",
    )
    ap.add_argument("--alpha", type=float, default=0.01, help="screening's false-alarm level")
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--plot-only", action="store_true")
    ap.add_argument("--no-train", action="store_true", help="graph metrics only (no accuracy)")
    ap.add_argument("--merge", nargs="*", default=[], help="more results files for --plot-only")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results = args.out / "results.json"
    t0 = time.perf_counter()
    if args.plot_only:
        rows = []
        for path in [results, *args.merge]:  # several runs' files (e.g. one per seed)
            rows += json.loads(Path(path).read_text())["rows"]
        if args.merge:  # one file with every row from now on
            merged = {"merged_from": [str(p) for p in args.merge], "rows": rows}
            results.write_text(json.dumps(merged, indent=1) + "\n")
    else:
        os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
        meta = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}

        def save(rows: list[dict]) -> None:
            meta["seconds"] = round(time.perf_counter() - t0, 1)
            results.write_text(json.dumps({"args": meta, "rows": rows}, indent=1) + "\n")

        rows = experiment(args, save)
        save(rows)
    summary = summarise(rows)
    for path in figures(summary, args.out):
        print(f"wrote {path}", file=sys.stderr)
    print(table(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
