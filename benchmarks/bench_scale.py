"""Scale: HoGS through the ``local`` backend on synthetic graphs of 10^4 to 10^6 nodes.

For every n, a homophilous sparse SBM (``synthetic:``, average degree ~10, binary features) is
generated and one run goes through the pipeline's own stages: collect (every node's client
step, behind its guard), reconstruct (validation, assembly of the reports, HoGS's server step),
train (``--epochs`` epochs of GCN on ``--device``). Printed per n: the stage times, the run's
peak resident memory (the process, and the largest collection worker beside it), and two
references:

* ``old collect``: the former node-by-node loop (one ``Report`` object per node, in this
  process; ``--old-max`` caps the sizes it runs at, it costs ~100 µs a node);
* ``bare scan``: the floor of any collection: generating as many random report indices as the
  run's nodes reported 1-bits, with numpy on one core, then sort and unique (int64 keys).

Each measurement runs in its own process, so its memory figures are its own. With training,
the features-only floor (``features-only`` at the same ε and split: the 1-bit features the
server gets, no edges, ``--model mlp``) is trained on the same split beside it: a release is
worth its edges only above it.

``--tau auto`` (the default) is HoGS's τ = 0.5, except for ``hogs-arr`` where μ < 1: there
τ* = 1/(1 + ρ), ρ = p(1 − pμ)/((1 − p)(1 − (1 − p)μ)), at which a singly reported pair needs
s ≥ 0.5 as in HoGS (docs/reproduction/hogs-arr.md); at τ = 0.5 and μ = 0.015 every reported
noise 1 sharing a feature would be an edge (10^8 of them at 10^7 nodes). ``--join`` picks the
(0,0) similarity join (auto: exact where cheap, else LSH; docs/benchmarks.md).

    python benchmarks/bench_scale.py                          # n = 1e4, 1e5; ε = 16, split 0.5
    python benchmarks/bench_scale.py --sizes 1000000 --stages collect --old-max 0
    python benchmarks/bench_scale.py --sizes 100000 --epsilon 8 --workers 1 --device cuda
    python benchmarks/bench_scale.py --sizes 100000 --stages release --repeat 5  # best of 5
    python benchmarks/bench_scale.py --protocol hogs-arr --sizes 10000000 --d 64  # 5 epochs
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import replace

from rss import RssBetweenLines, cpu_seconds, peak_mib, sampled
from scale_table import print_table

#: From this many nodes on, ``--epochs`` defaults to :data:`LARGE_EPOCHS` instead of 50.
LARGE_N = 5_000_000
#: A few full-batch epochs: at 10^7 nodes (hogs-arr, d = 64) 5 GCN epochs beat the
#: features-only floor by ~23 points (docs/benchmarks.md), and 50 would take most of the run's
#: 30 minutes. Not from 10^6: there HoGS at ε = 16, d = 256 needs more than 5 (79 % against the
#: floor's 98 % on the GPU rerun).
LARGE_EPOCHS = 5


def epochs_for(n: int, args: argparse.Namespace) -> int:
    """``--epochs`` as given, else 50 below :data:`LARGE_N` nodes and 5 from it on."""
    if args.epochs is not None:
        return args.epochs
    return LARGE_EPOCHS if n >= LARGE_N else 50


def without_edges(prepared):
    """``prepared`` with the nodes' graph reduced to what the bench still reads once the
    release is made: the labels (accuracy), the features (the floor's collection) and the
    split. The edge list and the CSR the collection cached beside it go (at 10^7 nodes,
    5·10^7 edges: ~1.3 GiB held through training for nothing). The features-only floor's
    reports are the same either way: its nodes send features only."""
    import numpy as np

    g = prepared.graph
    meta = {k: v for k, v in g.meta.items() if k != "_adj"}
    light = replace(g, edges=np.zeros((0, 2), dtype=np.int64), meta=meta)
    return replace(prepared, graph=light, original=light)


def spec(n: int, args: argparse.Namespace) -> str:
    return (
        f"synthetic:n={n},classes={args.classes},avg_degree={args.avg_degree},d={args.d},"
        f"feature_density={args.feature_density},seed=0"
    )


def bench_tau(n: int, args: argparse.Namespace) -> float:
    """τ: as given, or for ``--tau auto`` HoGS's 0.5, and for hogs-arr with μ < 1 the τ* at
    which a singly reported pair is judged as HoGS judges it (module docstring)."""
    if args.tau != "auto":
        return float(args.tau)
    if args.protocol != "hogs-arr":
        return 0.5
    from ldpgraph.protocols.ldp.hogs_arr import MU, REPORT_CAP, keep_probability
    from ldpgraph.protocols.mechanisms import flip_probability

    eps_a = (1.0 - args.feature_share) * args.epsilon
    mu = keep_probability(args.mu or MU.default, REPORT_CAP.default, n, eps_a)
    if mu >= 1.0:
        return 0.5
    p = flip_probability(eps_a)
    rho = p * (1 - p * mu) / ((1 - p) * (1 - (1 - p) * mu))
    return 1.0 / (1.0 + rho)


def one(n: int, mode: str, args: argparse.Namespace) -> dict:
    """One measurement in this process: ``new`` (the pipeline's stages) or ``old`` (the
    node-by-node collection, then the same server step on its dict of reports)."""
    from ldpgraph.protocols.registry import make_protocol
    from ldpgraph.simulation import pipeline
    from ldpgraph.simulation.backends.local import (
        LocalCollector,
        collection_workers,
        run_protocol,
    )
    from ldpgraph.simulation.config import RunConfig

    config = RunConfig(
        dataset=spec(n, args),
        protocol=args.protocol,
        epsilon=args.epsilon,
        feature_share=args.feature_share,
        tau=bench_tau(n, args),
        steps=args.steps,
        join=args.join,
        **({"lsh_ring": args.lsh_ring} if args.lsh_ring is not None else {}),
        **({"mu": args.mu} if args.mu is not None and args.protocol == "hogs-arr" else {}),
        backend="local",
        epochs=epochs_for(n, args),
        device=args.device,
        metrics="accuracy",
        seed=0,
    ).validate()
    # Imported before any clock starts: torch's import (seconds) is no stage's cost.
    import ldpgraph.protocols.ldp.hogs  # noqa: F401
    import ldpgraph.server.training  # noqa: F401
    from ldpgraph.protocols.progress import stage

    rec: dict = {"n": n, "mode": mode, "tau": config.tau}
    stage(f"bench: generate {config.dataset}")
    with sampled(rec, "generate"):
        prepared = pipeline.prepare(config)
    graph, split = prepared.graph, prepared.split
    rec.update(edges=graph.num_edges, d=graph.num_features)
    protocol = make_protocol(args.protocol, **config.protocol_params())
    curator = pipeline.curator_view(graph, False, split, config.device)
    settings = config.node_settings()
    batched = mode == "new"
    workers = args.workers if batched else 1
    rec["workers"] = collection_workers(workers, n) if batched else 1
    collector = Counting(
        LocalCollector(graph, config.seed, settings, workers=workers, batched=batched)
    )
    if args.stages == "collect":
        from ldpgraph.server.rounds import round_message

        with sampled(rec, "collect"):
            collector.collect(protocol, round_message(protocol, 0, config.seed), args.d)
    else:
        stage(f"bench: collect and reconstruct ({args.protocol}, τ = {config.tau:.6g})")
        with sampled(rec, "release"):
            release, timings = run_protocol(
                protocol, graph, curator, config.seed, settings=settings, collector=collector
            )
        rec["collect_s"] = round(timings["collect"], 3)
        rec["reconstruct_s"] = round(timings["reconstruct"], 3)
        rec["synthetic_edges"] = release.num_edges
        rec["mu"] = release.stats.get("mu")
        rec["join"] = release.stats.get("join", "exact")
        rec["joined_pairs"] = release.stats.get("joined_pairs")
        rec["kept_pairs"] = release.stats.get("kept_pairs")  # held for the reconstruction
        if args.edges_out:
            import numpy as np

            np.save(f"{args.edges_out}-{n}.npy", release.edges)
        if mode == "new" and args.stages == "all":
            del graph  # as the collector's: the counts stay, the graph goes
            collector.inner = None
            prepared = without_edges(prepared)
            stage(f"bench: train ({release.num_edges} edges, {config.epochs} epochs)")
            with sampled(rec, "train"):
                sections, _ = pipeline.evaluate(config, prepared.original, split, release)
            rec["test_accuracy"] = sections.get("accuracy", {}).get("test")
            rec["train_device"] = sections.get("training", {}).get("device")
            del release
            if not args.no_floor:
                stage("bench: the features-only floor")
                rec.update(floor(config, prepared, curator, workers))
    rec["reported_ones"] = collector.ones
    rec["process_cpu_s"] = round(
        cpu_seconds(children=True), 1
    )  # this process and its finished workers
    rec["collect_cpu_s"] = round(collector.cpu, 3)
    rec["epochs"] = config.epochs
    rec["peak_rss_mib"] = peak_mib()
    rec["worker_peak_rss_mib"] = peak_mib(resource.RUSAGE_CHILDREN)
    return rec


def floor(config, prepared, curator, workers: int | None) -> dict:
    """The features-only floor at the same ε and split: its collection (features only, by
    fresh nodes' guards: the run's already spent their budget), and an MLP trained on its
    release with the run's epochs and split."""
    from dataclasses import replace

    from ldpgraph.protocols.registry import make_protocol
    from ldpgraph.simulation import pipeline
    from ldpgraph.simulation.backends.local import LocalCollector, run_protocol

    cfg = replace(config, protocol="features-only", model="mlp")
    settings = cfg.node_settings()
    collector = LocalCollector(prepared.graph, cfg.seed, settings, workers=workers, batched=True)
    protocol = make_protocol("features-only", **cfg.protocol_params())
    out: dict = {}
    with sampled(out, "floor"):
        release, _ = run_protocol(
            protocol, prepared.graph, curator, config.seed, settings=settings, collector=collector,
        )  # fmt: skip
        sections, _ = pipeline.evaluate(cfg, prepared.original, prepared.split, release)
    out["floor_accuracy"] = sections.get("accuracy", {}).get("test")
    return out


class Counting:
    """A collector that counts the reported 1-bits of what ``inner`` collects, and the CPU
    seconds it took (on a loaded machine the wall time says less)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.ones = 0
        self.cpu = 0.0

    def collect(self, protocol, message, length):
        c0 = cpu_seconds(children=True)
        replies = self.inner.collect(protocol, message, length)
        self.cpu += cpu_seconds(children=True) - c0
        reports = replies.reports
        if hasattr(reports, "indices"):  # a ReportBatch
            self.ones += int(reports.indices.size)
        else:
            self.ones += sum(r.adjacency.size for r in reports.values() if r.adjacency is not None)
        return replies


def bare_scan(n: int, count: int) -> dict:
    """Generate ``count`` random report keys (row·n + column, int64) on one core, sort them
    and drop duplicates: what any collection of these reports at least costs."""
    import numpy as np

    rng = np.random.default_rng(0)
    rec: dict = {"n": n, "mode": "scan", "count": count}
    t0 = time.perf_counter()
    keys = np.empty(count, dtype=np.int64)
    step = 1 << 24
    for lo in range(0, count, step):  # chunks: the generator's temporaries stay small
        hi = min(lo + step, count)
        keys[lo:hi] = rng.integers(0, n * n, hi - lo)
    t1 = time.perf_counter()
    keys.sort()
    t2 = time.perf_counter()
    unique = np.empty(count, dtype=bool)
    unique[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=unique[1:])
    kept = int(unique.sum())
    t3 = time.perf_counter()
    rec.update(
        generate_s=round(t1 - t0, 3), sort_s=round(t2 - t1, 3), unique_s=round(t3 - t2, 3),
        scan_s=round(t3 - t0, 3), unique_keys=kept, peak_rss_mib=peak_mib(),
    )  # fmt: skip
    return rec


def run_child(n: int, mode: str, args: argparse.Namespace, **extra) -> dict:
    """:func:`one` (or the scan) in a fresh process; its record, or the error it ended with."""
    child = json.dumps({**vars(args), **extra, "one": n, "mode": mode})
    out = subprocess.run(
        [sys.executable, __file__, "--child", child],
        stdout=subprocess.PIPE,
        stderr=None if getattr(args, "progress", False) else subprocess.PIPE,
        text=True,
    )
    if out.returncode != 0:
        tail = (out.stderr or out.stdout or "").strip().splitlines()[-3:]
        return {"n": n, "mode": mode, "error": " | ".join(tail) or f"exit {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument(
        "--protocol",
        choices=("hogs", "hogs-arr"),
        default="hogs",
        help="hogs-arr: asymmetric RR, μ from its default report cap (5·10^8 noise 1s in all)",
    )
    ap.add_argument("--epsilon", type=float, default=16.0)
    ap.add_argument("--feature-share", type=float, default=0.5, help="ε_f = share·ε (δ)")
    ap.add_argument(
        "--tau",
        default="auto",
        help="edge threshold; auto: 0.5, or τ* for hogs-arr with μ < 1 (module docstring)",
    )
    ap.add_argument(
        "--join", choices=("auto", "exact", "lsh"), default="auto", help="(0,0) similarity join"
    )
    ap.add_argument(
        "--lsh-ring", type=int, help="LSH join: rows per row and band in over-full buckets"
    )
    ap.add_argument("--mu", type=float, help="hogs-arr: the cap on μ (default: the protocol's)")
    ap.add_argument("--no-floor", action="store_true", help="skip the features-only floor")
    ap.add_argument("--edges-out", help=argparse.SUPPRESS)  # bench_join: save the edges
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument(
        "--epochs",
        type=int,
        help=f"GCN (and floor MLP) epochs; default 50, and {LARGE_EPOCHS} from "
        f"n = {LARGE_N:.0e} on (full-batch epochs on 10^7 nodes take minutes)",
    )
    ap.add_argument("--device", default="cpu", help="training device: cpu, cuda, auto")
    ap.add_argument("--classes", type=int, default=5)
    ap.add_argument("--avg-degree", type=float, default=10.0)
    ap.add_argument("--d", type=int, default=256, help="binary feature dimension")
    ap.add_argument("--feature-density", type=float, default=0.05)
    ap.add_argument(
        "--workers", type=int, default=None, help="collection processes (default: automatic)"
    )
    ap.add_argument(
        "--old-max",
        type=int,
        default=100_000,
        help="run the former node-by-node collection up to this n (0: never)",
    )
    ap.add_argument(
        "--stages",
        choices=("all", "release", "collect"),
        default="all",
        help="all: collect, reconstruct, train; release: no training; collect: collection only",
    )
    ap.add_argument("--no-scan", action="store_true", help="skip the bare-scan floor")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each size this many times and report the fastest (and the fastest scan)",
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--progress", action="store_true", help="print the run's stage lines (stderr) as it goes"
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child = argparse.Namespace(**json.loads(args.child))
        if child.mode == "scan":
            print(json.dumps(bare_scan(child.one, child.scan_count)))
            return
        from ldpgraph.protocols import progress

        t0 = time.perf_counter()
        memory = RssBetweenLines()

        def say(message: str) -> None:
            now, peak = memory.line()
            # CPU seconds too: on the loaded 2-core machine the wall clock says little.
            print(
                f"[{time.perf_counter() - t0:7.1f}s] [cpu {cpu_seconds(children=True):7.1f}s] "
                f"[rss {now:5.2f} "
                f"GiB, peak since last line {peak:5.2f} GiB] {message}",
                file=sys.stderr,
                flush=True,
            )

        with progress.listening(say if getattr(child, "progress", False) else None):
            print(json.dumps(one(child.one, child.mode, child)))
        memory.stop()
        return
    rows: list[dict] = []
    if not args.json:
        print(
            f"{args.protocol}, local backend, ε = {args.epsilon:g} (split {args.feature_share:g}), "
            f"d = {args.d}, avg degree {args.avg_degree:g}, "
            f"{args.epochs or f'50 (< {LARGE_N:.0e} nodes) / {LARGE_EPOCHS}'} epochs on "
            f"{args.device}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}",
            flush=True,
        )
    for n in args.sizes:
        if n <= args.old_max:
            rows.append(run_child(n, "old", args))
        # The fastest of --repeat runs (collection + reconstruction), and the fastest scan:
        # on a shared 2-core machine one run can be 1.5x another.
        tries = [run_child(n, "new", args) for _ in range(args.repeat)]
        new = min(tries, key=lambda r: (r.get("collect_s") or 0) + (r.get("reconstruct_s") or 0))
        new["repeats"] = len(tries)
        rows.append(new)
        if not args.no_scan and new.get("reported_ones", 0) > 0:
            scans = [
                run_child(n, "scan", args, scan_count=new["reported_ones"])
                for _ in range(args.repeat)
            ]
            scan = min(scans, key=lambda r: r.get("scan_s", float("inf")))
            new["scan_s"] = scan.get("scan_s")
            new["scan"] = scan
        if not args.json:
            print_table([r for r in rows if r["n"] == n], header=n == args.sizes[0])
    if args.json:
        print(json.dumps({"args": vars(args), "rows": rows}, indent=2))
    else:
        print("\n(cpu): CPU seconds of the collection, its workers included. (c+r)/scan: "
              "collection + reconstruction against the bare scan of the same number of report "
              "indices (one core).")  # fmt: skip


if __name__ == "__main__":
    main()
