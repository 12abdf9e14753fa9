"""DPAR's proven accounting (docs/privacy/dpar.md): the bounds DPAR's headline ε is made of, and
their inverses, which calibrate the noise under ``epsilon_convention=proven``.

Neighbouring relation: add/remove one node of the uploaded training graph (its features, its
label, all its edges) over the public set of training slots. Every bound here is for that
relation; the document gives the argument, these functions the numbers.

- :func:`amplified` / :func:`deamplified`: Poisson subsampling of the slots at rate q′
  (Balle, Barthe & Gaboardi, NeurIPS 2018, Thm. 8 for add/remove): ε ↦ ln(1 + q′(e^ε − 1)).
- :func:`pure_composition_epsilon`: the exact (ε, δ) of composing pure-DP mechanisms, each
  dominated by randomized response (Kairouz, Oh & Viswanath, ICML 2015, Thm. 2.2): DP-APPR-EM's
  K·M Gumbel peels (Durfee & Rogers, NeurIPS 2019, Lemma 4.2: one-shot Gumbel top-K = K
  exponential mechanisms, each 2ε_g-DP for an ℓ∞ sensitivity C2) and EM1's discrete Laplace
  values.
- :func:`gm_epsilon`: DP-APPR-GM's M Gaussian rows as one Gaussian mechanism of ℓ2
  sensitivity √(2M)·C1 (two non-negative vectors in the C1 ball are √2·C1 apart at most),
  exactly (Balle & Wang, ICML 2018, Thm. 8).
- :func:`strict_sgd_epsilon`: DP-SGD when one node moves up to D rows (its own and D − 1 that
  read its features): RDP through the world without any of the D rows (Mironov 2017, Prop. 11,
  the weak triangle inequality with p = q = 2), each leg a Poisson-subsampled Gaussian of rate
  1 − (1 − q)^k and sensitivity k·C, k ∈ {D, D − 1}.

numpy/scipy and dp-accounting; no torch.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Sequence
from contextlib import contextmanager

import numpy as np
from scipy import special

from ..params import ProtocolParameterError

#: RDP orders α of the strict DP-SGD bound: halves and integers, so that 2α and 2α − 1 are
#: integers (dp-accounting's exact integer-order formula), from 1.5 to 100.
STRICT_ORDERS = tuple(
    [k / 2 for k in range(3, 41)] + [float(a) for a in range(21, 65)] + [80.0, 100.0]
)


@contextmanager
def quiet_absl():
    """dp-accounting logs a warning per RDP order it drops; keep them out."""
    log = logging.getLogger("absl")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def amplified(eps: float, q: float) -> float:
    """ε after Poisson subsampling at rate q: ln(1 + q(e^ε − 1)), stable for large ε."""
    if q >= 1.0 or eps <= 0:
        return max(eps, 0.0)
    if math.isinf(eps):
        return math.inf
    return float(np.logaddexp(math.log1p(-q), math.log(q) + eps))


def deamplified(eps: float, q: float) -> float:
    """The raw ε whose :func:`amplified` value is ``eps``: ln(1 + (e^ε − 1)/q)."""
    if q >= 1.0:
        return eps
    if eps > 700:
        return eps - math.log(q) + math.log1p(-math.exp(-eps) * (1 - q))
    return math.log1p(math.expm1(eps) / q)


def bisect(f: Callable[[float], float], target: float, lo: float, hi: float, rel: float = 1e-9):
    """The x in [lo, hi] (geometric bisection) with f(x) ≤ target nearest the boundary, for a
    decreasing f; ``hi`` is widened until f(hi) ≤ target."""
    while f(hi) > target:
        hi *= 2.0
        if hi > 1e12:
            raise ProtocolParameterError(f"no noise level reaches ε = {target:.4g}")
    if f(lo) <= target:
        return lo
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if f(mid) > target:
            lo = mid
        else:
            hi = mid
        if hi - lo <= rel * hi:
            break
    return hi  # the side whose ε does not exceed the target


def lowest(
    f: Callable[[float], float],
    target: float,
    lo: float,
    hi: float,
    *,
    rel: float = 0.0,
    floor: float = 0.0,
    rounds: int = 200,
    widen: bool = False,
) -> float:
    """The smallest x in [lo, hi] with f(x) ≤ ``target``, for a decreasing f, by arithmetic
    bisection: ``rounds`` halvings at most, stopping once hi − lo ≤ rel·max(floor, hi); with
    ``widen``, ``hi`` is first doubled until f(hi) ≤ target. Returns the side that meets the
    target (an ε or a noise level whose privacy loss does not exceed the target)."""
    while widen and f(hi) > target:
        hi *= 2.0
    for _ in range(rounds):
        mid = 0.5 * (lo + hi)
        if f(mid) > target:
            lo = mid
        else:
            hi = mid
        if hi - lo <= rel * max(floor, hi):
            break
    return hi


# --- pure DP (DP-APPR-EM) -------------------------------------------------------------------


def pure_composition_delta(groups: Sequence[tuple[float, int]], eps: float) -> float:
    """δ(ε) of composing, for each (ε_i, k_i) of ``groups`` (at most two), k_i mechanisms that
    are ε_i-DP: exactly that of the randomized responses RR(ε_i) that dominate them (KOV,
    Thm. 2.2), E_P[(1 − e^{ε − L})₊] with L = Σ ±ε_i."""
    from scipy import stats  # here, not at import: a second that `ldpgraph run` refusals skip

    groups = [(float(e), int(k)) for e, k in groups if k > 0 and e > 0]
    if not groups:
        return 0.0
    if len(groups) > 2:
        raise ValueError("pure_composition_delta takes at most two groups")
    losses, logp = np.zeros(1), np.zeros(1)
    for e, k in groups:
        i = np.arange(k + 1)
        p_up = special.expit(e)  # e^ε/(1 + e^ε)
        lp = stats.binom.logpmf(i, k, p_up)
        losses = (losses[:, None] + e * (2 * i - k)[None, :]).ravel()
        logp = (logp[:, None] + lp[None, :]).ravel()
    keep = losses > eps
    # P·(1 − e^{ε − L}) summed where L > ε.
    terms = np.exp(logp[keep]) * -np.expm1(eps - losses[keep])
    return float(terms.sum())


def pure_composition_epsilon(groups: Sequence[tuple[float, int]], delta: float) -> float:
    """The smallest ε with :func:`pure_composition_delta` ≤ ``delta`` (never above basic
    composition Σ k_i·ε_i)."""
    basic = float(sum(e * k for e, k in groups))
    if basic <= 0 or pure_composition_delta(groups, 0.0) <= delta:
        return 0.0
    f = lambda eps: pure_composition_delta(groups, eps)  # noqa: E731
    return lowest(f, delta, 0.0, basic, rel=1e-10, floor=1.0, rounds=100)


def em_groups(eps_gumbel: float, eps_value: float, k: int, m: int) -> list[tuple[float, int]]:
    """DP-APPR-EM's pure-DP pieces: K·M peels at 2ε_g (Durfee–Rogers; the exponential
    mechanism with weights e^{u/β}, β = C2/ε_g, under an ℓ∞ sensitivity C2) and, for EM1,
    K·M discrete Laplace values at ε_value each."""
    groups = [(2.0 * eps_gumbel, k * m)]
    if eps_value > 0:
        groups.append((eps_value, k * m))
    return groups


def calibrate_em(
    eps_pr: float, delta_pr: float, k: int, m: int, value_share: float = 0.0
) -> tuple[float, float]:
    """(ε_g, ε_value) whose :func:`em_groups` compose to ``eps_pr`` at ``delta_pr``: a per-
    vector budget x split as 2K·ε_g = (1 − s)·x and K·ε_value = s·x (s = ``value_share``, 0 for
    EM0), with x found by bisection."""

    def split(x: float) -> tuple[float, float]:
        return (1.0 - value_share) * x / (2.0 * k), value_share * x / k

    def cost(x: float) -> float:
        return pure_composition_epsilon(em_groups(*split(x), k, m), delta_pr)

    lo, hi = 0.0, eps_pr  # x = ε_pr is one vector's basic cost: M vectors cost more
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if cost(mid) > eps_pr:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-10 * hi:
            break
    return split(lo)


# --- Gaussian (DP-APPR-GM) ------------------------------------------------------------------


def gaussian_delta(mu: float, eps: float) -> float:
    """δ(ε) of the Gaussian mechanism with sensitivity/σ = μ (Balle & Wang 2018, Thm. 8)."""
    from scipy import stats

    if mu <= 0:
        return 0.0
    a = stats.norm.cdf(-eps / mu + mu / 2)
    b = math.exp(eps + stats.norm.logcdf(-eps / mu - mu / 2)) if eps < 700 else 0.0
    return float(max(a - b, 0.0))


def gaussian_epsilon(mu: float, delta: float) -> float:
    """The smallest ε with :func:`gaussian_delta` ≤ δ."""
    if gaussian_delta(mu, 0.0) <= delta:
        return 0.0
    return lowest(lambda eps: gaussian_delta(mu, eps), delta, 0.0, 1.0, rel=1e-12, widen=True)


def gm_epsilon(sigma: float, clip: float, m: int, delta: float) -> float:
    """DP-APPR-GM's M rows: one Gaussian mechanism of sensitivity √(2M)·C1 and std σ."""
    return gaussian_epsilon(math.sqrt(2.0 * m) * clip / sigma, delta)


