"""DPGGAN / DPGVAE training cost. ``--training paper``: every graph's model trained in lanes
(dpggan_lanes.py, what paper-mode releases use) against the graph-by-graph reference
(dpggan.fit_and_generate), the reference timed on the first ``--ref-graphs`` graphs and scaled
to all, and whether those graphs' released edges agree. ``--training bounded`` (the default
training since issue 31): the whole release's training and generation
(dpggan_bounded_train.fit_and_generate_bounded) at its defaults, beside the paper's rule at the
same ε (σ = 5, T the most steps within ε, capped at 20,000, as experiments/dpggan-tables.toml),
its lanes timed on ``--steps`` steps and scaled to T (the lanes' cost is linear in the steps).
CPU seconds (process time, one torch thread: the figures hold on a loaded machine).

    python benchmarks/bench_dpggan.py                   # paper lanes, DBLP, 200 steps
    python benchmarks/bench_dpggan.py --model dpgvae --dataset imdb-collection --steps 100
    python benchmarks/bench_dpggan.py --training bounded --dataset imdb-collection --epsilon 1

Needs LDPGRAPH_DATA (the dataset mirror).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from ldpgraph.protocols.central import dpggan as dg
from ldpgraph.protocols.central import dpggan_bounded_train as dbt
from ldpgraph.protocols.central import dpggan_lanes as dl
from ldpgraph.protocols.graph import split_by_offsets
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.simulation.datasets.load import load_dataset


def paper_lanes(args: argparse.Namespace, parts: list) -> None:
    strategy = make_protocol(args.model, epsilon=1.0, dpg_steps=args.steps, dpg_training="paper")
    plan = strategy.plan()
    chunks = dl.chunks_by_size([n for _, n in parts])
    start = time.process_time()
    lanes = dl.fit_and_generate_many(parts, plan, strategy.p, strategy.gan, 0)
    lanes_s = time.process_time() - start
    k = min(args.ref_graphs, len(parts))
    start = time.process_time()
    ref = [dg.fit_and_generate(e, n, plan, strategy.p, strategy.gan, 0, i)
           for i, (e, n) in enumerate(parts[:k])]  # fmt: skip
    ref_s = (time.process_time() - start) * len(parts) / k
    same = all(np.array_equal(a[0], b[0]) for a, b in zip(ref, lanes[:k], strict=True))
    print(f"{args.model} on {args.dataset}: {len(parts)} graphs in {len(chunks)} chunks, "
          f"{args.steps} steps each")  # fmt: skip
    print(f"  lanes      {lanes_s:8.1f} s CPU  ({1e3 * lanes_s / args.steps:.1f} ms a step)")
    print(f"  reference  {ref_s:8.1f} s CPU  (from {k} graphs, scaled to {len(parts)})")
    print(f"  speed-up   {ref_s / lanes_s:8.1f}x   same edges on those {k} graphs: {same}")


def bounded(args: argparse.Namespace, parts: list) -> None:
    s = make_protocol(args.model, epsilon=args.epsilon)
    plan = s.plan()
    start = time.process_time()
    _, info = dbt.fit_and_generate_bounded(parts, plan, s.p, s.gan, 0)
    bounded_s = time.process_time() - start
    paper = make_protocol(args.model, epsilon=args.epsilon, dpg_training="paper",
                          dpg_calibration="steps", dpg_sigma=5.0, dpg_steps=20_000,
                          dpg_edge_selection="topk_true")  # fmt: skip
    paper_t = paper.plan().steps
    short = make_protocol(args.model, epsilon=args.epsilon, dpg_training="paper",
                          dpg_calibration="steps", dpg_sigma=5.0, dpg_steps=args.steps,
                          dpg_edge_selection="topk_true")  # fmt: skip
    start = time.process_time()
    dl.fit_and_generate_many(parts, short.plan(), short.p, short.gan, 0)
    lanes_s = (time.process_time() - start) * paper_t / args.steps
    print(f"{args.model} on {args.dataset} at ε = {args.epsilon:g}: {len(parts)} graphs, "
          f"{info['records']} records")  # fmt: skip
    print(f"  bounded (default)  {bounded_s:8.1f} s CPU  T = {plan.steps}, mean batch "
          f"{info['mean_batch']:.0f} records, σ = {plan.sigma:.4g}, proven ε = "
          f"{s.privacy_report().epsilon:.4g}")  # fmt: skip
    print(f"  paper rule, lanes  {lanes_s:8.1f} s CPU  T = {paper_t} (timed on {args.steps} "
          f"steps, scaled), proven ε = ∞")  # fmt: skip
    print(f"  ratio              {lanes_s / bounded_s:8.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="dpggan", choices=("dpggan", "dpgvae"))
    ap.add_argument("--dataset", default="dblp-collection")
    ap.add_argument("--training", default="paper", choices=("paper", "bounded"))
    ap.add_argument("--epsilon", type=float, default=1.0, help="ε (--training bounded)")
    ap.add_argument(
        "--steps",
        type=int,
        default=200,
        help="DP steps per graph of the paper's lanes (timed; scaled for bounded)",
    )
    ap.add_argument("--ref-graphs", type=int, default=10, help="graphs the reference trains")
    args = ap.parse_args()
    torch.set_num_threads(1)
    graph = load_dataset(args.dataset)
    parts = split_by_offsets(graph.edges, np.asarray(graph.meta["graph_ptr"]))
    (bounded if args.training == "bounded" else paper_lanes)(args, parts)


if __name__ == "__main__":
    main()
