"""LPGNN's multi-bit feature mechanism (Sajadmanesh & Gatica-Perez, CCS'21;
official code github.com/sisaman/LPGNN).

Client, for a feature vector x ∈ [α, β]^d and a budget ε for the WHOLE vector:

1. m = max(1, min(d, ⌊ε / 2.18⌋)) (the "1-bit" variant of LPGNN sets m = d);
2. draw a set S of m distinct coordinates uniformly at random;
3. for k ∈ S draw t_k ~ Bernoulli(1/(e^{ε/m}+1) + ((x_k−α)/(β−α))·(e^{ε/m}−1)/(e^{ε/m}+1)) and
   send x*_k = 2t_k − 1 ∈ {−1, +1}; for k ∉ S send x*_k = 0.

Server (rectifier): x'_k = (d(β−α)/(2m))·((e^{ε/m}+1)/(e^{ε/m}−1))·x*_k + (α+β)/2, an unbiased
estimate of x_k.

Privacy: S does not depend on the data, and each sampled coordinate is released by a 1-bit
mechanism with ε/m (worst-case likelihood ratio e^{ε/m}, that of randomized response), so the
vector costs m·(ε/m) = ε by basic composition: pure ε-LDP per node VECTOR (not per bit, as
HoGS's mechanism is). The accountant figure composes m randomized-response events of ε/m.

numpy only (client import path). Every draw comes from an explicit generator; the batch helper
uses one generator per node and gives exactly the reports the nodes would produce one by one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

#: LPGNN's constant: m = ⌊ε / 2.18⌋ coordinates are sampled (clipped to [1, d]).
LPGNN_EPS_PER_DIM = 2.18
#: Above this many composed events the report falls back to the closed form (the PLD
#: accountant's cost and its per-event discretisation slack grow with m).
MAX_ACCOUNTED_EVENTS = 64


def sample_count(epsilon: float, d: int) -> int:
    """LPGNN's m = max(1, min(d, ⌊ε / 2.18⌋))."""
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    return max(1, min(int(d), int(math.floor(epsilon / LPGNN_EPS_PER_DIM))))


@dataclass(frozen=True)
class MultiBit:
    """The multi-bit mechanism with budget ``epsilon`` per feature vector.

    ``m`` fixes the number of sampled coordinates (``m = d`` is LPGNN's 1-bit variant);
    None uses LPGNN's rule :func:`sample_count`.
    """

    epsilon: float
    domain: tuple[float, float] = (0.0, 1.0)
    m: int | None = None

    def __post_init__(self) -> None:
        eps = float(self.epsilon)
        if not math.isfinite(eps) or eps <= 0:
            raise ValueError(f"epsilon must be a finite number > 0, got {self.epsilon}")
        lo, hi = self.domain
        if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
            raise ValueError(f"feature domain must be finite with beta > alpha, got {self.domain}")
        if self.m is not None and (int(self.m) != self.m or self.m < 1):
            raise ValueError(f"m must be a positive integer, got {self.m}")

    def sampled(self, d: int) -> int:
        """The m used for vectors of length d."""
        if self.m is None:
            return sample_count(self.epsilon, d)
        if self.m > d:
            raise ValueError(f"m = {self.m} exceeds the feature dimension d = {d}")
        return int(self.m)

    def bit_epsilon(self, d: int) -> float:
        """ε/m, the budget of each sampled coordinate."""
        return float(self.epsilon) / self.sampled(d)

    def probability(self, x: np.ndarray) -> np.ndarray:
        """Pr[t_k = 1 | k ∈ S] for every entry of x (an array of any shape; last axis = d)."""
        lo, hi = self.domain
        x = np.asarray(x, dtype=np.float64)
        if x.size and (np.isnan(x).any() or x.min() < lo or x.max() > hi):
            raise ValueError(f"features outside the declared domain [{lo}, {hi}]")
        e = math.exp(self.bit_epsilon(x.shape[-1]))
        return 1.0 / (e + 1.0) + (x - lo) / (hi - lo) * ((e - 1.0) / (e + 1.0))

    def perturb_many(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Independent reports x* ∈ {−1, 0, +1} (float32) for every row of the r × d array x,
        all drawn from ``rng`` (row by row: row i uses the draws after those of rows < i).
        :meth:`perturb` is this with one row; use it for simulations and tests."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2:
            raise ValueError("perturb_many wants an r × d array")
        r, d = x.shape
        m = self.sampled(d)
        prob = self.probability(x)
        out = np.zeros((r, d), dtype=np.float32)
        for row in range(r):
            # A uniform m-subset: the first m positions of a uniformly random permutation.
            chosen = np.argsort(rng.random(d), kind="stable")[:m]
            t = rng.random(m) < prob[row, chosen]
            out[row, chosen] = np.where(t, 1.0, -1.0)
        return out

    def perturb(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One node's report x* (float32 vector of −1, 0, +1; it travels as 'f32')."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 1:
            raise ValueError("perturb wants one feature vector")
        return self.perturb_many(x[None, :], rng)[0]

    def scale(self, d: int) -> float:
        """The rectifier's factor d(β−α)/(2m) · (e^{ε/m}+1)/(e^{ε/m}−1)."""
        lo, hi = self.domain
        m = self.sampled(d)
        e = math.exp(self.bit_epsilon(d))
        return d * (hi - lo) / (2.0 * m) * (e + 1.0) / (e - 1.0)

    def rectify(self, xstar: np.ndarray) -> np.ndarray:
        """The server's unbiased estimate x' (float64) from reports x* (last axis = d)."""
        xstar = np.asarray(xstar, dtype=np.float64)
        lo, hi = self.domain
        return self.scale(xstar.shape[-1]) * xstar + (lo + hi) / 2.0

    def variance(self, x: np.ndarray) -> np.ndarray:
        """Var[x'_k] = C²·m/d − (x_k − (α+β)/2)², with C the rectifier's factor."""
        x = np.asarray(x, dtype=np.float64)
        d = x.shape[-1]
        lo, hi = self.domain
        return self.scale(d) ** 2 * self.sampled(d) / d - (x - (lo + hi) / 2.0) ** 2


def multibit_privacy_part(mechanism: MultiBit, d: int) -> dict[str, Any]:
    """The feature line of a privacy report: pure ε per node feature VECTOR.

    The accountant composes m randomized-response events of ε/m (each sampled coordinate is a
    1-bit mechanism with ε/m; the sampling is data-independent). For m > MAX_ACCOUNTED_EVENTS the
    closed form m·(ε/m) = ε is reported instead, with a note.
    """
    from .accounting import pure_epsilon, rr_event

    m = mechanism.sampled(d)
    part: dict[str, Any] = {
        "part": "features",
        "unit": "a node's whole feature vector (vector-level feature LDP)",
        "mechanism": f"multi-bit (LPGNN), m = {m} of d = {d} coordinates",
        "epsilon_closed_form": float(mechanism.epsilon),
        "delta": 0.0,
        "sampled_coordinates": m,
    }
    if m <= MAX_ACCOUNTED_EVENTS:
        eps_bit = mechanism.bit_epsilon(d)
        part["epsilon"] = pure_epsilon([rr_event(eps_bit)] * m)
    else:
        part["epsilon"] = float(mechanism.epsilon)
        part["note"] = (
            f"closed form (m = {m} > {MAX_ACCOUNTED_EVENTS} composed events): m·(ε/m) = ε by "
            "basic composition of the sampled coordinates' 1-bit mechanisms"
        )
    return part
