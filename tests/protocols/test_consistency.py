"""Consistency screening of RR reports (protocols/ldp/consistency.py) and its use in HoGS."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import binom

from ldpgraph.client.budget import NodeSettings
from ldpgraph.protocols.base import CuratorView
from ldpgraph.protocols.ldp.assemble import adjacency_reports
from ldpgraph.protocols.ldp.consistency import disagreements, onebit_rates, screen, without
from ldpgraph.protocols.mechanisms import OneBit, flip_probability
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.simulation.adversary import SybilAttack, SybilCollector
from ldpgraph.simulation.backends.local import LocalCollector, collect_round, run_protocol
from ldpgraph.simulation.datasets.synthetic import synthetic_graph


def small_graph(n: int = 400, seed: int = 3):
    return synthetic_graph(n=n, classes=4, avg_degree=10, d=60, feature_density=0.2, seed=seed)


def test_honest_disagreements_follow_binomial_whatever_the_degree():
    """Σ_u D_u over a collection counts the pairs reported exactly once: Binomial(n(n−1)/2,
    2p(1−p)); and a node's D_u does not depend on its degree. A rate of p or p² fails."""
    g = small_graph(300)
    eps = 1.5
    p = flip_probability(eps)
    proto = make_protocol("hogs", epsilon=eps / 0.9, feature_share=0.1)  # ε_a = 1.5
    assert math.isclose(proto.eps_adjacency, eps)
    n = g.num_nodes
    totals, per_node = [], []
    for seed in range(20):
        result = collect_round(proto, g, 0, {}, seed)
        reported, observed = adjacency_reports(result.reports, n)
        d, m = disagreements(reported, observed)
        assert (m == n - 1).all()
        totals.append(int(d.sum()))
        per_node.append(d)
    pairs = 20 * n * (n - 1) // 2
    lo, hi = binom.interval(1 - 1e-6, pairs, 2 * p * (1 - p))
    assert lo <= sum(totals) <= hi
    for wrong in (p, p * p, 2 * p):
        wlo, whi = binom.interval(1 - 1e-6, pairs, wrong)
        assert not wlo <= sum(totals) <= whi
    # Degree does not matter: the mean D of the top and bottom degree quartiles agree.
    mean_d = np.mean(per_node, axis=0)
    order = np.argsort(g.degrees())
    q = n // 4
    low, high = mean_d[order[:q]].mean(), mean_d[order[-q:]].mean()
    sd = math.sqrt((n - 1) * p * (1 - p) / (20 * q))
    assert abs(low - high) < 6 * sd
    assert abs(mean_d.mean() - (n - 1) * p * (1 - p)) < 6 * sd


def test_onebit_rates_are_the_mechanisms_ends():
    for eps in (0.3, 1.0, 4.0):
        mech = OneBit(eps, (0.0, 1.0))
        lo, hi = onebit_rates(eps)
        np.testing.assert_allclose(mech.probability(np.array([0.0, 1.0])), [lo, hi])


def test_honest_collections_lose_no_node():
    """Seeded honest collections at several ε: the screening flags nobody."""
    g = small_graph(300)
    for eps in (2.0, 4.0, 8.0):
        proto = make_protocol("hogs", epsilon=eps, consistency_alpha=0.01)
        for seed in range(5):
            cur = CuratorView(g.num_nodes, g.num_features, g.feature_domain)
            release, _ = run_protocol(proto, g, cur, seed)
            assert release.stats["consistency"]["suspects"] == 0


def test_screen_flags_both_tails_and_extreme_features():
    """A row that claims far too much, one that never randomizes, and an all-ones feature row
    are flagged; the other rows are not."""
    rng = np.random.default_rng(0)
    n, d, p = 200, 80, 0.1
    bits = rng.random((n, n)) < p
    np.fill_diagonal(bits, False)
    bits[0] = rng.random(n) < 0.6  # claims ~120, denied ~90 % of the time
    bits[0, 0] = False
    bits[1] = False  # no noise at all: no denied claim
    x = (rng.random((n, d)) < 0.3).astype(np.uint8)
    x[2] = 1
    q = onebit_rates(math.log((1 - 0.3) / 0.3))
    found = screen(sp.csr_matrix(bits.astype(np.int8)), np.ones(n, bool), p, 0.01, x, q)
    assert found.adjacency.tolist() == [0, 1]
    assert found.features.tolist() == [2]
    assert found.suspects.tolist() == [0, 1, 2]
    r, obs, x2 = without(sp.csr_matrix(bits.astype(np.int8)), np.ones(n, bool), x, found.suspects)
    assert r[[0, 1, 2]].nnz == 0 and not obs[:3].any() and not x2[:3].any()
    assert r[3:].nnz == int(bits[3:].sum()) and (x2[3:] == x[3:]).all()


