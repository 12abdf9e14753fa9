"""Empirical privacy audits of the client mechanisms: Clopper–Pearson lower bounds on ε.

A mechanism M claims ε-LDP: for neighbouring inputs x₀, x₁ and every output event E,
P[M(x₀) ∈ E] ≤ e^ε · P[M(x₁) ∈ E]. The audit runs M many times on x₀ and on x₁, counts how
often each event of a fixed family fires, and turns the counts into a one-sided confidence
bound ε_lb = ln(p₀_lower / p₁_upper) (Clopper–Pearson, α/2 for each of the two bounds). The
event is chosen on the first half of the draws and estimated on the second half, so the bound
is a valid (1 − α) lower bound on the mechanism's true ε whatever event was chosen. A lower
bound can never prove that a mechanism is private; it can only catch one that spends more than
it claims (a wrong flip probability, a floating-point Laplace that leaks through the float
grid: outputs that numpy's Laplace sampler can produce from x₀ but not from x₁). One row per
(mechanism, ε); the α of a run is split evenly over its rows (Bonferroni), so the whole table
holds at confidence 1 − α and a FAIL is a finding, not a coin toss.

The registry :data:`AUDITS` names the auditable mechanisms as a node runs them; a test may add
a planted one. Every draw comes from a generator derived from (seed, mechanism, ε), so a row
does not depend on which other rows are run.
"""

from __future__ import annotations

import math
import sys
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

#: The ε values a claim is checked at unless the caller names others (the HoGS paper's range).
DEFAULT_EPSILONS: tuple[float, ...] = (1.0, 4.0, 8.0)
#: Draws per input (half select the event, half estimate it).
DEFAULT_DRAWS = 1_000_000
DEFAULT_ALPHA = 0.05
#: ε_lb may exceed the claim by this much and still pass (floating-point noise in ln).
TOLERANCE = 1e-9
#: Draws are made and counted in chunks of this size (memory, progress).
CHUNK = 1 << 18


# --------------------------------------------------------------------------- statistics


def cp_lower(k: int, n: int, a: float) -> float:
    """One-sided Clopper–Pearson lower bound on p at confidence 1 − a, from k of n."""
    from scipy.stats import beta

    if k <= 0:
        return 0.0
    return float(beta.ppf(a, k, n - k + 1))


def cp_upper(k: int, n: int, a: float) -> float:
    """One-sided Clopper–Pearson upper bound on p at confidence 1 − a (0 of n: 1 − a^{1/n})."""
    from scipy.stats import beta

    if k >= n:
        return 1.0
    return float(beta.ppf(1.0 - a, k + 1, n - k))


def epsilon_lower_bound(k0: int, n0: int, k1: int, n1: int, alpha: float) -> float:
    """ln(p₀_lower / p₁_upper) with α split evenly over the two bounds; −inf when k0 = 0."""
    lo = cp_lower(k0, n0, alpha / 2.0)
    if lo <= 0.0:
        return -math.inf
    return math.log(lo / cp_upper(k1, n1, alpha / 2.0))


def _point_estimate(k0: int, n0: int, k1: int, n1: int) -> float:
    if k0 == 0:
        return -math.inf if k1 else 0.0
    if k1 == 0:
        return math.inf
    return math.log((k0 / n0) / (k1 / n1))


# --------------------------------------------------------------------------- event families


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
    sampler gets the uniform U = j·2^−53, with numpy's own float operations (numpy/random/src/
    distributions/distributions.c, ``random_laplace``): U ≥ 1/2 gives
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


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class Trial:
    """One mechanism at one ε, ready to audit: ``draw(which, n, rng)`` returns n outputs
    (one statistic per run of the mechanism) on input ``which`` ∈ {0, 1}."""

    draw: Callable[[int, int, np.random.Generator], np.ndarray]
    events: EventFamily
    claimed_epsilon: float
    inputs: tuple[str, str]
    unit: str


@dataclass(frozen=True)
class Auditable:
    """A mechanism that can be audited at any ε: ``build(ε)`` sets up its :class:`Trial`.

    A row with its own statistic (the timing and rate rows) sets ``run(trial, n, rng, α,
    tick)``, which returns the row's result fields; ``scale`` turns the run's draws per input
    into the row's (its draws, calls or bits)."""

    name: str
    description: str
    build: Callable[[float], Any]
    run: Callable[..., dict[str, Any]] | None = None
    scale: float = 1.0

    def draws(self, draws: int) -> int:
        """This row's draws per input for a run of ``draws``."""
        return draws if self.scale == 1.0 else max(400, round(draws * self.scale))


