"""DP-SGD steps per second of DPAR's training loop: the generic per-example path (vmap of grad,
B materialised gradients) against DPAR's closed-form clipped sum, on data shaped like a DPAR
run (rows N of the q′-subsampled graph, binary features of width d, K neighbours per row,
Poisson batches of expected size B, dropout 0.1, hidden 32).

    python benchmarks/bench_dpar.py                        # Cora-ML shape: N 216, d 2879, c 7
    python benchmarks/bench_dpar.py --rows 2483 --features 8415 --classes 5   # Physics shape
    python benchmarks/bench_dpar.py --device cuda --steps 400
"""

from __future__ import annotations

import argparse
import functools
import time

import torch

from ldpgraph.protocols.central import dpsgd
from ldpgraph.protocols.central.dpar import (
    _init_mlp,
    _mask,
    target_clipped_sum,
    target_loss,
)


def run(args: argparse.Namespace, closed_form: bool) -> float:
    """Steps per second of ``args.steps`` DP-SGD steps (after 5 warm-up steps)."""
    device = args.device
    gen = torch.Generator(device=device).manual_seed(0)
    x = (torch.rand(args.rows, args.features, generator=gen, device=device) < 0.01).float()
    nbr = torch.randint(0, args.rows, (args.rows, args.k), generator=gen, device=device)
    w = torch.rand(args.rows, args.k, generator=gen, device=device)
    y = torch.randint(0, args.classes, (args.rows,), generator=gen, device=device)
    params = _init_mlp(args.features, args.hidden, args.classes, gen, device)

    def make_batch(i: torch.Tensor) -> tuple[torch.Tensor, ...]:
        xi = x[nbr[i]]
        keep_in = _mask(xi.shape, 0.1, gen, device)
        keep_h = _mask((*xi.shape[:2], args.hidden), 0.1, gen, device)
        return xi, w[i], y[i], keep_in, keep_h

    q = min(1.0, args.batch / args.rows)
    summed = target_clipped_sum if closed_form else None
    go = functools.partial(
        dpsgd.train, target_loss, params, args.rows, make_batch, generator=gen, clipped_sum=summed
    )
    go(plan=dpsgd.DpSgdPlan(q, 5, 1.0, 1.0, 0.005))
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    go(plan=dpsgd.DpSgdPlan(q, args.steps, 1.0, 1.0, 0.005))
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    return args.steps / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=216, help="N: training rows")
    ap.add_argument("--features", type=int, default=2879, help="d")
    ap.add_argument("--classes", type=int, default=7)
    ap.add_argument("--k", type=int, default=2, help="neighbours per row (Π's row width)")
    ap.add_argument("--batch", type=int, default=60, help="B: expected batch size")
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    shape = f"N={args.rows} d={args.features} c={args.classes} K={args.k} B={args.batch}"
    print(f"DPAR DP-SGD, {shape}, device {args.device}, {torch.get_num_threads()} threads")
    generic = run(args, closed_form=False)
    closed = run(args, closed_form=True)
    print(f"generic (vmap per-example grads): {generic:8.1f} steps/s")
    print(f"closed form (Gram-matrix norms):  {closed:8.1f} steps/s  ({closed / generic:.1f}x)")


if __name__ == "__main__":
    main()
