"""The GNNs the server trains on a released graph (the HoGS paper, Section V-A).

Every model follows the HoGS paper: "two convolutional layers with 16 hidden units and a ReLU
operator followed by a dropout layer". Dropout is applied to the hidden layer only: input
dropout on dense 1433-column bag-of-words inputs would dominate CPU time and the paper does not
ask for it. GAT uses 4 concatenated heads in the hidden layer and 1 head in the output layer.
Every model accepts ``x`` as a dense tensor or a sparse CSR tensor: the training loop passes
sparse bag-of-words features (Cora 1.3 % non-zero, Facebook 0.3 %) as CSR, which makes the
first projection a sparse-dense product. ``center_inputs(mean)`` makes a model compute on
``x - mean`` (every column's mean removed) while ``x`` itself stays sparse: the first
projection is linear, so ``(x - 1 meanᵀ) W = x W - 1 (meanᵀ W)``, subtracted right after it,
before any propagation.

All models share one call signature, ``model(x, edge_index, edge_weight=None) -> logits``, so
the training loop does not care which one it runs. ``edge_index`` may be a PyG ``[2, E]`` index
(both directions of every undirected edge) or a ``torch.sparse_csr`` adjacency; models whose
class attribute ``sparse_adjacency`` is True run faster on the latter. Only GCN uses edge
weights (``uses_edge_weight``). Everything works with plain PyTorch scatter/sparse kernels, so
neither torch-scatter, torch-sparse nor pyg-lib is needed.

PyG renders an optimised ``propagate`` (and, for GAT, ``edge_updater``) module from a jinja
template for every message-passing class, the first time a process builds one, writes it to the
temp dir as ``<module>_<Class>_propagate_<random>.py`` and imports it from there, never removing
it. :func:`discard_generated_files` removes it once imported (its source stays in
``linecache``, so tracebacks and ``inspect.getsource`` still show it).
"""

from __future__ import annotations

import linecache
import os
import sys

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn import GATConv, GCNConv, MessagePassing

from .choices import MODELS


class _SymmetricSpmm(torch.autograd.Function):
    """``adj @ h`` for a symmetric sparse ``adj``, whose gradient for ``h`` is ``adj @ grad``.

    torch's own backward of ``torch.sparse.mm`` builds ``adjᵀ`` as a fresh CSR tensor (a sort of
    every entry) on every backward pass: on a graph of Facebook's size (22470 nodes, 3.1 M
    random edges, 4714 dense feature columns) that was two thirds of each epoch. The adjacency
    the models get is symmetric (both directions of every undirected edge, equal weights; GCN's
    normalisation keeps it so), so ``adjᵀ = adj``.
    """

    @staticmethod
    def forward(ctx, adj: Tensor, h: Tensor) -> Tensor:  # type: ignore[override]
        ctx.adj = adj
        return torch.sparse.mm(adj, h)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[None, Tensor]:  # type: ignore[override]
        return None, torch.sparse.mm(ctx.adj, grad)


def _subtract_projected_mean(module: nn.Module, mean: Tensor) -> None:
    """After ``module`` (a linear map ``x Wᵀ (+ b)`` applied to the raw input), subtract
    ``mean Wᵀ``: its output is then what it would be on the centred input ``x - mean``."""
    if getattr(module, "_input_mean_hook", None) is not None:
        module._input_mean_hook.remove()

    def hook(mod: nn.Module, _inputs: tuple[Tensor, ...], out: Tensor) -> Tensor:
        return out - F.linear(mean, mod.weight)

    module._input_mean_hook = module.register_forward_hook(hook)


def discard_generated_files(model: nn.Module) -> None:
    """Remove the files PyG generated for ``model``'s message-passing classes (see the module
    docstring). The imported modules do not need them: their code is compiled and their source
    is kept in ``linecache`` (with no mtime, so ``linecache.checkcache`` keeps it), which is
    where tracebacks, ``inspect.getsource`` and TorchScript read it. Another process builds
    (and removes) its own."""
    for module in model.modules():
        if not isinstance(module, MessagePassing):
            continue
        prefix = f"{type(module).__module__}_{type(module).__name__}"
        for name in (f"{prefix}_propagate", f"{prefix}_edge_updater"):
            path = getattr(sys.modules.get(name), "__file__", None)
            # Only PyG's own temp file: <name>_<random>.py (module_from_template).
            if not path or not os.path.basename(path).startswith(f"{name}_"):
                continue
            try:
                with open(path, encoding="utf-8") as fh:
                    source = fh.read()
            except OSError:
                continue  # already removed (by an earlier model of this class)
            lines = source.splitlines(keepends=True)
            linecache.cache[path] = (len(source), None, lines, path)
            try:
                os.remove(path)
            except OSError:
                pass


