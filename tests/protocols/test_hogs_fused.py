"""The one-step feature reconstruction fused into HoGS's topology scoring (hogs_fused): the same
edges as the unfused path, features equal to float32 rounding (against the CSR path and the
dense Algorithm 3), each kept pair summed once (silent nodes, LSH bands, blockwise join)."""

from __future__ import annotations

import numpy as np
import pytest

from ldpgraph.protocols.base import CuratorView
from ldpgraph.protocols.ldp import hogs_fused
from ldpgraph.protocols.ldp.assemble import adjacency_reports
from ldpgraph.protocols.ldp.hogs_features import reconstruct_features
from ldpgraph.protocols.ldp.hogs_fused import FusedAverage
from ldpgraph.protocols.ldp.hogs_topology import reconstruct_topology
from ldpgraph.protocols.ldp.similarity import FeatureRows
from ldpgraph.protocols.mechanisms import flip_probability
from ldpgraph.protocols.registry import make_protocol

from ..reference.hogs import dense_hogs
from .test_hogs import collect, dense_inputs, random_graph

#: float32 numerators: a row's sum is rounded once per chunk that adds to it.
RTOL = 1e-6


def _both(result, n, x, p, need, tau, mu=1.0, fuse_pairs=0, **kw):
    reported, observed = adjacency_reports(result.reports, n)
    rows = FeatureRows(x)
    plain = reconstruct_topology(reported, observed, rows, p, need, mu=mu, **kw)
    fused = reconstruct_topology(
        reported,
        observed,
        rows,
        p,
        need,
        mu=mu,
        fuse_features=x,
        tau=tau,
        fuse_pairs=fuse_pairs,
        **kw,
    )
    return plain, fused


def _check(plain, fused, x, tau):
    assert fused.features is not None and fused.stats.pop("features") == "fused"
    edge = plain.prob >= tau
    np.testing.assert_array_equal(fused.i, plain.i[edge])
    np.testing.assert_array_equal(fused.j, plain.j[edge])
    np.testing.assert_array_equal(fused.prob, plain.prob[edge])
    assert fused.stats == plain.stats  # kept_pairs counted once each, as the unfused path
    want = reconstruct_features(x, plain.i, plain.j, plain.prob, 1)
    assert fused.features.dtype == np.float32
    np.testing.assert_allclose(fused.features, want, rtol=RTOL, atol=1e-7)
    return want


@pytest.mark.parametrize("drop", [(), (3, 7, 11, 12)])
@pytest.mark.parametrize("tau", [0.5, 0.9, 0.3])
@pytest.mark.parametrize("fuse_pairs", [0, 40])
def test_fused_equals_unfused_and_dense(drop, tau, fuse_pairs):
    """From the first pair (0) or after 40 held pairs (a switch mid-scoring): the same edges,
    the same stats, and features within float32 rounding of the CSR path and the dense
    Algorithm 3; rows without a neighbour keep their own row."""
    g = random_graph(90, 24, seed=11, dup_rows=6)
    proto = make_protocol("hogs", epsilon=3.0, feature_share=0.5, tau=tau, steps=1)
    result = collect(proto, g, seed=4, drop=drop)
    bits, observed, x = dense_inputs(result, 90, 24, None)
    p = flip_probability(proto.eps_adjacency)
    need = min(tau, 0.5)
    plain, fused = _both(result, 90, x, p, need, tau, fuse_pairs=fuse_pairs, block_rows=7)
    assert plain.i.size > 40
    _check(plain, fused, x, tau)
    _, _, feats = dense_hogs(bits, observed, x, p, tau, 1)
    np.testing.assert_allclose(fused.features, feats, rtol=RTOL, atol=1e-6)
    lonely = np.ones(90, dtype=bool)
    sel = plain.prob >= 0.5
    lonely[plain.i[sel]] = lonely[plain.j[sel]] = False
    np.testing.assert_array_equal(fused.features[lonely], x[lonely])


def test_under_the_budget_nothing_is_fused():
    g = random_graph(60, 20, seed=2)
    proto = make_protocol("hogs", epsilon=3.0, feature_share=0.5, tau=0.5, steps=1)
    result = collect(proto, g, seed=1)
    _, _, x = dense_inputs(result, 60, 20, None)
    p = flip_probability(proto.eps_adjacency)
    plain, fused = _both(result, 60, x, p, 0.5, 0.5, fuse_pairs=10**9)
    assert fused.features is None and "features" not in fused.stats
    np.testing.assert_array_equal(fused.i, plain.i)
    np.testing.assert_array_equal(fused.prob, plain.prob)


