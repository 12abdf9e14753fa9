"""The hidden link set: AUC exactly as scikit-learn's roc_auc_score (ties half), a seeded,
disjoint, balanced hidden set absent from what the nodes hold, hidden once for ``lp`` and
``attack``, clear errors on graphs too small, and no hidden edge in any node's report of a real
collection."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest

from ldpgraph.protocols.graph import Graph, canonical_edges
from ldpgraph.server import evaluation
from ldpgraph.server.evaluation.holdout import (
    HeldOut,
    HoldoutError,
    hide_edges,
    pair_keys,
    roc_auc,
    sample_non_edges,
)
from ldpgraph.simulation import pipeline
from ldpgraph.simulation.config import RunConfig
from ldpgraph.simulation.datasets import synthetic_graph


def _pairwise_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """The definition: P(score of a positive > score of a negative), ties half."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    wins = sum((p > q) + 0.5 * (p == q) for p, q in product(pos, neg))
    return wins / (len(pos) * len(neg))


def test_auc_hand_values_with_ties():
    # roc_auc_score([1, 0, 1, 0], [0.9, 0.1, 0.4, 0.4]) == 0.875 (the tie counts half)
    assert roc_auc(np.array([1, 0, 1, 0]), np.array([0.9, 0.1, 0.4, 0.4])) == 0.875
    assert roc_auc(np.array([1, 1, 0, 0]), np.array([2.0, 3.0, 1.0, 0.0])) == 1.0
    assert roc_auc(np.array([1, 1, 0, 0]), np.array([0.0, 1.0, 2.0, 3.0])) == 0.0
    assert roc_auc(np.array([1, 0, 0, 1, 0]), np.zeros(5)) == 0.5  # all tied
    # positives 2, 3, 1 against negatives 1, 2: 1 + ½ + 1 + 1 + ½ + 0 = 4 of 6 pairs
    assert roc_auc(np.array([0, 0, 1, 1, 1]), np.array([1, 2, 2, 3, 1])) == pytest.approx(4 / 6)


