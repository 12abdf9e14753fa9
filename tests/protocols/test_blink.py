"""Blink, FP-BLink and BLink + FR: the discrete-Laplace degree and the client's budget split
(statistically), the sparse server against the literal dense one, and the privacy reports.
FP-BLink through Flower against the local backend: tests/simulation/test_flower.py."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols import accounting
from ldpgraph.protocols.base import CuratorView, RoundResult
from ldpgraph.protocols.graph import Graph, canonical_edges
from ldpgraph.protocols.laplace import (
    PLD_DISCRETIZATION,
    composed_epsilon,
    discrete_laplace_pld,
)
from ldpgraph.protocols.ldp import reported_pairs
from ldpgraph.protocols.ldp.assemble import adjacency_reports
from ldpgraph.protocols.ldp.blink import DEGREE_FIELD, BlinkProtocol
from ldpgraph.protocols.ldp.blink_beta import (
    SERIES_MAX_ABS,
    fit_beta,
    sigmoid,
    sigmoid_row_sums,
    sigmoid_row_sums_exact,
)
from ldpgraph.protocols.ldp.blink_posterior import Posterior, pairs_with_sum_at_least
from ldpgraph.protocols.mechanisms import flip_probability
from ldpgraph.protocols.registry import make_protocol, protocol_from_config
from ldpgraph.protocols.reports import decode_report, encode_report
from ldpgraph.protocols.types import NodeView

from ..reference.blink import (
    bayes_posterior,
    clamp_and_impute,
    dense_beta,
    dense_blink,
    dense_fr,
    dense_posterior,
    sigmoid_row_sums_per_node,
)

Z999 = 3.2905  # two-sided 99.9% normal quantile


def pmf_inside(noise: np.ndarray, eps: float) -> bool:
    """Integer noise whose empirical P[K = k], k = −3..3, lies within 99.9% binomial intervals
    of the discrete Laplace pmf (1 − a)/(1 + a)·a^|k|, a = e^{−ε}."""
    if not np.array_equal(noise, np.round(noise)):
        return False
    a = math.exp(-eps)
    n = noise.shape[0]
    for k in range(-3, 4):
        p = (1 - a) / (1 + a) * a ** abs(k)
        if abs((noise == k).sum() / n - p) > Z999 * math.sqrt(p * (1 - p) / n):
            return False
    return True


def inside(successes: int, trials: int, p: float) -> bool:
    return abs(successes / trials - p) <= Z999 * math.sqrt(p * (1 - p) / trials)


# ------------------------------------------------------------------ the client step


def star_views(n: int, d: int, deg: int) -> tuple[NodeView, np.ndarray]:
    """Node 0 with neighbours 1..deg and the feature row [0]*d/2 + [1]*d/2."""
    x = np.zeros(d)
    x[d // 2 :] = 1.0
    return NodeView(0, np.arange(1, deg + 1), x, n), x


def test_blink_client_step_budget_split_end_to_end():
    """ε = 4, FP-BLink δ1 = 0.75, δ2 = 0.5: ε_f = 1, ε_a = 1.5, ε_d = 1.5. Over 20 000 fresh
    reports: the degree noise is discrete Laplace at ε_d, adjacency zeros flip with p(ε_a),
    ones are kept with 1 − p(ε_a), feature bits follow the 1-bit mechanism at ε_f; the wrong
    budgets fail."""
    proto = make_protocol("fp-blink", epsilon=4.0, share1=0.75, share2=0.5)
    p = proto
    assert (p.eps_features, p.eps_adjacency, p.eps_degree) == (1.0, 1.5, 1.5)
    n, d, deg, reps = 150, 40, 30, 20_000
    view, x = star_views(n, d, deg)
    noise = np.empty(reps)
    zero_flips = one_keeps = 0
    feat_ones = np.zeros(d, dtype=np.int64)
    for seed in range(reps):
        rep = proto.client_step(0, view, {}, seed)
        noise[seed] = rep.extras[DEGREE_FIELD] - deg
        row = rep.adjacency
        ones = int(np.count_nonzero(row <= deg))
        one_keeps += ones
        zero_flips += row.shape[0] - ones
        feat_ones += rep.features
    assert pmf_inside(noise, 1.5)
    assert not pmf_inside(noise, 4.0)  # the whole ε on the degree
    assert not pmf_inside(noise, 2.0)  # (1 − δ2)·ε: forgetting δ1
    assert not pmf_inside(noise + 0.25, 1.5)  # a real-valued degree is rejected
    pa = flip_probability(1.5)
    zeros_total = (n - 1 - deg) * reps
    assert inside(zero_flips, zeros_total, pa)
    assert inside(one_keeps, deg * reps, 1 - pa)
    assert not inside(zero_flips, zeros_total, flip_probability(3.0))
    e = math.exp(1.0)
    for value, exact in ((0.0, 1 / (e + 1)), (1.0, e / (e + 1))):
        cols = x == value
        assert inside(int(feat_ones[cols].sum()), int(cols.sum()) * reps, exact)
        assert not inside(int(feat_ones[cols].sum()), int(cols.sum()) * reps, 1 / (e**2 + 1))


def test_blink_edge_client_step_and_wire_form():
    proto = make_protocol("blink-hybrid", epsilon=2.0, degree_share=0.25)
    view, _ = star_views(50, 8, 5)
    rep = proto.client_step(0, view, {}, 3)
    assert rep.features is None and rep.adjacency is not None
    assert proto.schema(0).extras == (DEGREE_FIELD,)
    again = decode_report(encode_report(rep), num_nodes=50, round_=0, extras=proto.schema(0).extras)
    degree = rep.extras[DEGREE_FIELD]
    assert degree == int(degree)  # an integer (discrete Laplace), carried as a float64
    assert again.extras[DEGREE_FIELD] == degree
    np.testing.assert_array_equal(again.adjacency, rep.adjacency)
    assert proto.round_epsilon(0) == pytest.approx(2.0)
    # Same seed, same report; the degree stream is independent of the adjacency stream.
    rep2 = proto.client_step(0, view, {}, 3)
    assert rep2.extras == rep.extras
    np.testing.assert_array_equal(rep2.adjacency, rep.adjacency)


# ------------------------------------------------------------------ the β-model


@pytest.mark.parametrize("seed", range(5))
def test_row_sums_series_equal_direct(seed):
    """Low series (s ≤ −2), exact band and high series (s ≥ 2) against the direct sum."""
    rng = np.random.default_rng(seed)
    n = [3, 40, 700, 2500, 900][seed]
    center = 2.0 if seed == 4 else -4.0  # seed 4: most pairs in the high series
    b = np.concatenate([rng.normal(center, 2.5, n - n // 3), rng.uniform(-9, 3, n // 3)])
    b[: n // 4] = b[n // 4]  # many exact ties (clamped degrees share β)
    fast = sigmoid_row_sums(b, block=997)
    exact = sigmoid_row_sums_exact(b)
    np.testing.assert_allclose(fast, exact, rtol=5e-14)
    assert np.unique(fast[: n // 4 + 1]).size == 1  # ties stay bit-identical
    # Beyond the safe range the direct sum is used.
    wide = b.copy()
    wide[0] = SERIES_MAX_ABS + 1
    np.testing.assert_array_equal(sigmoid_row_sums(wide), sigmoid_row_sums_exact(wide))


@pytest.mark.parametrize("seed", range(6))
def test_row_sums_per_value_equal_per_node_bit_for_bit(seed):
    """The per-value row sums (one evaluation per distinct b) are the node-by-node series sums
    exactly, in every regime: few values (degrees), many, wide (direct sum), all equal."""
    rng = np.random.default_rng(100 + seed)
    n = [2, 50, 900, 3000, 700, 400][seed]
    if seed == 2:
        b = rng.normal(-4, 2.5, n)  # all distinct
    elif seed == 4:
        b = np.full(n, -1.5)  # one value
    else:
        b = rng.choice(rng.normal(-3 + seed, 2.5, 30), size=n)  # few distinct values
    if seed == 5:
        b[0] = SERIES_MAX_ABS + 2  # beyond the series' range: direct sums
    b[: n // 5] = -0.0 if seed == 3 else b[: n // 5]  # signed zeros tie with 0
    for block in (1 << 20, 97):
        np.testing.assert_array_equal(
            sigmoid_row_sums(b, block=block), sigmoid_row_sums_per_node(b, block=block)
        )


@pytest.mark.parametrize("seed", range(3))
def test_fit_beta_per_degree_equals_per_node_bit_for_bit(seed):
    """The fit runs once per distinct degree; β is bit for bit the node-by-node fixed point."""
    rng = np.random.default_rng(seed)
    n = [500, 2000, 300][seed]
    d = np.clip(rng.poisson(5, n) + rng.integers(-3, 4, n), 1, n - 2).astype(np.float64)
    if seed == 2:
        d[:5] = n - 2  # hubs: pairs in the exact band and the high series
    fast, info = fit_beta(d)
    slow, slow_info = fit_beta(d, row_sums=sigmoid_row_sums_per_node)
    np.testing.assert_array_equal(fast, slow)
    assert info == slow_info


def test_fit_beta_equals_blink_literal():
    rng = np.random.default_rng(1)
    n = 300
    d = np.clip(rng.poisson(4, n) + rng.laplace(0, 2, n), 1, n - 2)
    beta, info = fit_beta(d)
    ref = dense_beta(d)
    assert info["iterations"] == 200 and not info["converged"]  # Blink's cap decides
    np.testing.assert_allclose(beta, ref, rtol=0, atol=1e-12)


def test_beta_model_recovers_noise_free_degrees():
    """Acceptance check 3: on an Erdős–Rényi graph's true degrees, once converged,
    Σ_j π_ij = deg_i within 1e-3."""
    rng = np.random.default_rng(2)
    n = 200
    upper = np.triu(rng.random((n, n)) < 0.08, k=1)
    deg = (upper | upper.T).sum(axis=1).astype(np.float64)
    beta, info = fit_beta(np.clip(deg, 1, n - 2), max_iter=5000, tol=1e-10)
    assert info["converged"]
    pi = 1 / (1 + np.exp(-(beta[:, None] + beta[None, :])))
    np.fill_diagonal(pi, 0)
    assert np.abs(pi.sum(axis=1) - np.clip(deg, 1, n - 2)).max() < 1e-3


# ------------------------------------------------------------------ the posterior


@pytest.mark.parametrize("eps_a", [0.0, 0.7, 3.0, 6.0])
def test_posterior_logit_equals_bayes_rule(eps_a):
    """Acceptance check 4: σ(β_i + β_j + 2ε_a(x − 1)) is the Bayes rule (1e-12); x = 1 → π.
    With a node missing, its pairs keep only the other bit's likelihood."""
    rng = np.random.default_rng(int(eps_a * 10))
    n = 60
    beta = rng.normal(-2.5, 1.5, n)
    bits = (rng.random((n, n)) < 0.2).astype(np.int64)
    np.fill_diagonal(bits, 0)
    observed = rng.random(n) > 0.1
    logit = dense_posterior(beta, bits, observed, eps_a)
    bayes = bayes_posterior(beta, bits, observed, eps_a)
    np.testing.assert_allclose(logit, bayes, rtol=0, atol=1e-12)
    both = observed[:, None] & observed[None, :]
    x1 = both & ((bits + bits.T) == 1)
    prior = 1 / (1 + np.exp(-(beta[:, None] + beta[None, :])))
    np.testing.assert_allclose(logit[x1], prior[x1], rtol=1e-12)


