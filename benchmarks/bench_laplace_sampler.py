"""The discrete Laplace sampler's cost per draw: the node's constant-work sampler against the
old, timing-leaky exact one (Canonne, Kamath & Steinke 2020, kept as a planted variant).

Printed per ε: the scalar path a node calls (``perturb``, one draw per call: the median and the
99th percentile of per-call wall time, and the spread of the medians by |noise| — 0, 1, ≥ 2 —
which is what a timing attack reads), and the batched path per draw (``perturb_many`` on 10^5
values; the old sampler's vectorised form is gone, so only the new one has a row there). The
machine's load moves every figure; the ratios are what to read.

    python benchmarks/bench_laplace_sampler.py
    python benchmarks/bench_laplace_sampler.py --draws 50000 --epsilons 0.8 4
"""

from __future__ import annotations

import argparse
import gc
import time

import numpy as np


def per_call(perturb, value: int, draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(noise, ns) of ``draws`` scalar calls."""
    rng = np.random.default_rng(seed)
    clock = time.perf_counter_ns
    noise = np.empty(draws, dtype=np.int64)
    ns = np.empty(draws, dtype=np.int64)
    for _ in range(1000):
        perturb(value, rng)
    gc.disable()
    try:
        for i in range(draws):
            t0 = clock()
            y = perturb(value, rng)
            ns[i] = clock() - t0
            noise[i] = y - value
    finally:
        gc.enable()
    return noise, ns


def main() -> None:
    from ldpgraph.protocols.laplace import DiscreteLaplace
    from ldpgraph.simulation.audit_planted import LeakyDiscreteLaplace

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--draws", type=int, default=100_000)
    ap.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 0.8, 4.0, 8.0])
    args = ap.parse_args()
    head = (
        f"{'ε':>5}  {'sampler':<14} {'words':>6}  {'median µs':>9}  {'p99 µs':>7}  "
        f"{'median by |K| = 0 / 1 / ≥2 (µs)':>31}  {'batched µs/draw':>15}"
    )
    print(head)
    print("-" * len(head))
    for eps in args.epsilons:
        for name, mech in (("constant-work", DiscreteLaplace(eps)), ("old (CKS)", None)):
            mech = mech if mech is not None else LeakyDiscreteLaplace(eps)
            noise, ns = per_call(mech.perturb, 5, args.draws, seed=1)
            a = np.abs(noise)
            by = [
                np.median(ns[m]) / 1e3 if m.any() else float("nan")
                for m in (a == 0, a == 1, a >= 2)
            ]
            words = f"{2 * mech.block}" if hasattr(mech, "block") else "varies"
            batched = ""
            if hasattr(mech, "perturb_many"):
                values = np.full(100_000, 5, dtype=np.int64)
                t0 = time.perf_counter()
                mech.perturb_many(values, np.random.default_rng(2))
                batched = f"{(time.perf_counter() - t0) / values.size * 1e6:.3f}"
            print(
                f"{eps:>5g}  {name:<14} {words:>6}  {np.median(ns) / 1e3:>9.2f}  "
                f"{np.percentile(ns, 99) / 1e3:>7.2f}  "
                f"{' / '.join(f'{b:.2f}' for b in by):>31}  {batched:>15}",
                flush=True,
            )


if __name__ == "__main__":
    main()
