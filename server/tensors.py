"""A release as the models' tensors, and the checks on it before training: feature
preprocessing (PyG's row normalisation, column centring), features as dense or sparse CSR,
the graph as ``edge_index`` or a CSR adjacency, and the input and split validation with their
one-line errors. Split from :mod:`ldpgraph.server.training` (the training loop) so that each
module has one job; the embedding metrics reuse these pieces."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import torch
from torch import Tensor

from .adjacency import CHUNK, csr_adjacency, is_sorted_unique


class SplitLike(Protocol):
    """Anything with integer index arrays ``train``, ``val`` and ``test`` (duck-typed)."""

    train: Sequence[int] | np.ndarray
    val: Sequence[int] | np.ndarray
    test: Sequence[int] | np.ndarray


def row_normalize(x: np.ndarray) -> np.ndarray:
    """PyG's ``NormalizeFeatures``: shift so the minimum is 0, then divide each row by its sum
    clamped to at least 1 (a bag-of-words row then sums to 1; an all-zero row stays zero)."""
    x = np.asarray(x, dtype=np.float32)
    x = x - x.min()
    return x / np.maximum(x.sum(axis=1, keepdims=True), 1.0)


def column_means(x: np.ndarray) -> np.ndarray:
    """Each column's mean over all rows (all nodes: the release is public to the curator,
    labels are not used), accumulated in float64, as float32."""
    return np.asarray(x).mean(axis=0, dtype=np.float64).astype(np.float32)


def center_columns(x: np.ndarray) -> np.ndarray:
    """Subtract each column's mean (:func:`column_means`), so no feature carries a common
    offset into the first layer. One float32 result written block by block: a 0/1 uint8
    input is never held as a whole float32 copy beside it (10^7 × 64 reports: 2.4 GiB)."""
    x = np.asarray(x)
    if x.dtype.itemsize > 2 or not (np.issubdtype(x.dtype, np.integer) or x.dtype == np.bool_):
        x = np.asarray(x, dtype=np.float32)  # exact for small integers only: the rest first
    mean = column_means(x)[None, :]
    out = np.empty(x.shape, dtype=np.float32)
    for a in range(0, x.shape[0], max(1, CHUNK // max(1, x.shape[1]))):
        b = a + max(1, CHUNK // max(1, x.shape[1]))
        np.subtract(np.asarray(x[a:b], dtype=np.float32), mean, out=out[a:b])
    return out


#: Features with at most this fraction of non-zero entries go to the models as sparse CSR.
SPARSE_FEATURES_MAX_DENSITY = 0.1


def mostly_zero(x: np.ndarray) -> bool:
    """Whether ``x`` goes to the models as sparse CSR (see :data:`SPARSE_FEATURES_MAX_DENSITY`)."""
    return bool(x.size) and np.count_nonzero(x) <= SPARSE_FEATURES_MAX_DENSITY * x.size


def feature_tensor(x: np.ndarray, dev: torch.device, sparse: bool | None = None) -> Tensor:
    """``x`` as float32: sparse CSR when mostly zeros (bag-of-words), else dense.
    ``sparse`` passes in :func:`mostly_zero` when the caller has computed it already.

    The first layer's projection dominates training on wide bag-of-words inputs (Facebook
    page-page: 22470 x 4714 at 0.3 % non-zero); as CSR it costs O(nnz) instead of O(n d). The
    models compute the same function either way (floating-point summation order aside). Dense
    inputs (the 1-bit mechanism's reports, reconstructed features) stay dense.
    """
    if sparse is None:
        sparse = mostly_zero(x)
    if sparse:
        rows, cols = np.nonzero(x)
        indptr = np.zeros(x.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=x.shape[0]), out=indptr[1:])
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Ss]parse.*", category=UserWarning)
            return torch.sparse_csr_tensor(
                torch.from_numpy(indptr),
                torch.from_numpy(cols.astype(np.int64)),
                torch.tensor(x[rows, cols], dtype=torch.float32),
                size=x.shape,
                dtype=torch.float32,
            ).to(dev)
    if dev.type == "cpu" and x.dtype == np.float32 and x.flags.c_contiguous and x.flags.writeable:
        # The models never write to their input: share the array instead of a second copy
        # (10^7 × 64 float32 features: 2.4 GiB).
        return torch.from_numpy(x)
    # torch.tensor copies, so read-only or strided numpy inputs need no special care.
    return torch.tensor(x, dtype=torch.float32, device=dev)


def graph_tensors(
    edges: np.ndarray,
    edge_weight: np.ndarray | None,
    n: int,
    dev: torch.device,
    sparse: bool,
) -> tuple[Tensor, Tensor | None]:
    """PyG's both-directions ``edge_index`` (and weights), or a symmetric CSR adjacency
    (:func:`ldpgraph.server.adjacency.csr_adjacency`: int32 indices, built without the
    ``edge_index``; the same matrix PyG's ``to_torch_csr_tensor`` makes of it)."""
    if sparse:
        # The graph is symmetric, so the adjacency equals its transpose (PyG's adj_t).
        return csr_adjacency(edges, n, dev, edge_weight), None
    both = np.concatenate([edges, edges[:, ::-1]], axis=0).T
    edge_index = torch.tensor(both, dtype=torch.int64, device=dev)
    weight = None
    if edge_weight is not None:
        w = np.concatenate([edge_weight, edge_weight]).astype(np.float32)
        weight = torch.tensor(w, device=dev)
    return edge_index, weight


def validate_inputs(
    edges: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    edge_weight: np.ndarray | None,
    num_classes: int | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, int]:
    """Check shapes, ranges and the canonical edge form; return normalised arrays."""
    x = _checked_features(x)
    n = x.shape[0]
    y, num_classes = _checked_labels(y, n, num_classes)
    edges = _checked_edges(edges, n)
    if edge_weight is not None:
        edge_weight = _checked_weights(edge_weight, edges.shape[0])
    return x, y, edges, edge_weight, num_classes


def _checked_features(x: np.ndarray) -> np.ndarray:
    """``x`` as a non-empty, finite, numeric [n, d] array (booleans as uint8)."""
    x = np.asarray(x)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"x must be a non-empty 2-D [n, d] array, got shape {x.shape}")
    if x.dtype == np.bool_:
        x = x.astype(np.uint8)
    if not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)):
        raise ValueError(f"x must be numeric, got dtype {x.dtype}")
    if np.issubdtype(x.dtype, np.floating):
        rows = max(1, CHUNK // x.shape[1])  # blocks: no n × d mask beside x
        if not all(np.isfinite(x[a : a + rows]).all() for a in range(0, x.shape[0], rows)):
            raise ValueError("x contains NaN or infinite values")
    return x


def _checked_labels(y: np.ndarray, n: int, num_classes: int | None) -> tuple[np.ndarray, int]:
    """``y`` as n int64 labels in [0, num_classes) and the class count (≥ 2; from ``y`` when
    not given)."""
    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"y must have shape ({n},) to match x, got {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"y must hold integer class labels, got dtype {y.dtype}")
    y = y.astype(np.int64, copy=False)
    if y.min() < 0:
        raise ValueError(f"labels must be >= 0, got min {int(y.min())}")
    if num_classes is None:
        num_classes = int(y.max()) + 1
    elif y.max() >= num_classes:
        raise ValueError(f"label {int(y.max())} out of range for num_classes={num_classes}")
    if num_classes < 2:
        raise ValueError(f"need at least 2 classes, got {num_classes}")
    return y, num_classes


def _checked_edges(edges: np.ndarray, n: int) -> np.ndarray:
    """``edges`` as canonical int64 [m, 2] rows: in range, u < v, no duplicates."""
    edges = np.asarray(edges)
    if edges.size == 0:
        edges = edges.reshape(0, 2)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise ValueError(f"edges must be an [m, 2] array, got shape {edges.shape}")
    if not np.issubdtype(edges.dtype, np.integer):
        raise ValueError(f"edges must be integer node ids, got dtype {edges.dtype}")
    edges = edges.astype(np.int64, copy=False)
    if edges.shape[0]:
        if edges.min() < 0 or edges.max() >= n:
            raise ValueError(f"edge endpoint out of range [0, {n})")
        if not (edges[:, 0] < edges[:, 1]).all():
            raise ValueError(
                "edges must hold each undirected edge once with u < v (no self-loops, no "
                "reversed duplicates); see ldpgraph.protocols.graph.canonical_edges"
            )
        # Sorted rows (a Graph's, every release's) are unique when strictly increasing: an
        # O(m) scan in blocks instead of a sort of m int64 keys.
        if (
            not is_sorted_unique(edges, n)
            and np.unique(edges[:, 0] * n + edges[:, 1]).size != edges.shape[0]
        ):
            raise ValueError("edges contain duplicate rows")
    return edges


def _checked_weights(edge_weight: np.ndarray, m: int) -> np.ndarray:
    """``edge_weight`` as m finite, non-negative float64 weights."""
    edge_weight = np.asarray(edge_weight, dtype=np.float64)
    if edge_weight.shape != (m,):
        raise ValueError(
            f"edge_weight must have shape ({m},) to match edges, got {edge_weight.shape}"
        )
    if not np.isfinite(edge_weight).all() or (edge_weight < 0).any():
        raise ValueError("edge_weight must be finite and non-negative")
    return edge_weight


def validate_split(split: SplitLike, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Index arrays in range, train and val non-empty, the three parts disjoint."""
    parts = []
    for name in ("train", "val", "test"):
        if not hasattr(split, name):
            raise ValueError(f"split has no {name!r} index array")
        arr = np.asarray(getattr(split, name))
        if arr.size == 0:
            arr = arr.reshape(0).astype(np.int64)
        if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"split.{name} must be a 1-D integer index array")
        if arr.size and (arr.min() < 0 or arr.max() >= n):
            raise ValueError(f"split.{name} has node ids outside [0, {n})")
        if np.unique(arr).size != arr.size:
            raise ValueError(f"split.{name} contains duplicate node ids")
        parts.append(arr.astype(np.int64, copy=False))
    train, val, test = parts
    if train.size == 0:
        raise ValueError("split.train is empty: nothing to train on")
    if val.size == 0:
        raise ValueError("split.val is empty: the best epoch is chosen on validation accuracy")
    combined = np.concatenate(parts)
    if np.unique(combined).size != combined.size:
        raise ValueError("split.train, split.val and split.test must be disjoint")
    return train, val, test