def test_pairs_with_sum_at_least_is_exact():
    rng = np.random.default_rng(5)
    g = np.round(rng.normal(0, 1, 300), 2)  # many equal values and boundary sums
    for s in (-1.5, 0.0, 0.37, 2.0, 9.0):
        i, j = pairs_with_sum_at_least(g, s)
        expected = np.argwhere(np.triu((g[:, None] + g[None, :]) >= s, k=1))
        got = np.stack([i, j], axis=1)
        got = got[np.lexsort((got[:, 1], got[:, 0]))]
        np.testing.assert_array_equal(got, expected)


# ------------------------------------------------------------------ server = dense reference


def random_graph(n: int, d: int, seed: int) -> Graph:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    pairs = rng.integers(0, n, size=(3 * n, 2))
    same = y[pairs[:, 0]] == y[pairs[:, 1]]
    pairs = pairs[same | (rng.random(pairs.shape[0]) < 0.2)]
    hubs = rng.integers(0, n, size=(n, 2))
    hubs[:, 0] %= 4  # a few hubs make the degree distribution skewed
    pairs = np.concatenate([pairs, hubs])
    centers = rng.random((3, d)) < 0.3
    x = (centers[y] ^ (rng.random((n, d)) < 0.1)).astype(np.uint8)
    return Graph("rand", canonical_edges(pairs, n), x, y.astype(np.int64))