@pytest.mark.parametrize("join", ["lsh", "exact"])
@pytest.mark.parametrize("drop", [(), tuple(range(0, 40, 3))])
def test_fused_lsh_and_silent_pairs_summed_once(join, drop):
    """hogs-arr at small μ (a low (0,0) threshold: many joined pairs), LSH or exact join, with
    many silent nodes whose pairs both a join and the silent nodes' own join find."""
    g = random_graph(120, 32, seed=5, dup_rows=10)
    proto = make_protocol("hogs-arr", epsilon=8.0, feature_share=0.5, tau=0.9, steps=1, mu=0.2)
    result = collect(proto, g, seed=3, drop=drop)
    _, _, x = dense_inputs(result, 120, 32, None)
    p = flip_probability(proto.eps_adjacency)
    plain, fused = _both(result, 120, x, p, 0.5, 0.9, mu=0.2, join=join, seed=7)
    assert plain.stats["joined_pairs"] > 0
    _check(plain, fused, x, 0.9)


def test_fused_blockwise_join(monkeypatch):
    """The all-pairs blockwise join (dense rows): its candidates are summed once."""
    from ldpgraph.protocols.ldp import similarity

    monkeypatch.setattr(similarity, "PREFIX_PAIR_BUDGET", 0)
    monkeypatch.setattr(similarity, "JOIN_BLOCK_ROWS", 16)
    g = random_graph(70, 24, seed=9)
    proto = make_protocol("hogs", epsilon=4.0, feature_share=0.5, tau=0.5, steps=1)
    result = collect(proto, g, seed=6, drop=(2, 5))
    _, _, x = dense_inputs(result, 70, 24, None)
    p = flip_probability(proto.eps_adjacency)
    plain, fused = _both(result, 70, x, p, 0.5, 0.5)
    _check(plain, fused, x, 0.5)


@pytest.mark.parametrize("tau", [0.5, 0.9])
def test_server_step_fuses_only_past_the_budget_and_where_it_frees_pairs(monkeypatch, tau):
    """The protocol's release: today's exactly under the budget; past it (budget 0, and a pair
    made to cost more than the sums) the same edges and features within float32 rounding at
    τ = 0.9; at τ = 0.5 every kept pair is an edge, fusing frees nothing and never happens;
    more than one step is never fused."""
    g = random_graph(80, 24, seed=1)
    cur = CuratorView(80, 24)
    for steps in (1, 2):
        proto = make_protocol("hogs", epsilon=4.0, feature_share=0.5, tau=tau, steps=steps)
        result = collect(proto, g, seed=2)
        before = proto.server_step(0, result, cur, seed=2)
        monkeypatch.setattr(hogs_fused, "FUSE_KEPT_PAIRS", 0)
        monkeypatch.setattr(hogs_fused, "PAIR_BYTES", 10**9)
        after = proto.server_step(0, result, cur, seed=2)
        monkeypatch.undo()
        np.testing.assert_array_equal(after.edges, before.edges)
        if steps == 1 and tau > 0.5:
            assert after.stats.pop("features") == "fused"
            np.testing.assert_allclose(after.x, before.x, rtol=RTOL, atol=1e-7)
        else:
            np.testing.assert_array_equal(after.x, before.x)
        assert after.stats == before.stats


