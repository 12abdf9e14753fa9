"""KProp (LPGNN: Sajadmanesh & Gatica-Perez, "Locally Private Graph Neural Networks", CCS'21;
official code github.com/sisaman/LPGNN).

KProp_K(X) = Ā^K X over an undirected graph WITHOUT self-loops, computed sparsely (K sparse
products, O(K·|E|·d)). Two operators:

- ``norm="sym"`` (LPGNN's, the default): Ā = D^{−1/2} A D^{−1/2} (PyG's gcn_norm with
  add_self_loops=False, sum aggregation);
- ``norm="mean"``: Ā = D^{−1} A, the plain neighbour mean ("averaging the feature vectors of
  K-hop neighbours", as the HoGS paper words its ablation).

Isolated nodes (degree 0): LPGNN masks 1/√0 to 0, so their rows become all-zero after any K ≥ 1
(``isolated="zero"``). The HoGS "TR + KProp" ablation keeps X̃ for them instead
(``isolated="keep"``, our deviation from LPGNN: the paper's ablation does not say). With "keep", an
isolated node's row is carried through every step unchanged; it never influences other rows
(it has no neighbours), so the two options differ only on isolated rows.

K = 0 is the identity. float64 inside.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

NORMS = ("sym", "mean")
ISOLATED = ("keep", "zero")


def propagation_matrix(edges: np.ndarray, num_nodes: int, norm: str = "sym") -> sp.csr_matrix:
    """Ā as a CSR matrix from canonical undirected edges (u < v, each once; loops dropped)."""
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    edges = edges[edges[:, 0] != edges[:, 1]]
    rows = np.concatenate([edges[:, 0], edges[:, 1]])
    cols = np.concatenate([edges[:, 1], edges[:, 0]])
    a = sp.csr_matrix(
        (np.ones(rows.shape[0], dtype=np.float64), (rows, cols)), shape=(num_nodes, num_nodes)
    )
    a.sum_duplicates()
    a.data[:] = 1.0  # a simple graph: duplicates of an edge count once
    a.sort_indices()
    deg = np.asarray(a.sum(axis=1)).ravel()
    safe = np.where(deg > 0, deg, 1.0)
    if norm == "sym":
        inv = np.where(deg > 0, 1.0 / np.sqrt(safe), 0.0)
        out = sp.diags(inv) @ a @ sp.diags(inv)
    else:
        out = sp.diags(np.where(deg > 0, 1.0 / safe, 0.0)) @ a
    out = out.tocsr()
    out.sort_indices()
    return out


def kprop(
    x: np.ndarray,
    edges: np.ndarray,
    num_nodes: int,
    k: int,
    norm: str = "sym",
    isolated: str = "zero",
) -> np.ndarray:
    """Ā^K X (float64) over the undirected graph ``edges``; see the module docstring."""
    if k < 0 or int(k) != k:
        raise ValueError(f"k must be a non-negative integer, got {k}")
    if isolated not in ISOLATED:
        raise ValueError(f"isolated must be one of {ISOLATED}, got {isolated!r}")
    out = np.asarray(x, dtype=np.float64)
    if out.shape[0] != num_nodes:
        raise ValueError(f"x has {out.shape[0]} rows, expected {num_nodes}")
    if k == 0:
        return out.copy()
    a = propagation_matrix(edges, num_nodes, norm)
    alone = np.diff(a.indptr) == 0
    for _ in range(int(k)):
        nxt = np.asarray(a @ out)
        if isolated == "keep" and alone.any():
            nxt[alone] = out[alone]
        out = nxt
    return out


def label_kprop_targets(
    y: np.ndarray,
    known: np.ndarray,
    edges: np.ndarray,
    num_nodes: int,
    k: int,
    num_classes: int | None = None,
) -> np.ndarray:
    """LPGNN/Solitude label propagation (as LPGNN's official code does it): softmax(Ā^K·Y′) with Y′
    the one-hot labels of the ``known`` nodes and zero rows elsewhere (sym operator, isolated rows
    zero, as LPGNN). Returns the n × c target distribution; the training target is its argmax."""
    y = np.asarray(y, dtype=np.int64)
    c = int(num_classes if num_classes is not None else y.max() + 1)
    onehot = np.zeros((num_nodes, c))
    idx = np.flatnonzero(np.asarray(known, dtype=bool))
    onehot[idx, y[idx]] = 1.0
    z = kprop(onehot, edges, num_nodes, k, norm="sym", isolated="zero")
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)
