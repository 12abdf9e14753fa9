"""The audit's statistics: Clopper–Pearson bounds and the ε lower bound they give.

For neighbouring inputs x₀, x₁ and an output event E fired k₀ of n₀ times on x₀ and k₁ of n₁
times on x₁, ε ≥ ln(p₀_lower / p₁_upper) with confidence 1 − α when each one-sided bound holds
at 1 − α/2 (Clopper & Pearson, Biometrika 1934; the auditing recipe of Jagielski, Ullman &
Oprea, NeurIPS 2020). Every row of ``ldpgraph audit`` (client, node, timing) uses these.
"""

from __future__ import annotations

import math


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


def point_estimate(k0: int, n0: int, k1: int, n1: int) -> float:
    """ln((k0/n0) / (k1/n1)), the plain estimate beside the bound (±inf at zero counts)."""
    if k0 == 0:
        return -math.inf if k1 else 0.0
    if k1 == 0:
        return math.inf
    return math.log((k0 / n0) / (k1 / n1))
