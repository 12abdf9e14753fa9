"""Local randomizers: Warner randomized response on bits, its asymmetric (sampled) variant and
the 1-bit mechanism.

All are pure ε-LDP per bit. Each works on one node's data with that node's own generator;
the ``*_batch`` helpers loop over nodes with one generator each, so a batch gives exactly the
reports the nodes would have produced one by one. numpy only: this module is on the client's
import path.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

from .sorting import union_ints, unique_ints


def _check_epsilon(epsilon: float) -> float:
    epsilon = float(epsilon)
    if not math.isfinite(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon}")
    return epsilon


def flip_probability(epsilon: float) -> float:
    """Warner's flip probability 1 / (e^ε + 1)."""
    return 1.0 / (math.exp(_check_epsilon(epsilon)) + 1.0)


#: From this flip probability on (ε ≤ ln 9 ≈ 2.2) a row is perturbed bit by bit, one uniform
#: per column: about p·length flips would each cost more than a uniform does.
DENSE_FLIP = 0.1

#: Whether the rows drawn in this context are drawn in constant work (:func:`constant_work`).
_CONSTANT_WORK: ContextVar[bool] = ContextVar("ldpgraph_constant_work", default=False)

#: What a node states it ran (the record's ``node_sampling``).
CONSTANT_WORK = "constant-work"
SPARSE = "sparse"


@contextmanager
def constant_work(enabled: bool = True) -> Iterator[None]:
    """Draw every RR row in this context in constant work: one uniform per column (and, for
    asymmetric RR, one keep uniform per column), whatever ε, so the time a node takes to
    answer does not depend on its degree or on how many bits flipped. A deployed node runs
    its client step inside it (its reply time is seen by the server); the simulation, where
    the harness plays every node and no one times a reply, keeps the O(deg + p·n) sparse
    path and its reports. The law is the same either way (independent flips)."""
    token = _CONSTANT_WORK.set(bool(enabled))
    try:
        yield
    finally:
        _CONSTANT_WORK.reset(token)


def constant_work_enabled() -> bool:
    """Whether :func:`constant_work` is on in this context."""
    return _CONSTANT_WORK.get()


