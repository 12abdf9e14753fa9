"""Our BLink server against the dense Blink_GNN-style reference, on the same reports.

For each n a synthetic graph is generated, every node's BLink report is collected once (the
``local`` backend), and both servers turn the same reports into a graph:

* ours: ``BlinkProtocol.server_step`` (assembling the reports' CSR, the β-model fit, the
  sparse posterior and the variant's selection), best of ``--repeat`` runs;
* dense: ``tests/reference/blink.py`` (``dense_blink``: the n × n bit matrix of the reports,
  Blink_GNN's 200 fixed-point iterations on n × n arrays, the dense posterior and selection),
  timed once, building its n × n matrix from the same reports included.

It prints both times, their ratio, and whether the edge sets are identical (and, for soft and
hybrid, the largest weight difference). The dense reference needs several n × n float64
arrays (about 5 GB at n = 10^4) and minutes.

    python benchmarks/bench_blink.py                          # n = 2e3, 5e3, 1e4, blink-hard
    python benchmarks/bench_blink.py --sizes 2000 --variant hybrid --epsilon 4
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

# The dense reference lives with the tests (tests/reference/blink.py).
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def run(n: int, args: argparse.Namespace) -> dict:
    from ldpgraph.protocols.base import CuratorView
    from ldpgraph.protocols.ldp.blink import DEGREE_FIELD
    from ldpgraph.protocols.registry import make_protocol
    from ldpgraph.simulation.backends.local import collect_round
    from ldpgraph.simulation.datasets import load_dataset
    from tests.reference.blink import dense_blink

    g = load_dataset(f"synthetic:n={n},avg_degree={args.avg_degree},d={args.d},seed={args.seed}")
    extra = {"min_weight": args.min_weight} if args.variant == "soft" else {}
    proto = make_protocol(
        f"blink-{args.variant}", epsilon=args.epsilon, degree_share=args.degree_share, **extra
    )
    t0 = time.perf_counter()
    result = collect_round(proto, g, 0, proto.config(), seed=args.seed)
    collect_s = time.perf_counter() - t0
    cur = CuratorView(n, g.num_features, public_features=g.x)
    ours_s = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        release = proto.server_step(0, result, cur, seed=args.seed)
        ours_s.append(time.perf_counter() - t0)
    rec = {
        "n": n,
        "variant": args.variant,
        "epsilon": args.epsilon,
        "reported_ones": int(sum(r.adjacency.size for r in result.reports.values())),
        "collect_s": round(collect_s, 2),
        "ours_s": round(min(ours_s), 4),
        "ours_runs_s": [round(t, 4) for t in ours_s],
        "beta_iterations": release.stats["beta_fit"]["iterations"],
        "edges": int(release.num_edges),
    }
    if args.skip_dense:
        return rec
    # The dense server from the same reports: the n × n bits, then Blink_GNN's algorithm.
    t0 = time.perf_counter()
    bits = np.zeros((n, n), dtype=np.int64)
    noisy = np.zeros(n)
    has = np.zeros(n, dtype=bool)
    observed = np.zeros(n, dtype=bool)
    for node, rep in result.reports.items():
        bits[node, rep.adjacency] = 1
        observed[node] = True
        noisy[node] = rep.extras[DEGREE_FIELD]
        has[node] = True
    ref = dense_blink(
        noisy, has, bits, observed, proto.eps_adjacency, args.variant, args.min_weight
    )
    dense_s = time.perf_counter() - t0
    del bits
    same = bool(np.array_equal(release.edges, ref["edges"]))
    rec.update(
        dense_s=round(dense_s, 2),
        ratio=round(dense_s / min(ours_s), 1),
        identical_edges=same,
        dense_edges=int(ref["edges"].shape[0]),
    )
    if args.variant != "hard" and same:
        rec["max_weight_diff"] = float(np.abs(release.edge_weight - ref["weight"]).max(initial=0))
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[2000, 5000, 10000])
    ap.add_argument("--variant", choices=("hard", "soft", "hybrid"), default="hard")
    ap.add_argument("--epsilon", type=float, default=8.0)
    ap.add_argument("--degree-share", type=float, default=0.1)
    ap.add_argument("--min-weight", type=float, default=1e-3, help="soft variant only")
    ap.add_argument("--avg-degree", type=float, default=8.0)
    ap.add_argument("--d", type=int, default=16, help="feature dimension (public, unused)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="runs of our server (best kept)")
    ap.add_argument("--skip-dense", action="store_true", help="time our server only")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for n in args.sizes:
        rec = run(n, args)
        rows.append(rec)
        if not args.json:
            line = f"n={n:>6}  blink-{args.variant}  ours {rec['ours_s']:8.3f} s"
            if "dense_s" in rec:
                line += (
                    f"   dense {rec['dense_s']:8.1f} s   ratio {rec['ratio']:7.1f}x   "
                    f"edges {rec['edges']} identical={rec['identical_edges']}"
                )
                if "max_weight_diff" in rec:
                    line += f" (max |Δw| {rec['max_weight_diff']:.1e})"
            print(line, flush=True)
    if args.json:
        print(json.dumps({"args": vars(args), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
