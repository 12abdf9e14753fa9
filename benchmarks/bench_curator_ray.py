"""The curator on Ray: HoGS's row blocks on 1 and on 2 Ray nodes against threads, same edges.

Starts a local Ray cluster of ``--nodes`` nodes with one CPU each (``ray start --head`` + ``ray
start --address``, on loopback, ended by pid; tests/support/ray_nodes.py), collects one HoGS
report set (local backend) and releases it ``--repeats`` times with the curator's row blocks
(:func:`ldpgraph.protocols.ldp.blocks.map_blocks`: the posterior of the reported pairs and the
feature reconstruction's passes) on this process's threads, as Ray tasks pinned to the head
node (1 worker), and as Ray tasks on every node (``--nodes`` workers). Prints, per setting,
the wall seconds inside the block maps (the part Ray runs), the seconds the tasks computed,
the blocks and the whole reconstruction, and checks that every release has the same edges and
features. Per-block cost = task seconds / blocks (the cost model of docs/ray.md).

    python benchmarks/bench_curator_ray.py --n 50000 --d 64 --epsilon 8

Timings on a shared machine vary: run the settings alternately (``--repeats``) and compare
within one invocation.
"""

from __future__ import annotations

import argparse
import json
import pickle
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


class _TimedThreads:
    """map_blocks on threads (the default), with the wall seconds inside the maps counted."""

    def __init__(self, measure_shipped: bool = False) -> None:
        self.wall = 0.0
        self.blocks = 0
        self.measure_shipped = measure_shipped
        #: Per block function: [blocks, pickled bytes of the function (what Ray ships once per
        #: node), bytes of the results].
        self.per_fn: dict[str, list[int]] = {}

    def map(self, fn, items):
        from ldpgraph.protocols.ldp.blocks import threaded_in_order

        name = getattr(fn, "__qualname__", type(fn).__name__)
        shipped = len(pickle.dumps(fn, protocol=5)) if self.measure_shipped else 0
        back = 0
        t0 = time.perf_counter()
        for out in threaded_in_order(fn, items):
            if self.measure_shipped:
                back += len(pickle.dumps(out, protocol=5))
            yield out
        self.blocks += len(items)
        self.wall += time.perf_counter() - t0
        mine = self.per_fn.setdefault(name, [0, 0, 0])
        mine[0] += len(items)
        mine[1] = max(mine[1], shipped)
        mine[2] += back


