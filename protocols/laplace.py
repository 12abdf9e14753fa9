"""The discrete Laplace (two-sided geometric) mechanism on a count, and its privacy accounting.

Why discrete. The counts we protect (a node's degree, LDPGen's per-group degrees) are integers
that change by exactly 1 when one bit of the node's adjacency row changes. Adding floating-point
Laplace noise to them is not ε-DP as implemented: the set of doubles reachable from degree 4 and
from degree 5 differ (Mironov, CCS'12), and an audit found 34.9 % of the outputs for degree 4
impossible for degree 5 (an empirical ε lower bound of 11.5 against a claimed 0.8). The discrete
Laplace mechanism adds integer noise K with P[K = k] = (1 − a)/(1 + a)·a^|k|, a = e^{−ε/Δ}, so
integer in, integer out: the likelihood ratio of any output under inputs that differ by at most
Δ is at most e^ε exactly, with no floating-point output to leak the input.

Sampling, exactly and in constant work. The noise is secret and the output public, so the time
a node takes to draw it must not depend on it. An earlier sampler (Canonne, Kamath & Steinke,
NeurIPS 2020, Algorithms 1–2) looped a number of times that grew with |K|: timing one node's
``perturb`` on degree 4 vs 5 gave an ε lower bound of 5.11 for a claimed 0.8 (the timing attack
of Jin, McMurtry, Rubinstein & Ohrimenko, "Are We There Yet? Timing and Floating-Point Attacks
on Differential Privacy Systems", IEEE S&P 2022, §IV). That sampler survives only as a planted
broken variant for the audit (:mod:`ldpgraph.simulation.audit_planted`).

K is drawn as G₁ − G₂, two independent geometrics with P[G ≥ g] = a^g, whose difference has
exactly the pmf above (Inusah & Kozubowski 2006, Proposition 3.1). The decay is a dyadic
rational, a = p/2^64 with p = ⌈2^64·e^{−ε/Δ}⌉ (:func:`decay_numerator`, computed with a
rigorous upper bound in exact arithmetic), so a ≥ e^{−ε/Δ}: the noise is never narrower than
the claimed mechanism's, the law sampled is exactly ε'-DP with ε' = Δ·ln(1/a) ≤ ε, and the
accounting below, which uses ε, is conservative by at most 2^{−64}/a. A Bernoulli(a) is then
exactly one uniform 64-bit word w: success iff w < p. G is the number of leading successes in
a sequence of such words, so each geometric reads a fixed block of M words
(:func:`words_per_geometric`: the least M with a^M ≤ 2^{−TAIL_BITS}, public, a function of ε
only) and counts its leading successes with full-length array passes (no early exit, no
data-dependent branch); K stays in numpy until it is added to the value, so only the public
output becomes a Python int (CPython's int paths take value-dependent time). Only if all M
words of a block succeed (probability a^M ≤ 2^{−64}) does the sampler read further words, one
at a time, until the first failure: the output is still
exactly the geometric law, so the output is exactly ε-DP with δ = 0, and only the *time* may
then depend on the noise. The pair (output, time) is therefore (ε, δ_t)-DP with
δ_t = (1 + e^ε)·2·2^{−TAIL_BITS} per draw (:func:`timing_delta`; a coupling argument: with
probability ≥ 1 − 2^{1−TAIL_BITS} the work is the fixed one and independent of the noise),
which :func:`discrete_laplace_part` reports as ``timing_delta``. ``ldpgraph audit`` measures it
(the ``timing`` rows, :mod:`ldpgraph.simulation.audit_timing`).

Scalar and batched draws are the same draws. One draw reads its 2M words in one
``random_raw`` call of the generator's bit generator (PCG64: a node's own stream from
:func:`ldpgraph.protocols.rng.node_rng`); a batch of n draws reads n·2M words in the same order
(in chunks of :data:`CHUNK_WORDS`), so it equals n one-by-one calls on the same generator,
except when a block overflows (probability ≤ n·2^{1−TAIL_BITS}): the batch then reads the
overflow's further words after the whole batch. The module is numpy only at import time (it is
on the client's import path); the accounting helpers import dp-accounting only when called.
(Draws changed with this sampler: runs that use noisy counts — Blink's degrees, LDPGen's degree
vectors, DPGGAN's and the baselines' edge counts — release other noise than before for the same
seed.)

Accounting note (dp-accounting 0.6.0): ``PLDAccountant`` accepts ``DiscreteLaplaceDpEvent`` only
under ADD_OR_REMOVE_ONE or REPLACE_SPECIAL, not under the REPLACE_ONE relation that randomized
response needs. We therefore build the privacy-loss distribution directly with
``from_discrete_laplace_mechanism(parameter=ε/Δ, sensitivity=Δ)`` (pessimistic, no
connect-the-dots): it is the pair of output laws DLap(μ) and DLap(μ ± Δ), which is exactly what
one replaced adjacency bit does to the count, and its privacy loss takes only the values ±ε, so
its ε at δ = 0 is ε to float precision (measured: 0.8 → 0.8000000000000002, 4 → 4.0). It is
composed with the randomized-response PLDs that :mod:`ldpgraph.protocols.accounting` uses,
without tail truncation: the default 1e-15 truncation of a composition can move mass to infinite
loss and make ε at δ = 0 infinite. (Using ε rather than Δ·ln(1/a) ≤ ε is conservative,
see above.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, localcontext
from fractions import Fraction
from functools import cached_property, lru_cache
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
#: The decay is a = p/2^DECAY_BITS: one uniform word decides one Bernoulli(a) exactly.
DECAY_BITS = 64
#: Each geometric reads M words with a^M ≤ 2^−TAIL_BITS; past them (that probability) the
#: sampler's time may depend on its noise (:func:`timing_delta`).
TAIL_BITS = 64
#: Rates ε/Δ above this sample at this rate (p = 1, a = 2^−64: more noise than claimed, still
#: ε-DP; P[K ≠ 0] < 2^−62 either way).
MAX_RATE = 64
#: |value| above this is refused, so that value + noise stays far inside int64.
MAX_VALUE = 1 << 40
#: A batch is drawn in chunks of about this many words (memory).
CHUNK_WORDS = 1 << 22
#: The sampler as a report names it.
SAMPLER = "constant-work G1 - G2, a = p/2^64, 2M words per draw"


def _is_int(value: Any) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool | np.bool_)


# --------------------------------------------------------------------------- constant-work sampling


def _exact_ratio(epsilon: Real) -> tuple[int, int]:
    if isinstance(epsilon, Rational):
        return Fraction(int(epsilon.numerator), int(epsilon.denominator)).as_integer_ratio()
    return float(epsilon).as_integer_ratio()


def decay_numerator(epsilon: Real, sensitivity: int = 1) -> int:
    """p = ⌈2^64·e^{−r}⌉ for r = min(ε/Δ, MAX_RATE) taken exactly (a float's integer ratio),
    or an integer above it by at most one: a = p/2^64 ≥ e^{−ε/Δ}, never less noise than claimed.

    Rigorous: r is rounded down to 60 digits (r_lo ≤ r), ``Decimal.exp`` is correctly rounded
    (relative error ≤ 10^−59), and the result is raised by a factor 1 + 10^−50 before the exact
    ceiling, so p/2^64 ≥ e^{−r_lo} ≥ e^{−r}. At MIN_EPSILON ≤ r it is < 2^64.
    """
    num, den = _exact_ratio(epsilon)
    return _decay_numerator(min(Fraction(num, den * int(sensitivity)), Fraction(MAX_RATE)))


@lru_cache(maxsize=256)
def _decay_numerator(rate: Fraction) -> int:
    with localcontext() as ctx:
        ctx.prec = 60
        ctx.rounding = ROUND_FLOOR
        r_lo = Decimal(rate.numerator) / Decimal(rate.denominator)
        ctx.rounding = ROUND_CEILING
        upper = (-r_lo).exp() * (Decimal(1) + Decimal(10) ** -50)
    p = math.ceil(Fraction(upper) * (1 << DECAY_BITS))
    return max(1, min(p, (1 << DECAY_BITS) - 1))


def words_per_geometric(p: int) -> int:
    """M: the least block with a^M ≤ 2^−TAIL_BITS, a = p/2^64 (a float computation with a
    margin; a test checks p^M ≤ 2^(64M − TAIL_BITS) exactly). Public: it depends on ε only."""
    log_inv_a = DECAY_BITS * math.log(2.0) - math.log(p)
    return max(1, math.ceil(TAIL_BITS * math.log(2.0) / log_inv_a * (1.0 + 1e-9)))


def timing_delta(epsilon: float, draws: int = 1) -> float:
    """δ of (output, time) for ``draws`` draws at ε (above): (1 + e^ε)·draws·2^{1−TAIL_BITS}."""
    return (1.0 + math.exp(min(float(epsilon), 700.0))) * draws * 2.0 ** (1 - TAIL_BITS)


def _overflow(p: int, rng: np.random.Generator) -> int:
    """Further successes after a block that succeeded throughout (probability ≤ 2^−64): one
    word at a time until the first failure; the only part whose time depends on the noise."""
    extra = 0
    while int(rng.bit_generator.random_raw()) < p:
        extra += 1
    return extra


def _leading_successes(ok: np.ndarray, m: int) -> np.ndarray:
    """Per block (last axis, length m): the index of the first failure, m if none, as the sum
    of the running product of the successes: multiplications and additions over all m
    positions, no comparison. (A min over the positions, as before, branches on each
    comparison: calls with K ≠ 0 ran 10-20 ns slower in the fast tail, which the timing audit
    saw at ε = 4.)"""
    dtype = np.int16 if m < (1 << 15) else np.int32
    return np.multiply.accumulate(ok.view(np.uint8), axis=-1, dtype=dtype).sum(axis=-1, dtype=dtype)


def noise_array(p: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """One draw K = G₁ − G₂, P[K = k] ∝ (p/2^64)^|k| exactly, as an int64 array of shape (1,),
    from 2m words read in one call: G₁ counts the leading successes (w < p) of the first m
    words, G₂ of the last m; full-length array passes, the same work for every K (unless a
    block overflows, see :func:`_overflow`). K stays inside numpy: a Python int made from it
    would take a time that depends on its value (measured: CPython's int conversion and
    subtraction are ~30 ns faster for K = −1 than for K = 1, enough for the timing audit to
    see), so callers add it to their value in numpy and convert only the public output."""
    ok = rng.bit_generator.random_raw(2 * m).reshape(2, m) < np.uint64(p)
    g = _leading_successes(ok, m).astype(np.int64)
    if (g == m).any():
        g = g + np.array([_overflow(p, rng) if x == m else 0 for x in g.tolist()], np.int64)
    return g[0:1] - g[1:2]


def sample_noise(p: int, m: int, rng: np.random.Generator) -> int:
    """:func:`noise_array` as a Python int (for tests and tools: converting the noise takes
    a time that depends on it; a node adds it to its value first, :meth:`DiscreteLaplace.
    perturb`)."""
    return int(noise_array(p, m, rng)[0])


def sample_noises(size: int, p: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws of :func:`sample_noise` (int64), vectorised over rows of 2m words read
    in the same order (``integers`` over the full 64-bit range returns the raw words, faster
    than ``random_raw`` for large blocks), so equal to ``size`` one-by-one calls unless a
    block overflows (its further words are then read after the batch: same law, other
    draws)."""
    out = np.empty(size, dtype=np.int64)
    rows = max(1, CHUNK_WORDS // (2 * m))
    over: list[tuple[int, int]] = []
    for lo in range(0, size, rows):
        hi = min(size, lo + rows)
        words = rng.integers(0, 1 << 64, size=(hi - lo, 2, m), dtype=np.uint64)
        g = _leading_successes(words < np.uint64(p), m)
        out[lo:hi] = g[:, 0] - g[:, 1]
        for r, side in zip(*np.nonzero(g == m), strict=True):
            over.append((lo + int(r), int(side)))
    for i, side in over:
        out[i] += _overflow(p, rng) if side == 0 else -_overflow(p, rng)
    return out


@dataclass(frozen=True)
class DiscreteLaplace:
    """The discrete Laplace mechanism: ``value + K``, P[K = k] ∝ exp(−ε|k|/Δ) on the integers.

    Pure ε-DP for integer inputs that differ by at most ``sensitivity`` = Δ (a degree under one
    changed adjacency bit: 1). Integer in, integer out, so no floating-point artefact can tell
    neighbouring inputs apart. K is sampled exactly with decay a = p/2^64 ≥ e^{−ε/Δ}
    (:attr:`decay_fraction`), so never with less noise than claimed, in constant work per draw.
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
    def decay_fraction(self) -> tuple[int, int]:
        """(p, 2^64): the sampled decay a = p/2^64 ≥ e^{−ε/Δ} (:func:`decay_numerator`)."""
        return decay_numerator(self.epsilon, int(self.sensitivity)), 1 << DECAY_BITS

    @cached_property
    def block(self) -> int:
        """M, the words each geometric reads (:func:`words_per_geometric`; 2M per draw)."""
        return words_per_geometric(self.decay_fraction[0])

    @property
    def decay(self) -> float:
        """a = p/2^64 (≥ e^{−ε/Δ}): P[K = k] = (1 − a)/(1 + a)·a^|k|."""
        p, q = self.decay_fraction
        return p / q

    @property
    def success_probability(self) -> float:
        """1 − a, exactly as a float ((2^64 − p)/2^64)."""
        p, q = self.decay_fraction
        return (q - p) / q

    @property
    def variance(self) -> float:
        """Var K = 2a/(1 − a)²."""
        a = self.decay
        return 2.0 * a / self.success_probability**2

    def pmf(self, k: np.ndarray | int) -> np.ndarray:
        """P[K = k] of the law sampled (closed form, decay a = p/2^64), for tests and reports."""
        a = self.decay
        k = np.abs(np.asarray(k, dtype=np.float64))
        return (self.success_probability / (1.0 + a)) * np.power(a, k)

    def noise(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """int64 noise of ``shape`` from ``rng`` (:func:`sample_noises`: the draws of one-by-one
        :meth:`perturb` calls unless a block overflows, probability ≤ size·2^−63)."""
        size = math.prod(shape)
        return sample_noises(size, self.decay_fraction[0], self.block, rng).reshape(shape)

    def perturb(self, value: int, rng: np.random.Generator) -> int:
        """One noisy count: ``value`` + K (K from :func:`noise_array` on ``rng``, the same work
        whatever K is); an int."""
        if not _is_int(value):
            raise TypeError(f"the discrete Laplace mechanism takes an integer, got {value!r}")
        value = int(value)
        if abs(value) > MAX_VALUE:
            raise ValueError(f"|value| must be <= 2^40, got {value}")
        noisy = noise_array(self.decay_fraction[0], self.block, rng)
        noisy += value  # in numpy: only the public output becomes a Python int
        return int(noisy[0])

    def perturb_many(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Independent noise on every entry of an integer array, from one generator (one
        party's vector of counts); an int64 array of the same shape, equal to one-by-one
        :meth:`perturb` calls (see :meth:`noise`)."""
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
        "sampler": SAMPLER,
        "timing_delta": timing_delta(epsilon),
    }