def views(g: Graph) -> list[NodeView]:
    return [NodeView(i, g.neighbors(i), g.x[i], g.num_nodes) for i in range(g.num_nodes)]


def collect(proto, g: Graph, seed: int, drop=()) -> RoundResult:
    reports = {v.node_id: proto.client_step(0, v, {}, seed) for v in views(g)}
    for node in drop:
        reports.pop(node)
    return RoundResult(reports, np.array(sorted(drop), dtype=np.int64))


def dense_inputs(result: RoundResult, n: int):
    reported, observed = adjacency_reports(result.reports, n)
    noisy = np.zeros(n)
    has = np.zeros(n, dtype=bool)
    for node, rep in result.reports.items():
        noisy[node] = rep.extras[DEGREE_FIELD]
        has[node] = True
    return reported.toarray().astype(np.int64), observed, noisy, has


EDGE_CASES = [
    (variant, eps, share)
    for variant in ("hard", "soft", "hybrid")
    for eps, share in ((0.5, 0.5), (3.0, 0.1), (5.0, 0.3), (8.0, 0.9), (4.0, 1.0))
]


@pytest.mark.parametrize("variant,eps,share", EDGE_CASES)
@pytest.mark.parametrize("drop", [(), (2, 5, 40)])
def test_blink_edge_only_equals_dense(variant, eps, share, drop):
    g = random_graph(70, 12, seed=int(eps * 10 + share * 100))
    name = f"blink-{variant}"
    soft = {"min_weight": 0.01} if variant == "soft" else {}
    proto = make_protocol(name, epsilon=eps, degree_share=share, **soft)
    result = collect(proto, g, seed=7, drop=drop)
    cur = CuratorView(g.num_nodes, g.num_features, public_features=g.x)
    release = proto.server_step(0, result, cur, seed=7)
    bits, observed, noisy, has = dense_inputs(result, g.num_nodes)
    ref = dense_blink(noisy, has, bits, observed, proto.eps_adjacency, variant, min_weight=0.01)
    np.testing.assert_array_equal(release.edges, ref["edges"])
    if variant == "hard":
        assert release.edge_weight is None
    else:
        np.testing.assert_allclose(release.edge_weight, ref["weight"], rtol=0, atol=1e-12)
    if variant == "hybrid":
        info = release.stats["hybrid"]
        assert info["K"] == ref["K"]
        assert info["t"] == pytest.approx(ref["t"], abs=1e-12)
        # Acceptance check 5: about K nonzero entries of the symmetric W (ties may add some).
        assert 2 * release.num_edges >= ref["K"] - 1
    np.testing.assert_array_equal(release.x, g.x)
    assert release.stats["imputed_degrees"] == len(drop)