class _JoinBlocks:
    """The all-pairs similarity join's kernel, one block of rows: the dot products of rows
    a..a+block with every later row (float32 BLAS on 0/1 rows, exact counts) and the pairs whose
    cosine reaches ``t``. Picklable: what a blocked join ships to each worker once."""

    def __init__(self, bits: np.ndarray, t: float, block: int) -> None:
        self.x = bits.astype(np.float32)
        self.norm = np.sqrt(self.x.sum(axis=1))
        self.t = t
        self.block = block

    def run(self, a: int) -> tuple[np.ndarray, np.ndarray]:
        b = min(a + self.block, self.x.shape[0])
        dots = self.x[a:b] @ self.x[a:].T
        cos = dots / np.maximum(self.norm[a:b, None] * self.norm[None, a:], 1e-12)
        i, j = np.nonzero(cos >= self.t)
        keep = j > i
        return i[keep] + a, j[keep] + a


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--degree", type=float, default=10.0)
    ap.add_argument("--epsilon", type=float, default=8.0)
    ap.add_argument("--protocol", default="hogs")
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--block-entries", type=int, default=0, help="report entries per block")
    ap.add_argument(
        "--join-rows",
        type=int,
        default=0,
        help="also time the all-pairs join kernel on this many random 1-bit rows of d bits",
    )
    ap.add_argument("--join-block", type=int, default=500, help="rows per join block")
    args = ap.parse_args(argv)

    from ldpgraph.protocols.ldp import blocks, reported_pairs
    from ldpgraph.simulation import pipeline, raycluster
    from ldpgraph.simulation.config import RunConfig
    from ldpgraph.simulation.curator_ray import RayBlocks
    from tests.support.ray_nodes import local_cluster

    if args.block_entries:
        reported_pairs.BLOCK_ENTRIES = args.block_entries
    spec = f"synthetic:n={args.n},classes=4,d={args.d},avg_degree={args.degree:g}"
    config = RunConfig(
        args.protocol, dataset=spec, epsilon=args.epsilon, backend="local", epochs=1, seed=1
    ).validate()
    prepared = pipeline.prepare(config)
    replay = pipeline.replay_for(config, prepared.graph)

    def release(executor) -> tuple[dict, np.ndarray, np.ndarray]:
        with blocks.using(executor):
            t0 = time.perf_counter()
            out, timings = pipeline.release(
                config, prepared.graph, split=prepared.split, replay=replay
            )
            total = time.perf_counter() - t0
        return {"release_s": total, **timings}, out.edges, out.x

    rows: dict[str, list[dict]] = {}
    reference = None
    t_up = time.perf_counter()
    with local_cluster(nodes=args.nodes, cpus_per_node=1) as cluster:
        up = time.perf_counter() - t_up
        raycluster.connect(cluster.address, include_dashboard=False, log_to_driver=False)
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        head = ray.get_runtime_context().get_node_id()  # the driver's node: the head
        alive = [node["NodeID"] for node in ray.nodes() if node.get("Alive")]
        settings = ["threads", "ray-1", f"ray-{args.nodes}"]
        # Warm the workers (their first task imports ldpgraph) and the replayed reports.
        sizes = _TimedThreads(measure_shipped=True)
        release(sizes)
        for name, (nb, shipped, back) in sizes.per_fn.items():
            print(
                f"{name}: {nb} blocks, {shipped / 2**20:.1f} MiB shipped once per node and map, "
                f"{back / max(nb, 1) / 2**10:.1f} KiB of results per block",
                flush=True,
            )
        warm = RayBlocks()
        release(warm)
        for _ in range(args.repeats):
            for name in settings:
                if name == "threads":
                    ex = _TimedThreads()
                else:
                    ex = RayBlocks()
                    if name == "ray-1":
                        ex.options = {
                            "scheduling_strategy": NodeAffinitySchedulingStrategy(head, soft=False)
                        }
                times, edges, x = release(ex)
                if reference is None:
                    reference = (edges, x)
                same = np.array_equal(edges, reference[0]) and np.array_equal(x, reference[1])
                row = {
                    **{k: round(v, 3) for k, v in times.items()},
                    "map_wall_s": round(ex.wall, 3),
                    "same_edges_and_features": bool(same),
                }
                if isinstance(ex, RayBlocks):
                    row.update(
                        task_s=round(ex.seconds, 3),
                        blocks=sum(ex.per_node.values()),
                        nodes_used=len(ex.per_node),
                        per_function=ex.summary()["per_function"],
                    )
                else:
                    row["blocks"] = ex.blocks
                rows.setdefault(name, []).append(row)
                print(name, json.dumps(row), flush=True)
        if args.join_rows:
            bits = np.random.default_rng(5).integers(0, 2, (args.join_rows, args.d), np.uint8)
            job = _JoinBlocks(bits, 0.75, args.join_block)
            starts = list(range(0, args.join_rows, args.join_block))
            pairs = args.join_rows * (args.join_rows - 1) // 2
            ref_pairs = None
            for _ in range(args.repeats):
                for name in settings:
                    ex = _TimedThreads() if name == "threads" else RayBlocks()
                    if name == "ray-1":
                        ex.options = {
                            "scheduling_strategy": NodeAffinitySchedulingStrategy(head, soft=False)
                        }
                    with blocks.using(ex):
                        found = list(blocks.map_blocks(job.run, starts))
                    got = np.concatenate([i * args.join_rows + j for i, j in found])
                    ref_pairs = got if ref_pairs is None else ref_pairs
                    row = {
                        "map_wall_s": round(ex.wall, 3),
                        "blocks": len(starts),
                        "pairs": pairs,
                        "same_pairs": bool(np.array_equal(got, ref_pairs)),
                    }
                    if isinstance(ex, RayBlocks):
                        row.update(task_s=round(ex.seconds, 3), nodes_used=len(ex.per_node))
                    rows.setdefault(f"join {name}", []).append(row)
                    print("join", name, json.dumps(row), flush=True)
        ray.shutdown()

    print(f"\n{len(alive)} Ray nodes up in {up:.0f} s; n={args.n}, d={args.d}, ε={args.epsilon}")
    print(f"edges released: {reference[0].shape[0]}")
    print(
        f"{'setting':10} {'map wall s (median)':>20} {'task s':>8} {'blocks':>7} {'release s':>10}"
    )
    med = {}
    for name, rs in rows.items():
        med[name] = statistics.median(r["map_wall_s"] for r in rs)
        task = statistics.median(r.get("task_s", float("nan")) for r in rs)
        rel = statistics.median(r.get("release_s", float("nan")) for r in rs)
        print(f"{name:10} {med[name]:20.2f} {task:8.2f} {rs[0]['blocks']:7d} {rel:10.2f}")
    many = f"ray-{args.nodes}"
    ratio = med["ray-1"] / med[many]
    print(f"speed-up of the block maps, 1 -> {args.nodes} Ray workers: {ratio:.2f}x")
    if args.join_rows:
        ratio = med["join ray-1"] / med[f"join {many}"]
        print(f"speed-up of the join kernel, 1 -> {args.nodes} Ray workers: {ratio:.2f}x")
        for name in settings:
            rs = rows[f"join {name}"]
            per = statistics.median(r.get("task_s", r["map_wall_s"]) for r in rs) / rs[0]["pairs"]
            print(f"join {name}: {per * 1e9:.2f} s per 10^9 pairs (d = {args.d}; task seconds)")
    ok = all(
        r.get("same_edges_and_features", r.get("same_pairs")) for rs in rows.values() for r in rs
    )
    print("same edges and features in every release:", ok)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
