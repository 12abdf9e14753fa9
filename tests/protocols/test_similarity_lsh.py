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
    LSH_RING,
    bucket_pairs,
    candidate_probability,
    choose_join,
    lsh_join,
    plan_bands,
)
from ldpgraph.protocols.registry import ProtocolParameterError, make_protocol

from .test_hogs import collect


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