@functools.lru_cache(maxsize=256)
def calibrate_gm(eps_pr: float, delta_pr: float, clip: float, m: int) -> float:
    """The σ at which :func:`gm_epsilon` equals ``eps_pr`` (cached: a pure function of its
    arguments, and a bisection over the Gaussian's exact δ costs about a second)."""
    return bisect(lambda s: gm_epsilon(s, clip, m, delta_pr), eps_pr, 1e-8 * clip, clip)


# --- DP-SGD ---------------------------------------------------------------------------------


def strict_rate(q: float, rows: int) -> float:
    """The chance that a Poisson batch (rate q per row) holds at least one of ``rows`` rows:
    1 − (1 − q)^D (exactly q for D = 1)."""
    if rows <= 0:
        return 0.0
    if rows == 1 or q >= 1.0:
        return min(q, 1.0)
    return float(-np.expm1(rows * np.log1p(-q)))


def _sgm_rdp(q: float, z: float, steps: int, orders: np.ndarray) -> np.ndarray:
    """``steps`` × the RDP of the Poisson-subsampled Gaussian (add/remove; dp-accounting's
    formula, which bounds both directions: Mironov, Talwar & Zhang 2019)."""
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    if q <= 0:
        return np.zeros_like(orders)
    with quiet_absl():
        return steps * np.asarray(rdp._compute_rdp_poisson_subsampled_gaussian(q, z, orders))


