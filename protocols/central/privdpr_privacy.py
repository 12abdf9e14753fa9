"""PrivDPR's privacy accounting (Zhang et al., KDD 2025, §5): the data-independent plan of a
run (T steps, B pairs, M of Thm 4.2, K layers by Eq. 13, σ), the paper's sequential
composition (Thm 5.1) and dp-accounting's figure for the T Gaussian steps with the replace-one
sensitivity 2·B·M·s^-K."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

#: The noise multipliers (per unit of the whole run's sensitivity) the calibration searches.
MU_MIN, MU_MAX = 1e-9, 1e3


def m_constant(n: int, gamma: float) -> float:
    """M of Theorem 4.2: a pair's ‖∂𝓛/∂V‖₂ ≤ M·Π‖W_l‖₂ (d^in ≤ N−1, d^out, d^in ≥ 1, f < 1)."""
    return (2 * (n - 1) * gamma**2 + 2 * gamma + 2 * gamma * (1 - gamma) / n) * (1 + 1 / gamma)


def layer_count(
    n: int, gamma: float, pairs: int, steps: int, scale: float, preset: float, strict: bool
) -> int:
    """K = L+1 weight matrices: the smallest K with c·B·M·s^{−K} ≤ S_∇/T (Eq. 13; c = 2 when
    ``strict``, the replace-one factor of spec §3.4.1), at least 1."""
    factor = 2.0 if strict else 1.0
    need = factor * pairs * m_constant(n, gamma) * steps / preset
    k = max(1, math.ceil(math.log(need) / math.log(scale)))
    while factor * pairs * m_constant(n, gamma) * scale ** (-k) * steps > preset:
        k += 1  # guard the ceiling against rounding
    return k


def paper_epsilon(sigma: float, steps: int, delta: float, preset: float) -> float:
    """The paper's ε for noise std ``sigma`` on the summed V-gradient: T classical Gaussian
    steps (Dwork–Roth Thm A.1) of sensitivity S_∇/T at δ/T each, composed sequentially
    (Thm 2.4, 5.1): T·√(2 ln(1.25T/δ))·(S_∇/T)/σ."""
    return preset * math.sqrt(2.0 * math.log(1.25 * steps / delta)) / sigma


def gaussian_epsilon(mu: float, delta: float, accountant: str) -> float:
    """ε at δ of the Gaussian mechanism whose noise std is 1/``mu`` of its ℓ2 sensitivity, by
    dp-accounting. ``GaussianDpEvent(z)`` under ADD_OR_REMOVE_ONE is exactly that mechanism
    with sensitivity 1 and std z (under REPLACE_ONE dp-accounting's PLD would double the
    sensitivity again; ours is already the replace-one bound)."""
    from dp_accounting import NeighboringRelation, dp_event, pld, rdp

    event = dp_event.GaussianDpEvent(1.0 / mu)
    if accountant == "rdp":
        acc = rdp.RdpAccountant(neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE)
    elif accountant == "pld":
        # PLD rounds losses up to its grid: keep the grid far below the ε it reports.
        interval = min(1e-4, max(1e-9, 1e-3 * mu))
        acc = pld.PLDAccountant(
            neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE,
            value_discretization_interval=interval,
        )
    else:
        raise ValueError(f"unknown accountant {accountant!r}; rdp or pld")
    acc.compose(event)
    return float(acc.get_epsilon(delta))


def composed_mu(noise_multiplier: float, steps: int) -> float:
    """T compositions of the Gaussian of multiplier z (std/sensitivity) are one Gaussian of
    multiplier z/√T, exactly (their privacy-loss distributions are the same; RDP adds up to
    the same figure, a test holds the two together): μ = √T/z."""
    return math.sqrt(steps) / noise_multiplier


def _invert_decreasing(fn: Callable[[float], float], target: float, lo: float, hi: float) -> float:
    """The smallest x in [lo, hi] with fn(x) ≤ target, for fn decreasing (bisection in log x,
    to 1e-10 relative); the side returned never exceeds the target."""
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if fn(mid) <= target:
            hi = mid
        else:
            lo = mid
        if hi / lo - 1.0 < 1e-10:
            break
    return hi


@dataclass(frozen=True)
class Plan:
    """One run's data-independent settings (N is public under bounded DP): T steps, B pairs
    per step, M, K weight matrices, the sensitivities, σ on the summed V-gradient and the ε
    each accounting gives for it."""

    n: int
    steps: int
    pairs: int
    m: float
    layers: int
    layers_paper: int
    sensitivity_paper: float  # S_∇/T: the paper's per-step sensitivity (Eq. 13)
    sensitivity: float  # 2·B·M·s^{−K}: what one replaced node can move the summed gradient by
    sigma: float  # noise std on Σ∇_V (0: no noise)
    epsilon: float  # dp-accounting's, with ``sensitivity``
    epsilon_rdp: float
    epsilon_pld: float
    epsilon_paper: float  # the paper's sequential composition (sensitivity S_∇/T)
    epsilon_basic: float  # the paper's composition with ``sensitivity``
    delta: float

    @property
    def noise_multiplier(self) -> float:
        return self.sigma / self.sensitivity if self.sigma > 0 else 0.0
