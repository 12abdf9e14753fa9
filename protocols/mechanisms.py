"""Local randomizers: Warner randomized response on bits and the 1-bit mechanism.

Both are pure ε-LDP per bit. Each works on one node's data with that node's own generator;
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
