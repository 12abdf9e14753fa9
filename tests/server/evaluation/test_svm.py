"""The SVM attack: the fitted SVM is scikit-learn's LinearSVC (default C, squared hinge,
penalised intercept) on standardised Hadamard pairs, and its training pairs come from the
release, never from the targets."""

from __future__ import annotations

import numpy as np

from ldpgraph.protocols.graph import canonical_edges
from ldpgraph.protocols.rng import stage_rng
from ldpgraph.server.evaluation.holdout import pair_keys, release_training_pairs
from ldpgraph.server.evaluation.svm import MAX_PAIRS, hadamard, svm_scores


def test_the_scores_are_linearsvc_decision_values_on_standardised_hadamard_pairs():
    """The attack's scores are those of scikit-learn's LinearSVC at its defaults (C = 1,
    squared hinge, primal), fitted by the test on the same release pairs, standardised the
    same way: the features, the labels' orientation and the scaling are wired as stated."""
    from sklearn.svm import LinearSVC

    rng = np.random.default_rng(0)
    n = 80
    edges = canonical_edges(rng.integers(0, n, size=(400, 2)), n)
    z = rng.standard_normal((n, 6))
    targets = np.array([[0, 1], [2, 3], [4, 70], [10, 11]])
    scores = svm_scores(z, edges, targets, targets, seed=3, stage="t")
    train, labels = release_training_pairs(edges, n, targets, MAX_PAIRS, stage_rng(3, "t"))
    h = hadamard(z, train)
    mean, std = h.mean(axis=0), h.std(axis=0)
    ref = LinearSVC(C=1.0, dual=False).fit((h - mean) / std, labels)
    expected = ref.decision_function((hadamard(z, targets) - mean) / std)
    np.testing.assert_allclose(scores, expected, rtol=1e-9, atol=1e-9)
    # Positives are label 1: the edges the SVM trained on score above its non-edges.
    assert svm_scores(z, edges, train, targets, 3, "t")[labels == 1].mean() > 0


def test_training_pairs_come_from_the_release_and_never_from_the_targets():
    rng = np.random.default_rng(1)
    n = 50
    edges = canonical_edges(rng.integers(0, n, size=(300, 2)), n)
    targets = np.concatenate([edges[:40], [[0, 1], [2, 3], [5, 4]]])  # some release edges
    pairs, labels = release_training_pairs(edges, n, targets, 10_000, np.random.default_rng(2))
    keys, edge_keys, target_keys = pair_keys(pairs, n), pair_keys(edges, n), pair_keys(targets, n)
    others = np.isin(edge_keys, target_keys, invert=True).sum()
    assert labels.sum() == len(labels) // 2 == others >= len(edges) - 43  # every other edge
    assert not np.isin(keys, target_keys).any()
    assert np.isin(keys[labels == 1], edge_keys).all()
    assert not np.isin(keys[labels == 0], edge_keys).any()
    assert len(np.unique(keys)) == len(keys) and (pairs[:, 0] != pairs[:, 1]).all()
    again, _ = release_training_pairs(edges, n, targets, 10_000, np.random.default_rng(2))
    np.testing.assert_array_equal(pairs, again)
    few, few_labels = release_training_pairs(edges, n, targets, 25, np.random.default_rng(2))
    assert len(few) == 50 and few_labels.sum() == 25
    none, _ = release_training_pairs(edges[:5], n, edges[:5], 10, np.random.default_rng(2))
    assert len(none) == 0


def test_svm_scores_rank_the_release_links():
    """On two dense blocks with a plain block-indicator embedding, the SVM on the Hadamard
    product ranks within-block pairs over across-block ones; no edges: all zeros."""
    rng = np.random.default_rng(4)
    n = 60
    block = np.arange(n) // 30
    iu, iv = np.triu_indices(n, 1)
    within = block[iu] == block[iv]
    keep = rng.random(len(iu)) < np.where(within, 0.3, 0.02)
    edges = canonical_edges(np.stack([iu[keep], iv[keep]], axis=1), n)
    z = np.eye(2)[block] * 2 - 1 + 0.1 * rng.standard_normal((n, 2))
    targets = np.array([[0, 1], [0, 59]])
    scores = svm_scores(z, edges, targets, targets, seed=0, stage="t")
    assert scores[0] > scores[1]
    assert not svm_scores(z, edges[:0], targets, targets, 0, "t").any()
