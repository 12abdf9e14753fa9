"""DPAR's speed: DP-SGD steps per second of its training loop three ways, and the wall time of
whole releases on a real dataset.

Steps (data shaped like a DPAR run: rows N of the q′-subsampled graph, binary features of width
d at ``--density``, K neighbours per row, Poisson batches of expected size B, dropout 0.1,
hidden 32): ``generic`` (vmap of grad, B materialised gradients), ``dense`` (the closed-form
clipped sum over dense inputs, per-tensor Adam: DPAR before issue 35) and ``sparse`` (the
clipped sum over the nonzero inputs, fused Adam: DPAR now).

    python benchmarks/bench_dpar.py                        # Cora-ML shape: N 216, d 2879, c 7
    python benchmarks/bench_dpar.py --rows 1320 --features 6805 --classes 15   # Coauthor-CS
    python benchmarks/bench_dpar.py --release coauthor-cs  # whole releases (LDPGRAPH_DATA)
    python benchmarks/bench_dpar.py --release cora-ml --run "dpar-bounded 8 1 column_rows_cap=2"
    python benchmarks/bench_dpar.py --device cuda --steps 400

``--release DATASET`` times ``Dpar.release`` (wall and CPU seconds: on shared cores the CPU
time is the steadier figure) (DP-APPR, DP-SGD, inference; no collection round:
every node uploads, as ``ldpgraph run --trust-curator``) for each ``--protocols`` at
``--epsilon``, the paper's 80 % training split, seed 0, and prints the test accuracy beside it.
Run it once with ``PYTHONPATH`` pointing at an older checkout's package for the before figure.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

import torch

from ldpgraph.protocols.central import dpsgd
from ldpgraph.protocols.central.dpar import _init_mlp, _mask, target_clipped_sum, target_loss


def run(args: argparse.Namespace, path: str) -> float:
    """Steps per second of ``args.steps`` DP-SGD steps (after 5 warm-up steps) on ``path``."""
    device = args.device
    gen = torch.Generator(device=device).manual_seed(0)
    x = (torch.rand(args.rows, args.features, generator=gen, device=device) < args.density).float()
    nbr = torch.randint(0, args.rows, (args.rows, args.k), generator=gen, device=device)
    w = torch.rand(args.rows, args.k, generator=gen, device=device)
    y = torch.randint(0, args.classes, (args.rows,), generator=gen, device=device)
    params = _init_mlp(args.features, args.hidden, args.classes, gen, device)

    def make_batch(i: torch.Tensor) -> tuple[torch.Tensor, ...]:
        xi = x[nbr[i]]
        keep_in = _mask(xi.shape, 0.1, gen, device)
        keep_h = _mask((*xi.shape[:2], args.hidden), 0.1, gen, device)
        return xi, w[i], y[i], keep_in, keep_h

    extra: dict = {}
    if path == "sparse":
        from ldpgraph.protocols.central.dpar_model import (
            SparseFeatures,
            sparse_clipped_sum,
            sparse_target_batch,
        )

        feats = SparseFeatures.of(x.cpu().numpy(), device)

        def make_batch(i: torch.Tensor) -> tuple[torch.Tensor, ...]:  # noqa: F811
            return sparse_target_batch(feats, nbr[i], w[i], y[i], 0.1, args.hidden, gen)

        extra = {"clipped_sum": sparse_clipped_sum, "fused_adam": True}
    elif path == "dense":
        extra = {"clipped_sum": target_clipped_sum}
    q = min(1.0, args.batch / args.rows)
    go = functools.partial(
        dpsgd.train, target_loss, params, args.rows, make_batch, generator=gen, **extra
    )
    go(plan=dpsgd.DpSgdPlan(q, 5, 1.0, 1.0, 0.005))
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    go(plan=dpsgd.DpSgdPlan(q, args.steps, 1.0, 1.0, 0.005))
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return args.steps / (time.perf_counter() - start)


def release(args: argparse.Namespace) -> None:
    """Wall time and accuracy of whole releases on ``args.release`` (one JSON line each):
    every ``--protocols`` entry at ``--epsilon``, seed 0, or each ``--run``
    ("PROTOCOL EPS SEED k=v ...")."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
    from dpar_proven import DELTA, _setup  # the same split and seed as ``ldpgraph run``

    from ldpgraph.protocols.registry import make_protocol

    runs = args.run or [f"{name} {args.epsilon} 0" for name in args.protocols.split(",")]
    graph, split, curator, up = _setup(args.release, "dpar-gm")
    for line in runs:
        name, eps, seed, *rest = line.split()
        params = {k: float(v) if "." in v else int(v) for k, v in (a.split("=") for a in rest)}
        strategy = make_protocol(name, epsilon=float(eps), delta=DELTA[args.release], **params)
        start, cpu = time.perf_counter(), time.process_time()
        rel = strategy.release(up, curator, int(seed))
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu

        def acc(nodes, model=rel.model):
            return round(float((model.predict(nodes) == graph.y[nodes]).mean()), 4)

        out = {"dataset": args.release, "protocol": name, "epsilon": float(eps), "seed": int(seed),
               **params, "release_s": round(wall, 1), "cpu_s": round(cpu, 1),
               "val_accuracy": acc(split.val), "test_accuracy": acc(split.test),
               "headline": rel.privacy.epsilon, "D": rel.stats["column_rows"],
               "noise_multiplier": rel.stats["noise_multiplier"],
               "sgd_steps": rel.stats["sgd_steps"], "threads": torch.get_num_threads(),
               "package": str(Path(dpsgd.__file__).parents[2])}  # fmt: skip
        print(json.dumps(out), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=216, help="N: training rows")
    ap.add_argument("--features", type=int, default=2879, help="d")
    ap.add_argument("--density", type=float, default=0.01, help="share of nonzero features")
    ap.add_argument("--classes", type=int, default=7)
    ap.add_argument("--k", type=int, default=2, help="neighbours per row (Π's row width)")
    ap.add_argument("--batch", type=int, default=60, help="B: expected batch size")
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--paths", default="generic,dense,sparse", help="step paths to time")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    ap.add_argument("--release", metavar="DATASET", help="time whole releases instead")
    ap.add_argument("--protocols", default="dpar-gm,dpar-features")
    ap.add_argument("--epsilon", type=float, default=8.0)
    ap.add_argument("--run", action="append", help='with --release: "PROTOCOL EPS SEED k=v ..."')
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.release:
        release(args)
        return
    shape = f"N={args.rows} d={args.features} density={args.density:g} c={args.classes} "
    shape += f"K={args.k} B={args.batch}"
    print(f"DPAR DP-SGD, {shape}, device {args.device}, {torch.get_num_threads()} threads")
    rates = {path: run(args, path) for path in args.paths.split(",")}
    base = rates.get("dense", next(iter(rates.values())))
    for path, rate in rates.items():
        print(f"{path:8s} {rate:8.1f} steps/s  ({rate / base:.1f}x dense)")


if __name__ == "__main__":
    main()