def symmetric_spmm(adj: Tensor, h: Tensor) -> Tensor:
    """``adj @ h`` for a symmetric sparse CSR ``adj`` (see :class:`_SymmetricSpmm`)."""
    return _SymmetricSpmm.apply(adj, h)


class SymmetricGCNConv(GCNConv):
    """PyG's ``GCNConv`` (same parameters and forward) whose propagation over a sparse CSR
    adjacency uses :func:`symmetric_spmm`; ``edge_index`` inputs go through PyG unchanged."""

    def message_and_aggregate(self, adj_t, x: Tensor) -> Tensor:  # type: ignore[override]
        if isinstance(adj_t, Tensor) and adj_t.layout == torch.sparse_csr:
            return symmetric_spmm(adj_t, x)
        return super().message_and_aggregate(adj_t, x)


class GCN(nn.Module):
    """Two GCNConv layers (Kipf & Welling).

    It takes the weighted CSR adjacency (``sparse_adjacency``) and propagates with one
    sparse-dense product, the same result as with ``edge_index`` and weights but faster on
    large graphs. Training hands both layers the normalised matrix once
    (:meth:`use_normalized`); a model given a raw graph instead normalises it itself and
    caches it (``cached=True``): training is full-batch and transductive, so one model
    instance only ever sees one graph. Do not reuse a trained instance on another graph.
    """

    uses_edges = True
    uses_edge_weight = True
    sparse_adjacency = True

    def __init__(self, in_dim: int, hidden: int, num_classes: int, dropout: float) -> None:
        super().__init__()
        self.conv1 = SymmetricGCNConv(in_dim, hidden, cached=True)
        self.conv2 = SymmetricGCNConv(hidden, num_classes, cached=True)
        self.dropout = dropout
        self._normalized: Tensor | None = None
        discard_generated_files(self)

    def center_inputs(self, mean: Tensor) -> None:
        """Compute on ``x - mean`` from now on (see the module docstring)."""
        _subtract_projected_mean(self.conv1.lin, mean)

    def use_normalized(self, adj: Tensor) -> None:
        """Take ``adj`` = ``D^-1/2 (A + I) D^-1/2`` (:func:`ldpgraph.server.adjacency.
        gcn_adjacency`) as both layers' cached normalisation, so neither normalises the graph
        it is given: one copy of the matrix for both layers instead of one each, and none of
        ``gcn_norm``'s int64 transients (at 10^7 nodes the difference between fitting in
        memory and not). The same matrix ``gcn_norm`` would cache, so the same logits."""
        self._normalized = adj
        for conv in (self.conv1, self.conv2):
            conv._cached_edge_index = (adj, None)

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        if self._normalized is not None:
            # Set again each call: GCNConv.reset_parameters() empties its cache, and the
            # layer would then normalise the normalised matrix (self-loops twice).
            for conv in (self.conv1, self.conv2):
                conv._cached_edge_index = (self._normalized, None)
        h = self.conv1(x, edge_index, edge_weight).relu()
        h = F.dropout(h, p=self.dropout, training=self.training)
        return self.conv2(h, edge_index, edge_weight)


class MeanSAGEConv(nn.Module):
    """GraphSAGE layer with mean aggregation: ``lin_l(mean_{j in N(i)} x_j) + lin_r(x_i)``.

    The same function and parameters as PyG's ``SAGEConv(aggr="mean")`` (``lin_l`` with bias,
    ``lin_r`` without), computed in the cheaper order: mean aggregation is linear, so
    ``lin_l(mean(x)) = mean(x @ W_l^T) + b``, and projecting first moves ``out_dim``-wide rows
    along the edges instead of full-width feature rows (Facebook page-page: 4714 columns to 16,
    28x faster per epoch). ``x`` may be a sparse CSR tensor (bag-of-words features).
    ``adj`` is the symmetric CSR adjacency; isolated nodes aggregate to zero, as in PyG.
    """

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.lin_l = nn.Linear(in_dim, out_dim, bias=True)
        self.lin_r = nn.Linear(in_dim, out_dim, bias=False)
        self.input_mean: Tensor | None = None

    def _project(self, x: Tensor, weight: Tensor) -> Tensor:
        """``x Wᵀ``, or ``(x - input_mean) Wᵀ`` once :attr:`input_mean` is set."""
        out = F.linear(x, weight)
        return out if self.input_mean is None else out - F.linear(self.input_mean, weight)

    def forward(self, x: Tensor, adj: Tensor) -> Tensor:
        degree = adj.crow_indices().diff().to(torch.float32).clamp_(min=1.0).unsqueeze(1)
        neighbours = symmetric_spmm(adj, self._project(x, self.lin_l.weight)) / degree
        return neighbours + self.lin_l.bias + self._project(x, self.lin_r.weight)


