"""The queries of the PGB benchmark (PGB: Benchmarking Differentially Private Synthetic Graph
Generation Algorithms, 2024) that the graph statistics lacked, recorded under
``graph_stats.pgb``:

* ``transitivity``: 3 · triangles / wedges (the global clustering coefficient);
* ``modularity_labels``: Newman's modularity Q = Σ_c [L_c / m − (D_c / 2m)²] of the true
  classes on each graph (Newman 2006, eq. 2 in its community form);
* ``modularity_detected``: Q of each graph's own Louvain communities (Blondel et al. 2008,
  networkx's ``louvain_communities``, seeded) and ``community_nmi`` / ``community_ari``: how the
  release's communities agree with the original's (normalised mutual information, adjusted
  Rand index, scikit-learn);
* ``eigenvector``: eigenvector centrality (the adjacency's leading eigenvector, L2-normalised,
  as networkx's ``eigenvector_centrality_numpy``): the mean absolute error over the nodes and
  the overlap of the top-k nodes (k = ⌈n / 100⌉);
* ``degree_wasserstein`` and ``distance_wasserstein``: the earth mover's distance between the
  two degree distributions and between the two shortest-path length distributions (over
  connected ordered pairs).

Cost stays within the graph metric's limits: distances are exact while the graph has at most
``graph_exact_limit`` nodes and come from ``graph_sample_sources`` seeded BFS sources above it;
community detection and eigenvector centrality run while both graphs have at most
``graph_exact_limit`` nodes and are None (with ``skipped`` saying why) above it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from .graph_measures import relative_error

#: BFS sources per batch of the distance distribution (bounds memory at n · 256 floats).
BATCH = 256


def modularity(adj: sp.csr_matrix, labels: np.ndarray) -> float | None:
    """Newman's modularity of the partition ``labels`` on the 0/1 symmetric ``adj``; None
    without edges."""
    degrees = np.asarray(adj.sum(axis=1)).ravel()
    two_m = float(degrees.sum())
    if two_m == 0:
        return None
    _, comm = np.unique(labels, return_inverse=True)
    coo = adj.tocoo()
    inside = float((comm[coo.row] == comm[coo.col]).sum()) / two_m  # Σ_c L_c / m
    d_c = np.bincount(comm, weights=degrees)
    return inside - float(((d_c / two_m) ** 2).sum())


def louvain(adj: sp.csr_matrix, seed: int) -> np.ndarray:
    """Each node's Louvain community (networkx, seeded); isolated nodes are their own."""
    import networkx as nx

    graph = nx.from_scipy_sparse_array(adj)
    labels = np.zeros(adj.shape[0], dtype=np.int64)
    for c, members in enumerate(nx.community.louvain_communities(graph, seed=seed)):
        labels[list(members)] = c
    return labels


def eigenvector_centrality(adj: sp.csr_matrix) -> np.ndarray:
    """The adjacency's leading eigenvector, non-negative and of unit L2 norm (zeros without
    edges)."""
    n = adj.shape[0]
    if adj.nnz == 0:
        return np.zeros(n)
    if n < 3:
        vals, vecs = np.linalg.eigh(adj.toarray().astype(np.float64))
        v = vecs[:, -1]
    else:
        from scipy.sparse.linalg import eigsh

        # a fixed start vector: the same graph gives the same bits (ARPACK starts at random)
        _, vecs = eigsh(adj.astype(np.float64), k=1, which="LA", v0=np.ones(n))
        v = vecs[:, 0]
    v = np.abs(v)
    return v / np.linalg.norm(v)


def distance_histogram(adj: sp.csr_matrix, sources: np.ndarray) -> np.ndarray:
    """Counts of the finite shortest-path lengths ≥ 1 from ``sources`` (index = length)."""
    from scipy.sparse.csgraph import shortest_path

    counts = np.zeros(1, dtype=np.int64)
    for i in range(0, len(sources), BATCH):
        dist = shortest_path(adj, directed=False, unweighted=True, indices=sources[i : i + BATCH])
        finite = dist[np.isfinite(dist) & (dist > 0)].astype(np.int64)
        add = np.bincount(finite)
        if len(add) > len(counts):
            counts = np.pad(counts, (0, len(add) - len(counts)))
        counts[: len(add)] += add
    return counts


def _wasserstein(a: np.ndarray, b: np.ndarray) -> float | None:
    """Earth mover's distance between two histograms over 0, 1, 2, …; None if one is empty."""
    from scipy.stats import wasserstein_distance

    if a.sum() == 0 or b.sum() == 0:
        return None
    return float(
        wasserstein_distance(np.arange(len(a)), np.arange(len(b)), u_weights=a, v_weights=b)
    )


def _sources(n: int, exact_limit: int, sample_sources: int, rng: np.random.Generator):
    if n <= exact_limit or sample_sources <= 0 or n <= sample_sources:
        return np.arange(n)
    return np.sort(rng.choice(n, size=sample_sources, replace=False))


def pgb_queries(
    original: sp.csr_matrix,
    release: sp.csr_matrix,
    labels: np.ndarray | None,
    *,
    exact_limit: int,
    sample_sources: int,
    seed: int,
) -> dict[str, Any]:
    """The ``graph_stats.pgb`` section: every query above, original against release."""
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    graphs = {"original": original, "release": release}
    out: dict[str, Any] = {}
    tri = {k: float(a.multiply(a @ a).sum()) / 6.0 for k, a in graphs.items()}
    deg = {k: np.diff(a.indptr).astype(np.int64) for k, a in graphs.items()}
    wedges = {k: float((d * (d - 1) / 2).sum()) for k, d in deg.items()}
    trans = {k: (3 * tri[k] / wedges[k] if wedges[k] else None) for k in graphs}
    out["transitivity"] = _pair(trans)
    if labels is not None:
        out["modularity_labels"] = _pair({k: modularity(a, labels) for k, a in graphs.items()})
    hist = {k: np.bincount(d) for k, d in deg.items()}
    out["degree_wasserstein"] = _wasserstein(hist["original"], hist["release"])
    n = original.shape[0]
    rng = np.random.default_rng([seed, 34])
    src = _sources(n, exact_limit, sample_sources, rng)
    dist = {k: distance_histogram(a, src) for k, a in graphs.items()}
    out["distance_wasserstein"] = _wasserstein(dist["original"], dist["release"])
    out["distance_sources"] = int(len(src))
    if n > exact_limit:
        out["skipped"] = f"communities and eigenvector centrality: over {exact_limit} nodes"
        return out
    parts = {k: louvain(a, seed) for k, a in graphs.items()}
    out["modularity_detected"] = _pair({k: modularity(graphs[k], p) for k, p in parts.items()})
    out["community_nmi"] = float(normalized_mutual_info_score(parts["original"], parts["release"]))
    out["community_ari"] = float(adjusted_rand_score(parts["original"], parts["release"]))
    ev = {k: eigenvector_centrality(a) for k, a in graphs.items()}
    k = max(1, math.ceil(n / 100))
    top = [set(np.argsort(-v, kind="stable")[:k].tolist()) for v in ev.values()]
    out["eigenvector"] = {
        "mae": float(np.abs(ev["original"] - ev["release"]).mean()) if n else None,
        "top_k": k,
        "top_k_overlap": len(top[0] & top[1]) / k,
    }
    return out


def _pair(values: dict[str, float | None]) -> dict[str, float | None]:
    o, r = values["original"], values["release"]
    return {"original": o, "release": r, "re": relative_error(o, r)}
