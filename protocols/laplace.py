"""The discrete Laplace (two-sided geometric) mechanism on a count, and its privacy accounting.

Why discrete. The counts we protect (a node's degree, LDPGen's per-group degrees) are integers
that change by exactly 1 when one bit of the node's adjacency row changes. Adding floating-point
Laplace noise to them is not ε-DP as implemented: the set of doubles reachable from degree 4 and
from degree 5 differ (Mironov, CCS'12), and an audit found 34.9 % of the outputs for degree 4
impossible for degree 5 (an empirical ε lower bound of 11.5 against a claimed 0.8). The discrete
Laplace mechanism adds integer noise K with P[K = k] = (1 − a)/(1 + a)·a^|k|, a = e^{−ε/Δ}, so
integer in, integer out: the likelihood ratio of any output under inputs that differ by at most
Δ is at most e^ε exactly, with no floating-point output to leak the input.

Sampling, exactly. K is drawn by Canonne, Kamath & Steinke, "The Discrete Gaussian for
Differential Privacy" (NeurIPS 2020), Algorithm 2 (discrete Laplace of scale t/s), on top of their
Algorithm 1 (an exact Bernoulli(e^{−γ}) for rational γ), using nothing but uniform integer draws
``rng.integers`` from the numpy generator the caller gives (a node's own stream from
:func:`ldpgraph.protocols.rng.node_rng`) and Python / int64 integer arithmetic: no float takes
part in any decision, so the output law is exactly the pmf above (no float rounding, no
saturation). An earlier sampler took G1 − G2 from ``rng.geometric``: at tiny ε numpy caps the
geometric at INT64_MAX, both draws saturate and the true value was sent (ε = 1e-20: 83 % of
draws), and near ε ≈ 1e-18 ``value + noise`` overflowed int64.

The rate is rational. ε is a float; the sampler uses the decay rate s/t = ⌊(ε/Δ)·2^32⌋ / 2^32
(in lowest terms, computed from the float's exact integer ratio, and capped at
:data:`MAX_RATE`), which is never above ε/Δ: the noise is never narrower than the claimed
mechanism's, so it is ε-DP at the claimed ε. The accounting below keeps using ε itself, which is
therefore conservative by at most 2^−32·Δ in ε. :attr:`DiscreteLaplace.rate` gives (s, t);
:meth:`DiscreteLaplace.pmf`, :attr:`~DiscreteLaplace.decay` and
:attr:`~DiscreteLaplace.variance` describe the law actually sampled (at s/t). ε/Δ below
:data:`MIN_EPSILON` is refused (a hostile server may send any ε).

Speed. Nodes draw one value (Blink) or a few (LDPGen's k groups): batches of up to
:data:`SEQUENTIAL_MAX` entries are drawn entry by entry with the scalar sampler, so such a batch
draws exactly what one-by-one calls on the same generator would. Larger batches (the audit's
10^6 draws, a large k) use a vectorised version of the same algorithm: every round, the pending
entries run one attempt together (the same integer rejection steps over arrays), the accepted
ones are kept and the rejected ones retried. Same law, different order of draws from the
generator; both are deterministic for a seeded generator. The module is numpy only at import
time (it is on the client's import path); the accounting helpers import dp-accounting only when
called.

Accounting note (dp-accounting 0.6.0): ``PLDAccountant`` accepts ``DiscreteLaplaceDpEvent`` only
under ADD_OR_REMOVE_ONE or REPLACE_SPECIAL, not under the REPLACE_ONE relation that randomized
response needs. We therefore build the privacy-loss distribution directly with
``from_discrete_laplace_mechanism(parameter=ε/Δ, sensitivity=Δ)`` (pessimistic, no
connect-the-dots): it is the pair of output laws DLap(μ) and DLap(μ ± Δ), which is exactly what
one replaced adjacency bit does to the count, and its privacy loss takes only the values ±ε, so
its ε at δ = 0 is ε to float precision (measured: 0.8 → 0.8000000000000002, 4 → 4.0). It is
composed with the randomized-response PLDs that :mod:`ldpgraph.protocols.accounting` uses,
without tail truncation: the default 1e-15 truncation of a composition can move mass to infinite
loss and make ε at δ = 0 infinite. (Using ε rather than the sampled rate s/t ≤ ε/Δ is
conservative, see above.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from numbers import Integral, Rational, Real
from typing import Any

import numpy as np

#: Must match ``accounting.PLD_DISCRETIZATION`` (the value is repeated to keep this module
#: free of dp-accounting at import time; a test holds the two equal).
PLD_DISCRETIZATION = 1e-4
MECHANISM = "discrete-laplace"
#: The smallest decay rate ε/Δ the mechanism accepts. Below it the noise is so wide that it
#: protects nothing more in practice, and a float sampler breaks (numpy's geometric saturates at
#: INT64_MAX, so G1 − G2 = 0 and the true value is sent). Protocols validate their parameters
#: against it before a node spends any budget.
MIN_EPSILON = 1e-3
#: ε/Δ is rounded down to a multiple of 1/RATE_DENOMINATOR for the sampler (2^−32: the rounding
#: is below 1e-9 of ε even at MIN_EPSILON, and every integer the sampler draws stays < 2^62).
RATE_DENOMINATOR = 1 << 32
#: Rates ε/Δ above this are sampled at this rate (more noise, still ε-DP; P[K ≠ 0] < e^{−10^6}
#: either way), which keeps s < 2^52.
MAX_RATE = 1 << 20
#: |value| above this is refused, so that value + noise stays far inside int64.
MAX_VALUE = 1 << 40
#: Batches up to this size are drawn entry by entry (bit-identical to one-by-one calls).
SEQUENTIAL_MAX = 64


def _is_int(value: Any) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool | np.bool_)


# --------------------------------------------------------------------------- exact sampling
# Canonne, Kamath & Steinke (2020): Algorithm 1 (Bernoulli(e^{−γ}), γ = n/d ∈ [0, 1]) and
# Algorithm 2 (discrete Laplace, P[Z = z] ∝ e^{−|z|·s/t}). Only rng.integers and integers.


def bernoulli_exp(n: int, d: int, rng: np.random.Generator) -> bool:
    """An exact Bernoulli(e^{−n/d}) for integers 0 ≤ n ≤ d, d ≥ 1 (CKS Algorithm 1 for
    γ ∈ [0, 1]): K counts draws of Bernoulli(γ/k), k = 1, 2, …, until one fails; P[K odd] =
    e^{−γ}. Bernoulli(n/(d·k)) is ``rng.integers(0, d·k) < n``."""
    k = 1
    while int(rng.integers(0, d * k)) < n:
        k += 1
    return k % 2 == 1


def bernoulli_exp_many(n: np.ndarray, d: int, rng: np.random.Generator) -> np.ndarray:
    """:func:`bernoulli_exp` for every entry of the int64 array ``n`` (0 ≤ n ≤ d): the k-th
    step draws Bernoulli(n/(d·k)) for the entries still running, all with the same k."""
    out = np.empty(n.shape[0], dtype=bool)
    live = np.arange(n.shape[0])
    k = 1
    while live.size:
        go_on = rng.integers(0, d * k, size=live.size, dtype=np.int64) < n[live]
        out[live[~go_on]] = k % 2 == 1
        live = live[go_on]
        k += 1
    return out


def exact_sample(s: int, t: int, rng: np.random.Generator) -> int:
    """One draw Z with P[Z = z] ∝ e^{−|z|·s/t} exactly (CKS Algorithm 2), s, t ≥ 1 integers.

    U uniform on {0, …, t − 1} is kept with probability e^{−U/t}; V is geometric
    (P[V ≥ v] = e^{−v}); X = U + t·V then has P[X = x] ∝ e^{−x/t}, Y = ⌊X/s⌋ is geometric with
    P[Y = y] ∝ e^{−y·s/t}, and a fair sign (rejecting −0) makes it two-sided.
    """
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


def exact_samples(size: int, s: int, t: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` independent draws of :func:`exact_sample` (int64), vectorised: every round,
    all pending entries make one attempt of Algorithm 2 together, with the same integer steps
    over arrays; the accepted ones are final, the rejected ones try again next round."""
    out = np.zeros(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        u = rng.integers(0, t, size=pending.size, dtype=np.int64)
        kept = bernoulli_exp_many(u, t, rng)
        retry = pending[~kept]
        idx, u = pending[kept], u[kept]
        v = np.zeros(idx.size, dtype=np.int64)
        live = np.arange(idx.size)
        while live.size:
            live = live[bernoulli_exp_many(np.ones(live.size, dtype=np.int64), 1, rng)]
            v[live] += 1
        y = (u + t * v) // s
        negative = rng.integers(0, 2, size=idx.size, dtype=np.int64) == 1
        done = ~(negative & (y == 0))
        out[idx[done]] = np.where(negative[done], -y[done], y[done])
        pending = np.concatenate([retry, idx[~done]])
    return out


def sampling_rate(epsilon: float, sensitivity: int = 1) -> tuple[int, int]:
    """(s, t) coprime with s/t = min(⌊(ε/Δ)·2^32⌋ / 2^32, MAX_RATE) ≤ ε/Δ, from ε's exact
    rational value (a float's integer ratio): the rate the sampler uses."""
    if isinstance(epsilon, Rational):
        num, den = Fraction(int(epsilon.numerator), int(epsilon.denominator)).as_integer_ratio()
    else:
        num, den = float(epsilon).as_integer_ratio()
    s = min(num * RATE_DENOMINATOR // (den * int(sensitivity)), MAX_RATE * RATE_DENOMINATOR)
    if s < 1:
        raise ValueError(f"epsilon/sensitivity = {epsilon}/{sensitivity} is too small to sample")
    g = math.gcd(s, RATE_DENOMINATOR)
    return s // g, RATE_DENOMINATOR // g


@dataclass(frozen=True)
class DiscreteLaplace:
    """The discrete Laplace mechanism: ``value + K``, P[K = k] ∝ exp(−ε|k|/Δ) on the integers.

    Pure ε-DP for integer inputs that differ by at most ``sensitivity`` = Δ (a degree under one
    changed adjacency bit: 1). Integer in, integer out, so no floating-point artefact can tell
    neighbouring inputs apart. K is sampled exactly at the rate ε/Δ rounded down to a multiple
    of 2^−32 (:attr:`rate`), so never with less noise than claimed.
    """

    epsilon: float
    sensitivity: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.epsilon, bool) or not isinstance(self.epsilon, Real):
            raise ValueError(f"epsilon must be a finite number > 0, got {self.epsilon!r}")
        eps = float(self.epsilon)
        if not math.isfinite(eps) or eps <= 0:
            raise ValueError(f"epsilon must be a finite number > 0, got {self.epsilon}")
        if not _is_int(self.sensitivity) or self.sensitivity < 1:
            raise ValueError(f"sensitivity must be an integer >= 1, got {self.sensitivity!r}")
        if eps / int(self.sensitivity) < MIN_EPSILON:
            raise ValueError(
                f"epsilon/sensitivity must be >= MIN_EPSILON = {MIN_EPSILON:g}, got "
                f"{eps:g}/{int(self.sensitivity)}"
            )

    @cached_property
    def rate(self) -> tuple[int, int]:
        """(s, t): the sampler's decay rate s/t ≤ ε/Δ, exactly (see :func:`sampling_rate`)."""
        return sampling_rate(self.epsilon, int(self.sensitivity))

    @property
    def _rate(self) -> float:
        s, t = self.rate
        return s / t

    @property
    def decay(self) -> float:
        """a = e^{−s/t} (s/t the sampled rate, ≤ ε/Δ): P[K = k] = (1 − a)/(1 + a)·a^|k|."""
        return math.exp(-self._rate)

    @property
    def success_probability(self) -> float:
        """1 − a (accurate for small rates)."""
        return -math.expm1(-self._rate)

    @property
    def variance(self) -> float:
        """Var K = 2a/(1 − a)²."""
        a = self.decay
        return 2.0 * a / self.success_probability**2

    def pmf(self, k: np.ndarray | int) -> np.ndarray:
        """P[K = k] of the law sampled (closed form, rate s/t), for tests and reports."""
        a = self.decay
        k = np.abs(np.asarray(k, dtype=np.float64))
        return (self.success_probability / (1.0 + a)) * np.power(a, k)

    def noise(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """int64 noise of ``shape`` from ``rng``: entry by entry with :func:`exact_sample` for
        up to :data:`SEQUENTIAL_MAX` entries (what one-by-one calls draw), else vectorised
        (:func:`exact_samples`, the same law)."""
        s, t = self.rate
        size = math.prod(shape)
        if size <= SEQUENTIAL_MAX:
            flat = np.array([exact_sample(s, t, rng) for _ in range(size)], dtype=np.int64)
        else:
            flat = exact_samples(size, s, t, rng)
        return flat.reshape(shape)

    def perturb(self, value: int, rng: np.random.Generator) -> int:
        """One noisy count: ``value`` + K (K from :func:`exact_sample` on ``rng``); an int."""
        if not _is_int(value):
            raise TypeError(f"the discrete Laplace mechanism takes an integer, got {value!r}")
        value = int(value)
        if abs(value) > MAX_VALUE:
            raise ValueError(f"|value| must be <= 2^40, got {value}")
        s, t = self.rate
        return value + exact_sample(s, t, rng)

    def perturb_many(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Independent noise on every entry of an integer array, from one generator (one
        party's vector of counts); an int64 array of the same shape. Up to
        :data:`SEQUENTIAL_MAX` entries it equals one-by-one :meth:`perturb` calls."""
        arr = np.asarray(values)
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(
                f"the discrete Laplace mechanism takes integer arrays, got dtype {arr.dtype}"
            )
        if arr.size and (arr.max() > MAX_VALUE or arr.min() < -MAX_VALUE):
            raise ValueError("every |value| must be <= 2^40")
        return arr.astype(np.int64) + self.noise(arr.shape, rng)


def discrete_laplace_pld(epsilon: float, sensitivity: int = 1):
    """The privacy-loss distribution of :class:`DiscreteLaplace` at ``epsilon`` for inputs that
    differ by at most ``sensitivity`` (pessimistic, no connect-the-dots: ε at δ = 0 is ε)."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    mech = DiscreteLaplace(epsilon, sensitivity)
    return pld_lib.from_discrete_laplace_mechanism(
        parameter=float(mech.epsilon) / mech.sensitivity,
        sensitivity=mech.sensitivity,
        value_discretization_interval=PLD_DISCRETIZATION,
        use_connect_dots=False,
    )


def discrete_laplace_event(epsilon: float, sensitivity: int = 1):
    """dp-accounting's event for :class:`DiscreteLaplace` (its ``noise_parameter`` is the
    decay rate ε/Δ of the pmf exp(−(ε/Δ)|k|))."""
    from dp_accounting import dp_event

    mech = DiscreteLaplace(epsilon, sensitivity)
    return dp_event.DiscreteLaplaceDpEvent(
        noise_parameter=float(mech.epsilon) / mech.sensitivity, sensitivity=mech.sensitivity
    )


def rr_pld(epsilon: float):
    """The PLD of one bit under Warner RR / the 1-bit mechanism (REPLACE_ONE), built as
    ``PLDAccountant`` builds it for ``accounting.rr_event(epsilon)``."""
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    return pld_lib.from_randomized_response(
        noise_parameter=2.0 / (math.exp(float(epsilon)) + 1.0),
        num_buckets=2,
        value_discretization_interval=PLD_DISCRETIZATION,
        neighboring_relation=NeighboringRelation.REPLACE_ONE,
    )


def composed_epsilon(rr_epsilons: list[float], count_epsilons: list[float]) -> float:
    """ε at δ = 0 of one unit seen by RR bits with ``rr_epsilons`` and discrete-Laplace counts
    (sensitivity 1) with ``count_epsilons`` (basic composition through the PLD; pessimistic by
    at most one discretisation step per part)."""
    plds = [rr_pld(e) for e in rr_epsilons] + [discrete_laplace_pld(e) for e in count_epsilons]
    if not plds:
        return 0.0
    total = plds[0]
    for other in plds[1:]:
        # No tail truncation: it could move mass to infinite loss (ε = ∞ at δ = 0).
        total = total.compose(other, tail_mass_truncation=0.0)
    return float(total.get_epsilon_for_delta(0.0))


def discrete_laplace_part(name: str, unit: str, epsilon: float) -> dict[str, Any]:
    """A privacy-report line for a discrete-Laplace count (sensitivity 1), in the shape of
    ``accounting.bit_part``."""
    mech = DiscreteLaplace(epsilon)
    return {
        "part": name,
        "unit": unit,
        "mechanism": MECHANISM,
        "epsilon": composed_epsilon([], [epsilon]),
        "epsilon_closed_form": float(epsilon),
        "delta": 0.0,
        "noise_decay": mech.decay,
        "noise_std": math.sqrt(mech.variance),
        "sensitivity": 1,
    }