def test_auc_equals_scikit_learns_roc_auc_score_on_fixed_scores():
    """The AUC of lp and of every attack is scikit-learn's, ties and all."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    for trial in range(30):
        labels = rng.integers(0, 2, size=200)
        labels[:2] = (0, 1)
        scores = rng.normal(size=200) if trial % 2 else rng.integers(0, 5, size=200) * 0.5
        assert roc_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)


def test_auc_matches_the_pairwise_definition_on_heavy_ties():
    rng = np.random.default_rng(0)
    for _ in range(20):
        labels = rng.integers(0, 2, size=40)
        labels[:2] = (0, 1)
        scores = rng.integers(0, 4, size=40).astype(float)  # many ties
        assert roc_auc(labels, scores) == pytest.approx(_pairwise_auc(labels, scores), abs=1e-12)


def test_auc_refuses_one_class_and_nan():
    with pytest.raises(ValueError, match="one positive and one negative"):
        roc_auc(np.ones(3), np.arange(3.0))
    with pytest.raises(ValueError, match="non-finite"):
        roc_auc(np.array([0, 1]), np.array([0.0, np.nan]))


@pytest.fixture(scope="module")
def graph() -> Graph:
    return synthetic_graph(n=300, classes=3, avg_degree=8, d=30, seed=4)


def test_hidden_set_is_seeded_disjoint_balanced_and_gone_from_the_nodes(graph):
    held_graph, held = hide_edges(graph, seed=7)
    again, same = hide_edges(graph, seed=7)
    _, other = hide_edges(graph, seed=8)
    n, m = graph.num_nodes, graph.num_edges
    assert np.array_equal(held.edges, same.edges) and np.array_equal(held.non_edges, same.non_edges)
    assert np.array_equal(held_graph.edges, again.edges)
    assert not np.array_equal(held.edges, other.edges)
    assert held.count == len(held.non_edges) == int(0.2 * m)
    original = set(pair_keys(graph.edges, n).tolist())
    hidden = set(pair_keys(held.edges, n).tolist())
    kept = set(pair_keys(held_graph.edges, n).tolist())
    non = set(pair_keys(held.non_edges, n).tolist())
    assert hidden <= original and not hidden & kept and hidden | kept == original
    assert len(non) == held.count and not non & original  # distinct true non-edges
    assert (held.non_edges[:, 0] < held.non_edges[:, 1]).all()
    # Canonical edges, features and labels unchanged; the adjacency is the reduced graph's.
    assert np.array_equal(held_graph.edges, canonical_edges(held_graph.edges, n))
    assert held_graph.x is graph.x and held_graph.y is graph.y
    graph.adjacency()  # cache the full graph's adjacency first: it must not leak through
    held_graph2, held2 = hide_edges(graph, seed=7)
    u, v = held2.edges[0]
    assert v not in held_graph2.neighbors(u) and v in graph.neighbors(u)
    pairs, labels = held.pairs()
    assert pairs.shape == (2 * held.count, 2) and labels.sum() == held.count


def test_lp_and_attack_hide_one_set(graph):
    both = evaluation.prepare(["lp", "attack"], graph, seed=3)
    assert both.held_out["lp"] is both.held_out["attack"]
    assert both.graph.num_edges == graph.num_edges - both.held_out["lp"].count
    for alone in ("lp", "attack"):
        one = evaluation.prepare([alone], graph, seed=3)
        assert np.array_equal(one.held_out[alone].edges, both.held_out["lp"].edges)
        assert np.array_equal(one.held_out[alone].non_edges, both.held_out["lp"].non_edges)
        assert np.array_equal(one.graph.edges, both.graph.edges)


def test_too_few_edges_is_a_one_line_error():
    x = np.zeros((6, 2), dtype=np.uint8)
    tiny = Graph(
        "tiny",
        canonical_edges(np.array([[0, 1], [1, 2], [2, 3], [3, 4]]), 6),
        x,
        np.zeros(6, dtype=np.int64),
    )
    for name in ("lp", "attack"):
        with pytest.raises(HoldoutError, match="at least 5 edges .*tiny has 4") as err:
            evaluation.prepare([name], tiny, seed=0)
        assert "\n" not in str(err.value)
    # K4 plus one spare node: 6 edges hide 1, and 4 non-edges remain; K5 has none left.
    k5 = canonical_edges(np.array([(i, j) for i in range(5) for j in range(i + 1, 5)]), 5)
    full = Graph("k5", k5, np.zeros((5, 1)), np.zeros(5, dtype=np.int64))
    with pytest.raises(HoldoutError, match=r"as many non-edges as hidden edges \(2\)"):
        hide_edges(full, seed=0)


def test_non_edges_of_a_dense_graph_come_from_the_listed_free_pairs():
    n = 30
    all_pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n)])
    edges = canonical_edges(all_pairs[5:], n)  # only five pairs are free
    got = sample_non_edges(edges, n, 4, np.random.default_rng(0))
    assert set(pair_keys(got, n).tolist()) < set(pair_keys(all_pairs[:5], n).tolist())
    assert len(set(pair_keys(got, n).tolist())) == 4
    with pytest.raises(HoldoutError, match="5 non-edges, fewer than the 6"):
        sample_non_edges(edges, n, 6, np.random.default_rng(0))


def _collect(protocol: str, **params) -> tuple[pipeline.Prepared, dict, HeldOut]:
    """A real local collection of a run with ``lp``: the reports every node sent."""
    cfg = RunConfig(
        dataset="synthetic:n=200,classes=3,avg_degree=8,d=20,seed=1",
        protocol=protocol,
        backend="local",
        metrics="accuracy,lp",
        **params,
    ).validate()
    prepared = pipeline.prepare(cfg)
    replay = pipeline.replay_for(cfg, prepared.graph)
    release, _ = pipeline.release(cfg, prepared.graph, replay=replay, split=prepared.split)
    held = prepared.held_out["lp"]
    return prepared, {"reports": replay.replies.reports, "release": release}, held


def _reported(reports: dict, u: int, v: int) -> bool:
    return v in set(reports[u].adjacency.tolist()) or u in set(reports[v].adjacency.tolist())


def test_no_hidden_edge_in_a_raw_upload():
    prepared, out, held = _collect("none", trust_curator=True)
    reports, release = out["reports"], out["release"]
    assert len(reports) == prepared.graph.num_nodes  # every node uploaded
    assert held.count > 0
    assert not any(_reported(reports, int(u), int(v)) for u, v in held.edges)
    # Not vacuous: each node uploaded exactly the row it holds, which lacks the hidden edges.
    for node, report in reports.items():
        assert np.array_equal(report.adjacency, prepared.graph.neighbors(node))
    assert np.array_equal(release.edges, prepared.graph.edges)
    assert prepared.original.num_edges == prepared.graph.num_edges + held.count


def test_no_hidden_edge_in_randomized_response_reports():
    # At ε = 30 a bit flips with probability e^-30: every held edge is reported, no hidden one.
    prepared, out, held = _collect("rr", epsilon=30.0)
    reports = out["reports"]
    assert not any(_reported(reports, int(u), int(v)) for u, v in held.edges)
    kept = prepared.graph.edges
    assert all(_reported(reports, int(u), int(v)) for u, v in kept)
    assert not set(pair_keys(out["release"].edges, 200).tolist()) & set(
        pair_keys(held.edges, 200).tolist()
    )