@pytest.mark.parametrize("variant", ["hard", "soft", "hybrid"])
def test_blink_on_a_sparse_graph_equals_dense(variant):
    """n = 400, mean degree ~4: the β-fit runs its 200 iterations (not converged, as on real
    graphs) with most pairs in the series regime."""
    rng = np.random.default_rng(11)
    n = 400
    pairs = rng.integers(0, n, size=(800, 2))
    x = (rng.random((n, 8)) < 0.3).astype(np.uint8)
    g = Graph("sparse", canonical_edges(pairs, n), x, np.zeros(n, np.int64))
    proto = make_protocol(f"blink-{variant}", epsilon=6.0, degree_share=0.2)
    result = collect(proto, g, seed=4, drop=(7,))
    release = proto.server_step(0, result, CuratorView(n, 8, public_features=x), seed=4)
    bits, observed, noisy, has = dense_inputs(result, n)
    ref = dense_blink(noisy, has, bits, observed, proto.eps_adjacency, variant)
    np.testing.assert_array_equal(release.edges, ref["edges"])
    if variant != "hard":
        np.testing.assert_allclose(release.edge_weight, ref["weight"], rtol=0, atol=1e-12)
    assert release.stats["beta_fit"]["iterations"] == 200
    assert release.num_edges > 100


