"""Approximate personalized PageRank (APPR) by ISTA and its DP release (DPAR's structure phase).

DPAR (Zhang et al., "DPAR: Decoupled Graph Neural Networks with Node-Level Differential
Privacy", WWW 2024), §3 (APPR and DP-APPR) and §4. Provenance tags: [P] the paper, [R] the
authors' reference code, [I] an implementer's choice.

- :func:`ista_appr`: the ℓ1-regularised PageRank of Fountoulakis et al. solved by ISTA with step
  size 1 [P: "Algorithm 3 in [16]"; I: the exact form], vectorised densely over the seeds (the
  graph it runs on is DPAR's q′-subsampled training graph: small). Output ``p = D^{1/2} q`` on the
  PPR scale (entries ≥ 0, ``‖p‖₁ ≤ 1``) [I], the scale the clip bounds C1, C2 were tuned for.
- :func:`dp_appr`: DP-APPR-EM (Algorithm 1, options I = EM0 and II = EM1) and DP-APPR-GM
  (Algorithm 3): clip, noise on **all N coordinates** (zeros included), top-K over the noisy
  vector.
- Calibration helpers: Kairouz–Oh–Viswanath per-vector budget (Theorems 1 and 3), the inverse of
  the Durfee–Rogers one-shot top-K bound (Corollary 1, paper convention β = C2/ε with the factor
  2), the Gaussian σ, and a sound composition of the M per-vector releases for the report.
- :func:`column_bound`: the column ℓ1 bound τ of Π (Algorithm 2 lines 2–4 ``clip``, or the
  reference's ``normalize``), applied after all noise.

numpy/scipy only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

VARIANTS = ("em0", "em1", "gm")


def _degrees(adj: sp.spmatrix) -> np.ndarray:
    deg = np.asarray(adj.sum(axis=1)).ravel().astype(np.float64)
    if (deg <= 0).any():
        raise ValueError("APPR needs every node to have degree > 0: add self-loops first")
    return deg


def with_self_loops(adj: sp.spmatrix) -> sp.csr_matrix:
    """``adj`` (symmetric, 0/1) with its diagonal set to 1 [R]: removes degree-0 nodes."""
    adj = sp.csr_matrix(adj, dtype=np.float64, copy=True)
    adj.setdiag(1.0)
    adj.eliminate_zeros()
    return adj


def ista_appr(
    adj: sp.spmatrix,
    seeds: np.ndarray,
    alpha: float = 0.25,
    rho: float = 1e-4,
    gamma: float = 1e-4,
    max_iter: int = 100_000,
) -> np.ndarray:
    """The APPR vectors of ``seeds`` (rows of the returned ``len(seeds) × N`` array).

    ISTA on ``f(q) = ½qᵀQq − α sᵀD^{-1/2}q + ρα‖D^{1/2}q‖₁`` with ``Q = αI + (1−α)/2·L``,
    ``L = I − D^{-1/2}AD^{-1/2}``; step size 1 (``Q ≼ I``), ``q₀ = 0``, stopping when
    ``‖D^{-1/2}∇g(q)‖∞ ≤ (1+γ)ρα`` per seed (a converged seed is frozen, so each seed's vector
    is what a one-seed run returns). ``adj`` must be symmetric with self-loops.
    """
    adj = sp.csr_matrix(adj, dtype=np.float64)
    n = adj.shape[0]
    seeds = np.asarray(seeds, dtype=np.int64)
    deg = _degrees(adj)
    inv_sqrt = 1.0 / np.sqrt(deg)
    sqrt_deg = np.sqrt(deg)
    # D^{-1/2} A D^{-1/2} as a sparse operator.
    norm_adj = sp.diags(inv_sqrt) @ adj @ sp.diags(inv_sqrt)
    m = seeds.size
    b = np.zeros((n, m))  # α D^{-1/2} s, one column per seed
    b[seeds, np.arange(m)] = alpha * inv_sqrt[seeds]
    q = np.zeros((n, m))
    active = np.ones(m, dtype=bool)
    thresh = (1.0 + gamma) * rho * alpha
    shrink = (rho * alpha * sqrt_deg)[:, None]
    for _ in range(max_iter):
        qa = q[:, active]
        grad = alpha * qa + 0.5 * (1.0 - alpha) * (qa - norm_adj @ qa) - b[:, active]
        done = np.abs(inv_sqrt[:, None] * grad).max(axis=0) <= thresh
        cols = np.flatnonzero(active)
        if done.any():
            active[cols[done]] = False
        if not active.any():
            break
        keep = ~done
        q[:, cols[keep]] = np.maximum(qa[:, keep] - grad[:, keep] - shrink, 0.0)
    else:
        raise RuntimeError(f"ISTA did not converge in {max_iter} iterations")
    return (sqrt_deg[:, None] * q).T


# --- calibration ------------------------------------------------------------------------


def kov_per_vector(eps_total: float, delta_total: float, m: int) -> tuple[float, float]:
    """Per-vector (ε, δ) from the Kairouz–Oh–Viswanath corollary as the paper uses it
    (Theorems 1 and 3): ``ε = ε_g / (2·sqrt(M·ln(e + ε_g/δ_g)))``, ``δ = δ_g/(2M)``."""
    eps = eps_total / (2.0 * math.sqrt(m * math.log(math.e + eps_total / delta_total)))
    return eps, delta_total / (2.0 * m)


def gumbel_topk_epsilon(eps: float, k: int, delta: float) -> float:
    """Corollary 1 (Durfee–Rogers, paper convention): one-shot Gumbel(Δ/ε) top-k is
    (ε′, δ)-DP with ``ε′ = 2·min{kε, kε·tanh(ε) + ε·sqrt(2k·ln(1/δ))}``
    ((e^{2ε}−1)/(e^{2ε}+1) = tanh ε)."""
    tail = k * eps * math.tanh(eps) + eps * math.sqrt(2 * k * math.log(1 / delta))
    return 2.0 * min(k * eps, tail)


def invert_gumbel_topk(eps_vec: float, k: int, delta: float) -> float:
    """The Gumbel ε whose top-k release costs ``eps_vec`` (Corollary 1 is increasing in ε:
    bisection to 1e-12 relative)."""
    lo, hi = 0.0, max(1.0, eps_vec)
    while gumbel_topk_epsilon(hi, k, delta) < eps_vec:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gumbel_topk_epsilon(mid, k, delta) < eps_vec:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return lo  # the side that does not exceed eps_vec


def gm_sigma(eps_vec: float, delta_vec: float, clip: float) -> tuple[float, str]:
    """The Gaussian std on each APPR entry and how it was found: the paper's classical bound
    ``sqrt(2 ln(1.25/δ))·C1/ε`` while it holds (ε < 1, Dwork–Roth Thm A.1); from ε ≥ 1 on the
    analytic Gaussian mechanism (Balle–Wang, dp_accounting) for the same sensitivity C1."""
    if eps_vec < 1.0:
        return math.sqrt(2.0 * math.log(1.25 / delta_vec)) * clip / eps_vec, "classical"
    from dp_accounting.gaussian_mechanism import get_sigma_gaussian

    return float(get_sigma_gaussian(eps_vec, delta_vec)) * clip, "analytic"


def sound_composition(eps_vec: float, delta_vec: float, m: int, delta_total: float) -> float:
    """A standard bound on M (ε_vec, δ_vec) releases at total δ = ``delta_total`` (≥ M·δ_vec):
    the smaller of basic composition (M·ε) and advanced composition (Dwork–Rothblum–Vadhan,
    ``sqrt(2M ln(1/δ′))·ε + M·ε·(e^ε − 1)`` with δ′ = δ_total − M·δ_vec). The paper's KOV
    corollary is applied outside its small-ε range; this is the figure that
    holds."""
    basic = m * eps_vec
    slack = delta_total - m * delta_vec
    if slack <= 0:
        return basic
    advanced = math.sqrt(2 * m * math.log(1 / slack)) * eps_vec + m * eps_vec * math.expm1(eps_vec)
    return min(basic, advanced)


@dataclass(frozen=True)
class ApprNoise:
    """The per-vector mechanism of one DP-APPR variant: ``eps_vec``/``delta_vec`` from the
    KOV corollary, the Gumbel scale ``beta`` (EM), the Laplace scale ``laplace_b`` (EM1) and
    the Gaussian std ``sigma`` (GM); 0 where unused."""

    variant: str
    eps_vec: float
    delta_vec: float
    eps_gumbel: float = 0.0
    beta: float = 0.0
    laplace_b: float = 0.0
    sigma: float = 0.0
    sigma_rule: str = ""
    #: EM1: the ε of one released value (sensitivity C2), what its discrete Laplace spends.
    eps_value: float = 0.0

    @property
    def levels(self) -> int:
        """EM1: a value is released on the grid C2/L (L = ``levels``): the integer
        round(p̂·L/C2) ∈ [0, L] plus discrete Laplace of sensitivity L. L is as fine as the
        sampler allows (ε/L ≥ its smallest rate), at most 1000."""
        from ..laplace import MIN_EPSILON

        return int(max(1, min(1000, math.floor(self.eps_value / MIN_EPSILON))))

    def value_mechanism(self):
        """EM1's exact discrete Laplace on the gridded value (pure ε_value-DP)."""
        from ..laplace import DiscreteLaplace

        return DiscreteLaplace(self.eps_value, sensitivity=self.levels)

    @classmethod
    def proven(
        cls,
        variant: str,
        eps_pr: float,
        delta_pr: float,
        m: int,
        k: int,
        clip_gm: float,
        clip_em: float,
        value_share: float = 0.5,
    ) -> ApprNoise:
        """The noise at which the proven bound of the M rows (docs/privacy/dpar.md) equals
        (ε_pr, δ_pr): GM's σ by the exact Gaussian bound, EM's Gumbel (and EM1's value) ε by
        the exact composition of the pure-DP pieces."""
        from .dpar_privacy import calibrate_em, calibrate_gm

        if variant not in VARIANTS:
            raise ValueError(f"unknown DP-APPR variant {variant!r}; one of {VARIANTS}")
        if variant == "gm":
            sigma = calibrate_gm(eps_pr, delta_pr, clip_gm, m)
            return cls(variant, 0.0, 0.0, sigma=sigma, sigma_rule="proven")
        share = value_share if variant == "em1" else 0.0
        eps_g, eps_value = calibrate_em(eps_pr, delta_pr, k, m, share)
        return cls(
            variant, 0.0, 0.0, eps_gumbel=eps_g, beta=clip_em / eps_g,
            laplace_b=clip_em / eps_value if eps_value else 0.0, eps_value=eps_value,
        )  # fmt: skip

    def proven_epsilon(self, m: int, k: int, clip_gm: float, delta_pr: float) -> float:
        """The proven ε of these M rows at ``delta_pr`` (docs/privacy/dpar.md)."""
        from .dpar_privacy import em_groups, gm_epsilon, pure_composition_epsilon

        if self.variant == "gm":
            return gm_epsilon(self.sigma, clip_gm, m, delta_pr)
        groups = em_groups(self.eps_gumbel, self.eps_value, k, m)
        return pure_composition_epsilon(groups, delta_pr)

    def paper_epsilon(self, m: int, k: int, clip_gm: float, delta_pr: float) -> float:
        """What the paper's Theorems 1 and 3 state for this noise: the per-vector ε (Gaussian
        σ rule of :func:`gm_sigma`, or Corollary 1 plus ε2 = K·ε_value) put through the KOV
        corollary at δ_vec = δ_pr/(2M), inverted by bisection."""
        from .dpar_privacy import lowest

        delta_vec = delta_pr / (2.0 * m)
        if self.variant == "gm":  # σ(ε) decreasing: the ε whose σ is this one
            sigma_of = lambda eps: gm_sigma(eps, delta_vec, clip_gm)[0]  # noqa: E731
            eps_vec = lowest(sigma_of, self.sigma, 1e-12, 1.0, widen=True)
        else:
            eps_vec = gumbel_topk_epsilon(self.eps_gumbel, k, delta_vec) + k * self.eps_value
        # the smallest ε_pr whose KOV per-vector budget reaches eps_vec (negated: increasing)
        minus_kov = lambda eps: -kov_per_vector(eps, delta_pr, m)[0]  # noqa: E731
        return lowest(minus_kov, -eps_vec, 0.0, 1.0, widen=True)

    @classmethod
    def calibrate(
        cls,
        variant: str,
        eps_pr: float,
        delta_pr: float,
        m: int,
        k: int,
        clip_gm: float,
        clip_em: float,
        value_share: float = 0.5,
    ) -> ApprNoise:
        """The per-vector budget, then the noise of ``variant`` (DPAR §4)."""
        if variant not in VARIANTS:
            raise ValueError(f"unknown DP-APPR variant {variant!r}; one of {VARIANTS}")
        eps_vec, delta_vec = kov_per_vector(eps_pr, delta_pr, m)
        if variant == "gm":
            sigma, rule = gm_sigma(eps_vec, delta_vec, clip_gm)
            return cls(variant, eps_vec, delta_vec, sigma=sigma, sigma_rule=rule)
        eps_select = eps_vec if variant == "em0" else (1.0 - value_share) * eps_vec
        eps_gumbel = invert_gumbel_topk(eps_select, k, delta_vec)
        laplace_b = eps_value = 0.0
        if variant == "em1":
            laplace_b = k * clip_em / (value_share * eps_vec)
            eps_value = clip_em / laplace_b  # Laplace(K·C2/ε2) on a value of sensitivity C2
        return cls(
            variant,
            eps_vec,
            delta_vec,
            eps_gumbel=eps_gumbel,
            beta=clip_em / eps_gumbel,
            laplace_b=laplace_b,
            eps_value=eps_value,
        )


