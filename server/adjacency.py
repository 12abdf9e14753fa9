"""The training graph as one symmetric CSR adjacency, built straight from the release's edge
list: int32 indices, float32 values, no both-directions ``edge_index`` and no COO sort.

PyG's route (``to_torch_csr_tensor`` of both directions, then ``gcn_norm`` adding self-loops
and coalescing again, once per GCN layer) holds several int64 copies of every directed entry:
~2.2 GiB of transients at 10^6 nodes and 6.5·10^6 edges, ~22 GiB at 10^7. Here the matrix is
written in place by a counting sort: row ``r`` holds the columns ``c < r`` (edges ``(c, r)``),
then ``r`` itself when self-loops are asked for, then the columns ``c > r`` (edges ``(r, c)``),
each run ascending — the order PyG's coalesce gives, so the matrix is the same entry for entry.
:func:`gcn_adjacency` then applies GCN's normalisation ``D^-1/2 (A + I) D^-1/2`` (Kipf &
Welling, 2017, Eq. 2) in PyG's own operation order, so a GCN trained on it gives the same bits
as one that normalises inside its layers (``tests/server/test_adjacency.py``).

Index dtype: int32 while the entries and nodes fit (< 2^31), else int64. torch's CPU sparse
product takes int32 indices as they are (int64 ones are converted per call) and gives the
same result.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from torch import Tensor

#: Edges (or matrix entries) handled per step: bounds the int64 temporaries to a few
#: tens of MiB whatever the graph's size.
CHUNK = 1 << 22


def is_sorted_unique(edges: np.ndarray, n: int) -> bool:
    """Whether the ``[m, 2]`` rows are strictly increasing by ``(u, v)`` (so also unique):
    the form :class:`ldpgraph.protocols.graph.Graph` holds. Chunked: O(m) time, O(CHUNK)
    memory."""
    prev = -1
    for a in range(0, edges.shape[0], CHUNK):
        block = edges[a : a + CHUNK]
        keys = block[:, 0].astype(np.int64) * n + block[:, 1]
        if keys[0] <= prev or (keys.size > 1 and not (keys[1:] > keys[:-1]).all()):
            return False
        prev = int(keys[-1])
    return True


def _index_dtype(nnz: int, n: int) -> type:
    return np.int32 if max(nnz, n) < 2**31 else np.int64


def symmetric_csr(
    edges: np.ndarray, n: int, weight: np.ndarray | None = None, loop: float | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(crow, col, val)`` of the symmetric ``n × n`` matrix with ``A[u, v] = A[v, u] = w``
    for every edge ``(u, v)`` (``w`` = 1 without weights) and ``loop`` on the diagonal when
    given; columns ascending within each row.

    ``edges`` is canonical (each undirected edge once, ``u < v``: anything else is a
    ``ValueError``); unsorted rows are sorted first (a copy). ``val`` is float32 (each
    weight rounded once, as PyG's float32 weights).
    """
    edges = np.asarray(edges).reshape(-1, 2)
    if weight is not None:
        weight = np.asarray(weight, dtype=np.float32)
    if edges.shape[0] and not is_sorted_unique(edges, n):
        keys = edges[:, 0].astype(np.int64) * n + edges[:, 1]
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        if (keys[1:] == keys[:-1]).any():
            raise ValueError("symmetric_csr takes each undirected edge once (a pair repeats)")
        del keys
        edges = edges[order]
        weight = None if weight is None else weight[order]
    for a in range(0, edges.shape[0], CHUNK):
        if not (edges[a : a + CHUNK, 0] < edges[a : a + CHUNK, 1]).all():
            raise ValueError("symmetric_csr takes canonical edges (u < v for every edge)")
    u, v = edges[:, 0], edges[:, 1]
    m = edges.shape[0]
    has_loop = loop is not None
    upper = np.bincount(u, minlength=n).astype(np.int64)
    lower = np.bincount(v, minlength=n).astype(np.int64)
    crow = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lower + upper + int(has_loop), out=crow[1:])
    nnz = int(crow[-1])
    itype = _index_dtype(nnz, n)
    col = np.empty(nnz, dtype=itype)
    val = np.empty(nnz, dtype=np.float32)
    # Upper runs: edges sorted by u, so edge e is entry (e - first edge of u) of u's run.
    first = np.zeros(n, dtype=np.int64)
    np.cumsum(upper[:-1], out=first[1:])
    start = crow[:-1] + lower + int(has_loop)
    for a in range(0, m, CHUNK):
        uu = u[a : a + CHUNK]
        pos = start[uu] + (np.arange(a, a + uu.size) - first[uu])
        col[pos] = v[a : a + CHUNK]
        val[pos] = 1.0 if weight is None else weight[a : a + CHUNK]
    if has_loop:
        diag = crow[:-1] + lower
        col[diag] = np.arange(n, dtype=itype)
        val[diag] = loop
    # Lower runs: a stable counting sort of the edges by v (in edge order, so u ascends),
    # chunk by chunk: an edge's rank among its v's is the count seen in earlier chunks plus
    # its rank within the chunk.
    seen = crow[:-1].copy()
    for a in range(0, m, CHUNK):
        vv = v[a : a + CHUNK].astype(np.int64)
        order = np.argsort(vv, kind="stable")
        sv = vv[order]
        head = np.ones(sv.size, dtype=bool)
        head[1:] = sv[1:] != sv[:-1]
        group_start = np.maximum.accumulate(np.where(head, np.arange(sv.size), 0))
        pos = seen[sv] + (np.arange(sv.size) - group_start)
        col[pos] = u[a : a + CHUNK][order]
        val[pos] = 1.0 if weight is None else weight[a : a + CHUNK][order]
        seen += np.bincount(sv, minlength=n)
    return crow.astype(itype), col, val