@pytest.mark.parametrize(
    "name,params",
    [
        ("fp-blink", {"share1": 0.5, "share2": 0.66, "steps": 1}),
        ("fp-blink", {"share1": 0.75, "share2": 0.25, "steps": 2, "variant": "hybrid"}),
        ("blink-fr", {"feature_share": 0.3, "degree_share": 0.5, "steps": 1}),
        ("blink-fr", {"feature_share": 0.1, "degree_share": 0.1, "steps": 0}),
        ("blink-fr", {"feature_share": 0.5, "degree_share": 0.3, "variant": "soft"}),
    ],
)
@pytest.mark.parametrize("eps", [3.0, 8.0])
@pytest.mark.parametrize("drop", [(), (0, 9)])
def test_blink_with_private_features_equals_dense(name, params, eps, drop):
    g = random_graph(60, 16, seed=int(eps) + len(params))
    proto = make_protocol(name, epsilon=eps, **params)
    result = collect(proto, g, seed=3, drop=drop)
    release = proto.server_step(0, result, CuratorView(60, 16), seed=3)
    bits, observed, noisy, has = dense_inputs(result, 60)
    p = proto
    ref = dense_blink(noisy, has, bits, observed, p.eps_adjacency, p.variant, p.min_weight)
    np.testing.assert_array_equal(release.edges, ref["edges"])
    x = np.zeros((60, 16), dtype=np.uint8)
    for node, rep in result.reports.items():
        x[node] = rep.features
    feats = dense_fr(x, ref["prob"], has, p.steps)
    assert np.abs(release.x - feats).max() <= 1e-6
    assert release.x.dtype == np.float32


