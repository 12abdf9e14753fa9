"""Turn a round's per-node reports into the matrices the server-side reconstructions use.

The reports come as a dict of :class:`Report` (the Flower backend's replies) or as one
:class:`~ldpgraph.protocols.batch.ReportBatch` (the local backend's compact collection); a
batch is read through its arrays, never node by node, so assembling 10^6 nodes' reports costs
what copying them costs.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp

from ..batch import ReportBatch
from ..types import Report


def adjacency_reports(
    reports: Mapping[int, Report], num_nodes: int
) -> tuple[sp.csr_matrix, np.ndarray]:
    """CSR matrix R with R[i, j] = 1 iff node i reported bit j as 1, and the mask of nodes
    whose adjacency report is present (a missing node's row is empty and marked False)."""
    if isinstance(reports, ReportBatch):
        return _batch_adjacency(reports, num_nodes)
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


def _batch_adjacency(batch: ReportBatch, num_nodes: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """The batch's rows spread over all ``num_nodes`` rows. The matrix shares the batch's int32
    indices instead of copying them, read-only (a batch may be replayed to later runs)."""
    observed = np.zeros(num_nodes, dtype=bool)
    lengths = np.zeros(num_nodes, dtype=np.int64)
    if batch.indptr is not None:
        observed[batch.nodes] = batch.adjacency_mask()
        lengths[batch.nodes] = np.diff(batch.indptr)
        indices = batch.indices.view()
    else:
        indices = np.zeros(0, dtype=np.int32)
    indices.flags.writeable = False
    # scipy keeps one index dtype for indptr and indices: int32 while the count fits.
    total = int(lengths.sum())
    indptr = np.zeros(num_nodes + 1, dtype=np.int32 if total < 2**31 else np.int64)
    np.cumsum(lengths, out=indptr[1:])
    data = np.ones(indices.shape[0], dtype=np.int8)
    return sp.csr_matrix((data, indices, indptr), shape=(num_nodes, num_nodes)), observed


def feature_reports(
    reports: Mapping[int, Report], num_nodes: int, num_features: int, dtype=np.uint8
) -> tuple[np.ndarray, np.ndarray]:
    """The n × d matrix of reported feature rows (zeros for nodes without one) and the mask
    of nodes that reported features."""
    x = np.zeros((num_nodes, num_features), dtype=dtype)
    observed = np.zeros(num_nodes, dtype=bool)
    if isinstance(reports, ReportBatch):
        if reports.features is not None:
            sent = reports.features_mask()
            rows = reports.nodes[sent]
            if rows.size == num_nodes:
                x[:] = reports.features  # every node: one plain copy
            else:
                x[rows] = reports.features[sent]
            observed[rows] = True
        return x, observed
    for node, rep in reports.items():
        if rep.features is not None:
            x[node] = rep.features
            observed[node] = True
    return x, observed


def extra_reports(
    reports: Mapping[int, Report], key: str, num_nodes: int
) -> tuple[np.ndarray, np.ndarray]:
    """The float64 values of the extra field ``key`` by node (0 where absent or not finite)
    and the mask of nodes that sent a finite value."""
    values = np.zeros(num_nodes, dtype=np.float64)
    sent = np.zeros(num_nodes, dtype=bool)
    if isinstance(reports, ReportBatch):
        if key in reports.extras:
            got, mask = reports.extras[key]
            mask = mask & np.isfinite(got)
            values[reports.nodes[mask]] = got[mask]
            sent[reports.nodes[mask]] = True
        return values, sent
    for node, rep in reports.items():
        value = rep.extras.get(key)
        if value is not None and np.isfinite(value):
            values[node] = value
            sent[node] = True
    return values, sent
