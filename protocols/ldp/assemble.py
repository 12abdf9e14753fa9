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
    reports: Mapping[int, Report], num_nodes: int, pattern_only: bool = False
) -> tuple[sp.csr_matrix, np.ndarray]:
    """CSR matrix R with R[i, j] = 1 iff node i reported bit j as 1, and the mask of nodes
    whose adjacency report is present (a missing node's row is empty and marked False).

    ``pattern_only``: for a consumer that reads only R's pattern (indptr and indices, as
    :class:`.reported_pairs.ReportedPairs`): R's values are then one read-only int8 1
    broadcast over every entry, not an array of a byte an entry (0.5 GB at 10^7 nodes' 5·10^8
    reported 1s); scipy's arithmetic on such an R is not supported."""
    if isinstance(reports, ReportBatch):
        return _batch_adjacency(reports, num_nodes, pattern_only)
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
    return _csr(indices, indptr, num_nodes, pattern_only), observed


def _csr(
    indices: np.ndarray, indptr: np.ndarray, num_nodes: int, pattern_only: bool
) -> sp.csr_matrix:
    """The n × n 0/1 CSR of the rows' sorted indices; its values a broadcast 1 when only its
    pattern is read (no copy: scipy keeps the view it is given)."""
    if pattern_only:
        data = np.broadcast_to(np.ones(1, dtype=np.int8), indices.shape)
    else:
        data = np.ones(indices.shape[0], dtype=np.int8)
    return sp.csr_matrix((data, indices, indptr), shape=(num_nodes, num_nodes), copy=False)


def _batch_adjacency(
    batch: ReportBatch, num_nodes: int, pattern_only: bool = False
) -> tuple[sp.csr_matrix, np.ndarray]:
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
    return _csr(indices, indptr, num_nodes, pattern_only), observed


def feature_reports(
    reports: Mapping[int, Report],
    num_nodes: int,
    num_features: int,
    dtype=np.uint8,
    share: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The n × d matrix of reported feature rows (zeros for nodes without one) and the mask
    of nodes that reported features.

    ``share``: where a batch holds every node's row in the dtype asked, return its rows as a
    read-only view instead of a copy (n·d bytes: 0.64 GB at 10^7 nodes, d = 64), for a
    consumer that only reads them (a batch may be replayed to later runs)."""
    observed = np.zeros(num_nodes, dtype=bool)
    batch = isinstance(reports, ReportBatch)
    if batch and share and _whole_rows(reports, num_nodes, num_features, dtype):
        x = reports.features.view()
        x.flags.writeable = False
        observed[:] = True
        return x, observed
    x = np.zeros((num_nodes, num_features), dtype=dtype)
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


def _whole_rows(batch: ReportBatch, num_nodes: int, num_features: int, dtype) -> bool:
    """Whether the batch's feature rows are every node's (nodes 0..n−1, each with its row),
    C-contiguous in ``dtype``: then they are the n × d matrix as they are."""
    feats = batch.features
    return (
        feats is not None
        and batch.nodes.size == num_nodes
        and feats.shape == (num_nodes, num_features)
        and feats.dtype == np.dtype(dtype)
        and feats.flags.c_contiguous
        and bool(batch.features_mask().all())
    )


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
