"""The exact ε of the Gaussian mechanism, independent of dp-accounting: the closed form the
central strategies' accountant figures are checked against."""

from __future__ import annotations

import math

from scipy.stats import norm


def gaussian_epsilon(mu: float, delta: float) -> float:
    """The exact ε at δ of the Gaussian mechanism with sensitivity/std = μ (Balle & Wang 2018:
    δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2)), by bisection."""

    def dlt(eps: float) -> float:
        return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)

    lo, hi = 0.0, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if dlt(mid) > delta else (lo, mid)
    return hi
