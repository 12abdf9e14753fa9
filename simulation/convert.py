"""Graphs in and out of ldpgraph: a PyG ``Data``, a networkx graph or ldpgraph's own
:class:`~ldpgraph.protocols.graph.Graph` in, a PyG ``Data`` out.

A user's own graph runs through the same mechanisms as the mirrored datasets: undirected and
simple (self-loops and repeated edges dropped, as the datasets' loaders do), features ``x``
(an all-ones column when there are none, so structure-only graphs still run), labels ``y``
(-1 where unknown).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldpgraph.protocols.graph import Graph, canonical_edges
from ldpgraph.protocols.types import Release


def _numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def _features(x: Any, n: int) -> tuple[np.ndarray, tuple[float, float]]:
    if x is None:
        return np.ones((n, 1), dtype=np.uint8), (0.0, 1.0)
    x = _numpy(x)
    if x.ndim != 2 or x.shape[0] != n:
        raise ValueError(f"features must be an [n, d] matrix with n = {n}, got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("features must be finite (no NaN or inf)")
    if x.size and np.isin(x, (0, 1)).all():
        return x.astype(np.uint8), (0.0, 1.0)
    lo, hi = (float(x.min()), float(x.max())) if x.size else (0.0, 1.0)
    return x.astype(np.float32), (lo, hi if hi > lo else lo + 1.0)


def _labels(y: Any, n: int) -> np.ndarray:
    if y is None:
        return np.full(n, -1, dtype=np.int64)
    y = _numpy(y).reshape(-1)
    if y.shape[0] != n:
        raise ValueError(f"labels must have one entry per node ({n}), got {y.shape[0]}")
    return y.astype(np.int64)


def from_pyg(data: Any, name: str = "graph") -> Graph:
    """A PyG ``Data`` (``edge_index``, optional ``x``, ``y``) as a :class:`Graph`."""
    n = int(data.num_nodes)
    edge_index = _numpy(data.edge_index) if data.edge_index is not None else np.zeros((2, 0))
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_index must be [2, m], got {edge_index.shape}")
    x, domain = _features(getattr(data, "x", None), n)
    edges = canonical_edges(edge_index.T.astype(np.int64), n)
    return Graph(name, edges, x, _labels(getattr(data, "y", None), n), domain)


def from_networkx(graph: Any, name: str = "graph", x: str = "x", y: str = "y") -> Graph:
    """A networkx graph as a :class:`Graph`: nodes numbered in ``graph.nodes`` order, the
    node attributes ``x`` (a feature vector) and ``y`` (a label) where every node has them."""
    nodes = list(graph.nodes)
    index = {node: i for i, node in enumerate(nodes)}
    n = len(nodes)
    pairs = np.array([(index[u], index[v]) for u, v in graph.edges], dtype=np.int64)
    attrs = graph.nodes
    feats = [attrs[v].get(x) for v in nodes]
    labels = [attrs[v].get(y) for v in nodes]
    x_mat = np.asarray(feats, dtype=np.float64) if n and all(f is not None for f in feats) else None
    y_vec = np.asarray(labels) if n and all(lab is not None for lab in labels) else None
    features, domain = _features(x_mat, n)
    return Graph(
        name, canonical_edges(pairs.reshape(-1, 2), n), features, _labels(y_vec, n), domain
    )


def to_graph(graph: Any, name: str = "graph") -> Graph:
    """A :class:`Graph` from a Graph, a PyG ``Data`` or a networkx graph."""
    if isinstance(graph, Graph):
        return graph
    if hasattr(graph, "edge_index") and hasattr(graph, "num_nodes"):
        return from_pyg(graph, name)
    if hasattr(graph, "nodes") and hasattr(graph, "edges") and hasattr(graph, "is_directed"):
        return from_networkx(graph, name)
    raise TypeError(
        f"cannot read a graph from {type(graph).__name__}: give a torch_geometric Data, a "
        "networkx graph or an ldpgraph Graph"
    )


def to_data(release: Release, original: Graph | None = None) -> Any:
    """A graph release as a PyG ``Data``: ``edge_index`` (both directions), ``x`` (the released
    features), ``edge_weight`` where the release has weights, ``y`` from ``original`` (the
    labels are not part of a release: they are the user's own), and ``privacy`` (the
    :class:`~ldpgraph.protocols.types.PrivacyReport`)."""
    import torch
    from torch_geometric.data import Data

    if release.kind != "graph":
        raise ValueError(
            f"a {release.kind} release is not a graph: use the Release itself "
            "(ldpgraph.release(..., as_data=False))"
        )
    e = release.edges
    edge_index = np.concatenate([e, e[:, ::-1]], axis=0).T if len(e) else np.zeros((2, 0))
    data = Data(
        x=torch.as_tensor(np.asarray(release.x, dtype=np.float32)),
        edge_index=torch.as_tensor(edge_index.astype(np.int64)),
        num_nodes=int(release.x.shape[0]),
    )
    if release.edge_weight is not None:
        w = np.asarray(release.edge_weight, dtype=np.float32)
        data.edge_weight = torch.as_tensor(np.concatenate([w, w]))
    if original is not None and original.y is not None:
        data.y = torch.as_tensor(original.y)
    data.privacy = release.privacy
    return data