@dataclass(frozen=True)
class RandomizedResponse:
    """Warner randomized response: each bit is flipped with probability 1 / (e^ε + 1)."""

    epsilon: float

    def __post_init__(self) -> None:
        _check_epsilon(self.epsilon)

    @property
    def p(self) -> float:
        return flip_probability(self.epsilon)

    def perturb_bits(self, bits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Dense per-bit flipping: O(len(bits)). The reference the sparse sampler must match."""
        bits = np.asarray(bits, dtype=np.uint8)
        flips = rng.random(bits.shape[0]) < self.p
        return (bits ^ flips).astype(np.uint8)

    def perturb_row(
        self,
        ones: np.ndarray,
        length: int,
        rng: np.random.Generator,
        exclude: int | None = None,
    ) -> np.ndarray:
        """Perturb a 0/1 row of ``length`` bits given as the sorted ids of its 1-bits.

        Position ``exclude`` (a node's own diagonal entry) is not part of the row: it is never
        reported. The distribution is independent flipping of every other bit. Below
        p = :data:`DENSE_FLIP` the cost is O(deg + p·length): each true 1 survives with prob
        1 − p; the number of zeros that flip is Binomial(#zeros, p) and their positions are
        uniform without replacement among the zeros (:func:`distinct_ranks`). From
        :data:`DENSE_FLIP` on, so many bits flip that one uniform per column is cheaper (and
        exactly the definition). Inside :func:`constant_work` (a deployed node) every ε takes
        that dense path, whose work does not depend on the node's noise or, beyond one O(deg)
        scatter, on its degree. Returns the sorted int32 ids of the reported 1-bits.
        """
        ones = np.asarray(ones, dtype=np.int64)
        if exclude is not None:
            ones = ones[ones != exclude]
        p = self.p
        if p >= DENSE_FLIP or _CONSTANT_WORK.get():
            return np.flatnonzero(_dense_mask(ones, length, rng, exclude, p)).astype(np.int32)
        return _sparse_row(ones, length, rng, exclude, p)


def _dense_mask(
    ones: np.ndarray, length: int, rng: np.random.Generator, exclude: int | None, p: float
) -> np.ndarray:
    """RR's row as a full-length bool mask, one uniform per column: a 1 survives (u >= p), a
    0 flips (u < p). The true row is scattered into a zero mask and XORed in (one plain
    scatter of the node's ids, ~3 ns each, then fixed O(length) work), never gathered,
    inverted and scattered back: the only work that depends on the node's degree is that
    scatter, below what the timing audit can see (``timing-rr``)."""
    bits = rng.random(length) < p
    row = np.zeros(length, dtype=bool)
    row[ones] = True
    bits ^= row
    if exclude is not None:
        bits[exclude] = False
    return bits


def _sparse_row(
    ones: np.ndarray,
    length: int,
    rng: np.random.Generator,
    exclude: int | None,
    p: float,
    keep: tuple[float, np.random.Generator] | None = None,
) -> np.ndarray:
    """RR's row below DENSE_FLIP (``ones`` without ``exclude``): :meth:`RandomizedResponse.
    perturb_row`. With ``keep = (μ, keep_rng)`` each reported 1 is then kept with probability
    μ, drawn lazily (:meth:`AsymmetricRR.perturb_row`): a true 1 is kept when it survived
    RR and a keep uniform on ``keep_rng`` is < μ; of the k flipped zeros, Binomial(k, μ) are
    kept (on ``keep_rng``), and only their positions are drawn, a uniform subset as the kept
    part of a uniform k-subset is."""
    survive = rng.random(ones.shape[0]) >= p
    if exclude is None:
        excluded = ones
    else:
        excluded = union_ints(ones, np.asarray([exclude], dtype=np.int64))
    num_zeros = length - excluded.shape[0]
    k = int(rng.binomial(num_zeros, p)) if num_zeros > 0 else 0
    if keep is not None:
        mu, keep_rng = keep
        survive &= keep_rng.random(ones.shape[0]) < mu
        k = int(keep_rng.binomial(k, mu)) if k > 0 else 0
    kept = ones[survive]
    # No early return when no zero flipped (k = 0): the same steps run (drawing nothing), so
    # a fast reply does not tell that every reported 1 is a true neighbour (timing audit).
    ranks = distinct_ranks(rng, k, num_zeros)
    # Map the rank among the zeros to a column id: skip every excluded id below it.
    below = excluded - np.arange(excluded.shape[0])
    out = np.concatenate([kept, ranks + np.searchsorted(below, ranks, side="right")])
    out.sort()
    return out.astype(np.int32)


#: 2^53: a float64 uniform of numpy's ``random()`` is an integer in [0, 2^53) times 2^-53.
_TWO53 = 9007199254740992


def ranks_from_uniforms(
    uniforms: np.ndarray, size: int | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Exactly uniform integers in [0, ``size``) from float64 uniforms of ``random()``.

    Each uniform carries a 53-bit integer v exactly; v is kept when below the largest multiple
    of ``size`` under 2^53 and reduced modulo ``size`` (rejection: no rank is more likely than
    another, where ``floor(u * size)`` would favour some by up to one part in 2^53 / size).
    ``size`` may be one size per uniform. Returns (ranks int64, kept: which uniforms gave one).
    """
    # v and every intermediate below are integers under 2^53, exact in float64: v mod size by
    # a float quotient, corrected by one size where the division rounded across an integer.
    v = np.asarray(uniforms, dtype=np.float64) * float(_TWO53)
    size_int = np.asarray(size, dtype=np.int64)
    size = size_int.astype(np.float64)
    kept = v < ((_TWO53 // size_int) * size_int).astype(np.float64)
    rem = v - np.floor(v / size) * size
    rem += np.where(rem < 0, size, 0.0)
    rem -= np.where(rem >= size, size, 0.0)
    return rem.astype(np.int64), kept


def distinct_ranks(
    rng: np.random.Generator, count: int, size: int, chosen: np.ndarray | None = None
) -> np.ndarray:
    """``count`` distinct integers drawn uniformly from [0, ``size``), sorted (int64).

    Sequential rejection sampling in blocks: draw as many ranks as are still missing (one
    ``rng.random`` call, :func:`ranks_from_uniforms`), keep the new distinct ones, repeat. Any
    draw that repeats a kept rank (or is rejected) is simply redrawn, so the result is a
    uniformly random ``count``-subset, as ``Generator.choice(replace=False)`` gives, but in
    draws a batch of nodes can make with one call each and finish together in numpy (the
    batched client step, :func:`~ldpgraph.protocols.ldp.node_reports.rr_onebit_batch`,
    continues from its first block through ``chosen``: the sorted distinct ranks so far).
    """
    chosen = np.zeros(0, dtype=np.int64) if chosen is None else chosen
    if count > size:
        raise ValueError(f"{count} distinct ranks wanted from only {size}")
    while (need := count - chosen.shape[0]) > 0:
        ranks, kept = ranks_from_uniforms(rng.random(need), size)
        new = unique_ints(ranks[kept])
        if chosen.shape[0]:
            at = np.minimum(np.searchsorted(chosen, new), chosen.shape[0] - 1)
            new = new[chosen[at] != new]
            chosen = np.insert(chosen, np.searchsorted(chosen, new), new)
        else:
            chosen = new
    return chosen


def check_keep_probability(mu: float) -> float:
    """μ as a float, or ValueError unless 0 < μ ≤ 1 (a node refuses any other value)."""
    mu = float(mu)
    if not (math.isfinite(mu) and 0.0 < mu <= 1.0):
        raise ValueError(f"the keep probability mu must be in (0, 1], got {mu}")
    return mu


def keep_each(ids: np.ndarray, mu: float, rng: np.random.Generator) -> np.ndarray:
    """Keep each entry of ``ids`` independently with probability ``mu`` (order kept).

    μ = 1 returns ``ids`` unchanged and draws nothing.
    """
    mu = check_keep_probability(mu)
    if mu == 1.0:
        return ids
    return ids[rng.random(ids.shape[0]) < mu]


@dataclass(frozen=True)
class AsymmetricRR:
    """Asymmetric randomized response (the sampled RR of Imola et al., USENIX Security '22):
    Warner RR with ε on every bit, then each reported 1 is kept with probability ``mu`` and
    dropped (sent as 0) otherwise; reported 0s stay 0.

    Pr[report 1 | bit 1] = (1−p)·μ and Pr[report 1 | bit 0] = p·μ with p = 1/(e^ε+1). The
    sampling is post-processing of the RR output with randomness independent of the data (a
    node draws it lazily, :meth:`perturb_row`, with the same law), so the mechanism is ε-LDP
    per bit, exactly as RR (the ratio of the two is still e^ε; that of
    the zeros, (1 − p·μ)/(1 − (1−p)·μ), is smaller). What it buys is size: a row of length n
    sends about μ·(deg + p·n) indices instead of deg + p·n.
    """

    epsilon: float
    mu: float

    def __post_init__(self) -> None:
        _check_epsilon(self.epsilon)
        check_keep_probability(self.mu)

    @property
    def p(self) -> float:
        return flip_probability(self.epsilon)

    @property
    def p_one_given_one(self) -> float:
        return (1.0 - self.p) * self.mu

    @property
    def p_one_given_zero(self) -> float:
        return self.p * self.mu

    def perturb_row(
        self,
        ones: np.ndarray,
        length: int,
        rng: np.random.Generator,
        exclude: int | None = None,
        keep_rng: np.random.Generator | None = None,
    ) -> np.ndarray:
        """:meth:`RandomizedResponse.perturb_row` with ``rng``, then each reported 1 kept with
        probability μ on ``keep_rng`` (default: ``rng``). A node passes its own two streams
        (ADJACENCY, SAMPLING). Returns the sorted int32 ids of the reported 1-bits.

        μ = 1 is RR itself, draw for draw (HoGS's report for the same seed). Below
        :data:`DENSE_FLIP` the sampling is drawn lazily, at O(deg + μ·p·length): which true 1s
        survive RR is drawn on ``rng`` as RR draws it, and each is kept with a uniform on
        ``keep_rng``; of RR's Binomial(#zeros, p) flipped zeros, Binomial(that, μ) are kept and
        only their positions are drawn (a uniform subset, as the kept part of RR's uniform
        subset is). The law is RR's followed by :func:`keep_each` (tests hold both to
        (1−p)·μ and p·μ); the flipped zeros a node drops are never drawn, which is what lets
        10^7 nodes report at μ ≈ 0.015. From DENSE_FLIP on: RR's row, then :func:`keep_each`.
        Inside :func:`constant_work` (a deployed node): RR's dense row and one keep uniform per
        column, O(length) whatever the node's degree and noise.
        """
        keep_rng = rng if keep_rng is None else keep_rng
        rr = RandomizedResponse(self.epsilon)
        if _CONSTANT_WORK.get():
            # Constant work (a deployed node): RR's dense row, then one keep uniform per
            # column (not per reported 1: how many RR reported is secret). μ is public.
            ones = np.asarray(ones, dtype=np.int64)
            if exclude is not None:
                ones = ones[ones != exclude]
            bits = _dense_mask(ones, length, rng, exclude, rr.p)
            if self.mu < 1.0:
                bits &= keep_rng.random(length) < self.mu
            return np.flatnonzero(bits).astype(np.int32)
        if self.mu == 1.0 or rr.p >= DENSE_FLIP:
            return keep_each(rr.perturb_row(ones, length, rng, exclude), self.mu, keep_rng)
        ones = np.asarray(ones, dtype=np.int64)
        if exclude is not None:
            ones = ones[ones != exclude]
        return _sparse_row(ones, length, rng, exclude, rr.p, (self.mu, keep_rng))


@dataclass(frozen=True)
class OneBit:
    """The 1-bit mechanism (Ding et al.) for a value x in the public domain [α, β]:
    report 1 with probability 1/(e^ε+1) + (x−α)/(β−α) · (e^ε−1)/(e^ε+1).

    (The HoGS paper writes x/(β−α), which equals this only for α = 0.) For x ∈ {α, β} it is
    Warner randomized response; its privacy loss is that of randomized response with the
    same ε whatever x is.
    """

    epsilon: float
    domain: tuple[float, float] = (0.0, 1.0)

    def __post_init__(self) -> None:
        _check_epsilon(self.epsilon)
        lo, hi = self.domain
        if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
            raise ValueError(f"feature domain must be finite with beta > alpha, got {self.domain}")

    def probability(self, x: np.ndarray) -> np.ndarray:
        """Pr[report 1] for every entry of x (checked to lie in the domain)."""
        lo, hi = self.domain
        x = np.asarray(x, dtype=np.float64)
        if x.size and (np.nanmin(x) < lo or np.nanmax(x) > hi or np.isnan(x).any()):
            raise ValueError(
                f"features outside the declared domain [{lo}, {hi}]: "
                f"min {np.nanmin(x):g}, max {np.nanmax(x):g}"
            )
        e = math.exp(self.epsilon)
        return 1.0 / (e + 1.0) + (x - lo) / (hi - lo) * ((e - 1.0) / (e + 1.0))

    def perturb(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One node's noisy bit vector (uint8), one uniform draw per feature."""
        prob = self.probability(x)
        return (rng.random(prob.shape[0]) < prob).astype(np.uint8)