def test_blink_streamed_equals_dense_for_any_chunks(monkeypatch):
    """Every variant, with and without feature reconstruction, from report chunks of one
    entry, of 13, and all at once: bit-identical releases (fingerprint, weights, stats), equal
    to the dense Blink. Posterior blocks of 1 and of 7 rows (not dividing n = 71) likewise."""
    g = random_graph(71, 12, seed=21)
    cases = [
        ("blink-hard", {"degree_share": 0.2}),
        ("blink-soft", {"degree_share": 0.2, "min_weight": 0.02}),
        ("blink-hybrid", {"degree_share": 0.3}),
        ("blink-fr", {"feature_share": 0.3, "degree_share": 0.2, "steps": 2}),
    ]
    for name, params in cases:
        proto = make_protocol(name, epsilon=5.0, **params)
        result = collect(proto, g, seed=9, drop=(3, 70))
        public = g.x if proto.public_features else None
        cur = CuratorView(71, 12, public_features=public)
        releases = []
        for entries in (None, 1, 13, 1 << 30):
            if entries is not None:
                monkeypatch.setattr(reported_pairs, "BLOCK_ENTRIES", entries)
            releases.append(proto.server_step(0, result, cur, seed=9))
        base = releases[0]
        for other in releases[1:]:
            assert other.fingerprint() == base.fingerprint()
            assert other.stats == base.stats
            if base.edge_weight is not None:
                np.testing.assert_array_equal(other.edge_weight, base.edge_weight)
        bits, observed, noisy, has = dense_inputs(result, 71)
        p = proto
        ref = dense_blink(noisy, has, bits, observed, p.eps_adjacency, p.variant, p.min_weight)
        np.testing.assert_array_equal(base.edges, ref["edges"])
        assert base.stats["reported_pairs"] == int(np.triu((bits + bits.T) > 0, k=1).sum())
    # The posterior's own blocks.
    reported, observed = adjacency_reports(result.reports, 71)
    beta = dense_beta(clamp_and_impute(noisy, has))
    whole = Posterior.build(beta, observed, reported, 1.5)
    for rows in (1, 7):
        part = Posterior.build(beta, observed, reported, 1.5, block_rows=rows)
        for a, b in zip(whole.select(0.3), part.select(0.3), strict=True):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(whole.row_sums(), part.row_sums())
        for a, b in zip(whole.hybrid()[:3], part.hybrid()[:3], strict=True):
            np.testing.assert_array_equal(a, b)


def test_posterior_row_sums_match_one_bincount():
    """The reported pairs' corrections, accumulated block by block, are the single bincount
    over all pairs in (i, j) order, bit for bit."""
    g = random_graph(90, 8, seed=2)
    proto = make_protocol("blink-soft", epsilon=3.0, degree_share=0.3)
    result = collect(proto, g, seed=1)
    reported, observed = adjacency_reports(result.reports, 90)
    beta = np.random.default_rng(0).normal(-2.0, 1.0, 90)
    post = Posterior.build(beta, observed, reported, 2.7, block_rows=4)
    bits = reported.toarray().astype(np.int64)
    k = np.triu(bits + bits.T, k=1)
    ri, rj = np.nonzero(k)
    delta = sigmoid(post.logit(ri, rj, k[ri, rj])) - sigmoid(post.gamma[ri] + post.gamma[rj])
    rows = sigmoid_row_sums(post.gamma)
    rows = rows + np.bincount(ri, weights=delta, minlength=90)
    rows = rows + np.bincount(rj, weights=delta, minlength=90)
    np.testing.assert_array_equal(post.row_sums(), rows)


def test_fp_blink_is_blink_fr_under_the_matching_split():
    g = random_graph(50, 10, seed=4)
    fp = make_protocol("fp-blink", epsilon=4.0, share1=0.75, share2=0.5)
    fr = make_protocol("blink-fr", epsilon=4.0, feature_share=0.25, degree_share=0.5)
    cur = CuratorView(50, 10)
    a = fp.server_step(0, collect(fp, g, 1), cur, 1)
    b = fr.server_step(0, collect(fr, g, 1), cur, 1)
    assert a.fingerprint() == b.fingerprint()
    assert a.privacy.epsilon == b.privacy.epsilon


def test_degree_share_one_sends_no_adjacency_and_uses_the_prior():
    g = random_graph(40, 8, seed=8)
    proto = make_protocol("blink-hard", epsilon=3.0, degree_share=1.0)
    assert not proto.schema(0).adjacency
    result = collect(proto, g, seed=2)
    assert all(r.adjacency is None for r in result.reports.values())
    release = proto.server_step(0, result, CuratorView(40, 8, public_features=g.x), seed=2)
    _, _, noisy, has = dense_inputs(result, 40)
    beta = dense_beta(clamp_and_impute(noisy, has))
    prior = 1 / (1 + np.exp(-(beta[:, None] + beta[None, :])))
    expected = np.argwhere(np.triu(prior > 0.5, k=1))
    np.testing.assert_array_equal(release.edges, expected)
    assert [part["part"] for part in release.privacy.parts] == ["degree"]


