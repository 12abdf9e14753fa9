"""Collection wall time and peak memory: the ``flower`` backend (k = 1 and automatic k) beside
the ``local`` backend, for HoGS reports on Cora and on synthetic graphs.

Each case runs in its own process. "collect" is the report round alone; "engine" is Ray's and
Flower's start-up (``ray.init``, actors, the hello round that also warms them) plus shutdown,
which the per-node overhead excludes. Peak memory is the largest summed resident set of the
driver and every process under the run's private Ray temp dir, sampled every 20 ms.

    python benchmarks/bench_collection.py                  # cora, 1e4, 1e5; k=1 up to 1e4 nodes
    python benchmarks/bench_collection.py --datasets cora --epsilon 6
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path


def tree_rss_mib(extra_roots: list[str]) -> float:
    from ldpgraph.simulation.processes import pids_under

    pids = {os.getpid()}
    for root in extra_roots:
        pids.update(pids_under(root))
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm") as fh:
                total += int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            pass
    return total / 2**20


def one(dataset: str, backend: str, k: int, args: argparse.Namespace) -> dict:
    from ldpgraph.simulation.config import RunConfig
    from ldpgraph.simulation.datasets import load_dataset
    from ldpgraph.simulation.pipeline import release as collect_and_release

    graph = load_dataset(dataset)
    run_dir = Path(f"/tmp/ldpg-bench-{os.getpid()}")
    cfg = RunConfig(
        dataset=dataset,
        protocol="hogs",
        epsilon=args.epsilon,
        backend=backend,
        nodes_per_client=k,
        run_dir=str(run_dir),
        round_timeout=3600,
    ).validate()
    peak = [tree_rss_mib([])]
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            marker = run_dir / "ray-temp-dir"
            roots = [marker.read_text()] if marker.is_file() else []
            peak[0] = max(peak[0], tree_rss_mib(roots))
            stop.wait(0.02)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    t0 = time.perf_counter()
    release, timings = collect_and_release(cfg, graph)
    wall = time.perf_counter() - t0
    stop.set()
    th.join()
    n = graph.num_nodes
    return {
        "dataset": dataset,
        "backend": backend,
        "n": n,
        "k": cfg.resolved_nodes_per_client(n) if backend == "flower" else None,
        "collect_s": round(timings["collect"], 3),
        "engine_s": round(
            sum(timings.get(x, 0.0) for x in ("engine_start", "hello", "engine_stop")), 3
        ),
        "wall_s": round(wall, 3),
        "peak_mib": round(peak[0], 1),
        "fingerprint": release.fingerprint()[:16],
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--datasets",
        nargs="+",
        default=["cora", "synthetic:n=10000,d=500", "synthetic:n=100000,d=500"],
    )
    ap.add_argument("--epsilon", type=float, default=8.0)
    ap.add_argument(
        "--max-k1-nodes",
        type=int,
        default=10_000,
        help="skip k = 1 above this many nodes (it costs ~15-40 ms per node)",
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        ds, backend, k = args.one
        print(json.dumps(one(ds, backend, int(k), args)))
        return
    rows = []
    base = [sys.executable, __file__, "--epsilon", str(args.epsilon)]
    for ds in args.datasets:
        from ldpgraph.simulation.datasets import load_dataset

        n = load_dataset(ds).num_nodes
        cases = [("local", 0), ("flower", 0)] + ([("flower", 1)] if n <= args.max_k1_nodes else [])
        local = None
        for backend, k in cases:
            out = subprocess.run(
                [*base, "--one", ds, backend, str(k)], capture_output=True, text=True
            )
            if out.returncode:
                print(f"{ds} {backend} k={k}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(r)
            if backend == "local":
                local = r
            extra = ""
            if local and backend == "flower":
                per_node = (r["collect_s"] - local["collect_s"]) / r["n"] * 1e3
                extra = f"  +{per_node:.3f} ms/node over local"
                r["overhead_ms_per_node"] = round(per_node, 4)
            if not args.json:
                print(
                    f"{ds:<28} {backend:<6} k={str(r['k']):<5} collect {r['collect_s']:>8.2f} s"
                    f"  engine {r['engine_s']:>6.1f} s  peak {r['peak_mib']:>8.0f} MiB  "
                    f"{r['fingerprint']}{extra}",
                    flush=True,
                )
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
