"""Turn a round's per-node reports into the matrices the server-side reconstructions use."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..types import Report


def adjacency_reports(
    reports: dict[int, Report], num_nodes: int
) -> tuple[sp.csr_matrix, np.ndarray]:
    """CSR matrix R with R[i, j] = 1 iff node i reported bit j as 1, and the mask of nodes
    whose adjacency report is present (a missing node's row is empty and marked False)."""
    observed = np.zeros(num_nodes, dtype=bool)
    lengths = np.zeros(num_nodes, dtype=np.int64)
    for node, rep in reports.items():
        if rep.adjacency is not None:
            observed[node] = True
            lengths[node] = rep.adjacency.shape[0]
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    for node, rep in reports.items():
        if rep.adjacency is not None:
            indices[indptr[node] : indptr[node + 1]] = rep.adjacency
    data = np.ones(indices.shape[0], dtype=np.int8)
    return sp.csr_matrix((data, indices, indptr), shape=(num_nodes, num_nodes)), observed


def feature_reports(
    reports: dict[int, Report], num_nodes: int, num_features: int, dtype=np.uint8
) -> tuple[np.ndarray, np.ndarray]:
    """The n × d matrix of reported feature rows (zeros for nodes without one) and the mask
    of nodes that reported features."""
    x = np.zeros((num_nodes, num_features), dtype=dtype)
    observed = np.zeros(num_nodes, dtype=bool)
    for node, rep in reports.items():
        if rep.features is not None:
            x[node] = rep.features
            observed[node] = True
    return x, observed
