"""HoGS: the sparse reconstruction equals the literal dense one; closed forms; determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols.base import CuratorView, RoundResult
from ldpgraph.protocols.graph import Graph, canonical_edges
from ldpgraph.protocols.ldp import hogs_features, reported_pairs
from ldpgraph.protocols.ldp.assemble import adjacency_reports
from ldpgraph.protocols.ldp.hogs import HogsProtocol, reconstruct_features, reconstruct_topology
from ldpgraph.protocols.ldp.posterior import posterior, similarity_threshold
from ldpgraph.protocols.ldp.similarity import FeatureRows
from ldpgraph.protocols.mechanisms import flip_probability
from ldpgraph.protocols.params import ProtocolParameterError
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.protocols.types import NodeView

from ..reference.hogs import dense_hogs, unstreamed_features


def random_graph(n: int, d: int, seed: int, dup_rows: int = 4) -> Graph:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    pairs = rng.integers(0, n, size=(3 * n, 2))
    same = y[pairs[:, 0]] == y[pairs[:, 1]]
    pairs = pairs[same | (rng.random(pairs.shape[0]) < 0.2)]
    centers = rng.random((3, d)) < 0.3
    x = (centers[y] ^ (rng.random((n, d)) < 0.1)).astype(np.uint8)
    x[:dup_rows] = x[dup_rows : 2 * dup_rows]  # identical feature rows exercise the (0,0) join
    x[-1] = 0  # an all-zero row: s = 0 with everyone
    return Graph("rand", canonical_edges(pairs, n), x, y.astype(np.int64))


def views(g: Graph) -> list[NodeView]:
    return [NodeView(i, g.neighbors(i), g.x[i], g.num_nodes) for i in range(g.num_nodes)]


def collect(proto: HogsProtocol, g: Graph, seed: int, drop: tuple[int, ...] = ()) -> RoundResult:
    reports = {v.node_id: proto.client_step(0, v, {}, seed) for v in views(g)}
    for node in drop:
        reports.pop(node)
    return RoundResult(reports, np.array(sorted(drop), dtype=np.int64))


def dense_inputs(result: RoundResult, n: int, d: int, public: np.ndarray | None):
    reported, observed = adjacency_reports(result.reports, n)
    bits = reported.toarray().astype(np.int64)
    if public is not None:
        x = public
    else:
        x = np.zeros((n, d), dtype=np.uint8)
        for node, rep in result.reports.items():
            x[node] = rep.features
    return bits, observed, x


CASES = [
    (eps, share, tau, steps)
    for eps in (0.5, 1.5, 4.0, 8.0)
    for share, tau, steps in ((0.5, 0.5, 1), (0.1, 0.9, 2), (0.3, 0.3, 0), (0.7, 1.0, 1))
]


@pytest.mark.parametrize("eps,share,tau,steps", CASES)
@pytest.mark.parametrize("drop", [(), (3, 7, 11)])
@pytest.mark.parametrize("budget", [None, 0])
def test_sparse_equals_dense(eps, share, tau, steps, drop, budget, monkeypatch):
    """``budget`` 0 forces the blockwise (0,0) join used when prefix filtering would make too
    many candidates (dense noisy features: Facebook)."""
    from ldpgraph.protocols.ldp import similarity

    if budget is not None:
        # Blocks of 16 rows: several blocks, so row offsets between blocks are exercised.
        monkeypatch.setattr(similarity, "PREFIX_PAIR_BUDGET", budget)
        monkeypatch.setattr(similarity, "JOIN_BLOCK_ROWS", 16)
    g = random_graph(70, 24, seed=int(eps * 10 + tau * 100 + steps))
    proto = make_protocol("hogs", epsilon=eps, feature_share=share, tau=tau, steps=steps)
    result = collect(proto, g, seed=5, drop=drop)
    cur = CuratorView(g.num_nodes, g.num_features)
    release = proto.server_step(0, result, cur, seed=5)
    bits, observed, x = dense_inputs(result, g.num_nodes, g.num_features, None)
    prob, edges, feats = dense_hogs(
        bits, observed, x, flip_probability(proto.eps_adjacency), tau, steps
    )
    np.testing.assert_array_equal(release.edges, edges)
    assert np.abs(release.x - feats).max() <= 1e-6
    # The posteriors the sparse code keeps are bit-identical to the dense ones.
    reported, obs = adjacency_reports(result.reports, g.num_nodes)
    topo = reconstruct_topology(
        reported, obs, FeatureRows(x), flip_probability(proto.eps_adjacency), min(tau, 0.5)
    )
    np.testing.assert_array_equal(topo.prob, prob[topo.i, topo.j])
    expected = np.argwhere(np.triu(prob >= min(tau, 0.5), k=1))
    np.testing.assert_array_equal(np.stack([topo.i, topo.j], 1), expected)


@pytest.mark.parametrize("block_rows", [1, 7, 70, None])
@pytest.mark.parametrize("drop", [(), (3, 7, 11)])
def test_streamed_equals_unstreamed_and_dense(block_rows, drop):
    """Reports and features streamed in chunks of 1 row, of 7 (not dividing n = 71), all rows
    at once, and the default: the same pairs, bit-identical posteriors (against the dense
    Algorithm 2) and bit-identical features for every number of steps (against the whole
    product per step), within 1e-6 of the dense Algorithm 3."""
    g = random_graph(71, 24, seed=3)
    proto = make_protocol("hogs", epsilon=3.0, feature_share=0.4, tau=0.5, steps=1)
    result = collect(proto, g, seed=2, drop=drop)
    reported, observed = adjacency_reports(result.reports, 71)
    bits, observed, x = dense_inputs(result, 71, 24, None)
    p = flip_probability(proto.eps_adjacency)
    topo = reconstruct_topology(reported, observed, FeatureRows(x), p, 0.5, block_rows=block_rows)
    for steps in range(4):
        prob, _, feats = dense_hogs(bits, observed, x, p, 0.5, steps)
        expected = np.argwhere(np.triu(prob >= 0.5, k=1))
        np.testing.assert_array_equal(np.stack([topo.i, topo.j], 1), expected)
        np.testing.assert_array_equal(topo.prob, prob[topo.i, topo.j])
        out = reconstruct_features(x, topo.i, topo.j, topo.prob, steps, block_rows=block_rows)
        whole = unstreamed_features(x, topo.i, topo.j, topo.prob, steps)
        assert out.dtype == np.float32
        np.testing.assert_array_equal(out, whole)
        assert np.abs(out - feats).max() <= 1e-6


def test_release_does_not_depend_on_chunk_sizes(monkeypatch):
    """Whole server steps, from report chunks of one entry and feature blocks of one row to the
    defaults: one fingerprint."""
    g = random_graph(60, 20, seed=8)
    proto = make_protocol("hogs", epsilon=4.0, feature_share=0.5, tau=0.6, steps=2)
    result = collect(proto, g, seed=3, drop=(4,))
    cur = CuratorView(60, 20)
    base = proto.server_step(0, result, cur, seed=3)
    for entries, fr_bytes in ((1, 1), (13, 8 * 20 * 3), (1 << 30, 1 << 40)):
        monkeypatch.setattr(reported_pairs, "BLOCK_ENTRIES", entries)
        monkeypatch.setattr(hogs_features, "FR_BLOCK_BYTES", fr_bytes)
        again = proto.server_step(0, result, cur, seed=3)
        assert again.fingerprint() == base.fingerprint()
        assert again.stats == base.stats


@pytest.mark.parametrize("eps", [0.4, 1.0, 3.0, 5.0])
@pytest.mark.parametrize("drop", [(), (0, 1, 2, 9)])
def test_edge_only_sparse_equals_dense(eps, drop):
    g = random_graph(60, 16, seed=int(eps * 7))
    proto = make_protocol("hogs-edge", epsilon=eps, tau=0.5)
    result = collect(proto, g, seed=1, drop=drop)
    release = proto.server_step(0, result, CuratorView(60, 16, public_features=g.x), seed=1)
    bits, observed, x = dense_inputs(result, 60, 16, g.x)
    _, edges, _ = dense_hogs(bits, observed, x, flip_probability(eps), 0.5, 0)
    np.testing.assert_array_equal(release.edges, edges)
    np.testing.assert_array_equal(release.x, g.x)  # public features are used as they are
    assert all(r.features is None for r in result.reports.values())


def test_identical_feature_pairs_pass_in_edge_only_mode():
    # At eps_a = 5 the (0,0) threshold is r/(r+1) ~ 0.99995: only identical rows pass.
    p = flip_probability(5.0)
    t00 = similarity_threshold(0.5, 0, 2, p)
    assert t00 == pytest.approx(math.exp(10) / (math.exp(10) + 1))
    x = np.zeros((5, 8), dtype=np.uint8)
    x[0, :3] = x[3, :3] = 1
    x[1, 2:6] = 1
    x[2, 1:7] = 1
    rows = FeatureRows(x)
    i, j = rows.threshold_join(t00)
    assert list(zip(i.tolist(), j.tolist(), strict=True)) == [(0, 3)]


def test_posterior_closed_forms():
    rng = np.random.default_rng(0)
    for eps_a in (0.5, 2.0, 5.0):
        p = flip_probability(eps_a)
        r = math.exp(2 * eps_a)
        assert r == pytest.approx(((1 - p) / p) ** 2)
        for t in (0.3, 0.5, 0.9):
            assert similarity_threshold(t, 2, 0, p) == pytest.approx(t / (t + (1 - t) * r))
            assert similarity_threshold(t, 1, 1, p) == pytest.approx(t)
            assert similarity_threshold(t, 0, 2, p) == pytest.approx(t * r / (t * r + 1 - t))
        s = rng.random(1000)
        # (1,0): P = s exactly in exact arithmetic
        np.testing.assert_allclose(posterior(s, np.ones(1000, int), np.ones(1000, int), p), s)
        # Eq. (9) with the paper's likelihoods for (1,1) and (0,0)
        l11, l11p = (1 - p) ** 2, p**2
        np.testing.assert_allclose(
            posterior(s, np.full(1000, 2), np.zeros(1000, int), p),
            l11 * s / (l11 * s + l11p * (1 - s)),
        )
        np.testing.assert_allclose(
            posterior(s, np.zeros(1000, int), np.full(1000, 2), p),
            l11p * s / (l11p * s + l11 * (1 - s)),
        )
        # monotone in s, and the threshold is where P crosses t
        for ones, zeros in ((2, 0), (1, 1), (0, 2), (1, 0), (0, 1)):
            t = 0.7
            thr = similarity_threshold(t, ones, zeros, p)
            lo = posterior(np.array([thr * (1 - 1e-9)]), np.array([ones]), np.array([zeros]), p)
            hi = posterior(
                np.array([min(1.0, thr * (1 + 1e-9))]), np.array([ones]), np.array([zeros]), p
            )
            assert lo[0] < t <= hi[0] + 1e-12


def test_one_bit_likelihood_when_other_node_is_missing():
    """With only one of the two bits observed, Bayes on that bit alone gives
    P = (1−p)s / ((1−p)s + p(1−s)) for a reported 1 and p·s / (p·s + (1−p)(1−s)) for a 0."""
    p = flip_probability(2.0)
    s = np.linspace(0.01, 0.99, 50)
    one = posterior(s, np.ones(50, int), np.zeros(50, int), p)
    zero = posterior(s, np.zeros(50, int), np.ones(50, int), p)
    np.testing.assert_allclose(one, (1 - p) * s / ((1 - p) * s + p * (1 - s)))
    np.testing.assert_allclose(zero, p * s / (p * s + (1 - p) * (1 - s)))
    # Simulate: a true edge/non-edge with prior s, one RR bit. Empirical posterior matches.
    rng = np.random.default_rng(3)
    s0 = 0.4
    edge = rng.random(2_000_000) < s0
    bit = edge ^ (rng.random(edge.shape[0]) < p)
    emp = edge[bit].mean()
    exact = posterior(np.array([s0]), np.array([1]), np.array([0]), p)[0]
    assert abs(emp - exact) < 3.29 * math.sqrt(exact * (1 - exact) / bit.sum())


def test_determinism_and_seed_dependence():
    g = random_graph(50, 20, seed=2)
    proto = make_protocol("hogs", epsilon=4.0)
    cur = CuratorView(50, 20)
    a = proto.server_step(0, collect(proto, g, 11), cur, 11)
    b = proto.server_step(0, collect(proto, g, 11), cur, 11)
    c = proto.server_step(0, collect(proto, g, 12), cur, 12)
    np.testing.assert_array_equal(a.edges, b.edges)
    np.testing.assert_array_equal(a.x, b.x)
    assert not (
        a.edges.shape == c.edges.shape
        and np.array_equal(a.edges, c.edges)
        and np.array_equal(a.x, c.x)
    )


def test_params_validation():
    """The registry checks the declared ranges (nothing re-checks them); the split follows."""
    with pytest.raises(ProtocolParameterError, match="tau"):
        make_protocol("hogs", epsilon=1.0, tau=0.0)
    with pytest.raises(ProtocolParameterError, match="tau"):
        make_protocol("hogs", epsilon=1.0, tau=1.5)
    with pytest.raises(ProtocolParameterError, match="epsilon"):
        make_protocol("hogs", epsilon=float("inf"))
    with pytest.raises(ProtocolParameterError, match="feature_share"):
        make_protocol("hogs", epsilon=1.0, feature_share=1.0)
    p = make_protocol("hogs", epsilon=8.0, feature_share=0.25)
    assert p.eps_adjacency == 6.0 and p.eps_features == 2.0


def test_block_size_does_not_change_the_result():
    g = random_graph(80, 20, seed=9)
    proto = make_protocol("hogs", epsilon=2.0, tau=0.6)
    result = collect(proto, g, seed=4, drop=(5,))
    reported, observed = adjacency_reports(result.reports, 80)
    x = np.zeros((80, 20), np.uint8)
    for node, rep in result.reports.items():
        x[node] = rep.features
    rows = FeatureRows(x)
    p = flip_probability(1.0)
    whole = reconstruct_topology(reported, observed, rows, p, 0.5)
    tiny = reconstruct_topology(reported, observed, rows, p, 0.5, block_entries=7)
    np.testing.assert_array_equal(whole.i, tiny.i)
    np.testing.assert_array_equal(whole.j, tiny.j)
    np.testing.assert_array_equal(whole.prob, tiny.prob)


@pytest.mark.parametrize("budget", [None, 0])
@pytest.mark.parametrize("t", [0.2, 0.5, 0.8, 0.95, 0.999, 0.99999])
def test_threshold_join_finds_every_pair_above_t(t, budget, monkeypatch):
    """Prefix filtering, and (budget 0) the blockwise join that replaces it for dense rows."""
    from ldpgraph.protocols.ldp import similarity

    if budget is not None:
        monkeypatch.setattr(similarity, "PREFIX_PAIR_BUDGET", budget)
        monkeypatch.setattr(similarity, "JOIN_BLOCK_ROWS", 16)
    rng = np.random.default_rng(int(t * 1000))
    x = (rng.random((120, 30)) < 0.2).astype(np.uint8)
    x[10:20] = x[0:10]  # duplicates
    x[30, :] = x[31, :]
    x[30, x[31].argmin()] = 1  # a near-duplicate: one extra element
    x[40] = 0
    rows = FeatureRows(x)
    i, j = rows.threshold_join(t)
    xf = x.astype(np.float64)
    norm = np.sqrt((xf * xf).sum(1))
    denom = np.outer(norm, norm)
    s = np.divide(xf @ xf.T, denom, out=np.zeros((120, 120)), where=denom > 0)
    expected = {tuple(p) for p in np.argwhere(np.triu(s >= t, k=1))}
    got = set(zip(i.tolist(), j.tolist(), strict=True))
    assert expected <= got
    assert all(s[a, b] >= t - 1e-9 for a, b in got)
