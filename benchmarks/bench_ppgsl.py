"""PPGSL's learner on a real graph (issue 35): wall and CPU seconds of ``ppgsl.learn`` (all of
Algorithm 1 lines 3-19: the N₂ learner steps and the ⌈N₂/μ⌉ surrogate retrains of N₁ epochs
each), against the figures recorded before the sparse kernels.

    python benchmarks/bench_ppgsl.py                           # Cora-ML at the defaults
    python benchmarks/bench_ppgsl.py --n2 20 --n1 100 --mu 10  # 2 retrains: a quick look
    python benchmarks/bench_ppgsl.py --dataset cora --threads 1

CPU seconds (``time.process_time``) are the figure to compare on a shared machine: wall time
there counts the other jobs too (on the 2-core development machine under a load of 14-19, wall
was 4-6 times the CPU time, and CPU time itself rises with the load). The "before" figures
are not re-measured here (the old gather/scatter path is gone): they are the ones recorded in
docs/benchmarks.md, measured in one command beside the new path on the same machine.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from ldpgraph.protocols.central import ppgsl as pg
from ldpgraph.protocols.graph import canonical_edges
from ldpgraph.protocols.params import Params
from ldpgraph.simulation.datasets import load_dataset

#: Recorded before issue 35's kernels (docs/benchmarks.md, "PPGSL's learner"): CPU seconds
#: per learner iteration (a surrogate epoch or a learner step) on Cora-ML, one thread, and the
#: whole-run wall time the issue measured.
BEFORE_CPU_PER_ITERATION_S = {"cora-ml": 21.7 / 220}
BEFORE_RUN_S = {"cora-ml": 529.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="cora-ml")
    parser.add_argument("--n2", type=int, default=500, help="learner steps (default 500)")
    parser.add_argument("--n1", type=int, default=500, help="surrogate epochs (default 500)")
    parser.add_argument("--mu", type=int, default=50, help="retrain every μ steps (default 50)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    graph = load_dataset(args.dataset)
    n = graph.num_nodes
    edges = canonical_edges(np.asarray(graph.edges), n)
    public, sensitive = pg.split_sensitive(edges, 0.1, args.seed)
    defaults = {q.name: q.default for q in pg.PARAMS}
    p = Params({**defaults, "ppgsl_epochs": args.n2, "ppgsl_attack_epochs": args.n1,
                "ppgsl_mu": args.mu})  # fmt: skip
    iterations = args.n2 + math.ceil(args.n2 / args.mu) * args.n1
    full = 500 + math.ceil(500 / 50) * 500

    # Warm-up: torch's first optimizer imports torch._dynamo (about 2 CPU s), a one-off per
    # process that the recorded figures did not include.
    tiny = Params({**defaults, "ppgsl_epochs": 1, "ppgsl_attack_epochs": 1, "ppgsl_mu": 1})
    pg.learn(public, sensitive, np.asarray(graph.x), n, tiny, args.seed, num_threads=args.threads)
    cpu, wall = time.process_time(), time.perf_counter()
    learned = pg.learn(
        public, sensitive, np.asarray(graph.x), n, p, args.seed, num_threads=args.threads
    )
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    per = cpu / iterations
    print(f"{args.dataset}: {n} nodes, {len(public)} public edges, {len(sensitive)} sensitive, "
          f"{len(learned.pairs)} parameterised pairs; N2 {args.n2}, N1 {args.n1}, mu {args.mu} "
          f"({iterations} iterations), {args.threads} thread(s)")  # fmt: skip
    print("| path | CPU s | wall s | CPU ms / iteration | CPU s at the defaults (5 500 it.) |")
    print("|---|---|---|---|---|")
    before = BEFORE_CPU_PER_ITERATION_S.get(args.dataset)
    if before is not None:
        print(f"| before (recorded) | – | – | {1e3 * before:.1f} | {before * full:.0f} |")
    print(f"| now | {cpu:.1f} | {wall:.1f} | {1e3 * per:.1f} | {per * full:.0f} |")
    if before is not None:
        print(f"CPU per iteration: {before / per:.1f}x less than before")
    if args.dataset in BEFORE_RUN_S:
        print(f"(issue 35 recorded {BEFORE_RUN_S[args.dataset]:.0f} s for the whole "
              f"`ldpgraph run` before)")  # fmt: skip
    print(f"expected released edges {learned.weights.sum():.1f}")


if __name__ == "__main__":
    main()
