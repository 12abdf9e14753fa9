"""APPR by ISTA and DP-APPR (protocols/central/appr.py): the vectorised solver against a dense
one-seed reference written from the paper's equations and against exact lazy PageRank; the noise
of EM0/EM1/GM has its stated law (on every coordinate, zeros included); the calibration inverses
round-trip and reproduce a worked example; the column ℓ1 bound holds."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from ldpgraph.protocols.central.appr import (
    ApprNoise,
    column_bound,
    dp_appr,
    gm_sigma,
    gumbel_topk_epsilon,
    invert_gumbel_topk,
    ista_appr,
    kov_per_vector,
    sound_composition,
    with_self_loops,
)


def _graph(n: int, p: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = np.triu(rng.random((n, n)) < p, 1)
    a = (a | a.T).astype(float)
    np.fill_diagonal(a, 1.0)
    return a


def _dense_ista(a: np.ndarray, seed: int, alpha: float, rho: float, gamma: float) -> np.ndarray:
    """DPAR §3 (APPR by ISTA) literally, dense, one seed."""
    n = a.shape[0]
    d = a.sum(1)
    dm = np.diag(d**-0.5)
    lap = np.eye(n) - dm @ a @ dm
    q_op = alpha * np.eye(n) + (1 - alpha) / 2 * lap
    s = np.zeros(n)
    s[seed] = 1.0
    q = np.zeros(n)
    while True:
        grad = q_op @ q - alpha * dm @ s
        if np.abs(dm @ grad).max() <= (1 + gamma) * rho * alpha:
            return np.sqrt(d) * q
        q = np.maximum(q - grad - rho * alpha * np.sqrt(d), 0.0)


def _lazy_ppr(a: np.ndarray, seed: int, alpha: float) -> np.ndarray:
    n = a.shape[0]
    walk = a / a.sum(0, keepdims=True)  # A D^{-1}
    s = np.zeros(n)
    s[seed] = 1.0
    return np.linalg.solve(np.eye(n) - (1 - alpha) / 2 * (np.eye(n) + walk), alpha * s)


@pytest.mark.parametrize("n,p,gseed", [(12, 0.3, 0), (40, 0.1, 1), (60, 0.05, 2)])
def test_ista_equals_the_dense_reference(n, p, gseed):
    a = _graph(n, p, gseed)
    seeds = np.arange(0, n, 3)
    for rho in (1e-4, 1e-2):
        got = ista_appr(sp.csr_matrix(a), seeds, 0.25, rho, 1e-4)
        for row, s in zip(got, seeds, strict=True):
            np.testing.assert_allclose(row, _dense_ista(a, s, 0.25, rho, 1e-4), atol=1e-13)


def test_ista_tends_to_exact_lazy_ppr():
    a = _graph(50, 0.08, 3)
    seeds = np.array([0, 7, 21])
    tight = ista_appr(sp.csr_matrix(a), seeds, 0.25, 1e-10, 1e-6)
    loose = ista_appr(sp.csr_matrix(a), seeds, 0.25, 1e-4, 1e-4)
    for s, t, lo in zip(seeds, tight, loose, strict=True):
        exact = _lazy_ppr(a, s, 0.25)
        np.testing.assert_allclose(t, exact, atol=1e-7)
        # ρ = 1e-4 (the paper's): close, non-negative, ‖p‖₁ ≤ 1, the seed's entry largest
        assert np.abs(lo - exact).max() < 2e-3
        assert (lo >= 0).all() and lo.sum() <= 1.0 + 1e-12 and lo.argmax() == s


def test_self_loops_make_isolated_nodes_safe():
    a = sp.csr_matrix((4, 4))
    with pytest.raises(ValueError, match="self-loops"):
        ista_appr(a, np.array([0]))
    p = ista_appr(with_self_loops(a), np.array([2]))
    assert p[0, 2] > 0 and p[0].sum() == pytest.approx(p[0, 2])


# --- noise ---------------------------------------------------------------------------------


def test_gm_noise_on_every_coordinate_has_std_sigma():
    """K = N: the released values are clipped p plus the Gaussian on all N entries; their
    residuals have mean 0 and variance σ² (99.9 % bands), also where p is 0."""
    rng = np.random.default_rng(0)
    m, n, sigma, c1 = 400, 50, 0.03, 0.01
    appr = np.zeros((m, n))
    appr[:, 0] = 0.5  # clipped to C1 in ℓ2
    noise = ApprNoise("gm", 0.5, 1e-5, sigma=sigma)
    idx, val = dp_appr(appr, noise, n, c1, 0.001, rng)
    clipped = np.zeros((m, n))
    clipped[:, 0] = c1
    resid = (val - np.take_along_axis(clipped, idx, axis=1)).ravel()
    k = resid.size
    assert abs(resid.mean()) < 3.3 * sigma / math.sqrt(k)
    var = resid.var(ddof=1)
    lo, hi = stats.chi2.ppf([0.0005, 0.9995], k - 1) / (k - 1)
    assert lo * sigma**2 <= var <= hi * sigma**2


def test_em1_values_are_clipped_plus_laplace_scale_b():
    """EM1's values: the clipped value plus discrete Laplace on the grid C2/L (exact; issue
    28), whose law at this grid is Laplace(b)'s to well within the test's bands."""
    rng = np.random.default_rng(1)
    m, n, b, c2 = 400, 40, 0.004, 0.001
    appr = np.full((m, n), 0.5)  # every entry clips to C2
    noise = ApprNoise("em1", 0.5, 1e-5, eps_gumbel=1.0, beta=c2, laplace_b=b, eps_value=c2 / b)
    idx, val = dp_appr(appr, noise, n, 0.01, c2, rng)
    resid = (val - c2).ravel()
    k = resid.size
    var = resid.var(ddof=1)  # Laplace(b): variance 2b² (b is the scale, not the std)
    assert abs(var / (2 * b**2) - 1) < 5 * math.sqrt(5.0 / k)  # Var of s² ≈ 5σ⁴/k (kurtosis 6)
    assert abs(np.median(np.abs(resid)) - b * math.log(2)) < 0.05 * b


def test_em0_gumbel_selection_follows_the_exponential_mechanism():
    """Gumbel-max with scale β picks entry j with probability ∝ exp(û_j/β) (K = 1)."""
    rng = np.random.default_rng(2)
    m, c2, beta = 20_000, 0.001, 0.0008
    appr = np.zeros((m, 3))
    appr[:, 0] = 0.3  # clipped to C2; entries 1, 2 stay 0
    noise = ApprNoise("em0", 0.5, 1e-5, eps_gumbel=c2 / beta, beta=beta)
    idx, val = dp_appr(appr, noise, 1, 0.01, c2, rng)
    np.testing.assert_array_equal(val, 1.0)  # EM0: weight 1/K
    w = np.exp(np.array([c2, 0.0, 0.0]) / beta)
    expect = w / w.sum()
    freq = np.bincount(idx.ravel(), minlength=3) / m
    band = 3.3 * np.sqrt(expect * (1 - expect) / m)
    assert (np.abs(freq - expect) <= band).all(), (freq, expect)


def test_large_noise_selects_nodes_outside_the_support():
    """Noise goes on the zeros too: with large noise, top-K picks entries where p = 0."""
    rng = np.random.default_rng(3)
    appr = np.zeros((200, 30))
    appr[:, :2] = 0.4
    noise = ApprNoise("gm", 0.01, 1e-5, sigma=10.0)
    idx, _ = dp_appr(appr, noise, 2, 0.01, 0.001, rng)
    assert (idx >= 2).mean() > 0.8


def test_tiny_noise_returns_the_true_top_k():
    rng = np.random.default_rng(4)
    appr = rng.random((30, 25)) * 0.01
    exact_idx, exact_val = dp_appr(appr, None, 3, 0.01, 0.001, rng)
    gm = ApprNoise("gm", 1e6, 1e-5, sigma=1e-12)
    idx, _ = dp_appr(appr, gm, 3, 1.0, 1.0, rng)  # clip far above ‖p‖: no clipping
    np.testing.assert_array_equal(idx, exact_idx)
    np.testing.assert_array_equal(exact_idx, np.sort(np.argsort(-appr, 1)[:, :3], 1))
    np.testing.assert_allclose(exact_val, np.take_along_axis(appr, exact_idx, 1))
    em = ApprNoise("em0", 1e6, 1e-5, eps_gumbel=1e9, beta=1e-12)
    idx_em, _ = dp_appr(np.minimum(appr, 0.1), em, 3, 0.01, 0.1, rng)
    np.testing.assert_array_equal(idx_em, exact_idx)
    with pytest.raises(ValueError, match="K <= N"):
        dp_appr(appr, gm, 26, 0.01, 0.001, rng)


# --- calibration ---------------------------------------------------------------------------


def test_inverses_round_trip():
    for eps_vec in (0.01, 0.13, 0.92, 3.0):
        for k in (1, 2, 16):
            e = invert_gumbel_topk(eps_vec, k, 7.9e-5)
            assert gumbel_topk_epsilon(e, k, 7.9e-5) == pytest.approx(eps_vec, rel=1e-9)
            assert gumbel_topk_epsilon(e, k, 7.9e-5) <= eps_vec
    eps_vec, delta_vec = kov_per_vector(44.44, 0.0111, 70)
    # Theorem 3's relation read forwards: ε = ε_g / (2·sqrt(M ln(e + ε_g/(2Mδ))))
    assert eps_vec == pytest.approx(
        44.44 / (2 * math.sqrt(70 * math.log(math.e + 44.44 / (2 * 70 * delta_vec)))), rel=1e-12
    )
    assert delta_vec == pytest.approx(0.0111 / 140)


@pytest.mark.parametrize(
    "eps_rep,sigma_gm,beta_em0,beta_em1,b_em1",
    [(1.0, 0.330, 0.0300, 0.0601, 0.0300), (8.0, 0.0477, 0.00434, 0.00867, 0.00434)],
)
def test_spec_worked_example(eps_rep, sigma_gm, beta_em0, beta_em1, b_em1):
    """A worked example at DPAR's Table 1 values: Cora-ML, r = r_δ = 0.5, δ_rep = 2e-3,
    q′ = 0.09, M = 70, K = 2, C1 = 0.01, C2 = 0.001 (3 significant digits)."""
    eps_pr, delta_pr = 0.5 * eps_rep / 0.09, 0.5 * 2e-3 / 0.09
    args = (eps_pr, delta_pr, 70, 2, 0.01, 0.001)
    gm = ApprNoise.calibrate("gm", *args)
    em0 = ApprNoise.calibrate("em0", *args)
    em1 = ApprNoise.calibrate("em1", *args)
    assert gm.delta_vec == pytest.approx(7.94e-5, rel=1e-3)
    assert gm.sigma == pytest.approx(sigma_gm, rel=5e-3) and gm.sigma_rule == "classical"
    assert em0.beta == pytest.approx(beta_em0, rel=5e-3)
    assert em1.beta == pytest.approx(beta_em1, rel=5e-3)
    assert em1.laplace_b == pytest.approx(b_em1, rel=5e-3)


def test_gm_sigma_switches_to_the_analytic_gaussian_from_eps_one():
    s, rule = gm_sigma(0.5, 1e-5, 0.01)
    assert rule == "classical" and s == pytest.approx(math.sqrt(2 * math.log(1.25e5)) * 0.02)
    s2, rule2 = gm_sigma(2.0, 1e-5, 0.01)
    from dp_accounting.gaussian_mechanism import get_epsilon_gaussian

    assert rule2 == "analytic" and get_epsilon_gaussian(s2 / 0.01, 1e-5) == pytest.approx(2.0)


def test_sound_composition_is_basic_or_advanced():
    assert sound_composition(0.1, 1e-6, 10, 1e-5) <= 1.0
    eps, m = 0.05, 500
    adv = math.sqrt(2 * m * math.log(1 / (1e-3 - m * 1e-7))) * eps + m * eps * math.expm1(eps)
    assert sound_composition(eps, 1e-7, m, 1e-3) == pytest.approx(min(m * eps, adv))


def test_column_bound():
    rng = np.random.default_rng(5)
    dense = rng.normal(size=(8, 6)) * (rng.random((8, 6)) < 0.5)
    dense[:, 5] = 0.0
    pi = sp.csr_matrix(dense)
    clipped = column_bound(pi, 0.7, "clip").toarray()
    norms = np.abs(clipped).sum(0)
    assert (norms <= 0.7 + 1e-12).all()
    small = np.abs(dense).sum(0) <= 0.7
    np.testing.assert_allclose(clipped[:, small], dense[:, small])  # short columns untouched
    normed = column_bound(pi, 0.7, "normalize").toarray()
    nz = np.abs(dense).sum(0) > 0
    np.testing.assert_allclose(np.abs(normed).sum(0)[nz], 0.7)
    assert (normed[:, ~nz] == 0).all()
    with pytest.raises(ValueError, match="column mode"):
        column_bound(pi, 1.0, "scale")
