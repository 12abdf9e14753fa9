"""The LSH similarity join: its bands meet the recall they are sized for, it finds only pairs
the exact join finds (and ≥ 95 % of them on 1-bit SBM features), over-full buckets are capped,
``auto`` keeps the exact join where it is cheap, and HoGS's edges with ``join=lsh`` recover the
exact join's."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols.base import CuratorView
from ldpgraph.protocols.ldp import similarity_lsh
from ldpgraph.protocols.ldp.similarity import FeatureRows
from ldpgraph.protocols.ldp.similarity_lsh import (
    LSH_BUCKET,
    LSH_RING,
    bucket_pairs,
    candidate_probability,
    choose_join,
    lsh_join,
    plan_bands,
)
from ldpgraph.protocols.registry import ProtocolParameterError, make_protocol

from .test_hogs import collect


def silent_reports(n: int, silent: int, seed: int):
    """Random 0/1 reports (density 5·10^-3, no self pair) and the observed mask, the first
    ``silent`` nodes sending nothing (empty rows, marked unobserved)."""
    import scipy.sparse as sp

    observed = np.ones(n, dtype=bool)
    observed[:silent] = False
    r = sp.random(n, n, density=5e-3, random_state=seed, format="csr")
    r.setdiag(0)
    r = sp.csr_matrix(sp.diags(observed.astype(float)) @ r)
    r.eliminate_zeros()
    r.data[:] = 1
    return r, observed


def onebit_sbm_rows(n: int, eps_f: float, seed: int = 0, d: int = 64) -> np.ndarray:
    """1-bit-perturbed features of the synthetic SBM (5 classes, ~3 ones in 64 columns,
    70 % of them in the class's block of columns), as the curator receives them."""
    from ldpgraph.simulation.datasets.synthetic import synthetic_graph

    g = synthetic_graph(n=n, classes=5, avg_degree=10, d=d, feature_density=0.05, seed=seed)
    e = math.exp(eps_f)
    prob = 1.0 / (e + 1.0) + np.asarray(g.x) * ((e - 1.0) / (e + 1.0))
    return (np.random.default_rng(seed + 1).random(prob.shape) < prob).astype(np.uint8)


def keys(i: np.ndarray, j: np.ndarray, n: int) -> set[int]:
    return set((i * n + j).tolist())


@pytest.mark.parametrize("t", [0.3, 0.5, 0.51, 0.6, 0.8, 0.9, 0.99])
def test_bands_meet_the_recall_they_are_sized_for(t):
    r, b = plan_bands(t, 0.95)
    assert 1 <= b <= similarity_lsh.LSH_MAX_BANDS
    jac = t / (2 - t)
    assert candidate_probability(jac, r, b) >= 0.95
    # r is the sharpest that fits (up to 16): one more MinHash per band needs more bands.
    hit = jac ** (r + 1)
    assert r == 16 or math.log(0.05) / math.log1p(-hit) > similarity_lsh.LSH_MAX_BANDS


def test_plan_refuses_recall_outside_0_1():
    with pytest.raises(ValueError, match="recall"):
        plan_bands(0.5, 1.0)


@pytest.mark.parametrize("eps_f,t", [(4.0, 0.8), (8.0, 0.8), (8.0, 0.6)])
def test_lsh_finds_only_exact_pairs_and_95_percent_of_them(eps_f, t):
    """The regime of hogs-arr's (0,0) join with μ < 1 (t from τ = 0.5 at μ ≈ 0.5 and below)."""
    x = onebit_sbm_rows(3000, eps_f)
    rows = FeatureRows(x)
    exact = keys(*rows.threshold_join(t), 3000)
    found = keys(*lsh_join(rows, t, seed=3), 3000)
    assert len(exact) > 500
    assert found <= exact
    assert len(found) / len(exact) >= 0.95


def test_identical_rows_regime_is_exact():
    """Above sqrt(c/(c+1)) only identical rows pass: one band keyed by the whole row."""
    x = onebit_sbm_rows(3000, 8.0)
    rows = FeatureRows(x)
    t = 0.9999
    assert rows._only_identical_can_pass(t)
    assert keys(*lsh_join(rows, t), 3000) == keys(*rows.threshold_join(t), 3000)


def test_lsh_join_is_deterministic_in_its_seed():
    rows = FeatureRows(onebit_sbm_rows(1500, 4.0))
    a = lsh_join(rows, 0.7, seed=1)
    b = lsh_join(rows, 0.7, seed=1)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(u, v)


def test_over_full_buckets_give_each_row_a_ring_of_partners():
    """2 000 rows in one bucket with a budget of 100 pairs: each row pairs with its next
    LSH_RING rows (random order), not with all 1 999 others; small buckets give every pair."""
    rows = np.arange(2010, dtype=np.int64)
    groups = np.concatenate([np.zeros(2000, np.int64), np.repeat([1, 2], 5)])
    i, j = bucket_pairs(rows, groups, np.random.default_rng(0), pair_budget=100)
    assert np.all(i < j)
    big = j < 2000
    assert big.sum() == LSH_RING * 2000 - LSH_RING * (LSH_RING + 1) // 2
    assert (~big).sum() == 2 * 10  # two buckets of 5: 10 pairs each
    degree = np.bincount(np.concatenate([i[big], j[big]]), minlength=2000)
    assert degree.max() <= 2 * LSH_RING
    # Within the budget, a large bucket gives every pair.
    i, j = bucket_pairs(rows, groups, np.random.default_rng(0), pair_budget=3e6)
    assert (j < 2000).sum() == 2000 * 1999 // 2


def test_auto_joins_exactly_where_it_is_cheap(monkeypatch):
    rows = FeatureRows(onebit_sbm_rows(2000, 4.0))
    assert choose_join(rows, 0.51) == "exact"
    assert choose_join(rows, 0.9999) == "exact"
    assert choose_join(rows, 0.51, "lsh") == "lsh"
    monkeypatch.setattr(similarity_lsh, "EXACT_PAIRS_BUDGET", 0)
    assert choose_join(rows, 0.9999) == "lsh"
    with pytest.raises(ValueError, match="join must be one of"):
        choose_join(rows, 0.5, "fast")
    # Real-valued rows have no sets to hash: always exact.
    assert choose_join(FeatureRows(np.random.default_rng(0).random((50, 4))), 0.5, "lsh") == (
        "exact"
    )


def test_join_param_is_declared_and_checked():
    assert make_protocol("hogs-arr", epsilon=8.0, join="lsh").join == "lsh"
    assert make_protocol("hogs", epsilon=8.0).join == "auto"
    with pytest.raises(ProtocolParameterError):
        make_protocol("hogs", epsilon=8.0, join="fast")
    # auto is left out of the config (round message, stored releases) as before the knob.
    assert "join" not in make_protocol("hogs", epsilon=8.0).config()


@pytest.mark.parametrize("eps", [8.0, 16.0])
def test_hogs_arr_edges_with_lsh_recover_the_exact_joins(eps):
    """hogs-arr on an SBM (feature share 0.5, as benchmarks/bench_scale.py runs it) with
    μ = 0.2 (the (0,0) threshold falls to ~0.6 at τ = 0.5): the release with join=lsh keeps
    ≥ 95 % of join=exact's edges and adds none, and ≥ 90 % of those the join alone found."""
    from ldpgraph.protocols.graph import Graph
    from ldpgraph.simulation.datasets.synthetic import synthetic_graph

    n = 1500
    g0 = synthetic_graph(n=n, classes=5, avg_degree=10, d=64, feature_density=0.05, seed=2)
    g = Graph("sbm", g0.edges, np.asarray(g0.x), g0.y)
    releases = {}
    for join in ("exact", "lsh"):
        proto = make_protocol(
            "hogs-arr", epsilon=eps, feature_share=0.5, mu=0.2, report_cap=0.0, join=join
        )
        result = collect(proto, g, seed=1)
        releases[join] = proto.server_step(0, result, CuratorView(n, 64), seed=1)
    exact = keys(*releases["exact"].edges.T, n)
    approx = keys(*releases["lsh"].edges.T, n)
    assert releases["lsh"].stats.get("join") == "lsh"
    assert releases["exact"].stats["joined_pairs"] > 500
    assert approx <= exact
    assert len(approx) / len(exact) >= 0.95
    missed = exact - approx
    joined = releases["exact"].stats["joined_pairs"]
    assert len(missed) <= 0.1 * joined  # the join's own pairs: ≥ 90 % found


def test_hogs_release_with_lsh_equals_exact_where_only_identical_rows_pass():
    """HoGS at μ = 1: the (0,0) threshold is within 10^-3 of 1, only identical noisy rows
    pass, and the LSH join (one band keyed by the row) gives the exact release, byte for byte."""
    from .test_hogs import random_graph

    g = random_graph(120, 16, seed=4, dup_rows=10)
    out = []
    for join in ("exact", "lsh"):
        proto = make_protocol("hogs", epsilon=8.0, feature_share=0.5, join=join)
        result = collect(proto, g, seed=2)
        out.append(proto.server_step(0, result, CuratorView(120, 16), seed=2))
    assert out[0].stats["joined_pairs"] > 0
    assert out[0].fingerprint() == out[1].fingerprint()


def _unstreamed_topology(reported, observed, rows, p, threshold, mu, seed):
    """HoGS's kept pairs the way the LSH path computed them before it streamed: every reported
    pair scored, then lsh_join's pairs (all bands at once) and the silent nodes' join scored as
    one list each, and np.unique over all of it."""
    from ldpgraph.protocols.ldp.hogs_topology import _join_threshold
    from ldpgraph.protocols.ldp.posterior import posterior
    from ldpgraph.protocols.ldp.reported_pairs import ReportedPairs

    pairs = ReportedPairs(reported)
    n = pairs.n
    parts = []
    for blk in pairs.blocks():
        nobs = observed[blk.i].astype(np.int64) + observed[blk.j]
        ones = blk.ones.astype(np.int64)
        prob = posterior(rows.cosine(blk.i, blk.j), ones, nobs - ones, p, mu)
        keep = prob >= threshold
        parts.append((blk.i[keep], blk.j[keep], prob[keep]))
    n_obs = int(observed.sum())
    cands = [lsh_join(rows, _join_threshold(n_obs, n - n_obs, threshold, p, mu), seed)]
    missing = np.flatnonzero(~observed)
    if missing.size >= 2:
        bits = np.unpackbits(rows.words[missing].view(np.uint8), axis=1)[:, : rows.dim]
        mi, mj = FeatureRows(bits).threshold_join(threshold)
        cands.append((missing[mi], missing[mj]))
    for ci, cj in cands:
        fresh = ~pairs.has(ci, cj)
        ci, cj = ci[fresh], cj[fresh]
        zeros = observed[ci].astype(np.int64) + observed[cj]
        prob = posterior(rows.cosine(ci, cj), np.zeros_like(zeros), zeros, p, mu)
        keep = prob >= threshold
        parts.append((ci[keep], cj[keep], prob[keep]))
    i, j, pr = (np.concatenate([part[k] for part in parts]) for k in range(3))
    key, first = np.unique(i * n + j, return_index=True)
    return key // n, key % n, pr[first], sum(c[0].size for c in cands)


@pytest.mark.parametrize("silent", [0, 150])
def test_streamed_lsh_scoring_equals_the_unstreamed_path(monkeypatch, silent):
    """hogs-arr's regime at 10^7 (μ = 0.02: the (0,0) threshold ≈ 0.51, 25 bands) at n = 3000:
    the bands scored key range by key range (many small ranges here) keep exactly the pairs,
    posteriors and joined-pair count of the whole join scored at once."""

    from ldpgraph.protocols.ldp import hogs_topology
    from ldpgraph.protocols.ldp.hogs import reconstruct_topology
    from ldpgraph.protocols.mechanisms import flip_probability

    n, mu, p = 3000, 0.02, flip_probability(8.0)
    rows = FeatureRows(onebit_sbm_rows(n, 8.0))
    r, observed = silent_reports(n, silent, seed=1)
    want_i, want_j, want_p, want_joined = _unstreamed_topology(r, observed, rows, p, 0.5, mu, 5)
    monkeypatch.setattr(hogs_topology, "LSH_SCORE_KEYS", 1000)  # ~50 ranges
    topo = reconstruct_topology(r, observed, rows, p, 0.5, mu=mu, join="lsh", seed=5)
    assert topo.stats["join"] == "lsh" and want_joined > 10_000
    np.testing.assert_array_equal(topo.i, want_i)
    np.testing.assert_array_equal(topo.j, want_j)
    np.testing.assert_array_equal(topo.prob, want_p)
    assert topo.stats["joined_pairs"] == want_joined
    assert topo.stats["kept_pairs"] == want_i.size


def test_bucket_pairs_in_int32_equal_int64():
    """int32 rows (n < 2^31) give the same candidate pairs as int64 rows, and bucket sizes
    above 46,341 (whose pair counts overflow int32) are counted in int64."""
    # A bucket of 50,000 rows holds 1.25·10^9 pairs: int32 arithmetic would wrap negative and
    # let it through as a "full" bucket.
    assert similarity_lsh.full_bucket_size(np.array([50_000], np.int32), 1e6) == LSH_BUCKET
    rng = np.random.default_rng(0)
    groups = np.concatenate([np.zeros(5_000, np.int64), rng.integers(1, 5000, 20_000)])
    rows = rng.permutation(25_000)
    a = bucket_pairs(rows.astype(np.int64), groups, np.random.default_rng(1), pair_budget=1e6)
    b = bucket_pairs(rows.astype(np.int32), groups, np.random.default_rng(1), pair_budget=1e6)
    assert b[0].dtype == np.int32 and a[0].size > 20_000
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


@pytest.mark.parametrize("ring", [0, 1, 3])
def test_ring_bounds_each_rows_partners_in_over_full_buckets(ring):
    """``lsh_ring`` rows per row in an over-full bucket (each row has at most 2·ring partners
    there; 0: none), while buckets within the budget still give every pair."""
    rows = np.arange(2010, dtype=np.int64)
    groups = np.concatenate([np.zeros(2000, np.int64), np.repeat([1, 2], 5)])
    i, j = bucket_pairs(rows, groups, np.random.default_rng(0), pair_budget=100, ring=ring)
    big = j < 2000
    assert big.sum() == ring * 2000 - ring * (ring + 1) // 2
    assert (~big).sum() == 2 * 10
    degree = np.bincount(np.concatenate([i[big], j[big]]), minlength=2000)
    assert degree.max() <= 2 * ring


def test_ring_param_is_declared_checked_and_left_out_at_its_default():
    """The ring is a declared, server-side knob of the three HoGS variants; at its default it
    is not in the config (round message, stored identities as before the knob)."""
    from ldpgraph.protocols.ldp.similarity_lsh import RING

    assert RING.default == LSH_RING and RING.server_side
    for name in ("hogs", "hogs-edge", "hogs-arr"):
        assert "lsh_ring" not in make_protocol(name, epsilon=8.0).config()
    proto = make_protocol("hogs-arr", epsilon=8.0, lsh_ring=0)
    assert proto.ring == 0 and proto.config()["lsh_ring"] == 0
    with pytest.raises(ProtocolParameterError):
        make_protocol("hogs", epsilon=8.0, lsh_ring=-1)
    with pytest.raises(ValueError, match="lsh_ring must be >= 0"):
        lsh_join(FeatureRows(onebit_sbm_rows(500, 4.0)), 0.6, ring=-1)


def test_smaller_ring_keeps_a_subset_of_the_joins_pairs(monkeypatch):
    """At scale (a budget that over-fills the buckets) a ring of 0 or 1 keeps a subset of the
    ring-2 join's verified pairs (the same bands and bucket orders, fewer offsets), and fewer
    pairs per row."""
    monkeypatch.setattr(similarity_lsh, "LSH_PAIR_BUDGET", 2000)
    monkeypatch.setattr(similarity_lsh, "LSH_PAIRS_PER_ROW", 0)
    rows = FeatureRows(onebit_sbm_rows(3000, 8.0))
    keys = {}
    for ring in (0, 1, 2):
        i, j = lsh_join(rows, 0.51, seed=3, ring=ring)
        keys[ring] = set((i * 3000 + j).tolist())
    assert keys[0] < keys[1] < keys[2]
    assert len(keys[0]) <= 2000 + 3000 * 25  # the budget, and buckets of at most 3 rows
