"""The audit's output events: fixed, data-independent families and their vectorised counters.

An event family is fixed before any draw, so the bound the audit estimates on its second half
is valid whatever event the first half chose. Besides points and thresholds, a real-valued
output is tested for *reachability*: a float output that one neighbouring input cannot produce
at all betrays the input (the floating-point attack on the Laplace mechanism, Mironov, ACM CCS
2012), which :func:`unreachable` checks for any float noise and :func:`unreachable_laplace`
for numpy's own Laplace sampler.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EventFamily:
    """A fixed, data-independent family of output events and a vectorised counter for them."""

    labels: tuple[str, ...]
    count: Callable[[np.ndarray], np.ndarray]  # outputs -> int64 count per label


def unreachable(y: np.ndarray, base: float) -> np.ndarray:
    """Which float outputs y no float noise c at all can produce as fl(base + c).

    Tries c = fl(y − base) and its two neighbouring floats: an output that was made from
    ``base`` is found by one of them (checked empirically; a miss would only weaken the audit,
    never invalidate it, because the event is fixed before the estimation draws). An additive
    mechanism on floats whose output from x₀ cannot have come from x₁ is not ε-DP for any ε
    (Mironov 2012). This check knows nothing of the sampler, so it only fires where the float
    grid of y is finer than that of the noise (large |noise|); :func:`unreachable_laplace`
    models numpy's Laplace sampler and fires far more often.
    """
    y = np.asarray(y, dtype=np.float64)
    c = y - base
    ok = (base + c) == y
    ok |= (base + np.nextafter(c, np.inf)) == y
    ok |= (base + np.nextafter(c, -np.inf)) == y
    return ~ok


#: numpy's Laplace sampler draws U = j·2^−53, j uniform on {1, …, 2^53 − 1} (``next_double``;
#: U = 0 is redrawn); j < 2^52 is the U < 1/2 branch.
_J_MAX = (1 << 53) - 1
_TWO_TO_MINUS_53 = 1.0 / 9007199254740992.0
#: Half-width of the first bracket around the inverse of the sampler (a speed setting only).
LAPLACE_BRACKET = 1 << 8


def numpy_laplace_output(j: np.ndarray, base: float, scale: float) -> np.ndarray:
    """The output ``base + rng.laplace(0, scale)`` (= ``rng.laplace(base, scale)``) when numpy's
    sampler gets the uniform U = j·2^−53, with numpy's own float operations (its C sampler
    ``random_laplace``): U ≥ 1/2 gives
    base − scale·log(2 − U − U), U < 1/2 gives base + scale·log(U + U)."""
    u = np.asarray(j, dtype=np.int64).astype(np.float64) * _TWO_TO_MINUS_53
    upper = u >= 0.5
    term = scale * _libm_log(np.where(upper, (2.0 - u) - u, u + u))
    return np.where(upper, base - term, base + term)


_LIBM_LOG = np.frompyfunc(math.log, 1, 1)


def _libm_log(x: np.ndarray) -> np.ndarray:
    """The C library's ``log`` elementwise (``math.log`` calls it), which is what numpy's C
    sampler calls. ``np.log`` is not: on CPUs with AVX-512 numpy dispatches to its own SIMD
    ``log``, which differs from libm's by one ulp on ~0.3 % of arguments — enough to flag a
    sampler's own outputs as unreachable. The argument here is always in (0, 1]."""
    x = np.asarray(x, dtype=np.float64)
    return _LIBM_LOG(x).astype(np.float64) if x.ndim else np.float64(math.log(float(x)))