class GraphSAGE(nn.Module):
    """Two mean-aggregation GraphSAGE layers (Hamilton et al.), see :class:`MeanSAGEConv`.

    Needs the CSR adjacency (``sparse_adjacency``): one sparse-dense product per layer.
    Edge weights are not part of GraphSAGE and are ignored.
    """

    uses_edges = True
    uses_edge_weight = False
    sparse_adjacency = True

    def __init__(self, in_dim: int, hidden: int, num_classes: int, dropout: float) -> None:
        super().__init__()
        self.conv1 = MeanSAGEConv(in_dim, hidden)
        self.conv2 = MeanSAGEConv(hidden, num_classes)
        self.dropout = dropout

    def center_inputs(self, mean: Tensor) -> None:
        """Compute on ``x - mean`` from now on (see the module docstring)."""
        self.conv1.input_mean = mean

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        h = self.conv1(x, edge_index).relu()
        h = F.dropout(h, p=self.dropout, training=self.training)
        return self.conv2(h, edge_index)


class GAT(nn.Module):
    """Two GATConv layers (Velickovic et al.): ``heads`` concatenated heads, then one head.

    Edge weights are not part of GAT (it learns its own) and are ignored.
    """

    uses_edges = True
    uses_edge_weight = False
    sparse_adjacency = False

    def __init__(
        self, in_dim: int, hidden: int, num_classes: int, dropout: float, heads: int
    ) -> None:
        super().__init__()
        self.conv1 = GATConv(in_dim, hidden, heads=heads, concat=True)
        self.conv2 = GATConv(hidden * heads, num_classes, heads=1, concat=False)
        self.dropout = dropout
        discard_generated_files(self)

    def center_inputs(self, mean: Tensor) -> None:
        """Compute on ``x - mean`` from now on (see the module docstring)."""
        _subtract_projected_mean(self.conv1.lin, mean)

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        h = self.conv1(x, edge_index).relu()
        h = F.dropout(h, p=self.dropout, training=self.training)
        return self.conv2(h, edge_index)


class MLP(nn.Module):
    """Two linear layers on the features alone: the floor that tells whether edges help."""

    uses_edges = False
    uses_edge_weight = False
    sparse_adjacency = False

    def __init__(self, in_dim: int, hidden: int, num_classes: int, dropout: float) -> None:
        super().__init__()
        self.lin1 = nn.Linear(in_dim, hidden)
        self.lin2 = nn.Linear(hidden, num_classes)
        self.dropout = dropout

    def center_inputs(self, mean: Tensor) -> None:
        """Compute on ``x - mean`` from now on (see the module docstring)."""
        _subtract_projected_mean(self.lin1, mean)

    def forward(
        self, x: Tensor, edge_index: Tensor | None = None, edge_weight: Tensor | None = None
    ) -> Tensor:
        h = self.lin1(x).relu()
        h = F.dropout(h, p=self.dropout, training=self.training)
        return self.lin2(h)


def build_model(
    name: str,
    in_dim: int,
    num_classes: int,
    hidden: int = 16,
    dropout: float = 0.5,
    heads: int = 4,
) -> torch.nn.Module:
    """Build one of :data:`MODELS`, freshly initialised from torch's global RNG.

    Callers that need reproducible weights seed inside ``torch.random.fork_rng`` (as
    :func:`ldpgraph.server.training.train_and_evaluate` does). ``heads`` is used by GAT only.
    """
    key = name.lower() if isinstance(name, str) else name
    if key not in MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of: {', '.join(MODELS)}")
    if in_dim < 1 or num_classes < 1 or hidden < 1 or heads < 1:
        raise ValueError(
            "in_dim, num_classes, hidden and heads must be positive, got "
            f"in_dim={in_dim}, num_classes={num_classes}, hidden={hidden}, heads={heads}"
        )
    if not 0.0 <= dropout < 1.0:
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")
    if key == "gcn":
        return GCN(in_dim, hidden, num_classes, dropout)
    if key == "sage":
        return GraphSAGE(in_dim, hidden, num_classes, dropout)
    if key == "gat":
        return GAT(in_dim, hidden, num_classes, dropout, heads)
    return MLP(in_dim, hidden, num_classes, dropout)
