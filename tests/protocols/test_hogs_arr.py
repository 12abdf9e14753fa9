"""hogs-arr (HoGS with asymmetric RR): the client's report law, the posterior against a
brute-force Bayes over every pair and the literal dense HoGS, μ = 1 is HoGS, μ is public and
checked, and the privacy report is HoGS's with μ named."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from ldpgraph.protocols.base import CuratorView
from ldpgraph.protocols.ldp.assemble import adjacency_reports
from ldpgraph.protocols.ldp.hogs import reconstruct_topology
from ldpgraph.protocols.ldp.hogs_arr import HogsArrProtocol, keep_probability
from ldpgraph.protocols.ldp.posterior import (
    bit_likelihoods,
    likelihoods,
    posterior,
    similarity_threshold,
)
from ldpgraph.protocols.ldp.similarity import FeatureRows
from ldpgraph.protocols.mechanisms import DENSE_FLIP, AsymmetricRR, flip_probability, keep_each
from ldpgraph.protocols.registry import ProtocolParameterError, make_protocol
from ldpgraph.protocols.types import NodeView

from ..reference.hogs import dense_hogs
from .test_hogs import collect, dense_inputs, random_graph, views

#: Two-sided significance of the client's law tests (each may fail by chance this often).
ALPHA = 1e-6


def arr(eps: float, mu: float, **kw) -> HogsArrProtocol:
    """hogs-arr at a fixed μ (no report cap)."""
    return make_protocol("hogs-arr", epsilon=eps, mu=mu, report_cap=0.0, **kw)


def binomial_interval(k: int, n: int, alpha: float = ALPHA) -> tuple[float, float]:
    """Exact (Clopper–Pearson) two-sided 1 − alpha interval for a binomial rate."""
    from ldpgraph.simulation.audit import cp_lower, cp_upper

    return cp_lower(k, n, alpha / 2), cp_upper(k, n, alpha / 2)


# ------------------------------------------------------------------ (a) the client's report law


def report_rates(proto: HogsArrProtocol, draws: int) -> tuple[int, int, int, int]:
    """Over ``draws`` seeds, node 0 of a 1201-node graph with 400 neighbours: (reported 1s
    on its edges, edge trials, reported 1s on its non-edges, non-edge trials)."""
    n, deg = 1201, 400
    neighbors = np.arange(1, 2 * deg, 2, dtype=np.int64)
    view = NodeView(0, neighbors, np.zeros(3), n)
    is_edge = np.zeros(n, dtype=bool)
    is_edge[neighbors] = True
    on_edges = on_others = 0
    for seed in range(draws):
        out = proto.client_step(0, view, {}, seed).adjacency.astype(np.int64)
        assert 0 not in out and np.all(np.diff(out) > 0)
        hits = int(is_edge[out].sum())
        on_edges += hits
        on_others += out.size - hits
    return on_edges, deg * draws, on_others, (n - 1 - deg) * draws


@pytest.mark.parametrize("eps,mu", [(1.0, 0.3), (0.5, 0.7), (2.0, 0.1)])
def test_client_reports_one_with_the_sampled_rr_law(eps, mu):
    """Pr[report 1 | edge] = (1−p)μ and Pr[report 1 | non-edge] = pμ within exact 1 − 1e-6
    intervals, p = 1/(e^ε_a+1); the same counts reject a 10% wrong μ and the p of a 0.25-off
    ε_a (or of the whole ε, forgetting the feature share)."""
    proto = arr(eps, mu)
    eps_a = proto.eps_adjacency
    k1, n1, k0, n0 = report_rates(proto, draws=300)
    p = flip_probability(eps_a)
    lo1, hi1 = binomial_interval(k1, n1)
    lo0, hi0 = binomial_interval(k0, n0)
    assert lo1 <= (1 - p) * mu <= hi1
    assert lo0 <= p * mu <= hi0
    # Power: the intervals exclude the rates of a wrong μ or a wrong p.
    for wrong_mu in (0.9 * mu, min(1.0, 1.1 * mu)):
        if wrong_mu != mu:
            assert not (lo1 <= (1 - p) * wrong_mu <= hi1 and lo0 <= p * wrong_mu <= hi0)
    for wrong_eps in (eps_a - 0.25, eps_a + 0.25, eps):
        q = flip_probability(wrong_eps)
        assert not (lo1 <= (1 - q) * mu <= hi1 and lo0 <= q * mu <= hi0)
    # ... and plain RR's rates (μ forgotten).
    assert not lo1 <= 1 - p <= hi1


@pytest.mark.parametrize("mu", [0.4, 0.05])
def test_sparse_rows_keep_the_sampled_rr_law(mu):
    """Below DENSE_FLIP the sampling is drawn lazily (only the kept flips' positions): the
    law is still (1−p)μ on edges and pμ on non-edges, and a wrong μ or p is rejected."""
    proto = arr(6.0, mu, feature_share=0.5)  # ε_a = 3: p = 0.047, sparse rows
    p = flip_probability(proto.eps_adjacency)
    assert p < DENSE_FLIP
    k1, n1, k0, n0 = report_rates(proto, draws=2000)
    lo1, hi1 = binomial_interval(k1, n1)
    lo0, hi0 = binomial_interval(k0, n0)
    assert lo1 <= (1 - p) * mu <= hi1 and lo0 <= p * mu <= hi0
    for wrong_mu in (0.9 * mu, 1.1 * mu):
        assert not (lo1 <= (1 - p) * wrong_mu <= hi1 and lo0 <= p * wrong_mu <= hi0)
    q = flip_probability(proto.eps_adjacency - 0.25)
    assert not (lo1 <= (1 - q) * mu <= hi1 and lo0 <= q * mu <= hi0)


def test_sparse_rows_keep_only_true_ones_that_survived_hogs_rr():
    """The true 1s a sparse ARR row reports are among those HoGS's RR kept for the same seed
    (the same survival draws on ADJACENCY), and about μ of them."""
    g = random_graph(300, 8, seed=3)
    kept = total = 0
    for view in views(g)[:200]:
        true = set(np.asarray(view.neighbors).tolist())
        full = make_protocol("hogs", epsilon=8.0).client_step(0, view, {}, 9).adjacency
        sampled = arr(8.0, 0.4).client_step(0, view, {}, 9).adjacency
        full_true = [v for v in full.tolist() if v in true]
        sampled_true = [v for v in sampled.tolist() if v in true]
        assert set(sampled_true) <= set(full_true)
        kept += len(sampled_true)
        total += len(full_true)
    lo, hi = binomial_interval(kept, total)
    assert lo <= 0.4 <= hi


def test_arr_report_is_a_sample_of_the_hogs_report():
    """Dense rows (p >= DENSE_FLIP): the RR draws are HoGS's (same ADJACENCY stream); the
    sampling only removes 1s, and removes each with probability 1 − μ."""
    g = random_graph(300, 8, seed=3)
    kept = total = 0
    for view in views(g)[:60]:
        full = make_protocol("hogs", epsilon=1.0).client_step(0, view, {}, 9).adjacency
        sampled = arr(1.0, 0.4).client_step(0, view, {}, 9).adjacency
        assert np.isin(sampled, full).all()
        kept += sampled.size
        total += full.size
    lo, hi = binomial_interval(kept, total)
    assert lo <= 0.4 <= hi


def test_keep_each_and_the_mechanism_refuse_mu_outside_0_1():
    rng = np.random.default_rng(0)
    ids = np.arange(10, dtype=np.int32)
    assert keep_each(ids, 1.0, rng) is ids  # μ = 1 draws nothing, changes nothing
    for bad in (0.0, -0.1, 1.5, math.nan, math.inf):
        with pytest.raises(ValueError, match="mu must be in"):
            keep_each(ids, bad, rng)
        with pytest.raises(ValueError, match="mu must be in"):
            AsymmetricRR(2.0, bad)
        with pytest.raises(ValueError, match="mu must be in"):
            keep_probability(bad, 64.0, 100, 2.0)
    with pytest.raises(ProtocolParameterError, match="mu must be in \\(0, 1\\]"):
        make_protocol("hogs-arr", mu=0.0)
    with pytest.raises(ProtocolParameterError, match="mu must be in \\(0, 1\\]"):
        make_protocol("hogs-arr", mu=1.01)
    with pytest.raises(ProtocolParameterError, match="report_cap must be in >= 0"):
        make_protocol("hogs-arr", report_cap=-1.0)
    mech = AsymmetricRR(1.0, 0.5)
    assert mech.p_one_given_one / mech.p_one_given_zero == pytest.approx(math.e)


def test_mu_is_public_from_n_and_eps_a_only():
    """μ = min(mu, report_cap / (n(n−1)p)): the same for every node and the server, from the
    parameters, n and ε_a; the client and the server use the same value."""
    p8 = flip_probability(8.0)
    assert keep_probability(1.0, 5e8, 10**7, 8.0) == pytest.approx(5e8 / (10**7 * (10**7 - 1) * p8))
    assert 0.014 < keep_probability(1.0, 5e8, 10**7, 8.0) < 0.016
    assert keep_probability(1.0, 5e8, 10**6, 8.0) == 1.0  # HoGS's 10^6 nodes fit: all sent
    assert keep_probability(0.5, 5e8, 10**6, 8.0) == 0.5  # the explicit cap
    assert keep_probability(0.3, 0.0, 10**7, 8.0) == 0.3  # no report cap
    for eps in (4.0, 8.0):  # Cora and Facebook at their defaults: every bit is sent
        proto = make_protocol("hogs-arr", epsilon=eps)
        assert proto.keep_probability(2708) == proto.keep_probability(22470) == 1.0
    proto = make_protocol("hogs-arr", epsilon=4.0, report_cap=2000.0)
    g = random_graph(500, 8, seed=1)
    mu = proto.keep_probability(500)
    eps_a = proto.eps_adjacency
    p4 = flip_probability(0.9 * 4.0)
    assert 0 < mu < 1 and mu == keep_probability(1.0, 2000.0, 500, eps_a) == 2000 / (500 * 499 * p4)
    # The node's report is the sample at that μ: the same as with μ fixed to it.
    fixed = arr(4.0, mu)
    for view in views(g)[:20]:
        np.testing.assert_array_equal(
            proto.client_step(0, view, {}, 4).adjacency, fixed.client_step(0, view, {}, 4).adjacency
        )
    release = proto.server_step(0, collect(proto, g, 4), CuratorView(500, 8), 4)
    assert release.stats["mu"] == mu


# ------------------------------------------------------------------ (b) the server's posterior


def test_bit_likelihoods_and_table():
    p, mu = flip_probability(1.5), 0.35
    e1, e0, n1, n0 = bit_likelihoods(p, mu)
    assert (e1, n1) == ((1 - p) * mu, p * mu)
    assert e0 == pytest.approx(1 - (1 - p) * mu, abs=1e-15)
    assert n0 == pytest.approx(1 - p * mu, abs=1e-15)
    l_edge, l_none = likelihoods(p, mu)
    for ones in range(3):
        for zeros in range(3 - ones):
            assert l_edge[ones, zeros] == pytest.approx(e1**ones * e0**zeros, rel=1e-14)
            assert l_none[ones, zeros] == pytest.approx(n1**ones * n0**zeros, rel=1e-14)
    # μ = 1 is HoGS's table bit for bit.
    q = 1 - p
    assert bit_likelihoods(p, 1.0) == (q, p, p, q)


def brute_force_posteriors(bits, observed, x, p, mu):
    """P_ij for every pair i < j, by Bayes written out pair by pair (no table)."""
    n = bits.shape[0]
    xf = x.astype(np.float64)
    out = {}
    for i in range(n):
        for j in range(i + 1, n):
            ni, nj = np.linalg.norm(xf[i]), np.linalg.norm(xf[j])
            s = 0.0 if ni == 0 or nj == 0 else float(xf[i] @ xf[j]) / (ni * nj)
            like_edge = like_none = 1.0
            for reporter, about in ((i, j), (j, i)):
                if not observed[reporter]:
                    continue  # the node sent nothing: its bit is not evidence
                if bits[reporter, about]:
                    like_edge *= (1 - p) * mu  # RR kept the 1 (prob 1 − p), sampling kept it
                    like_none *= p * mu  # RR flipped the 0 to 1, sampling kept it
                else:
                    like_edge *= 1 - (1 - p) * mu
                    like_none *= 1 - p * mu
            out[i, j] = like_edge * s / (like_edge * s + like_none * (1 - s))
    return out


@pytest.mark.parametrize("eps,share,mu", [(4.0, 0.5, 0.3), (8.0, 0.7, 0.05), (2.0, 0.3, 0.8)])
@pytest.mark.parametrize("drop", [(), (2, 5, 17)])
def test_posterior_equals_brute_force_bayes(eps, share, mu, drop):
    """Every pair the sparse reconstruction keeps (P ≥ t) has the brute-force posterior, and
    it keeps exactly the pairs whose brute-force posterior reaches t, (0,0) pairs included."""
    g = random_graph(45, 16, seed=int(eps * 10 + mu * 100))
    proto = arr(eps, mu, feature_share=share)
    result = collect(proto, g, seed=3, drop=drop)
    bits, observed, x = dense_inputs(result, 45, 16, None)
    p = flip_probability(proto.eps_adjacency)
    truth = brute_force_posteriors(bits, observed, x, p, mu)
    reported, obs = adjacency_reports(result.reports, 45)
    for t in (0.3, 0.5, 0.9):
        topo = reconstruct_topology(reported, obs, FeatureRows(x), p, t, mu=mu)
        pairs = zip(topo.i.tolist(), topo.j.tolist(), strict=True)
        got = dict(zip(pairs, topo.prob.tolist(), strict=True))
        assert set(got) == {pair for pair, value in truth.items() if value >= t}
        for pair, value in got.items():
            assert value == pytest.approx(truth[pair], rel=1e-12, abs=1e-15)


CASES = [(8.0, 0.7, 0.05, 0.5, 1), (4.0, 0.5, 0.3, 0.9, 2), (1.5, 0.1, 0.6, 0.3, 0)]


@pytest.mark.parametrize("eps,share,mu,tau,steps", CASES)
@pytest.mark.parametrize("budget", [None, 0])
def test_release_equals_dense_hogs_with_mu(eps, share, mu, tau, steps, budget, monkeypatch):
    """The whole release (edges and reconstructed features) equals the literal dense HoGS with
    the sampled-bit likelihoods; ``budget`` 0 forces the blockwise (0,0) join."""
    from ldpgraph.protocols.ldp import similarity

    if budget is not None:
        monkeypatch.setattr(similarity, "PREFIX_PAIR_BUDGET", budget)
        monkeypatch.setattr(similarity, "JOIN_BLOCK_ROWS", 16)
    g = random_graph(70, 24, seed=int(eps * 10 + tau * 100 + steps))
    proto = arr(eps, mu, feature_share=share, tau=tau, steps=steps)
    result = collect(proto, g, seed=5, drop=(3, 7))
    release = proto.server_step(0, result, CuratorView(70, 24), seed=5)
    bits, observed, x = dense_inputs(result, 70, 24, None)
    p = flip_probability(proto.eps_adjacency)
    _, edges, feats = dense_hogs(bits, observed, x, p, tau, steps, mu=mu)
    np.testing.assert_array_equal(release.edges, edges)
    assert np.abs(release.x - feats).max() <= 1e-6
    if mu <= 0.05:
        # Sampled zeros carry little evidence: (0,0) pairs with similar features pass.
        assert release.stats["joined_pairs"] > 0


def test_posterior_is_calibrated_on_simulated_pairs():
    """Simulate pairs with prior s: edge ~ Bernoulli(s), each endpoint reports its bit by RR
    then keeps a 1 with probability μ. The share of edges among pairs with each observed bit
    pattern matches the posterior (the Bayes derivation, not just its algebra)."""
    p, mu, s0, m = flip_probability(1.0), 0.4, 0.3, 2_000_000
    rng = np.random.default_rng(7)
    edge = rng.random(m) < s0
    reports = [(edge ^ (rng.random(m) < p)) & (rng.random(m) < mu) for _ in range(2)]
    ones = reports[0].astype(np.int64) + reports[1]
    for k in (0, 1, 2):
        pick = ones == k
        exact = posterior(np.array([s0]), np.array([k]), np.array([2 - k]), p, mu)[0]
        hits = int(edge[pick].sum())
        assert binom.cdf(hits, int(pick.sum()), exact) > ALPHA / 2
        assert binom.sf(hits - 1, int(pick.sum()), exact) > ALPHA / 2
        # HoGS's posterior (μ forgotten) is off for the reported zeros.
        if k < 2:
            wrong = posterior(np.array([s0]), np.array([k]), np.array([2 - k]), p)[0]
            assert abs(edge[pick].mean() - wrong) > 0.05


def test_similarity_thresholds_with_mu():
    """The s where P crosses t, for every bit pattern: (1,1) as HoGS, (1,0) below t, (0,0)
    from near 1 down towards t as μ falls."""
    p = flip_probability(5.0)
    r = math.exp(10.0)
    for mu in (1.0, 0.5, 0.1, 0.01):
        assert similarity_threshold(0.5, 2, 0, p, mu) == pytest.approx(1 / (1 + r))
        for ones, zeros in ((2, 0), (1, 1), (0, 2), (1, 0), (0, 1)):
            t = 0.6
            thr = similarity_threshold(t, ones, zeros, p, mu)
            at = posterior(np.array([thr]), np.array([ones]), np.array([zeros]), p, mu)[0]
            assert at == pytest.approx(t, rel=1e-9)
    zero_zero = [similarity_threshold(0.5, 0, 2, p, mu) for mu in (1.0, 0.5, 0.1, 0.01)]
    assert zero_zero[0] > 0.9999 and all(np.diff(zero_zero) < 0) and zero_zero[-1] > 0.5
    assert similarity_threshold(0.5, 1, 1, p, 0.1) < 0.5 == similarity_threshold(0.5, 1, 1, p)


def test_mu_one_is_hogs_release():
    """μ = 1: the same reports and the same release (fingerprint) as HoGS for the same seed
    (and the default report cap gives μ = 1 on small graphs: the same release again)."""
    g = random_graph(80, 20, seed=4)
    for eps in (2.0, 6.0):
        hogs = make_protocol("hogs", epsilon=eps, steps=2)
        same = arr(eps, 1.0, steps=2)
        a = hogs.server_step(0, collect(hogs, g, 21), CuratorView(80, 20), 21)
        b = same.server_step(0, collect(same, g, 21), CuratorView(80, 20), 21)
        assert a.fingerprint() == b.fingerprint()
        c = arr(eps, 0.5, steps=2)
        assert c.server_step(0, collect(c, g, 21), CuratorView(80, 20), 21).fingerprint() != (
            a.fingerprint()
        )
    default = make_protocol("hogs-arr", epsilon=6.0, steps=2)
    hogs = make_protocol("hogs", epsilon=6.0, steps=2)
    assert (
        default.server_step(0, collect(default, g, 21), CuratorView(80, 20), 21).fingerprint()
        == hogs.server_step(0, collect(hogs, g, 21), CuratorView(80, 20), 21).fingerprint()
    )


def test_privacy_report_is_hogs_and_names_mu():
    proto = make_protocol("hogs-arr", epsilon=4.0, mu=0.3)
    hogs = make_protocol("hogs", epsilon=4.0)
    rep, base = proto.privacy_report(1433), hogs.privacy_report(1433)
    assert rep.epsilon == base.epsilon and rep.unit_epsilons == base.unit_epsilons
    assert rep.headline == base.headline and rep.protocol == "hogs-arr"
    assert "post-processing" in rep.notes[0] and "mu = 0.3" in rep.notes[0]
    assert rep.parts[0]["mechanism"].startswith("asymmetric-randomized-response")
    g = random_graph(60, 12, seed=2)
    release = proto.server_step(0, collect(proto, g, 1), CuratorView(60, 12), 1)
    assert release.privacy.parts[0]["keep_probability"] == release.stats["mu"] == 0.3
    assert "= 0.3 at n = 60" in release.privacy.notes[0]
    assert release.privacy.epsilon == base.epsilon
