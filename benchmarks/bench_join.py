"""The LSH similarity join held to the exact one: the same reports, two joins, edges and accuracy.

For each ε and μ setting, ``bench_scale.py``'s pipeline (synthetic SBM, local backend, GCN) runs
once with ``--join exact`` and once with ``--join lsh`` on the same seed, so collection and
every reported pair are the same and only the (0,0) join differs. Printed: the (0,0) threshold
regime, the edges of each, the share of the exact edges the LSH release keeps (recovery), the
edges it adds (none: candidates are verified), both test accuracies and the features-only floor.

    python benchmarks/bench_join.py                                   # n = 10^5, ε = 8, 16
    python benchmarks/bench_join.py --sizes 20000 --mus 1,0.5 --epochs 20
    python benchmarks/bench_join.py --sizes 20000 --thresholds 0.51,0.6,0.8,0.9999  # join only

``--thresholds``: the joins alone on the SBM's 1-bit features (ε_f = ε/2, as the split 0.5
gives), at given cosine thresholds: pairs, recall, time of each (no HoGS, no training).
``--rows-only --no-exact`` for 10^7 rows: the SBM's feature law without its edges, and the
exact join's pairs only counted where only identical rows pass (recall then: found/exact).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_scale  # noqa: E402
from scale_table import pct  # noqa: E402


def scale_args(n: int, eps: float, mu: float, join: str, out: str, args) -> argparse.Namespace:
    """bench_scale's arguments for one run (its defaults, this benchmark's choices)."""
    return argparse.Namespace(
        sizes=[n], protocol="hogs-arr", epsilon=eps, feature_share=0.5, tau="0.5",
        steps=1, epochs=args.epochs, device="cpu", classes=5, avg_degree=10.0, d=args.d,
        feature_density=0.05, workers=None, old_max=0, stages="all", no_scan=True,
        repeat=1, json=True, join=join, no_floor=join == "lsh", edges_out=out, mu=mu,
        progress=False,
    )  # fmt: skip


def joins_only(args) -> None:
    """The exact and LSH joins on the SBM's 1-bit rows at each threshold (``--thresholds``)."""
    import math
    import time

    from ldpgraph.protocols.ldp.similarity import FeatureRows
    from ldpgraph.protocols.ldp.similarity_lsh import (
        choose_join,
        identical_pairs,
        lsh_join,
        plan_bands,
    )
    from ldpgraph.simulation.datasets.synthetic import synthetic_graph

    print(f"{'n':>8} {'ε_f':>4} {'t':>7} {'(r, b)':>8} {'exact pairs':>12} {'exact s':>8} "
          f"{'lsh pairs':>10} {'lsh s':>7} {'recall':>7} {'added':>6} {'auto':>6}")  # fmt: skip
    for n in args.sizes:
        if args.rows_only:  # the SBM's feature law without its edges (10^7: the edges are slow)
            from ldpgraph.simulation.datasets.synthetic import _class_features

            rng = np.random.default_rng(0)
            x = _class_features(rng, rng.integers(0, 5, n), 5, args.d, 0.05, 0.7)
        else:
            g = synthetic_graph(
                n=n, classes=5, avg_degree=10, d=args.d, feature_density=0.05, seed=0
            )
            x = np.asarray(g.x)
        for eps in map(float, args.epsilons.split(",")):
            e = math.exp(eps / 2)
            if args.rows_only:  # the same law, flipped in chunks (no n × d float64 scratch)
                noisy = np.empty_like(x)
                rng = np.random.default_rng(1)
                for a in range(0, n, 1 << 20):
                    u = rng.random(x[a : a + (1 << 20)].shape, dtype=np.float32)
                    noisy[a : a + (1 << 20)] = x[a : a + (1 << 20)] ^ (u < 1 / (e + 1))
                rows = FeatureRows(noisy)
            else:
                prob = 1 / (e + 1) + x * ((e - 1) / (e + 1))
                draws = np.random.default_rng(1).random(prob.shape)
                rows = FeatureRows((draws < prob).astype("u1"))
            for t in map(float, args.thresholds.split(",")):
                t0 = time.perf_counter()
                ex = np.zeros(0, np.int64)
                if args.no_exact and rows._only_identical_can_pass(t):
                    count = int(identical_pairs(rows))  # counted, not built
                elif not args.no_exact:
                    i, j = rows.threshold_join(t)
                    ex = np.unique(i * n + j)
                    count = ex.size
                else:
                    count = 0
                t1 = time.perf_counter()
                a, b = lsh_join(rows, t, seed=0)
                found = np.unique(a * n + b)
                t2 = time.perf_counter()
                kept = found.size if args.no_exact else np.intersect1d(ex, found).size
                band = "ident." if rows._only_identical_can_pass(t) else str(plan_bands(t))
                print(
                    f"{n:>8} {eps / 2:>4g} {t:>7g} {band:>8} {count:>12} {t1 - t0:>7.2f}s "
                    f"{found.size:>10} {t2 - t1:>6.2f}s {kept / max(count, 1):>7.4f} "
                    f"{found.size - kept:>6} {choose_join(rows, t):>6}",
                    flush=True,
                )


