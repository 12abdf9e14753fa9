"""SEAL-lite: DRNL labels and the 2-hop enclosing subgraph by hand (the target link left out),
the per-hop cap and the training budget, and a seeded model that tells planted links."""

from __future__ import annotations

import numpy as np

from ldpgraph.protocols.graph import canonical_edges, edges_to_csr
from ldpgraph.server.evaluation import seal
from ldpgraph.server.evaluation.holdout import roc_auc


def _subgraph(subs: seal.Subgraphs, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    start = int(subs.sizes[:i].sum())
    labels = subs.labels[start : start + subs.sizes[i]]
    return labels, subs.rows[i], subs.cols[i]


def test_drnl_and_the_enclosing_subgraph_by_hand():
    # target (0, 1), linked; 2 next to both; 3 next to 0 and to 5, 5 next to 1; 6 next to 0
    # only; 7 next to 2 only; 8 three hops away (next to 7).
    edges = canonical_edges(
        np.array([[0, 1], [0, 2], [1, 2], [0, 3], [3, 5], [5, 1], [0, 6], [2, 7], [7, 8]]), 9
    )
    subs = seal.enclosing_subgraphs(edges_to_csr(edges, 9), np.array([[0, 1]]), None)
    labels, rows, cols = _subgraph(subs, 0)
    # order: 0, 1, then hop 1 {2, 3, 5, 6}, then hop 2 {7}; 8 is out
    assert subs.sizes.tolist() == [7]
    # 2: dx = dy = 1 -> 2; 3: (1, 2) -> 3; 5: (2, 1) -> 3; 6: y unreachable without x -> 0;
    # 7: (2, 2) -> 1 + 2 + 2 * 1 = 5
    assert labels.tolist() == [1, 1, 2, 3, 3, 0, 5]
    entries = set(zip(rows.tolist(), cols.tolist(), strict=True))
    assert (0, 1) not in entries and (1, 0) not in entries  # the target link is left out
    assert {(i, i) for i in range(7)} <= entries  # self-loops
    assert len(entries) == 7 + 2 * 7  # 8 edges among the 7 nodes, less the target link
    # DRNL's formula on distances: (1, 3) -> 1 + 1 + 2 * 1 = 4, (3, 3) -> 1 + 3 + 3 * 2 = 10
    got = seal.drnl(np.array([0, np.inf, 1, 3, np.inf]), np.array([np.inf, 0, 3, 3, 1]))
    assert got.tolist() == [1, 1, 4, 10, 0]


def test_hops_are_capped_and_the_budget_stops_extraction():
    # a hub 0 with 300 leaves, the leaves of 1 another 300
    n = 602
    edges = canonical_edges(
        np.array([[0, i] for i in range(2, 302)] + [[1, i] for i in range(302, 602)]), n
    )
    adj = edges_to_csr(edges, n)
    subs = seal.enclosing_subgraphs(adj, np.array([[0, 1], [2, 3]]), np.random.default_rng(0))
    assert subs.sizes[0] == 2 + seal.MAX_NODES_PER_HOP  # hop 1 capped, no hop 2
    assert subs.sizes[1] == 2 + 1 + seal.MAX_NODES_PER_HOP  # 0, then 100 of 0's leaves
    first = len(subs.rows[0])
    cut = seal.enclosing_subgraphs(adj, np.array([[0, 1], [2, 3]]), np.random.default_rng(0), 1)
    assert len(cut.sizes) == 1 and len(cut.rows[0]) == first


def test_seal_tells_planted_links_and_is_seeded():
    rng = np.random.default_rng(2)
    n = 120
    block = np.arange(n) // 30
    iu, iv = np.triu_indices(n, 1)
    within = block[iu] == block[iv]
    keep = rng.random(len(iu)) < np.where(within, 0.3, 0.005)
    edges = canonical_edges(np.stack([iu[keep], iv[keep]], axis=1), n)
    # targets: 60 of the edges (kept in the release: their own link is left out of their
    # subgraph, so the model cannot read it) and 60 across-block non-links
    pos = edges[rng.choice(len(edges), 60, replace=False)]
    non = np.stack([iu[~within & ~keep], iv[~within & ~keep]], axis=1)
    neg = non[rng.choice(len(non), 60, replace=False)]
    pairs, labels = np.concatenate([pos, neg]), np.r_[np.ones(60), np.zeros(60)]
    a = seal.SealAttack(edges, n, pairs, seed=3).scores(pairs)
    b = seal.SealAttack(edges, n, pairs, seed=3).scores(pairs)
    np.testing.assert_array_equal(a, b)
    assert roc_auc(labels, a) > 0.9
    empty = seal.SealAttack(edges[:0], n, pairs, seed=3)
    assert empty.model is None and not empty.scores(pairs).any()