def unreachable_laplace(y: np.ndarray, base: float, scale: float) -> np.ndarray:
    """Which float outputs y numpy's Laplace sampler at ``scale`` cannot produce from ``base``:
    no j in {1, …, 2^53 − 1} has :func:`numpy_laplace_output` (j) == y.

    The output is non-decreasing in j (the U < 1/2 branch gives outputs ≤ base, the other
    ≥ base, and log, the products and the sums are monotone in their argument), so a
    vectorised binary search over j for the first output ≥ y decides it exactly (at most 53
    steps; ~9 from a bracket around the sampler's inverse). The sampler reaches only 2^53 − 1
    noise values, about scale·2^−52·e^{|noise|/scale} apart: where that spacing exceeds the
    float spacing of y, most floats are not reachable from a given base, and the outputs of a
    neighbouring base lie on a different, mostly disjoint set. That is the float-grid leak
    (Mironov 2012) as numpy's sampler has it (for ε = 1, 4, 8 about 30 %, 60 %, 97 % of the
    outputs of degree 4 cannot come from degree 5; the sampler-agnostic :func:`unreachable`
    finds ~1 %, ~0, 0). The model matches ``Generator.laplace`` bit for bit (a test checks it
    on numpy's own draws; it computes the log with libm, as the sampler does, not with numpy's
    SIMD ``np.log``); a mismatch (another numpy, another ``log``) would only weaken the audit,
    never invalidate it, because the event is fixed before the estimation draws.
    """
    y = np.asarray(y, dtype=np.float64).ravel()
    # Start from the inverse of the sampler (j ≈ 2^52·e^{(y−b)/scale} below the base,
    # 2^53 − 2^52·e^{−(y−b)/scale} above it) ± LAPLACE_BRACKET; where that bracket does not
    # hold the answer (checked), search all of {1, …, 2^53 − 1}.
    with np.errstate(over="ignore", invalid="ignore"):
        d = (y - base) / scale
        guess = np.where(
            d < 0,
            2.0**52 * np.exp(np.minimum(d, 0.0)),
            2.0**53 - 2.0**52 * np.exp(-np.maximum(d, 0.0)),
        )
    guess = np.clip(np.nan_to_num(guess, nan=1.0), 1.0, float(_J_MAX)).astype(np.int64)
    lo = np.maximum(guess - LAPLACE_BRACKET, 1)
    hi = np.minimum(guess + LAPLACE_BRACKET, _J_MAX)
    with np.errstate(invalid="ignore"):
        holds = (lo == 1) | (numpy_laplace_output(lo, base, scale) < y)
        holds &= (hi == _J_MAX) | (numpy_laplace_output(hi, base, scale) >= y)
    lo[~holds], hi[~holds] = 1, _J_MAX
    # Binary search for the first j in [lo, hi] whose output is >= y (hi if none).
    todo = np.flatnonzero(lo < hi)
    while todo.size:
        a, b = lo[todo], hi[todo]
        mid = (a + b) // 2
        above = numpy_laplace_output(mid, base, scale) >= y[todo]
        lo[todo] = np.where(above, a, mid + 1)
        hi[todo] = np.where(above, mid, b)
        todo = todo[lo[todo] < hi[todo]]
    return numpy_laplace_output(lo, base, scale) != y


def numeric_events(
    lo: int,
    hi: int,
    reachable_from: Sequence[float] = (),
    name: str = "y",
    laplace_scale: float | None = None,
) -> EventFamily:
    """Points {y = k}, thresholds {y ≤ t} and {y ≥ t} for integers k, t in [lo, hi], and for
    each base b in ``reachable_from`` the event "y is not reachable from b" by any float noise
    (:func:`unreachable`) and, with ``laplace_scale``, by numpy's Laplace sampler at that scale
    (:func:`unreachable_laplace`). The reachability of an output is decided once per distinct
    value (an integer mechanism has few)."""
    grid = np.arange(int(lo), int(hi) + 1, dtype=np.float64)
    bases = tuple(float(b) for b in reachable_from)
    scale = None if laplace_scale is None else float(laplace_scale)
    labels = (
        [f"{name} = {k:g}" for k in grid]
        + [f"{name} ≤ {t:g}" for t in grid]
        + [f"{name} ≥ {t:g}" for t in grid]
        + [f"{name} not reachable from {b:g} (float grid)" for b in bases]
    )
    if scale is not None:
        labels += [
            f"{name} not reachable from {b:g} (numpy Laplace, scale {scale:g})" for b in bases
        ]

    def count(y: np.ndarray) -> np.ndarray:
        y = np.asarray(y)
        ys = np.sort(y.astype(np.float64, copy=False))
        le = np.searchsorted(ys, grid, side="right")
        lt = np.searchsorted(ys, grid, side="left")
        parts = [le - lt, le, ys.shape[0] - lt]
        if bases:
            values, per_value = np.unique(ys, return_counts=True)
            parts += [np.asarray([per_value[unreachable(values, b)].sum()]) for b in bases]
            if scale is not None:
                parts += [
                    np.asarray([per_value[unreachable_laplace(values, b, scale)].sum()])
                    for b in bases
                ]
        return np.concatenate(parts).astype(np.int64)

    return EventFamily(tuple(labels), count)


def row_events(length: int) -> EventFamily:
    """For a row reported as a ``length``-bit code: {bit i = 1}, {bit i = 0} for every i, and
    {reported row = r} for every row r (written bit 0 first, like the inputs)."""
    labels = (
        [f"bit {i} reported" for i in range(length)]
        + [f"bit {i} not reported" for i in range(length)]
        + [f"reported row = {format(c, f'0{length}b')[::-1]}" for c in range(1 << length)]
    )

    def count(codes: np.ndarray) -> np.ndarray:
        codes = np.asarray(codes, dtype=np.int64)
        points = np.bincount(codes, minlength=1 << length)
        ones = np.array([((codes >> i) & 1).sum() for i in range(length)], dtype=np.int64)
        return np.concatenate([ones, codes.shape[0] - ones, points]).astype(np.int64)

    return EventFamily(tuple(labels), count)