def test_worth_fusing_weighs_the_non_edges_against_the_sums():
    """n = 10^7, d = 64: the sums cost 2.64 GB, i.e. 6.6·10^7 non-edge pairs at 40 bytes."""
    n, d = 10**7, 64
    sums = n * (d * 4 + 8)
    assert not hogs_fused.worth_fusing(0, n, d)
    assert not hogs_fused.worth_fusing(sums // hogs_fused.PAIR_BYTES, n, d)
    assert hogs_fused.worth_fusing(sums // hogs_fused.PAIR_BYTES + 1, n, d)


def test_accumulator_chunks_do_not_change_the_sums(monkeypatch):
    """Chunks of one pair and the default give the same rows to float32 rounding, and a pair
    below 0.5 adds nothing."""
    rng = np.random.default_rng(0)
    x = (rng.random((50, 9)) < 0.4).astype(np.uint8)
    i = np.array([0, 0, 3, 7, 7, 10], dtype=np.int32)
    j = np.array([1, 4, 9, 8, 49, 11], dtype=np.int32)
    prob = np.array([0.6, 0.99, 0.7, 0.51, 0.8, 0.49])
    whole = FusedAverage.of(x)
    whole.add(i, j, prob)
    want = reconstruct_features(x, i, j, prob, 1)
    monkeypatch.setattr(hogs_fused, "FUSE_CHUNK_BYTES", 1)
    small = FusedAverage.of(x)
    for k in range(i.size):
        small.add(i[k : k + 1], j[k : k + 1], prob[k : k + 1])
    a, b = whole.features(), small.features()
    np.testing.assert_allclose(a, want, rtol=RTOL)
    np.testing.assert_allclose(b, want, rtol=RTOL)
    np.testing.assert_array_equal(a[10], x[10])  # only a 0.49 pair: its own row


@pytest.mark.parametrize("join", ["lsh", "exact"])
def test_silent_pairs_found_by_both_joins_are_summed_once(join):
    """Nodes whose adjacency report is missing but whose feature rows the server holds, many of
    them near-duplicates: their pairs pass both the (0,0) join and the silent nodes' own join,
    and the fused sums count each once (the kept-pair count and the features say so)."""
    import scipy.sparse as sp

    g = random_graph(120, 32, seed=5, dup_rows=30)
    proto = make_protocol("hogs-arr", epsilon=8.0, feature_share=0.9, tau=0.9, steps=1, mu=0.2)
    result = collect(proto, g, seed=3)
    _, _, x = dense_inputs(result, 120, 32, None)
    x[40:60] = x[0:20]  # the silent rows: duplicates of each other and of rows 0..19
    x[60:80] = x[0:20]
    reported, observed = adjacency_reports(result.reports, 120)
    silent = np.arange(40, 80)
    observed = observed.copy()
    observed[silent] = False
    keep = np.ones(120, dtype=bool)
    keep[silent] = False
    r = (sp.diags(keep.astype(np.float64)) @ reported.tocsr()).tocsr()
    r.eliminate_zeros()
    p = flip_probability(proto.eps_adjacency)
    rows = FeatureRows(x)
    kw = dict(mu=0.2, join=join, seed=7)
    plain = reconstruct_topology(r, observed, rows, p, 0.5, **kw)
    fused = reconstruct_topology(
        r, observed, rows, p, 0.5, **kw, fuse_features=x, tau=0.9, fuse_pairs=0
    )
    both = ~observed[plain.i] & ~observed[plain.j]
    assert both.sum() >= 20  # silent pairs are kept, so both joins meet them
    _check(plain, fused, x, 0.9)


@pytest.mark.slow
@pytest.mark.parametrize("silent", [0, 150])
def test_fused_in_the_10_7_regime_over_many_key_ranges(monkeypatch, silent):
    """hogs-arr's regime at 10^7 (μ = 0.02, the (0,0) threshold ≈ 0.51, 25 LSH bands) at
    n = 3000, the bands scored over ~50 key ranges, fused from the start and after 20 000
    held pairs: the edges, stats and features of the unfused path."""

    from ldpgraph.protocols.ldp import hogs_topology

    from .test_similarity_lsh import onebit_sbm_rows, silent_reports

    n, mu, p = 3000, 0.02, flip_probability(8.0)
    bits = onebit_sbm_rows(n, 8.0)
    rows = FeatureRows(bits)
    r, observed = silent_reports(n, silent, seed=1)
    monkeypatch.setattr(hogs_topology, "LSH_SCORE_KEYS", 1000)
    kw = dict(mu=mu, join="lsh", seed=5)
    plain = reconstruct_topology(r, observed, rows, p, 0.5, **kw)
    assert plain.i.size > 20_000
    for fuse_pairs in (0, 20_000):
        fused = reconstruct_topology(
            r, observed, rows, p, 0.5, **kw, fuse_features=bits, tau=0.99, fuse_pairs=fuse_pairs
        )
        _check(plain, fused, bits, 0.99)


def test_a_pickled_scorer_leaves_the_driver_state_behind():
    """What a Ray task receives: the scorer's inputs, not the n × d rows and sums it fuses."""
    import pickle

    from ldpgraph.protocols.ldp.hogs_scorer import PairScorer

    scorer = PairScorer.__new__(PairScorer)
    scorer.__dict__.update(
        p=0.1, threshold=0.5, mu=1.0, fuse_x0=np.ones((50, 4)), fused=object.__new__(object),
        reported_parts=[1], unreported_parts=[2], silent_parts=[3],
    )  # fmt: skip
    state = pickle.loads(pickle.dumps(scorer)).__dict__
    assert state["p"] == 0.1 and state["threshold"] == 0.5
    assert all(state[k] is None for k in PairScorer._DRIVER_ONLY)
    assert scorer.fuse_x0 is not None and scorer.reported_parts == [1]  # the driver's intact
