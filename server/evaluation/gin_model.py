"""The gin metric's data and model (:mod:`.gin`): the original collection's labelled graphs,
the stratified folds, the degree-one-hot encoding and the official GIN architecture (Xu et
al. 2019, "How Powerful are Graph Neural Networks?", §4 and the authors' code: GIN-0, sum
aggregation, a linear head on every layer's sum-pooled output)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ldpgraph.protocols.graph import canonical_edges, split_by_offsets

#: One-hot degree columns: degrees 0..DEGREE_CAP − 1 each their own, ≥ DEGREE_CAP the last.
DEGREE_CAP = 100
#: Dropout on every head (the official GIN code's ``final_dropout``).
DROPOUT = 0.5


# --- data ------------------------------------------------------------------------------------


def labelled_originals(graph: Any) -> tuple[list[tuple[np.ndarray, int]], np.ndarray]:
    """The original collection's graphs (local edges, n) and their class labels; a one-line
    error when ``graph`` is one graph or carries no graph labels."""
    meta = getattr(graph, "meta", None) or {}
    if meta.get("graph_ptr") is None:
        raise ValueError(
            "the gin metric classifies the graphs of a collection dataset (dblp-collection, "
            "imdb-collection, …); this original is one graph"
        )
    labels = meta.get("graph_labels")
    graphs = split_by_offsets(graph.edges, meta["graph_ptr"])
    if labels is None or len(labels) != len(graphs) or (np.asarray(labels) < 0).any():
        raise ValueError("the gin metric needs a class label for every graph of the collection")
    return graphs, np.asarray(labels, dtype=np.int64)


def stratified_folds(labels: np.ndarray, folds: int, rng: np.random.Generator) -> list[np.ndarray]:
    """The test indices of each of ``folds`` disjoint folds covering ``range(len(labels))``:
    scikit-learn's ``StratifiedKFold`` (shuffled; every class spread over the folds as evenly
    as it divides), its ``random_state`` a 32-bit integer drawn from ``rng``.

    Args:
        labels: class label per graph.
        folds: number of folds (≥ 2; every class needs at least this many members).
        rng: the stream the shuffle's seed is drawn from.
    """
    from sklearn.model_selection import StratifiedKFold

    labels = np.asarray(labels, dtype=np.int64)
    classes, counts = np.unique(labels, return_counts=True)
    if folds < 2:
        raise ValueError(f"a stratified split needs at least 2 folds, got {folds}")
    if len(classes) < 2:
        raise ValueError(f"GIN accuracy needs at least 2 classes; the {len(labels)} graphs have 1")
    if counts.min() < folds:
        small = ", ".join(
            f"class {c}: {n}" for c, n in zip(classes, counts, strict=True) if n < folds
        )
        raise ValueError(
            f"a stratified {folds}-fold split needs at least {folds} graphs of every class "
            f"({small})"
        )
    kfold = StratifiedKFold(n_splits=folds, shuffle=True, random_state=int(rng.integers(2**32)))
    return [test.astype(np.int64) for _train, test in kfold.split(np.zeros(len(labels)), labels)]


class _Encoded:
    """A list of graphs as GIN input: per graph its nodes' degree column (capped) and its
    edges in both directions (local ids)."""

    def __init__(self, graphs: Sequence[tuple[np.ndarray, int]]) -> None:
        self.degree: list[np.ndarray] = []
        self.edges: list[np.ndarray] = []
        for e, n in graphs:
            e = canonical_edges(e, n)
            self.degree.append(np.minimum(np.bincount(e.ravel(), minlength=n), DEGREE_CAP))
            self.edges.append(np.concatenate([e, e[:, ::-1]]).T)
        self.sizes = np.array([len(d) for d in self.degree], dtype=np.int64)

    def batch(self, idx: np.ndarray, device: Any) -> tuple[Any, Any, Any]:
        """(degree column per node, edge_index, graph of each node) of graphs ``idx``, as one
        disjoint union on ``device``."""
        import torch

        offsets = np.concatenate([[0], np.cumsum(self.sizes[idx])[:-1]])
        deg = np.concatenate([self.degree[i] for i in idx])
        ei = np.concatenate([self.edges[i] + o for i, o in zip(idx, offsets, strict=True)], axis=1)
        owner = np.repeat(np.arange(len(idx)), self.sizes[idx])
        return (
            torch.as_tensor(deg, device=device),
            torch.as_tensor(ei, dtype=torch.long, device=device),
            torch.as_tensor(owner, device=device),
        )


# --- the model -------------------------------------------------------------------------------


def _gin(in_dim: int, hidden: int, layers: int, classes: int) -> Any:
    """The official GIN's architecture (see the module docstring)."""
    import torch
    from torch import nn
    from torch_geometric.nn import GINConv, global_add_pool

    class GIN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.convs = nn.ModuleList()
            self.norms = nn.ModuleList()
            for i in range(layers - 1):
                mlp = nn.Sequential(
                    nn.Linear(in_dim if i == 0 else hidden, hidden),
                    nn.BatchNorm1d(hidden),
                    nn.ReLU(),
                    nn.Linear(hidden, hidden),
                )
                self.convs.append(GINConv(mlp, eps=0.0, train_eps=False))
                self.norms.append(nn.BatchNorm1d(hidden))
            self.heads = nn.ModuleList(
                [nn.Linear(in_dim if i == 0 else hidden, classes) for i in range(layers)]
            )

        def forward(
            self, x: torch.Tensor, edge_index: torch.Tensor, owner: torch.Tensor, graphs: int
        ) -> torch.Tensor:
            hs = [x]
            for conv, norm in zip(self.convs, self.norms, strict=True):
                hs.append(torch.relu(norm(conv(hs[-1], edge_index))))
            return sum(
                nn.functional.dropout(
                    head(global_add_pool(h, owner, size=graphs)), DROPOUT, self.training
                )
                for head, h in zip(self.heads, hs, strict=True)
            )

    return GIN()
