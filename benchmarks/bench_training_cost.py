"""The training estimate (server/training_cost.py) beside measured epochs: full-batch training
of random releases on the CPU (or ``--device``), the estimate's seconds per epoch against the
median measured epoch after the first (which also builds the cached normalisation).

    python benchmarks/bench_training_cost.py                      # 3·10^4 and 10^5 nodes, GCN
    python benchmarks/bench_training_cost.py --models gcn sage gat mlp --sizes 40000
"""

from __future__ import annotations

import argparse
import time
from types import SimpleNamespace

import numpy as np


def release(n: int, d: int, degree: int, density: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    e = rng.integers(0, n, (n * degree // 2, 2))
    e = e[e[:, 0] != e[:, 1]]
    e.sort(axis=1)
    edges = np.unique(e, axis=0)
    x = (rng.random((n, d)) < density).astype(np.uint8)
    y = rng.integers(0, 4, n)
    perm = rng.permutation(n)
    split = SimpleNamespace(
        train=perm[: n // 2], val=perm[n // 2 : 3 * n // 4], test=perm[3 * n // 4 :]
    )
    return edges, x, y, split


def measured_epoch(edges, x, y, split, cfg, device: str) -> float:
    """The median epoch after the first of one full-batch training."""
    from ldpgraph.server.training import train_and_evaluate

    stamps: list[float] = []
    train_and_evaluate(edges, x, y, split, cfg, seed=0, device=device,
                       progress=lambda e, v: stamps.append(time.perf_counter()))  # fmt: skip
    return float(np.median(np.diff(stamps)))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[30_000, 100_000])
    ap.add_argument("--models", nargs="+", default=["gcn"])
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--density", type=float, default=0.4, help="share of 1s in the features")
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()

    from ldpgraph.server.training import TrainConfig
    from ldpgraph.server.training_cost import estimate

    print(f"{'n':>8} {'model':>6} {'estimate/epoch':>15} {'measured/epoch':>15} {'ratio':>6}")
    for n in args.sizes:
        edges, x, y, split = release(n, args.d, 10, args.density)
        for model in args.models:
            cfg = TrainConfig(model=model, epochs=args.epochs)
            est = estimate(n, len(edges), x, cfg, 4, args.device)
            measured = measured_epoch(edges, x, y, split, cfg, args.device)
            ratio = measured / est.seconds_per_epoch
            print(f"{n:>8} {model:>6} {est.seconds_per_epoch:>14.3f}s {measured:>14.3f}s "
                  f"{ratio:>6.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
