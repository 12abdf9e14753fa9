"""Peak memory and time of the server-side reconstruction (HoGS, BLink) from assembled reports.

The reports of a synthetic graph are collected once with the ``local`` backend and cached
(``--cache``), so repeated measurements (before and after a change) see the same reports.
Each protocol is measured in its own process, so its figures are its own. What is measured
starts from the assembled reports (the CSR of reported 1-bits, the feature rows, the noisy
degrees) and ends with the release's edges and features:

* ``traced``: the peak of numpy/Python allocations above the start (tracemalloc);
* ``rss``: the peak resident size sampled every 5 ms, minus the resident size at the start
  (what the stage adds, torch's allocations included);
* ``reports``: the bytes of the reports themselves (CSR indices, data, indptr; feature rows).

    python benchmarks/bench_reconstruct_memory.py                  # n = 1e5, ε = 16, split 0.5
    python benchmarks/bench_reconstruct_memory.py --n 20000 --protocols hogs
    python benchmarks/bench_reconstruct_memory.py --n 20000 --protocols hogs hogs-fused
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

from rss import peak_rss


def cache_path(args: argparse.Namespace) -> Path:
    name = (
        f"n{args.n}_eps{args.epsilon:g}_share{args.feature_share:g}_deg{args.avg_degree:g}"
        f"_d{args.d}_dens{args.feature_density:g}_ds{args.degree_share:g}.npz"
    )
    return Path(args.cache) / name


def make_reports(args: argparse.Namespace, path: Path) -> None:
    """Collect HoGS reports (RR rows at ε_a, 1-bit features at ε_f) and discrete-Laplace
    degrees at ε_d = degree_share·ε_a (BLink's degree report; its RR rows are HoGS's)."""
    import numpy as np

    from ldpgraph.protocols.laplace import DiscreteLaplace
    from ldpgraph.protocols.ldp.assemble import adjacency_reports, feature_reports
    from ldpgraph.protocols.registry import make_protocol
    from ldpgraph.protocols.rng import stage_rng
    from ldpgraph.simulation.backends.local import collect_round
    from ldpgraph.simulation.datasets import load_dataset

    g = load_dataset(
        f"synthetic:n={args.n},avg_degree={args.avg_degree},d={args.d},"
        f"feature_density={args.feature_density},seed=0"
    )
    proto = make_protocol("hogs", epsilon=args.epsilon, feature_share=args.feature_share)
    result = collect_round(proto, g, 0, proto.config(), seed=0)
    reported, observed = adjacency_reports(result.reports, g.num_nodes)
    x0, _ = feature_reports(result.reports, g.num_nodes, g.num_features)
    del result
    degree = np.bincount(g.edges.ravel(), minlength=g.num_nodes)
    eps_d = args.degree_share * proto.eps_adjacency
    noise = DiscreteLaplace(eps_d).noise((g.num_nodes,), stage_rng(0, "bench"))
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(
        path,
        indptr=reported.indptr,
        indices=reported.indices,
        observed=observed,
        x0=x0,
        noisy_degree=(degree + noise).astype(np.float64),
    )


def measure(args: argparse.Namespace, path: Path, protocol: str) -> dict:
    import numpy as np
    import scipy.sparse as sp

    from ldpgraph.protocols.ldp.blink import blink_graph
    from ldpgraph.protocols.ldp.hogs import reconstruct_features, reconstruct_topology
    from ldpgraph.protocols.ldp.similarity import FeatureRows
    from ldpgraph.protocols.mechanisms import flip_probability
    from ldpgraph.protocols.registry import make_protocol

    z = np.load(path)
    n = z["observed"].shape[0]
    reported = sp.csr_matrix(
        (np.ones(z["indices"].shape[0], np.int8), z["indices"], z["indptr"]), shape=(n, n)
    )
    observed, x0, noisy = z["observed"], z["x0"], z["noisy_degree"]
    report_bytes = reported.indices.nbytes + reported.data.nbytes + reported.indptr.nbytes
    hp = make_protocol("hogs", epsilon=args.epsilon, feature_share=args.feature_share)
    out: dict = {
        "protocol": protocol,
        "n": n,
        "reported_ones": int(reported.nnz),
        "adjacency_report_mib": round(report_bytes / 2**20, 1),
        "feature_report_mib": round(x0.nbytes / 2**20, 1),
    }
    tracemalloc.start()
    with peak_rss() as measured:
        t0 = time.perf_counter()
        if protocol in ("hogs", "hogs-fused"):
            # hogs-fused: the one-step features fused into the scoring from the first pair
            # (protocols/ldp/hogs_fused.py; the release fuses only past its budget).
            fused = protocol == "hogs-fused" and hp.steps == 1
            rows = FeatureRows(x0)
            topo = reconstruct_topology(
                reported,
                observed,
                rows,
                flip_probability(hp.eps_adjacency),
                min(hp.params.tau, 0.5),
                **(dict(fuse_features=x0, tau=hp.params.tau, fuse_pairs=0) if fused else {}),
            )
            t1 = time.perf_counter()
            if topo.features is not None:
                x = topo.features
            else:
                x = reconstruct_features(x0, topo.i, topo.j, topo.prob, hp.steps)
            out["edges"] = int((topo.prob >= hp.params.tau).sum())
            out["topology_s"] = round(t1 - t0, 2)
            del x
        else:
            bp = make_protocol(
                protocol,
                epsilon=hp.eps_adjacency / (1.0 - args.degree_share),
                degree_share=args.degree_share,
            )
            assert abs(bp.eps_adjacency - hp.eps_adjacency) < 1e-9
            graph = blink_graph(noisy, np.ones(n, bool), reported, observed, bp)
            out["edges"] = int(graph["edges"].shape[0])
        out["seconds"] = round(time.perf_counter() - t0, 2)
        _, traced = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    out["traced_peak_mib"] = round(traced / 2**20, 1)
    out["rss_peak_mib"] = measured.added_mib
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--epsilon", type=float, default=16.0, help="HoGS's ε (ε_a = (1 − share)ε)")
    ap.add_argument("--feature-share", type=float, default=0.5)
    ap.add_argument("--degree-share", type=float, default=0.1, help="BLink: ε_d = share·ε_a'")
    ap.add_argument("--avg-degree", type=float, default=8.0)
    ap.add_argument("--d", type=int, default=500)
    ap.add_argument("--feature-density", type=float, default=0.05)
    ap.add_argument("--protocols", nargs="+", default=["hogs", "blink-hard", "blink-hybrid"])
    ap.add_argument("--cache", default=os.environ.get("TMPDIR", "/tmp") + "/ldpgraph-bench")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    path = cache_path(args)
    if args.one:
        print(json.dumps(measure(args, path, args.one)))
        return
    if not path.exists():
        t0 = time.perf_counter()
        make_reports(args, path)
        print(f"collected reports in {time.perf_counter() - t0:.1f} s -> {path}", flush=True)
    passthrough = [a for a in sys.argv[1:]]
    for protocol in args.protocols:
        res = subprocess.run(
            [sys.executable, __file__, *passthrough, "--one", protocol],
            capture_output=True,
            text=True,
        )
        if res.returncode:
            print(res.stderr, file=sys.stderr)
            raise SystemExit(res.returncode)
        print(res.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
