"""Neighbourhood link scorers on a graph: common neighbours, Adamic–Adar, resource allocation,
Jaccard (Liben-Nowell & Kleinberg 2007; Zhou, Lü & Zhang 2009 for resource allocation).

They need no training, so they read a noisy release the same way as a clean one: the
attack suite uses them as attacks (:mod:`.attack`) and ``lp`` as utility scorers beside its
learned one (:mod:`.lp`). With 𝒩 the neighbour sets:

* ``cn``: |𝒩(x) ∩ 𝒩(y)|; ``aa``: Σ_{z ∈ 𝒩(x) ∩ 𝒩(y)} 1 / log|𝒩(z)|;
* ``ra``: Σ_{z ∈ 𝒩(x) ∩ 𝒩(y)} 1 / |𝒩(z)|; ``jaccard``: |𝒩(x) ∩ 𝒩(y)| / |𝒩(x) ∪ 𝒩(y)|.

A common neighbour z of x ≠ y has |𝒩(z)| ≥ 2, so AA's logarithm is positive.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def structural_scores(adj: sp.csr_matrix, pairs: np.ndarray) -> dict[str, np.ndarray]:
    """CN, AA, RA and Jaccard of every pair on the symmetric 0/1 adjacency ``adj``."""
    adj = sp.csr_matrix(adj, dtype=np.float64)
    adj.data[:] = 1.0
    degree = np.asarray(adj.sum(axis=1)).ravel()
    common = adj[pairs[:, 0]].multiply(adj[pairs[:, 1]]).tocsr()  # 1 at each common z
    with np.errstate(divide="ignore"):
        inv_log = np.where(degree > 1, 1.0 / np.log(np.maximum(degree, 2.0)), 0.0)
        inv = np.where(degree > 0, 1.0 / np.maximum(degree, 1.0), 0.0)
    cn = np.asarray(common.sum(axis=1)).ravel()
    union = degree[pairs[:, 0]] + degree[pairs[:, 1]] - cn
    return {
        "cn": cn,
        "aa": common @ inv_log,
        "ra": common @ inv,
        "jaccard": np.divide(cn, union, out=np.zeros_like(cn), where=union > 0),
    }