# --- the release ------------------------------------------------------------------------


def topk_rows(values: np.ndarray, k: int) -> np.ndarray:
    """The column indices of the k largest entries of each row (ascending index order)."""
    idx = np.argpartition(-values, k - 1, axis=1)[:, :k]
    return np.sort(idx, axis=1)


def dp_appr(
    appr: np.ndarray,
    noise: ApprNoise | None,
    k: int,
    clip_gm: float,
    clip_em: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """The DP-APPR rows of the exact APPR vectors ``appr`` (M × N): the top-K indices (M × K)
    and their released values (M × K).

    - ``gm``: ℓ2 clip to C1, Gaussian(σ) on every entry, top-K of the noisy vector, values
      the noisy entries (may be negative) [P Alg. 3, R].
    - ``em0``/``em1``: element-wise clip ``min(p, C2)``, Gumbel(β) on every entry, top-K; the
      values are 1/K (EM0) or the clipped value plus noise of Laplace(K·C2/ε2)'s ε per value
      (EM1) [P Alg. 1], drawn exactly: the value on the grid C2/L plus discrete Laplace.
    - ``noise=None`` (DPARNoDP): the exact top-K of ``appr`` with its exact values.
    """
    appr = np.asarray(appr, dtype=np.float64)
    n = appr.shape[1]
    if not 1 <= k <= n:
        raise ValueError(f"top-K needs 1 <= K <= N, got K={k} for N={n}")
    if noise is None:
        idx = topk_rows(appr, k)
        return idx, np.take_along_axis(appr, idx, axis=1)
    if noise.variant == "gm":
        norms = np.linalg.norm(appr, axis=1, keepdims=True)
        clipped = appr / np.maximum(1.0, norms / clip_gm)
        noisy = clipped + rng.normal(0.0, noise.sigma, size=appr.shape)
        idx = topk_rows(noisy, k)
        return idx, np.take_along_axis(noisy, idx, axis=1)
    clipped = np.minimum(appr, clip_em)
    noisy = clipped + rng.gumbel(0.0, noise.beta, size=appr.shape)
    idx = topk_rows(noisy, k)
    if noise.variant == "em0":
        return idx, np.full(idx.shape, 1.0 / k)
    values = np.take_along_axis(clipped, idx, axis=1)
    # Exact discrete Laplace on the value's grid C2/L (no float Laplace: Mironov, CCS'12).
    levels = noise.levels
    grid = np.rint(values * (levels / clip_em)).astype(np.int64)
    noisy_int = noise.value_mechanism().perturb_many(grid, rng)
    return idx, noisy_int * (clip_em / levels)


def column_bound(pi: sp.csr_matrix, tau: float, mode: str) -> sp.csr_matrix:
    """Bound every column's ℓ1 norm (Σ|·|: GM and EM1 values can be negative) by τ: ``clip``
    divides a column by max(1, ‖col‖₁/τ) [P Alg. 2 line 3]; ``normalize`` scales every nonzero
    column to ‖col‖₁ = τ exactly (up as well as down) [R with τ = 1]. Post-processing of the DP
    rows: it runs after all noise and after the identity rows are in."""
    pi = sp.csr_matrix(pi, dtype=np.float64, copy=True)
    norms = np.asarray(abs(pi).sum(axis=0)).ravel()
    scale = np.ones_like(norms)
    nz = norms > 0
    if mode == "clip":
        scale[nz] = 1.0 / np.maximum(1.0, norms[nz] / tau)
    elif mode == "normalize":
        scale[nz] = tau / norms[nz]
    else:
        raise ValueError(f"unknown column mode {mode!r}; one of clip, normalize")
    return sp.csr_matrix(pi @ sp.diags(scale))
