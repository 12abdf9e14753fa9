"""Planted broken variants of the node's mechanisms, for the audit's own tests and
``benchmarks/bench_laplace_sampler.py``: an audit that cannot fail proves nothing, so each row
is shown to FAIL on a variant with the flaw it exists to catch.

None of this is on a node's code path: the client imports :mod:`ldpgraph.protocols`, never this
module. The variants are

* :class:`LeakyDiscreteLaplace`: the exact discrete Laplace sampler nodes ran before the
  constant-work one (Canonne, Kamath & Steinke, NeurIPS 2020, Algorithms 1–2). Its output law is
  exact, but its loop count grows with |noise|, so its time tells the noise (Jin et al., IEEE S&P
  2022, §IV): the ``timing`` row must fail on it;
* :func:`half_true_noise`: the node's scalar sampler sending the true value half the time (the
  ``degree-node`` and ``degree-batch`` rows must fail; the batched ``discrete-laplace`` row
  cannot see it, which is why the node rows exist);
* :func:`half_true_noises`: the same flaw in the batched sampler (``ldpgen-vector`` and
  ``discrete-laplace`` must fail);
* :func:`overspent_flip_probability`: randomized response flipping at ε·(1 + 2 %) while it
  claims ε (the ``rr-rate`` row must fail at ε = 8).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

#: The old sampler's rate: ε/Δ rounded down to a multiple of 2^−32.
RATE_DENOMINATOR = 1 << 32


def sampling_rate(epsilon: float, sensitivity: int = 1) -> tuple[int, int]:
    """(s, t) coprime, s/t = ⌊(ε/Δ)·2^32⌋/2^32 ≤ ε/Δ (the old sampler's decay rate)."""
    num, den = Fraction(float(epsilon)).as_integer_ratio()
    s = num * RATE_DENOMINATOR // (den * int(sensitivity))
    g = math.gcd(s, RATE_DENOMINATOR)
    return s // g, RATE_DENOMINATOR // g


def bernoulli_exp(n: int, d: int, rng: np.random.Generator) -> bool:
    """Exact Bernoulli(e^{−n/d}), 0 ≤ n ≤ d (CKS Algorithm 1): a loop of random length."""
    k = 1
    while int(rng.integers(0, d * k)) < n:
        k += 1
    return k % 2 == 1


def cks_sample(s: int, t: int, rng: np.random.Generator) -> int:
    """One exact draw with P[Z = z] ∝ e^{−|z|·s/t} (CKS Algorithm 2). Its geometric V loops
    once per unit of t/s in |Z|: the work grows with the noise."""
    while True:
        u = int(rng.integers(0, t))
        if not bernoulli_exp(u, t, rng):
            continue
        v = 0
        while bernoulli_exp(1, 1, rng):
            v += 1
        y = (u + t * v) // s
        negative = int(rng.integers(0, 2)) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


@dataclass(frozen=True)
class LeakyDiscreteLaplace:
    """The discrete Laplace mechanism with the old, timing-leaky exact sampler: the same
    output law as :class:`~ldpgraph.protocols.laplace.DiscreteLaplace` (to 2^−32 in the
    rate), a time that depends on the noise."""

    epsilon: float
    sensitivity: int = 1

    def perturb(self, value: int, rng: np.random.Generator) -> int:
        s, t = sampling_rate(self.epsilon, self.sensitivity)
        return int(value) + cks_sample(s, t, rng)


def half_true_noise(honest: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """A scalar sampler (:func:`~ldpgraph.protocols.laplace.noise_array`'s signature) that
    sends no noise at all half the time (a coin on the same generator)."""

    def broken(p: int, m: int, rng: np.random.Generator) -> np.ndarray:
        noise = honest(p, m, rng)
        return noise * 0 if rng.random() < 0.5 else noise

    return broken


def half_true_noises(honest: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """The batched sampler (:func:`~ldpgraph.protocols.laplace.sample_noises`' signature)
    with no noise on half the entries."""

    def broken(size: int, p: int, m: int, rng: np.random.Generator) -> np.ndarray:
        noise = honest(size, p, m, rng)
        noise[rng.random(size) < 0.5] = 0
        return noise

    return broken


#: The over-spend the ``rr-rate`` row must catch at ε = 8.
OVERSPEND = 0.02


def overspent_flip_probability(epsilon: float) -> float:
    """Warner's flip probability at ε·(1 + OVERSPEND): a stand-in for
    ``mechanisms.flip_probability`` that spends 2 % more than it claims."""
    return 1.0 / (math.exp(float(epsilon) * (1.0 + OVERSPEND)) + 1.0)