def test_soft_reports_the_weight_it_drops():
    g = random_graph(70, 8, seed=6)
    proto = make_protocol("blink-soft", epsilon=2.0, degree_share=0.3, min_weight=0.05)
    result = collect(proto, g, seed=5)
    release = proto.server_step(0, result, CuratorView(70, 8, public_features=g.x), seed=5)
    bits, observed, noisy, has = dense_inputs(result, 70)
    prob = dense_blink(noisy, has, bits, observed, proto.eps_adjacency, "soft")["prob"]
    soft = release.stats["soft"]
    assert soft["total_weight"] == pytest.approx(prob.sum(), rel=1e-12)
    assert soft["dropped_weight"] == pytest.approx(prob[prob < 0.05].sum(), rel=1e-9)
    per_row = np.where(prob < 0.05, prob, 0).sum(axis=1)
    assert soft["max_row_dropped"] == pytest.approx(per_row.max(), rel=1e-9)


def test_hybrid_ties_at_the_threshold_are_all_kept():
    """Nodes with equal (clamped) degrees share β bit for bit, so P has exact ties; the sparse
    selection keeps every entry equal to t, like the dense one."""
    n = 30
    beta = np.full(n, -1.2)
    beta[:3] = 0.4
    post = Posterior.build(beta, np.ones(n, bool), adjacency_reports({}, n)[0], 1.0)
    i, j, w, info = post.hybrid()
    prob = dense_posterior(beta, np.zeros((n, n), np.int64), np.ones(n, bool), 1.0)
    big_k = int(math.floor(prob.sum()))
    t = np.sort(prob.ravel())[::-1][big_k - 1]
    expected = np.argwhere(np.triu(prob >= t, k=1))
    np.testing.assert_array_equal(np.stack([i, j], 1), expected)
    assert info["K"] == big_k and info["t"] == t
    assert 2 * i.size > big_k + 10  # the tie group really extends past K


# ------------------------------------------------------------------ config and accounting


@pytest.mark.parametrize(
    "name,params",
    [
        ("blink-hard", {"degree_share": 0.3}),
        ("blink-soft", {"degree_share": 0.7, "min_weight": 0.02}),
        ("blink-hybrid", {}),
        ("fp-blink", {"share1": 0.66, "share2": 0.33, "variant": "soft", "steps": 2}),
        ("fp-blink", {"feature_share": 0.3, "degree_share": 0.1}),
        ("blink-fr", {"feature_share": 0.3, "degree_share": 0.5, "steps": 0}),
    ],
)
def test_config_round_trip(name, params):
    proto = make_protocol(name, epsilon=5.0, **params)
    again = protocol_from_config({**proto.config(), "op": "report", "round": 0})
    assert again.config() == proto.config()
    if name != "fp-blink":  # fp-blink's config names (δ1, δ2), not the shares it came from
        assert again.params == proto.params
    assert (again.feature_share, again.degree_share) == (proto.feature_share, proto.degree_share)
    assert again.round_epsilon(0) == proto.round_epsilon(0)
    assert proto.round_epsilon(0) == pytest.approx(5.0, abs=1e-12)  # the parts sum to ε
    assert again.name == name


def test_params_validation():
    """The registry checks the declared ranges; FP-BLink's derived shares are checked here."""
    with pytest.raises(ValueError, match="degree_share"):
        make_protocol("blink-hard", epsilon=1.0, degree_share=0.0)
    with pytest.raises(ValueError, match="feature_share"):
        make_protocol("blink-fr", epsilon=1.0, feature_share=0.0)
    with pytest.raises(ValueError, match="variant"):
        make_protocol("blink-fr", epsilon=1.0, variant="medium")
    with pytest.raises(ValueError, match="min_weight"):
        make_protocol("blink-soft", epsilon=1.0, min_weight=0.0)
    with pytest.raises(ValueError, match="epsilon"):
        make_protocol("blink-hard", epsilon=math.inf)
    assert isinstance(make_protocol("blink-soft", epsilon=1.0), BlinkProtocol)
    with pytest.raises(ValueError, match="feature share"):
        make_protocol("fp-blink", epsilon=1.0, share1=1.0)
    with pytest.raises(ValueError, match="degree share"):
        make_protocol("fp-blink", epsilon=1.0, share2=1.0)


