"""PGB's queries against networkx on small graphs: modularity, transitivity, eigenvector
centrality and the distance distribution match networkx's; an identical release scores zero
error and full community agreement; a perturbed one does not; the graph metric records them."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from ldpgraph.protocols.graph import canonical_edges, edges_to_csr
from ldpgraph.server.evaluation import pgb
from ldpgraph.server.evaluation.graph import compare  # noqa: F401  (the module wires pgb in)


def _graph(seed: int = 0, n: int = 60) -> nx.Graph:
    return nx.planted_partition_graph(4, n // 4, 0.4, 0.03, seed=seed)


def _csr(g: nx.Graph):
    n = g.number_of_nodes()
    return edges_to_csr(canonical_edges(np.array(list(g.edges()), dtype=np.int64), n), n)


def test_measures_match_networkx():
    g = _graph()
    adj = _csr(g)
    labels = np.array([v // 15 for v in range(60)])
    parts = [set(np.flatnonzero(labels == c).tolist()) for c in range(4)]
    assert pgb.modularity(adj, labels) == pytest.approx(nx.community.modularity(g, parts))
    ev = nx.eigenvector_centrality_numpy(g)
    assert np.allclose(pgb.eigenvector_centrality(adj), [ev[v] for v in range(60)], atol=1e-6)
    lengths = [d for s, row in nx.all_pairs_shortest_path_length(g) for t, d in row.items() if d]
    hist = pgb.distance_histogram(adj, np.arange(60))
    assert np.array_equal(hist, np.bincount(lengths))
    out = pgb.pgb_queries(adj, adj, labels, exact_limit=100, sample_sources=10, seed=0)
    assert out["transitivity"]["original"] == pytest.approx(nx.transitivity(g))


def test_identical_release_agrees_and_a_perturbed_one_does_not():
    g = _graph()
    adj, labels = _csr(g), np.array([v // 15 for v in range(60)])
    same = pgb.pgb_queries(adj, adj, labels, exact_limit=100, sample_sources=10, seed=0)
    assert same["community_nmi"] == pytest.approx(1.0) and same["community_ari"] == 1.0
    assert same["degree_wasserstein"] == same["distance_wasserstein"] == 0.0
    assert same["eigenvector"]["mae"] == 0.0 and same["eigenvector"]["top_k_overlap"] == 1.0
    assert same["transitivity"]["re"] == same["modularity_labels"]["re"] == 0.0
    noisy = _csr(nx.gnm_random_graph(60, g.number_of_edges(), seed=3))
    diff = pgb.pgb_queries(adj, noisy, labels, exact_limit=100, sample_sources=10, seed=0)
    assert diff["community_ari"] < 0.3 and diff["modularity_labels"]["re"] > 0.5, diff
    assert diff["eigenvector"]["mae"] > 0.01 and diff["distance_wasserstein"] > 0.1, diff


def test_above_the_exact_limit_distances_are_sampled_and_communities_skipped():
    adj = _csr(_graph())
    out = pgb.pgb_queries(adj, adj, None, exact_limit=20, sample_sources=10, seed=0)
    assert out["distance_sources"] == 10 and "skipped" in out
    assert "community_nmi" not in out and "modularity_labels" not in out
