"""Local randomizers: Warner randomized response on bits, its asymmetric (sampled) variant and
the 1-bit mechanism.

All are pure ε-LDP per bit. Each works on one node's data with that node's own generator;
the ``*_batch`` helpers loop over nodes with one generator each, so a batch gives exactly the
reports the nodes would have produced one by one. numpy only: this module is on the client's
import path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def _check_epsilon(epsilon: float) -> float:
    epsilon = float(epsilon)
    if not math.isfinite(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon}")
    return epsilon


def flip_probability(epsilon: float) -> float:
    """Warner's flip probability 1 / (e^ε + 1)."""
    return 1.0 / (math.exp(_check_epsilon(epsilon)) + 1.0)


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
        reported. The distribution equals independent flipping of every other bit, but the cost
        is O(deg + p·length): each true 1 survives with prob 1 − p; the number of zeros that
        flip is Binomial(#zeros, p) and their positions are uniform without replacement among
        the zeros. Returns the sorted int32 ids of the reported 1-bits.
        """
        ones = np.asarray(ones, dtype=np.int64)
        if exclude is not None:
            ones = ones[ones != exclude]
        p = self.p
        survive = rng.random(ones.shape[0]) >= p
        kept = ones[survive]
        if exclude is None:
            excluded = ones
        else:
            excluded = np.union1d(ones, np.asarray([exclude], dtype=np.int64))
        num_zeros = length - excluded.shape[0]
        k = int(rng.binomial(num_zeros, p)) if num_zeros > 0 else 0
        if k:
            ranks = np.sort(rng.choice(num_zeros, size=k, replace=False, shuffle=False))
            # Map the rank among the zeros to a column id: skip every excluded id below it.
            below = excluded - np.arange(excluded.shape[0])
            flipped = ranks + np.searchsorted(below, ranks, side="right")
            out = np.concatenate([kept, flipped])
            out.sort()
        else:
            out = kept
        return out.astype(np.int32)


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
    sampling is post-processing of the RR output with randomness independent of the data, so
    the mechanism is ε-LDP per bit, exactly as RR (the ratio of the two is still e^ε; that of
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
        """:meth:`RandomizedResponse.perturb_row` with ``rng``, then :func:`keep_each` with
        ``keep_rng`` (default: ``rng``, after the RR draws). A node passes its own two streams
        (ADJACENCY, SAMPLING), so its RR draws equal HoGS's for the same seed. Returns the
        sorted int32 ids of the reported 1-bits."""
        reported = RandomizedResponse(self.epsilon).perturb_row(ones, length, rng, exclude)
        return keep_each(reported, self.mu, rng if keep_rng is None else keep_rng)


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
