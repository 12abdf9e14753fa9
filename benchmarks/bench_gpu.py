"""HoGS's curator on the CPU (numpy) beside the torch curator on a device, on the same reports.

For each size: a synthetic graph, the local collection (seed 0), then the topology (posterior
of the reported pairs + the (0,0) similarity join) and the feature reconstruction, timed on
each path, with a check that both give the same edges (and the features' largest difference).

    python benchmarks/bench_gpu.py                        # CUDA, n = 1e4 and 1e5, ε = 8
    python benchmarks/bench_gpu.py --device cpu --sizes 10000   # the torch path on the CPU
    python benchmarks/bench_gpu.py --json

Without a CUDA GPU (and no ``--device cpu``) it says so and exits with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def _timed(fn, sync=None):
    t0 = time.perf_counter()
    out = fn()
    if sync is not None:
        sync()
    return out, time.perf_counter() - t0


def one(n: int, args: argparse.Namespace) -> dict:
    import numpy as np
    import torch

    from ldpgraph.protocols.ldp.assemble import adjacency_reports, feature_reports
    from ldpgraph.protocols.ldp.hogs import (
        FR_THRESHOLD,
        reconstruct_features,
        reconstruct_topology,
    )
    from ldpgraph.protocols.ldp.hogs_torch import TorchCurator
    from ldpgraph.protocols.ldp.similarity import FeatureRows
    from ldpgraph.protocols.mechanisms import flip_probability
    from ldpgraph.protocols.registry import make_protocol
    from ldpgraph.simulation.backends.local import collect_round
    from ldpgraph.simulation.datasets import load_dataset

    g = load_dataset(
        f"synthetic:n={n},classes={args.classes},avg_degree={args.avg_degree},"
        f"d={args.d},feature_density={args.feature_density},seed=0"
    )
    proto = make_protocol(
        "hogs",
        epsilon=args.epsilon,
        feature_share=args.feature_share,
        tau=args.tau,
        steps=args.steps,
    )
    params = proto.params
    result, collect_s = _timed(lambda: collect_round(proto, g, 0, proto.config(), seed=0))
    reported, observed = adjacency_reports(result.reports, n)
    x0, _ = feature_reports(result.reports, n, g.num_features)
    rows = FeatureRows(x0)
    flip = flip_probability(proto.eps_adjacency)
    need = min(params.tau, FR_THRESHOLD) if params.steps > 0 else params.tau
    dev = torch.device(args.device)
    sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else None
    curator = TorchCurator(dev)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
        small = np.zeros((4, 4), np.uint8)
        curator.topology(adjacency_reports({}, 4)[0], np.ones(4, bool), FeatureRows(small),
                         small, flip, need)  # fmt: skip

    topo, np_topo_s = _timed(lambda: reconstruct_topology(reported, observed, rows, flip, need))
    x_np, np_feat_s = _timed(
        lambda: reconstruct_features(x0, topo.i, topo.j, topo.prob, params.steps)
    )
    (ti, tj, tp, stats), t_topo_s = _timed(
        lambda: curator.topology(reported, observed, rows, x0, flip, need), sync
    )
    x_t, t_feat_s = _timed(
        lambda: curator.features(x0, ti, tj, tp, params.steps, FR_THRESHOLD), sync
    )
    same_edges = bool(np.array_equal(ti, topo.i) and np.array_equal(tj, topo.j))
    rec = {
        "n": n,
        "device": str(dev),
        "reported_ones": int(reported.nnz),
        "kept_pairs": int(topo.i.size),
        "collect_s": round(collect_s, 3),
        "numpy": {"topology_s": round(np_topo_s, 3), "features_s": round(np_feat_s, 3)},
        "torch": {"topology_s": round(t_topo_s, 3), "features_s": round(t_feat_s, 3)},
        "same_edges": same_edges,
        "same_posteriors": bool(same_edges and np.array_equal(tp, topo.prob)),
        "max_feature_diff": float(np.abs(x_t - x_np).max()) if x_t.size else 0.0,
        "joined_pairs": stats["joined_pairs"],
    }
    if dev.type == "cuda":
        rec["torch"]["peak_device_mib"] = round(torch.cuda.max_memory_allocated(dev) / 2**20, 1)
    return rec


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--device", default="cuda", help="torch device of the torch curator")
    ap.add_argument("--epsilon", type=float, default=8.0)
    ap.add_argument("--feature-share", type=float, default=0.5, help="the paper's δ")
    ap.add_argument("--tau", type=float, default=0.5)
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--classes", type=int, default=5)
    ap.add_argument("--avg-degree", type=float, default=8.0)
    ap.add_argument("--d", type=int, default=500)
    ap.add_argument("--feature-density", type=float, default=0.05)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(
            "bench_gpu: no CUDA GPU here (torch sees none), so there is no GPU curator to "
            "time; `--device cpu` times the torch curator on the CPU instead.",
            file=sys.stderr,
        )
        return 2
    rows = []
    for n in args.sizes:
        r = one(n, args)
        rows.append(r)
        if not args.json:
            where = f"torch on {r['device']}"
            print(
                f"n={r['n']:>7}  reported 1-bits={r['reported_ones']:>11}  kept pairs="
                f"{r['kept_pairs']:>9}  collect {r['collect_s']:.2f} s",
                flush=True,
            )
            for path, label in (("numpy", "numpy (CPU)"), ("torch", where)):
                t = r[path]
                total = t["topology_s"] + t["features_s"]
                extra = f"  peak {t['peak_device_mib']:.0f} MiB" if "peak_device_mib" in t else ""
                print(
                    f"    {label:<18} topology {t['topology_s']:>8.2f} s  features "
                    f"{t['features_s']:>7.2f} s  total {total:>8.2f} s{extra}",
                    flush=True,
                )
            speed = (r["numpy"]["topology_s"] + r["numpy"]["features_s"]) / max(
                r["torch"]["topology_s"] + r["torch"]["features_s"], 1e-9
            )
            print(
                f"    speed-up {speed:.1f}x; same edges: {r['same_edges']}, same posteriors: "
                f"{r['same_posteriors']}, largest feature difference {r['max_feature_diff']:.2e}",
                flush=True,
            )
    if args.json:
        print(json.dumps({"args": vars(args), "rows": rows}, indent=2))
    return 0 if all(r["same_edges"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