def strict_sgd_rdp(noise: float, q: float, steps: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """(orders α, RDP ε(α)) of DP-SGD with per-row clipping C, noise std ``noise``·C, Poisson
    rate q per row, ``steps`` steps, when one node moves at most ``rows`` = D rows.

    D = 1: the standard bound. D ≥ 2: let W be the world without any of the D rows; the real
    world is W plus D rows (rate 1 − (1 − q)^D of touching any, shift ≤ D·C), the neighbour W
    plus D − 1 rows; Mironov's weak triangle inequality through W gives
    (α − ½)/(α − 1)·ε_{2α}(one leg) + ε_{2α−1}(the other leg), both orders of the legs taken.
    """
    if rows <= 1:
        orders = np.array(STRICT_ORDERS)
        return orders, _sgm_rdp(q, noise, steps, orders)
    a = np.array(STRICT_ORDERS)
    both = np.concatenate([2 * a, 2 * a - 1])
    full = _sgm_rdp(strict_rate(q, rows), noise / rows, steps, both)
    part = _sgm_rdp(strict_rate(q, rows - 1), noise / (rows - 1), steps, both)
    n = a.size
    w = (a - 0.5) / (a - 1.0)
    one = w * full[:n] + part[n:]
    two = w * part[:n] + full[n:]
    return a, np.maximum(one, two)


def strict_sgd_epsilon(noise: float, q: float, steps: int, rows: int, delta: float) -> float:
    """ε at ``delta`` of :func:`strict_sgd_rdp` (dp-accounting's RDP → (ε, δ) conversion)."""
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    if noise <= 0:
        return math.inf
    orders, values = strict_sgd_rdp(noise, q, steps, rows)
    with quiet_absl():
        eps, _ = rdp.compute_epsilon(orders, values, delta)
    return float(eps)


def calibrate_strict_sgd(eps_sgd: float, delta: float, q: float, steps: int, rows: int) -> float:
    """The noise multiplier (std / C) at which :func:`strict_sgd_epsilon` equals ``eps_sgd``."""
    if not (math.isfinite(eps_sgd) and eps_sgd > 0):
        raise ProtocolParameterError(f"DP-SGD needs a target ε > 0, got {eps_sgd!r}")
    z = bisect(
        lambda s: strict_sgd_epsilon(s, q, steps, rows, delta), eps_sgd, 1e-2, max(1.0, rows),
        rel=1e-5,
    )  # fmt: skip
    if z > 1e5:
        raise ProtocolParameterError(
            f"target ε_sgd = {eps_sgd:.4g} is unreachable (q = {q:.4g}, {steps} steps, D = {rows})"
        )
    return z
