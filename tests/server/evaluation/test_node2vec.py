"""node2vec for the attack metric: the walks are walks of the graph, the biased (p, q) step
follows the paper's transition weights, the skip-gram pairs, and the embedding is seeded."""

from __future__ import annotations

import numpy as np
import pytest

from ldpgraph.protocols.graph import canonical_edges, edges_to_csr
from ldpgraph.server.evaluation.attack import pair_cosine
from ldpgraph.server.evaluation.holdout import roc_auc
from ldpgraph.server.evaluation.node2vec import node2vec_embedding, random_walks, walk_pairs


def _graph(n: int = 60, m: int = 200, seed: int = 0):
    rng = np.random.default_rng(seed)
    return canonical_edges(rng.integers(0, n, size=(m, 2)), n), n


@pytest.mark.parametrize(("p", "q"), [(1.0, 1.0), (0.25, 4.0), (4.0, 0.25)])
def test_walks_are_walks_of_the_graph(p, q):
    edges, n = _graph()
    adj = edges_to_csr(edges, n)
    starts = np.flatnonzero(np.diff(adj.indptr) > 0)
    walks = random_walks(adj, np.repeat(starts, 3), 12, np.random.default_rng(1), p, q)
    assert walks.shape == (3 * len(starts), 13)
    np.testing.assert_array_equal(walks[:, 0], np.repeat(starts, 3))
    steps = np.stack([walks[:, :-1].ravel(), walks[:, 1:].ravel()], axis=1)
    assert adj[steps[:, 0], steps[:, 1]].all()  # every step follows an edge
    assert len(np.unique(walks)) > n // 2  # and they go places


def test_an_isolated_start_and_bad_parameters_are_refused():
    adj = edges_to_csr(np.array([[0, 1]]), 3)
    with pytest.raises(ValueError, match="isolated"):
        random_walks(adj, np.array([2]), 4, np.random.default_rng(0))
    with pytest.raises(ValueError, match="p > 0"):
        random_walks(adj, np.array([0]), 4, np.random.default_rng(0), p=0.0)


@pytest.mark.parametrize(("p", "q"), [(1.0, 1.0), (0.5, 2.0), (2.0, 0.5)])
def test_the_second_step_follows_node2vec_weights(p, q):
    """From t (whose only neighbour is v) to v, then to t (weight 1/p), to a (a neighbour of
    t: weight 1), or to b or c (not: 1/q each). 40 000 walks; each frequency within 5 binomial
    standard deviations of its probability (a uniform or a mis-weighted step fails)."""
    # t=0, v=1, a=2, b=3, c=4: edges t-v, t-a, v-a, v-b, v-c
    edges = canonical_edges(np.array([[0, 1], [0, 2], [1, 2], [1, 3], [1, 4]]), 5)
    adj = edges_to_csr(edges, 5)
    # start at t but force the first step to v: walks from t go to v or a; keep those via v
    walks = random_walks(adj, np.zeros(80_000, dtype=np.int64), 2, np.random.default_rng(7), p, q)
    second = walks[walks[:, 1] == 1, 2]
    weights = np.array([1 / p, 1.0, 1 / q, 1 / q])  # to t, a, b, c
    prob = weights / weights.sum()
    count = len(second)
    assert count > 35_000
    freq = np.array([(second == node).sum() for node in (0, 2, 3, 4)])
    sd = np.sqrt(count * prob * (1 - prob))
    assert (np.abs(freq - count * prob) < 5 * sd).all(), (freq / count, prob)


def test_walk_pairs_by_hand():
    got = walk_pairs(np.array([[0, 1, 2, 3]]), 2)
    assert sorted(map(tuple, got.tolist())) == [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3)]


def test_node2vec_is_seeded_and_finds_clusters():
    """Same seed: the same embedding (so the same AUC); another seed: another embedding. On
    two dense blocks, links within a block are told from pairs across (AUC near 1), and the
    AUC is scikit-learn's."""
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(3)
    n = 80
    block = np.arange(n) // 40
    iu, iv = np.triu_indices(n, 1)
    within = block[iu] == block[iv]
    keep = rng.random(len(iu)) < np.where(within, 0.3, 0.01)
    edges = canonical_edges(np.stack([iu[keep], iv[keep]], axis=1), n)
    a = node2vec_embedding(edges, n, seed=5)
    b = node2vec_embedding(edges, n, seed=5)
    c = node2vec_embedding(edges, n, seed=6)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    assert a.shape == (n, 128) and a.dtype == np.float32
    pos = np.stack([iu[within & ~keep], iv[within & ~keep]], axis=1)[:100]
    neg = np.stack([iu[~within & ~keep], iv[~within & ~keep]], axis=1)[:100]
    pairs, labels = np.concatenate([pos, neg]), np.r_[np.ones(100), np.zeros(100)]
    scores = pair_cosine(a, pairs)
    assert roc_auc(labels, scores) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    assert roc_auc(labels, scores) > 0.95
    assert not node2vec_embedding(np.zeros((0, 2), np.int64), 4, seed=0).any()
