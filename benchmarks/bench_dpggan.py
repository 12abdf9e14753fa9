"""DPGGAN / DPGVAE training: every graph's model trained in lanes (dpggan_lanes.py, what
releases use) against the graph-by-graph reference (dpggan.fit_and_generate), on a collection
of the mirror. CPU seconds (process time, one torch thread: the figures hold on a loaded
machine), the reference timed on the first ``--ref-graphs`` graphs and scaled to all, and
whether those graphs' released edges agree.

    python benchmarks/bench_dpggan.py                                  # DPGGAN, DBLP, 200 steps
    python benchmarks/bench_dpggan.py --model dpgvae --dataset imdb-collection --steps 100

Needs LDPGRAPH_DATA (the dataset mirror).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from ldpgraph.protocols.central import dpggan as dg
from ldpgraph.protocols.central import dpggan_lanes as dl
from ldpgraph.protocols.graph import split_by_offsets
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.simulation.datasets.load import load_dataset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="dpggan", choices=("dpggan", "dpgvae"))
    ap.add_argument("--dataset", default="dblp-collection")
    ap.add_argument("--steps", type=int, default=200, help="DP steps per graph (dpg_steps)")
    ap.add_argument("--ref-graphs", type=int, default=10, help="graphs the reference trains")
    args = ap.parse_args()
    torch.set_num_threads(1)
    graph = load_dataset(args.dataset)
    parts = split_by_offsets(graph.edges, np.asarray(graph.meta["graph_ptr"]))
    strategy = make_protocol(args.model, epsilon=1.0, dpg_steps=args.steps)
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


if __name__ == "__main__":
    main()
