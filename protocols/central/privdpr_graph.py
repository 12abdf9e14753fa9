"""PrivDPR's graph from its transition samples (Zhang et al., KDD 2025, App. A): the count
matrix S, its symmetrisation S†, the edge budget, and the two-stage assembly (one edge per
node, then edges without replacement ∝ s†_ij); and the consenting nodes' adjacency it trains
on. Tags: [P] the paper, [C] the authors' code."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..graph import canonical_edges


def transition_counts(samples: np.ndarray, n: int) -> sp.csr_matrix:
    """S: S[i, j] = how often row i drew j, from ``samples`` [T, N] (row t: each node's draw
    at step t); every row sums to T."""
    steps = samples.shape[0]
    keys = np.arange(n, dtype=np.int64)[None, :] * n + samples.astype(np.int64)
    uniq, counts = np.unique(keys.ravel(), return_counts=True)
    s = sp.csr_matrix((counts.astype(np.float64), (uniq // n, uniq % n)), shape=(n, n))
    assert steps == 0 or np.all(np.asarray(s.sum(axis=1)).ravel() == steps)
    return s


def symmetrised_scores(s: sp.csr_matrix, how: str) -> sp.csr_matrix:
    """S† = max(S, Sᵀ) [P] or S + Sᵀ [C], with a zero diagonal."""
    sym = (s.maximum(s.T) if how == "max" else s + s.T).tocoo()
    off = sym.row != sym.col
    out = sp.csr_matrix((sym.data[off], (sym.row[off], sym.col[off])), shape=s.shape)
    out.eliminate_zeros()
    out.sort_indices()
    return out


def edge_budget(scores: sp.csr_matrix, divisor: float) -> int:
    """round(#{i<j : s†_ij > 0}/divisor): the official code's sigmoid-0.5 rule (sigmoid(s) >
    0.5 ⟺ s > 0 for counts) over its hard-coded 250 [C]."""
    return int(round(sp.triu(scores, k=1).nnz / divisor))


def weighted_without_replacement(
    weights: np.ndarray, k: int, rng: np.random.Generator
) -> np.ndarray:
    """``min(k, len)`` indices drawn without replacement, each draw ∝ the weights left (all
    positive): the top k of log w + Gumbel noise (Efraimidis–Spirakis), in one pass."""
    if k >= weights.size:
        return np.arange(weights.size)
    gumbel = -np.log(-np.log(np.clip(rng.random(weights.size), 1e-300, None)))
    return np.argpartition(-(np.log(weights) + gumbel), k - 1)[:k]


def assemble(
    scores: sp.csr_matrix, budget: int, rng: np.random.Generator, first_stage: str = "paper"
) -> tuple[np.ndarray, int]:
    """The synthetic graph from symmetric scores with a zero diagonal (App. A): one edge per
    node in id order (``paper``: a non-neighbour j ∝ s_ij, none if it has no such j;
    ``code``: j ∝ s_ij over the row, nothing new on a repeat), then edges without replacement
    ∝ s_ij (Gumbel top-k: the law of successive draws) until ``budget`` edges, or all pairs
    with a positive score. Returns canonical edges and the first stage's edge count."""
    n = scores.shape[0]
    indptr, indices, data = scores.indptr, scores.indices, scores.data
    nbrs: list[set[int]] = [set() for _ in range(n)]
    for i in range(n):
        cols, w = indices[indptr[i] : indptr[i + 1]], data[indptr[i] : indptr[i + 1]]
        if first_stage == "paper" and nbrs[i]:
            keep = ~np.isin(cols, np.fromiter(nbrs[i], dtype=np.int64, count=len(nbrs[i])))
            cols, w = cols[keep], w[keep]
        if cols.size == 0:
            continue
        cum = np.cumsum(w)
        j = int(cols[min(int(np.searchsorted(cum, rng.random() * cum[-1], side="right")),
                         cols.size - 1)])  # fmt: skip
        nbrs[i].add(j)
        nbrs[j].add(i)
    first = [(i, j) for i in range(n) for j in nbrs[i] if i < j]
    edges = np.asarray(first, dtype=np.int64).reshape(-1, 2)
    extra = budget - edges.shape[0]
    if extra > 0:
        upper = sp.triu(scores, k=1).tocoo()
        taken = set((edges[:, 0] * n + edges[:, 1]).tolist())
        key = upper.row.astype(np.int64) * n + upper.col
        free = ~np.isin(key, np.fromiter(taken, dtype=np.int64, count=len(taken)))
        key, w = key[free], upper.data[free]
        key = key[weighted_without_replacement(w, extra, rng)]
        edges = np.concatenate([edges, np.stack([key // n, key % n], axis=1)])
    return canonical_edges(edges, n), len(first)


def consenting_adjacency(edges: np.ndarray, uploaded: np.ndarray, n: int) -> sp.csr_matrix:
    """The symmetric 0/1 adjacency of the subgraph induced by the nodes that uploaded (a
    refusing node's links, though its neighbours reported them, are not used)."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    edges = edges[uploaded[edges[:, 0]] & uploaded[edges[:, 1]]]
    edges = canonical_edges(edges, n)
    rows = np.concatenate([edges[:, 0], edges[:, 1]])
    cols = np.concatenate([edges[:, 1], edges[:, 0]])
    adj = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    adj.sort_indices()
    return adj