def test_screen_rejects_bad_levels():
    r = sp.csr_matrix((3, 3), dtype=np.int8)
    with pytest.raises(ValueError, match="alpha"):
        screen(r, np.ones(3, bool), 0.1, 0.0)
    with pytest.raises(ValueError, match="flip"):
        screen(r, np.ones(3, bool), 0.5, 0.1)
    with pytest.raises(ValueError, match="consistency_alpha"):
        make_protocol("hogs", epsilon=4.0, consistency_alpha=1.0)


def _honest_pairs(edges: np.ndarray, honest: np.ndarray) -> set[tuple[int, int]]:
    keep = honest[edges[:, 0]] & honest[edges[:, 1]]
    return set(map(tuple, edges[keep].tolist()))


@pytest.mark.parametrize("fanout", [None, 0])
def test_planted_clique_is_removed_and_honest_edges_kept(fanout):
    """10 % Sybils form a clique (and, with fanout None, claim every node of one class).
    Without screening the clique is released; with it every Sybil is left out, no edge
    touches a Sybil, and the edges between honest nodes are exactly those of the same honest
    reports with no attack (their posteriors rest on their own two bits and features)."""
    g = small_graph(400)
    settings = NodeSettings(budget=1e9, seed=11)
    attack = SybilAttack(0.1, fanout=fanout, seed=5)
    sybils = attack.sybils(g)
    honest = np.ones(g.num_nodes, bool)
    honest[sybils] = False
    cur = CuratorView(g.num_nodes, g.num_features, g.feature_domain)

    def release(alpha: float, attacked: bool):
        proto = make_protocol("hogs", epsilon=3.0, consistency_alpha=alpha)
        inner = LocalCollector(g, 11, settings)
        coll = SybilCollector(inner, attack, g) if attacked else inner
        return run_protocol(proto, g, cur, 11, settings=settings, collector=coll)[0]

    clean = release(0.0, attacked=False)
    poisoned = release(0.0, attacked=True)
    defended = release(0.01, attacked=True)
    sybil_pairs = ~honest[poisoned.edges[:, 0]] & ~honest[poisoned.edges[:, 1]]
    assert sybil_pairs.sum() > 0.5 * sybils.size * (sybils.size - 1) / 2  # the clique got in
    stats = defended.stats["consistency"]
    assert sorted(stats["suspect_ids"]) == sybils.tolist()
    touches = ~honest[defended.edges[:, 0]] | ~honest[defended.edges[:, 1]]
    assert not touches.any()
    assert _honest_pairs(defended.edges, honest) == _honest_pairs(clean.edges, honest)


def test_stealth_sybils_pass_the_screening():
    """The limit stated in the docs: Sybils that keep their claims at the RR noise level and
    their feature count inside the 1-bit range are not flagged."""
    g = small_graph(400)
    settings = NodeSettings(budget=1e9, seed=2)
    attack = SybilAttack(0.05, mode="stealth", seed=1)
    proto = make_protocol("hogs", epsilon=3.0, consistency_alpha=0.01)
    coll = SybilCollector(LocalCollector(g, 2, settings), attack, g)
    cur = CuratorView(g.num_nodes, g.num_features, g.feature_domain)
    release, _ = run_protocol(proto, g, cur, 2, settings=settings, collector=coll)
    assert coll.plan is not None and coll.plan.fanout > 0
    assert release.stats["consistency"]["suspects"] == 0


def test_hogs_edge_screens_adjacency_only():
    g = small_graph(300)
    proto = make_protocol("hogs-edge", epsilon=3.0, consistency_alpha=0.01)
    settings = NodeSettings(budget=1e9, seed=4)
    attack = SybilAttack(0.05, seed=2)
    coll = SybilCollector(LocalCollector(g, 4, settings), attack, g)
    cur = CuratorView(g.num_nodes, g.num_features, g.feature_domain, g.x)
    release, _ = run_protocol(proto, g, cur, 4, settings=settings, collector=coll)
    stats = release.stats["consistency"]
    assert stats["feature_suspects"] == 0
    assert sorted(stats["suspect_ids"]) == attack.sybils(g).tolist()
    np.testing.assert_array_equal(release.x, g.x)  # public features untouched