def test_public_features_are_required():
    g = random_graph(20, 4, seed=1)
    proto = make_protocol("blink-hard", epsilon=3.0)
    with pytest.raises(ValueError, match="public features"):
        proto.server_step(0, collect(proto, g, 0), CuratorView(20, 4), 0)


def test_degree_accounting_matches_closed_form():
    assert PLD_DISCRETIZATION == accounting.PLD_DISCRETIZATION
    from dp_accounting import NeighboringRelation, dp_event, pld

    for eps in (0.05, 0.5, 1.0, 4.5):
        own = discrete_laplace_pld(eps).get_epsilon_for_delta(0.0)
        assert eps - 1e-12 <= own <= eps + PLD_DISCRETIZATION + 1e-12
        # dp-accounting's own DiscreteLaplaceDpEvent (ADD_OR_REMOVE_ONE, sensitivity 1).
        acc = pld.PLDAccountant(NeighboringRelation.ADD_OR_REMOVE_ONE)
        acc.compose(dp_event.DiscreteLaplaceDpEvent(noise_parameter=eps, sensitivity=1))
        assert acc.get_epsilon(0.0) == pytest.approx(eps, abs=1e-6)
        # RR through our PLD equals the accounting module's figure.
        assert composed_epsilon([eps], []) == pytest.approx(
            accounting.pure_epsilon([accounting.rr_event(eps)]), abs=1e-12
        )


@pytest.mark.parametrize(
    "name,params,parts",
    [
        ("blink-hard", {"degree_share": 0.1}, {"adjacency": 4.5, "degree": 0.5}),
        ("blink-hybrid", {"degree_share": 0.7}, {"adjacency": 1.5, "degree": 3.5}),
        (
            "fp-blink",
            {"share1": 0.5, "share2": 0.5},
            {"adjacency": 1.25, "degree": 1.25, "features": 2.5},
        ),
        (
            "blink-fr",
            {"feature_share": 0.2, "degree_share": 0.25},
            {"adjacency": 3.0, "degree": 1.0, "features": 1.0},
        ),
    ],
)
def test_privacy_reports(name, params, parts):
    proto = make_protocol(name, epsilon=5.0, **params)
    rep = proto.privacy_report(num_features=100)
    got = {part["part"]: part for part in rep.parts}
    assert set(got) == set(parts)
    for key, closed in parts.items():
        assert got[key]["epsilon_closed_form"] == pytest.approx(closed, abs=1e-12)
        assert closed - 1e-9 <= got[key]["epsilon"] <= closed + PLD_DISCRETIZATION + 1e-9
    assert got["degree"]["mechanism"] == "discrete-laplace"
    assert got["degree"]["noise_decay"] == pytest.approx(math.exp(-parts["degree"]))
    # One edge: both endpoints' RR bits and degrees, 2(ε_a + ε_d) by the accountant.
    per_bit = parts["adjacency"] + parts["degree"]
    assert rep.unit_epsilons["adjacency_bit"] == pytest.approx(per_bit, abs=3e-4)
    assert rep.unit_epsilons["edge"] == pytest.approx(2 * per_bit, abs=5e-4)
    # Total: one adjacency bit (RR + degree) plus, with private features, one feature bit.
    assert 5.0 - 1e-9 <= rep.epsilon <= 5.0 + len(parts) * PLD_DISCRETIZATION + 1e-9
    assert rep.delta == 0.0 and rep.paper_epsilon == 5.0
    if "features" in parts:
        assert got["features"]["bits_per_node"] == 100
        assert any("per feature BIT" in note for note in rep.notes)
    else:
        assert "public" in rep.unit