def _row_blocks(crow: np.ndarray) -> list[tuple[int, int]]:
    """Row ranges of about :data:`CHUNK` entries each (a row is never split)."""
    n = crow.size - 1
    bounds = [0]
    while bounds[-1] < n:
        lo = bounds[-1]
        hi = int(np.searchsorted(crow, int(crow[lo]) + CHUNK, side="right")) - 1
        bounds.append(min(n, max(hi, lo + 1)))
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def _csr_tensor(crow: np.ndarray, col: np.ndarray, val: np.ndarray, n: int) -> Tensor:
    with warnings.catch_warnings():
        # torch flags CSR support as beta and sparse invariant checks as off, once per process.
        warnings.filterwarnings("ignore", message=".*[Ss]parse.*", category=UserWarning)
        return torch.sparse_csr_tensor(
            torch.from_numpy(crow),
            torch.from_numpy(col),
            torch.from_numpy(val),
            size=(n, n),
            dtype=torch.float32,
        )


def csr_adjacency(
    edges: np.ndarray, n: int, dev: torch.device, weight: np.ndarray | None = None
) -> Tensor:
    """The symmetric CSR adjacency of ``edges`` (weights or ones) on ``dev``: the matrix
    ``to_torch_csr_tensor`` makes of both directions, without their int64 copies."""
    return _csr_tensor(*symmetric_csr(edges, n, weight), n).to(dev)


def gcn_adjacency(
    edges: np.ndarray, n: int, dev: torch.device, weight: np.ndarray | None = None
) -> Tensor:
    """``D^-1/2 (A + I) D^-1/2`` as a CSR tensor on ``dev``: what PyG's ``gcn_norm`` makes of
    the CSR adjacency (self-loops of weight 1, ``D`` the row sums of ``A + I``), with the same
    float32 operations in the same order: each row sum accumulated entry by entry along the
    row, then ``value = (d[col]^-1/2 · value) · d[row]^-1/2``."""
    crow, col, val = symmetric_csr(edges, n, weight, loop=1.0)
    counts = np.diff(crow)
    blocks = _row_blocks(crow)
    deg = torch.zeros(n, dtype=torch.float32)
    val_t, col_t = torch.from_numpy(val), torch.from_numpy(col)
    for lo, hi in blocks:
        a, b = int(crow[lo]), int(crow[hi])
        rows = torch.from_numpy(np.repeat(np.arange(lo, hi, dtype=np.int64), counts[lo:hi]))
        deg.scatter_add_(0, rows, val_t[a:b])
    dis = deg.pow_(-0.5)
    dis.masked_fill_(dis == float("inf"), 0)
    for lo, hi in blocks:
        a, b = int(crow[lo]), int(crow[hi])
        rows = torch.from_numpy(np.repeat(np.arange(lo, hi, dtype=np.int64), counts[lo:hi]))
        val_t[a:b] = dis[col_t[a:b].long()] * val_t[a:b] * dis[rows]
    return _csr_tensor(crow, col, val, n).to(dev)