AUDITS: dict[str, Auditable] = {}


def register(audit: Auditable) -> Auditable:
    """Add a mechanism to :data:`AUDITS` (a test may add a planted one)."""
    if audit.name in AUDITS:
        raise ValueError(f"audit {audit.name!r} is already registered")
    AUDITS[audit.name] = audit
    return audit


#: The audited adjacency row: 8 bits; ``RR_ROWS[0]`` and ``RR_ROWS[1]`` are the positions of
#: its 1-bits in the two neighbouring rows (they differ in bit 4 only). Few 1-bits on purpose:
#: ``perturb_row`` with ``exclude`` pays ~1 µs per 1-bit in ``np.union1d`` (numpy 2.4's hash
#: unique), so a row with one more 1-bit per block makes the rr rows ~3× slower (3 s → 10 s).
RR_ROW_LENGTH = 8
RR_ROWS: tuple[tuple[int, ...], tuple[int, ...]] = ((), (4,))


def rr_row_draw(mech: Any, which: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """n independent reports of the 8-bit row ``RR_ROWS[which]`` by the node's own sparse
    sampler :meth:`RandomizedResponse.perturb_row`, as 8-bit codes (bit i: column i reported).

    One call does them all: the row handed to ``perturb_row`` is the node's own (excluded)
    column 0 followed by n blocks of 8 columns, each holding the audited row, as a node of a
    graph with 1 + 8n nodes would send it. ``perturb_row`` claims the law of independent
    flipping of every bit, under which the blocks are n independent reports of the 8-bit row
    (a sampler that broke that claim, e.g. correlated blocks, is a bug the audit may report
    as a FAIL too). One call per report would cost ~30 µs each (minutes for the audit).
    """
    block = np.asarray(RR_ROWS[which], dtype=np.int64)
    ones = (1 + RR_ROW_LENGTH * np.arange(n, dtype=np.int64)[:, None] + block).ravel()
    out = mech.perturb_row(ones, 1 + RR_ROW_LENGTH * n, rng, exclude=0).astype(np.int64)
    if out.size and out[0] == 0:
        raise RuntimeError("perturb_row reported the node's own (excluded) column")
    col = out - 1
    codes = np.bincount(
        col // RR_ROW_LENGTH, weights=np.left_shift(1, col % RR_ROW_LENGTH), minlength=n
    )
    return codes.astype(np.int64)


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


def _rr(eps: float) -> Trial:
    from ldpgraph.protocols.accounting import bit_part
    from ldpgraph.protocols.mechanisms import RandomizedResponse

    mech = RandomizedResponse(eps)
    unit = "one adjacency bit (edge LDP)"

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return rr_row_draw(mech, which, n, rng)

    def row(which: int) -> str:
        return "".join("1" if i in RR_ROWS[which] else "0" for i in range(RR_ROW_LENGTH))

    return Trial(
        draw,
        row_events(RR_ROW_LENGTH),
        bit_part("adjacency", unit, eps)["epsilon"],
        (f"row {row(0)}", f"row {row(1)}"),
        f"adjacency row ({RR_ROW_LENGTH} bits, one differs)",
    )


#: The keep probability the ``arr`` row is audited at: the claim (ε of RR, whatever μ) must
#: hold at any μ; at 0.25 three reported 1s in four are dropped, and "bit 4 reported" still
#: has the ratio e^ε, so the audit keeps its power.
ARR_AUDIT_MU = 0.25


def _arr(eps: float) -> Trial:
    from ldpgraph.protocols.accounting import bit_part
    from ldpgraph.protocols.mechanisms import AsymmetricRR

    mech = AsymmetricRR(eps, ARR_AUDIT_MU)
    trial = _rr(eps)

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return rr_row_draw(mech, which, n, rng)

    return Trial(
        draw,
        trial.events,
        bit_part("adjacency", "one adjacency bit (edge LDP)", eps)["epsilon"],
        trial.inputs,
        f"{trial.unit}, each reported 1 kept with μ = {ARR_AUDIT_MU:g}",
    )


def _onebit(eps: float) -> Trial:
    from ldpgraph.protocols.accounting import bit_part
    from ldpgraph.protocols.mechanisms import OneBit

    mech = OneBit(eps, domain=(0.0, 1.0))
    unit = "one feature bit"

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return mech.perturb(np.full(n, float(which)), rng)

    return Trial(
        draw,
        numeric_events(0, 1),
        bit_part("features", unit, eps)["epsilon"],
        ("x = 0", "x = 1"),
        "feature bit",
    )


#: Feature dimension of the multi-bit audits (small: the audited coordinate is often sampled).
MULTIBIT_D = 4
#: Rows checked bit for bit against MultiBit.perturb_many in every chunk.
MULTIBIT_CHECK_ROWS = 128


def multibit_draw(mech: Any, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``MultiBit.perturb_many(x, rng)`` vectorised over rows: the same draws in the same order
    (per row d uniforms choose the subset, then m uniforms the bits), so bit-identical output.

    The node's own code loops in Python (~25 µs a row); 10^6 audit rows need this twin. Its
    first rows are checked against the node's code on a copy of the generator every call.
    """
    x = np.asarray(x, dtype=np.float64)
    r, d = x.shape
    m = mech.sampled(d)
    check = min(r, MULTIBIT_CHECK_ROWS)
    twin = np.random.Generator(type(rng.bit_generator)())
    twin.bit_generator.state = rng.bit_generator.state
    expected = mech.perturb_many(x[:check], twin)

    prob = mech.probability(x)
    u = rng.random((r, d + m))
    chosen = np.argsort(u[:, :d], axis=1, kind="stable")[:, :m]
    t = u[:, d:] < np.take_along_axis(prob, chosen, axis=1)
    out = np.zeros((r, d), dtype=np.float32)
    np.put_along_axis(out, chosen, np.where(t, 1.0, -1.0).astype(np.float32), axis=1)
    if not np.array_equal(out[:check], expected):
        raise RuntimeError("the vectorised multi-bit twin no longer matches MultiBit.perturb_many")
    return out


def _multibit_part(eps: float) -> tuple[Any, dict[str, Any]]:
    from ldpgraph.protocols.multibit import MultiBit, multibit_privacy_part

    mech = MultiBit(eps, domain=(0.0, 1.0))
    return mech, multibit_privacy_part(mech, MULTIBIT_D)


def _multibit(eps: float) -> Trial:
    mech, part = _multibit_part(eps)
    d = MULTIBIT_D

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        x = np.zeros((n, d))
        x[:, 0] = which
        return multibit_draw(mech, x, rng)[:, 0]

    return Trial(
        draw,
        numeric_events(-1, 1, name="x*₀"),
        part["epsilon"],
        ("(" + ",".join("0" * d) + ")", "(1" + ",0" * (d - 1) + ")"),
        f"feature vector (m = {mech.sampled(d)})",
    )


def _multibit_vector(eps: float) -> Trial:
    mech, part = _multibit_part(eps)
    d = MULTIBIT_D

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return (multibit_draw(mech, np.full((n, d), float(which)), rng) > 0).sum(axis=1)

    return Trial(
        draw,
        numeric_events(0, d, name="#(+1)"),
        part["epsilon"],
        ("(" + ",".join("0" * d) + ")", "(" + ",".join("1" * d) + ")"),
        f"feature vector (m = {mech.sampled(d)})",
    )


#: The neighbouring degrees of the degree audit (one adjacency bit changes the degree by 1).
DEGREES = (4, 5)


def degree_events(eps: float) -> EventFamily:
    """The degree audit's events at ε: points and thresholds around :data:`DEGREES`, and
    whether the output is reachable from each degree by any float noise and by numpy's
    Laplace sampler at scale 1/ε (what a float Laplace on the degree would use). Under an
    ε-DP mechanism these fixed events, like any, have likelihood ratio ≤ e^ε (on the integer
    outputs of the discrete Laplace they are sets of integers); a float Laplace fails on
    them at every ε."""
    a, b = DEGREES
    span = max(5, math.ceil(12.0 / eps))
    return numeric_events(a - span, b + span, reachable_from=DEGREES, laplace_scale=1.0 / eps)


def _discrete_laplace(eps: float) -> Trial:
    from ldpgraph.protocols.laplace import DiscreteLaplace, discrete_laplace_part

    mech = DiscreteLaplace(eps, sensitivity=1)
    unit = "one adjacency bit (the noisy degree)"
    a, b = DEGREES

    def draw(which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        return mech.perturb_many(np.full(n, DEGREES[which], dtype=np.int64), rng)

    return Trial(
        draw,
        degree_events(eps),
        discrete_laplace_part("degree", unit, eps)["epsilon"],
        (f"degree {a}", f"degree {b}"),
        "adjacency bit (degree)",
    )


register(
    Auditable("rr", "randomized response on an adjacency row (perturb_row, as nodes run it)", _rr)
)
register(
    Auditable(
        "arr",
        "asymmetric RR (hogs-arr): RR on an adjacency row, then each reported 1 kept with "
        "probability μ (AsymmetricRR.perturb_row, as nodes run it)",
        _arr,
    )
)
register(Auditable("onebit", "the 1-bit feature mechanism at the domain ends", _onebit))
register(Auditable("multibit", "LPGNN multi-bit: vectors differing in one coordinate", _multibit))
register(
    Auditable(
        "multibit-vector",
        "LPGNN multi-bit: all-0 vs all-1 vector (the m-fold composition)",
        _multibit_vector,
    )
)
register(
    Auditable(
        "discrete-laplace",
        "the noisy degree of Blink and LDPGen (DiscreteLaplace)",
        _discrete_laplace,
    )
)


# --------------------------------------------------------------------------- the audit


@dataclass
class AuditRow:
    """One (mechanism, ε) result."""

    mechanism: str
    epsilon: float
    inputs: str
    unit: str
    claimed_epsilon: float
    epsilon_lower_bound: float
    epsilon_estimate: float
    event: str
    draws: int
    alpha_row: float  # this row's share of the run's α (Bonferroni over the rows)
    passed: bool
    counts: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("epsilon_lower_bound", "epsilon_estimate"):
            if math.isinf(d[key]):
                d[key] = "inf" if d[key] > 0 else "-inf"
        return d


def _rng(seed: int, name: str, eps: float) -> np.random.Generator:
    key = [zlib.crc32(name.encode()), zlib.crc32(repr(float(eps)).encode())]
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=key))


def _count_half(
    trial: Trial, which: int, n: int, rng: np.random.Generator, tick: Callable[[int], None]
) -> np.ndarray:
    total = np.zeros(len(trial.events.labels), dtype=np.int64)
    done = 0
    while done < n:
        size = min(CHUNK, n - done)
        total += trial.events.count(trial.draw(which, size, rng))
        done += size
        tick(size)
    return total


def audit_one(
    audit: Auditable,
    eps: float,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
    alpha: float = DEFAULT_ALPHA,
    tick: Callable[[int], None] = lambda n: None,
) -> AuditRow:
    """Audit one mechanism at one ε: ``draws`` runs on each input, the event chosen on the first
    half (highest lower bound there, either direction), ε_lb from the second half at 1 − α."""
    if draws < 4:
        raise ValueError(f"draws must be >= 4, got {draws}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    trial = audit.build(float(eps))
    rng = _rng(seed, audit.name, eps)
    if audit.run is not None:
        n = audit.draws(draws)
        got = audit.run(trial, n, rng, alpha, tick)
        return AuditRow(
            mechanism=audit.name,
            epsilon=float(eps),
            inputs=f"{trial.inputs[0]} vs {trial.inputs[1]}",
            unit=trial.unit,
            claimed_epsilon=float(trial.claimed_epsilon),
            draws=int(n),
            alpha_row=float(alpha),
            **got,
        )
    draws = audit.draws(draws)
    n_sel = draws // 2
    n_est = draws - n_sel
    sel = [_count_half(trial, w, n_sel, rng, tick) for w in (0, 1)]
    est = [_count_half(trial, w, n_est, rng, tick) for w in (0, 1)]

    best: tuple[float, int, int] = (-math.inf, 0, 0)  # (selection bound, event, direction)
    best_hat = -math.inf
    for i in range(len(trial.events.labels)):
        for direction in (0, 1):
            k0, k1 = sel[direction][i], sel[1 - direction][i]
            bound = epsilon_lower_bound(int(k0), n_sel, int(k1), n_sel, alpha)
            hat = _point_estimate(int(k0), n_sel, int(k1), n_sel)
            if bound > best[0] or (bound == best[0] == -math.inf and hat > best_hat):
                best, best_hat = (bound, i, direction), hat
    _, i, direction = best
    k0, k1 = int(est[direction][i]), int(est[1 - direction][i])
    lb = max(0.0, epsilon_lower_bound(k0, n_est, k1, n_est, alpha))
    first, second = trial.inputs[direction], trial.inputs[1 - direction]
    label = trial.events.labels[i]
    return AuditRow(
        mechanism=audit.name,
        epsilon=float(eps),
        inputs=f"{trial.inputs[0]} vs {trial.inputs[1]}",
        unit=trial.unit,
        claimed_epsilon=float(trial.claimed_epsilon),
        epsilon_lower_bound=lb,
        epsilon_estimate=_point_estimate(k0, n_est, k1, n_est),
        event=f"{label}: {first} over {second}",
        draws=int(draws),
        alpha_row=float(alpha),
        passed=bool(lb <= trial.claimed_epsilon + TOLERANCE),
        counts={"selected_on": n_sel, "estimated_on": n_est, "hits_num": k0, "hits_den": k1},
    )


def run_audit(
    names: Iterable[str] | None = None,
    epsilons: Sequence[float] = DEFAULT_EPSILONS,
    draws: int = DEFAULT_DRAWS,
    seed: int = 0,
    alpha: float = DEFAULT_ALPHA,
    progress: bool = False,
) -> list[AuditRow]:
    """Audit the named mechanisms (all registered ones when None) at every ε.

    α is split evenly over the rows, so all rows hold together at confidence 1 − α.
    """
    names = list(AUDITS) if names is None else list(names)
    unknown = [n for n in names if n not in AUDITS]
    if unknown:
        raise ValueError(f"unknown mechanism(s) {unknown}; known: {', '.join(AUDITS)}")
    if not names or not epsilons:
        raise ValueError("nothing to audit: no mechanism or no ε")
    jobs = [(AUDITS[n], float(e)) for n in names for e in epsilons]
    row_alpha = alpha / len(jobs)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(
            total=sum(2 * a.draws(draws) for a, _ in jobs),
            unit="draw",
            unit_scale=True,
            file=sys.stderr,
            desc="audit",
            smoothing=0.1,
        )
    rows: list[AuditRow] = []
    try:
        for audit, eps in jobs:
            if bar is not None:
                bar.set_postfix_str(f"{audit.name} ε={eps:g}")
            tick = bar.update if bar is not None else (lambda n: None)
            rows.append(audit_one(audit, eps, draws, seed, row_alpha, tick))
    finally:
        if bar is not None:
            bar.close()
    return rows


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) and x > 0 else f"{x:.3f}"


COLUMNS = (
    "mechanism",
    "neighbouring inputs",
    "unit",
    "ε",
    "claimed ε",
    "ε lower bound",
    "ε̂",
    "event (chosen on the first half)",
    "draws",
    "result",
)


def table_cells(row: AuditRow) -> list[str]:
    """One row of the table as text cells, in :data:`COLUMNS` order."""
    return [
        row.mechanism,
        row.inputs,
        row.unit,
        f"{row.epsilon:g}",
        f"{row.claimed_epsilon:.4f}",
        _fmt(row.epsilon_lower_bound),
        _fmt(row.epsilon_estimate),
        row.event,
        f"{row.draws:,}",
        "PASS" if row.passed else "FAIL",
    ]


def format_table(rows: Sequence[AuditRow]) -> str:
    """The audit as an aligned text table, one row per (mechanism, ε)."""
    cells = [list(COLUMNS)] + [table_cells(r) for r in rows]
    widths = [max(len(c[j]) for c in cells) for j in range(len(COLUMNS))]
    numeric = {3, 4, 5, 6, 8}
    lines = []
    for k, c in enumerate(cells):
        parts = [
            c[j].rjust(widths[j]) if j in numeric and k else c[j].ljust(widths[j])
            for j in range(len(c))
        ]
        lines.append("  ".join(parts).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
