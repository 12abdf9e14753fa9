"""The in-memory graph every part of ldpgraph passes around (numpy/scipy only)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .sorting import unique_ints


@dataclass
class Graph:
    """An undirected simple graph with node features and labels.

    ``edges`` holds each undirected edge once as a row ``(u, v)`` with ``u < v``, sorted
    lexicographically, so two graphs with the same edge set have byte-identical arrays.
    ``x`` is the dense ``n x d`` feature matrix (uint8 for binary features, float32 otherwise);
    ``feature_domain`` is the public range ``[alpha, beta]`` every feature lies in.
    """

    name: str
    edges: np.ndarray  # int64 [m, 2], u < v, sorted, unique
    x: np.ndarray  # [n, d]
    y: np.ndarray  # int64 [n]
    feature_domain: tuple[float, float] = (0.0, 1.0)
    meta: dict = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.edges.shape[0])

    @property
    def num_features(self) -> int:
        return int(self.x.shape[1])

    @property
    def num_classes(self) -> int:
        return int(self.y.max()) + 1 if self.y.size else 0

    def adjacency(self) -> sp.csr_matrix:
        """Symmetric CSR adjacency (sorted indices), built once and cached."""
        cached = self.meta.get("_adj")
        if cached is None:
            cached = edges_to_csr(self.edges, self.num_nodes)
            self.meta["_adj"] = cached
        return cached

    def neighbors(self, node: int) -> np.ndarray:
        adj = self.adjacency()
        return adj.indices[adj.indptr[node] : adj.indptr[node + 1]]

    def degrees(self) -> np.ndarray:
        return np.diff(self.adjacency().indptr)

    def edge_index(self) -> np.ndarray:
        """Both directions, as PyG wants it: int64 [2, 2m]."""
        if self.num_edges == 0:
            return np.zeros((2, 0), dtype=np.int64)
        e = self.edges
        return np.concatenate([e, e[:, ::-1]], axis=0).T.astype(np.int64, copy=True)

    def is_binary(self) -> bool:
        x = self.x
        if x.dtype == np.uint8 or x.dtype == np.bool_:
            return bool(x.size == 0 or x.max() <= 1)
        return bool(np.isin(x, (0, 1)).all())


def canonical_edges(pairs: np.ndarray, num_nodes: int) -> np.ndarray:
    """Make an undirected, loop-free, deduplicated, sorted ``[m, 2]`` edge array with u < v."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= num_nodes):
        raise ValueError(f"edge endpoint out of range [0, {num_nodes})")
    u = np.minimum(pairs[:, 0], pairs[:, 1])
    v = np.maximum(pairs[:, 0], pairs[:, 1])
    keep = u != v
    key = unique_ints(u[keep] * num_nodes + v[keep])
    return np.stack([key // num_nodes, key % num_nodes], axis=1).astype(np.int64)


def edges_to_csr(edges: np.ndarray, num_nodes: int) -> sp.csr_matrix:
    """Symmetric 0/1 CSR matrix with sorted column indices from canonical edges."""
    if edges.size == 0:
        return sp.csr_matrix((num_nodes, num_nodes), dtype=np.int8)
    rows = np.concatenate([edges[:, 0], edges[:, 1]])
    cols = np.concatenate([edges[:, 1], edges[:, 0]])
    data = np.ones(rows.shape[0], dtype=np.int8)
    adj = sp.csr_matrix((data, (rows, cols)), shape=(num_nodes, num_nodes))
    adj.sort_indices()
    return adj


def split_by_offsets(edges: np.ndarray, ptr: np.ndarray) -> list[tuple[np.ndarray, int]]:
    """A disjoint union (a collection dataset: graph k is nodes ``ptr[k]:ptr[k+1]``) split
    back into its graphs: (edges [m, 2] in local ids, in the union's order, n) per graph. An
    edge between two graphs is an error."""
    ptr = np.asarray(ptr, dtype=np.int64)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    which = np.searchsorted(ptr, edges[:, 0], side="right") - 1
    if edges.size and (which != np.searchsorted(ptr, edges[:, 1], side="right") - 1).any():
        raise ValueError("an edge joins two graphs of the collection")
    order = np.argsort(which, kind="stable")
    edges, which = edges[order], which[order]
    bounds = np.searchsorted(which, np.arange(ptr.size))
    return [
        (edges[bounds[k] : bounds[k + 1]] - ptr[k], int(ptr[k + 1] - ptr[k]))
        for k in range(ptr.size - 1)
    ]


def sample_free_pairs(
    n: int, count: int, taken: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """``count`` distinct unordered pairs u < v, uniform over those whose key u·n + v is not in
    the sorted array ``taken``, as ``[count, 2]`` in draw order. Rejection in batches (cost
    grows with ``count``, not n²); when few pairs are free, the free ones are listed (then n is
    small). Fewer free pairs than ``count`` is a ValueError (callers say it their way)."""
    total = n * (n - 1) // 2
    free = total - len(taken)
    if count > free:
        raise ValueError(f"{count} pairs wanted but only {free} are free")
    if count <= 0:
        return np.zeros((0, 2), dtype=np.int64)
    if free < 4 * count:
        iu, iv = np.triu_indices(n, 1)
        keys = np.setdiff1d(iu.astype(np.int64) * n + iv, taken, assume_unique=True)
        keys = keys[rng.choice(len(keys), size=count, replace=False)]
        return np.stack([keys // n, keys % n], axis=1).astype(np.int64)
    return more_free_pairs(np.zeros(0, dtype=np.int64), n, count, taken, rng)


def more_free_pairs(
    keys: np.ndarray, n: int, count: int, taken: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """:func:`sample_free_pairs`'s rejection loop, continued from the distinct free ``keys``
    already drawn (in draw order) until ``count`` are held; ``[count, 2]`` pairs."""
    while len(keys) < count:
        b = 2 * (count - len(keys)) + 16
        u, v = rng.integers(0, n, size=b), rng.integers(0, n, size=b)
        new = np.minimum(u, v) * n + np.maximum(u, v)
        new = new[u != v]
        if len(taken):
            at = np.minimum(np.searchsorted(taken, new), len(taken) - 1)
            new = new[taken[at] != new]
        keys = np.concatenate([keys, new])
        _, first = np.unique(keys, return_index=True)
        keys = keys[np.sort(first)]
    keys = keys[:count]
    return np.stack([keys // n, keys % n], axis=1).astype(np.int64)