def keys(path: str, n: int) -> np.ndarray:
    edges = np.load(path)
    return np.unique(edges[:, 0].astype(np.int64) * n + edges[:, 1])


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    ap.add_argument("--epsilons", default="8,16")
    ap.add_argument("--mus", default="1", help="hogs-arr's mu cap (report cap at its default)")
    ap.add_argument("--epochs", type=int, default=50)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--thresholds", help="joins only, at these cosine thresholds (see above)")
    ap.add_argument("--rows-only", action="store_true", help="joins only: features, no edges")
    ap.add_argument(
        "--no-exact",
        action="store_true",
        help="joins only: skip the exact join (identical rows: its pairs counted, not built)",
    )
    args = ap.parse_args()
    if args.thresholds:
        joins_only(args)
        return
    print(
        f"hogs-arr, synthetic SBM, d = {args.d}, split 0.5, τ = 0.5, {args.epochs} GCN epochs; "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    head = (
        f"{'n':>8} {'ε':>4} {'μ':>6} {'exact edges':>12} {'lsh edges':>10} {'recovery':>9} "
        f"{'added':>6} {'acc exact':>9} {'acc lsh':>8} {'floor':>6} {'recon exact':>11} "
        f"{'recon lsh':>9}"
    )
    print(head)
    print("-" * len(head), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            for eps in map(float, args.epsilons.split(",")):
                for mu in map(float, args.mus.split(",")):
                    rec = {}
                    for join in ("exact", "lsh"):
                        out = os.path.join(tmp, f"{join}-{eps:g}-{mu:g}")
                        rec[join] = bench_scale.run_child(
                            n, "new", scale_args(n, eps, mu, join, out, args)
                        )
                        rec[join]["path"] = f"{out}-{n}.npy"
                    if any("error" in r for r in rec.values()):
                        print(f"{n:>8} {eps:>4g} {mu:>6g} failed: {rec}", flush=True)
                        continue
                    ex, ap_ = keys(rec["exact"]["path"], n), keys(rec["lsh"]["path"], n)
                    kept = np.intersect1d(ex, ap_).size
                    print(
                        f"{n:>8} {eps:>4g} {rec['exact'].get('mu') or 1:>6.3g} {ex.size:>12} "
                        f"{ap_.size:>10} {kept / max(ex.size, 1):>9.4f} {ap_.size - kept:>6} "
                        f"{pct(rec['exact'].get('test_accuracy')):>9} "
                        f"{pct(rec['lsh'].get('test_accuracy')):>8} "
                        f"{pct(rec['exact'].get('floor_accuracy')):>6} "
                        f"{rec['exact']['reconstruct_s']:>10.1f}s "
                        f"{rec['lsh']['reconstruct_s']:>8.1f}s",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
