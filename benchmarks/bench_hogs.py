"""Time and peak memory of HoGS collection and reconstruction on synthetic graphs.

Each size runs in its own process so its memory figures are its own. Peak memory is the
resident set size sampled every 5 ms during a stage, minus the resident size when the stage
began (so it is what the stage adds), and the process's peak RSS overall.

    python benchmarks/bench_hogs.py                       # n = 1e3, 1e4, 1e5, ε = 8, split 0.5
    python benchmarks/bench_hogs.py --sizes 1000 20000 --epsilon 6 --feature-share 0.3
    python benchmarks/bench_hogs.py --dataset facebook --epsilon 3 --feature-share 0.3
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from contextlib import contextmanager

from rss import peak_rss


@contextmanager
def stage(record: dict, name: str):
    with peak_rss() as measured:
        yield
    record[name] = {"seconds": round(measured.seconds, 3), "peak_mib": measured.added_mib}


def one(n: int, args: argparse.Namespace) -> dict:
    from ldpgraph.protocols.base import CuratorView
    from ldpgraph.protocols.registry import make_protocol
    from ldpgraph.simulation.backends.local import collect_round
    from ldpgraph.simulation.datasets import load_dataset

    rec: dict = {"n": n}
    with stage(rec, "generate"):
        if args.dataset:
            g = load_dataset(args.dataset)
            rec["n"] = g.num_nodes
        else:
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
    with stage(rec, "collect"):
        result = collect_round(proto, g, 0, proto.config(), seed=0)
    report_ones = sum(r.adjacency.size for r in result.reports.values())
    with stage(rec, "reconstruct"):
        release = proto.server_step(0, result, CuratorView(g.num_nodes, g.num_features), seed=0)
    rec.update(
        edges=g.num_edges,
        d=g.num_features,
        reported_ones=int(report_ones),
        synthetic_edges=release.num_edges,
        release_stats=release.stats,
        peak_rss_mib=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    )
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument(
        "--dataset",
        help="a dataset of `ldpgraph datasets` (e.g. facebook) instead of the synthetic sizes",
    )
    ap.add_argument("--epsilon", type=float, default=8.0)
    ap.add_argument("--feature-share", type=float, default=0.5, help="the paper's δ")
    ap.add_argument("--tau", type=float, default=0.5)
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--classes", type=int, default=5)
    ap.add_argument("--avg-degree", type=float, default=8.0)
    ap.add_argument("--d", type=int, default=500)
    ap.add_argument("--feature-density", type=float, default=0.05)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one, args)))
        return
    rows = []
    passthrough = [a for a in sys.argv[1:] if a != "--json"]
    for n in [0] if args.dataset else args.sizes:
        out = subprocess.run(
            [sys.executable, __file__, *passthrough, "--one", str(n)],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        if not args.json:
            print(
                f"n={r['n']:>7}  edges={r['edges']:>8}  reported 1-bits={r['reported_ones']:>11}  "
                f"synthetic edges={r['synthetic_edges']:>8}  peak RSS {r['peak_rss_mib']:.0f} MiB",
                flush=True,
            )
            for st in ("generate", "collect", "reconstruct"):
                print(
                    f"    {st:<12} {r[st]['seconds']:>9.2f} s   +{r[st]['peak_mib']:>8.1f} MiB",
                    flush=True,
                )
    if args.json:
        print(json.dumps({"args": vars(args), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
