"""Full-batch transductive node classification on a (released) graph.

This is the training protocol of the HoGS paper (Section V-A, Experimental Setup): Adam,
cross-entropy on the training nodes, up to ``epochs`` epochs; after every epoch the model is
evaluated (no dropout) and the epoch with the best validation accuracy is kept (ties go to the
earliest such epoch). Its test accuracy, measured against the true labels of the test nodes,
is the reported result. Epochs are numbered from 1: epoch ``e`` is the model after ``e``
optimiser steps.

Randomness is explicit: weights and dropout masks come from ``stage_seed(seed, "train")``
inside ``torch.random.fork_rng``, so one seed gives bit-identical results on CPU and the
caller's global torch RNG state is left exactly as it was.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from ldpgraph.protocols.progress import stage, steps
from ldpgraph.protocols.rng import stage_seed
from ldpgraph.protocols.torch_env import cpu_threads, resolve_device
from ldpgraph.server.adjacency import gcn_adjacency
from ldpgraph.server.choices import MODELS, SELECTIONS
from ldpgraph.server.models import build_model
from ldpgraph.server.tensors import (  # noqa: F401  (re-exported: their old home)
    SPARSE_FEATURES_MAX_DENSITY,
    SplitLike,
    center_columns,
    column_means,
    feature_tensor,
    graph_tensors,
    mostly_zero,
    row_normalize,
    validate_inputs,
    validate_split,
)


@dataclass
class TrainConfig:
    """Hyper-parameters of one training run (the HoGS paper's grid, Section V-A, sweeps these).

    ``selection`` picks the reported epoch (see :data:`SELECTIONS`). ``normalize_features``
    divides every feature row by its sum first (PyG's ``NormalizeFeatures``; Blink_GNN's input).
    ``center_features`` then subtracts every column's mean over all nodes: the 1-bit
    mechanism's reports (and their reconstruction) are dense with a common level near
    1/(e^ε_f+1), so with thousands of columns one Adam step moves each first-layer output by
    about d·mean·lr and the model can lock onto one class (Facebook page-page, HoGS at ε = 4,
    δ = 0.1: 31 % raw, 74 % centred). Post-processing of the release: it spends no budget.
    ``patience=None`` trains all ``epochs`` (the paper's protocol); an integer stops once that
    many epochs pass without a new best validation accuracy, which saves time in large sweeps
    and cannot change which epoch is selected among those that were run.
    """

    model: str = "gcn"
    lr: float = 0.01
    weight_decay: float = 5e-4
    dropout: float = 0.5
    epochs: int = 300
    hidden: int = 16
    heads: int = 4
    patience: int | None = None
    selection: str = "val_acc"
    normalize_features: bool = False
    center_features: bool = False

    def validate(self) -> None:
        """Raise ValueError on settings that would silently train nonsense."""
        if self.model.lower() not in MODELS:
            raise ValueError(f"unknown model {self.model!r}; choose one of: {', '.join(MODELS)}")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be positive and finite, got {self.lr}")
        if not (self.weight_decay >= 0 and math.isfinite(self.weight_decay)):
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.epochs < 1:
            raise ValueError(f"epochs must be >= 1, got {self.epochs}")
        if self.hidden < 1 or self.heads < 1:
            raise ValueError(f"hidden and heads must be >= 1, got {self.hidden}, {self.heads}")
        if self.selection not in SELECTIONS:
            raise ValueError(
                f"selection must be one of {', '.join(SELECTIONS)}, got {self.selection!r}"
            )
        if self.patience is not None and self.patience < 1:
            raise ValueError(f"patience must be None or >= 1, got {self.patience}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> TrainConfig:
        """The training settings among ``values`` (e.g. a run's whole configuration): each
        field of this class that ``values`` names, by the same name; the rest keep their
        defaults. So a run's configuration never copies the training fields one by one."""
        return cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})


def train_and_evaluate(
    edges: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    split: SplitLike,
    config: TrainConfig,
    seed: int,
    device: str | torch.device | None = None,
    edge_weight: np.ndarray | None = None,
    progress: Callable[[int, float], None] | None = None,
    *,
    num_classes: int | None = None,
    num_threads: int | None = None,
) -> dict[str, Any]:
    """Train ``config.model`` on the graph ``(edges, x)`` and evaluate it on the true labels.

    ``edges`` is the undirected ``[m, 2]`` edge array of :class:`ldpgraph.protocols.graph.Graph`
    (each edge once, ``u < v``); ``x`` is ``[n, d]`` uint8/bool/float; ``y`` holds the true
    int labels ``[n]``; ``split`` has index arrays ``train``/``val``/``test``. ``edge_weight``
    (aligned with ``edges``, non-negative) is used by GCN; the other models ignore it with a
    warning. ``num_classes`` defaults to ``y.max() + 1``. ``progress(epoch, val_acc)`` is called
    after every epoch.

    ``num_threads`` sets torch's CPU threads for this call only (restored afterwards; torch's
    setting is process-wide, so do not train concurrently in threads of one process). ``None``
    uses one thread for small inputs, where more threads only add synchronisation and, on a
    busy machine, spin-wait on each other (5x slower tests), and leaves torch's setting alone
    otherwise. On Cora and the tests' graphs, 1 and 2 threads gave identical results, but torch
    does not promise that for every kernel: pin ``num_threads`` where bitwise equality across
    machines matters.

    Returns ``val_acc``, ``test_acc`` and ``train_acc`` (floats in [0, 1], all at the selected
    epoch; ``test_acc`` is NaN for an empty test set), ``val_loss`` (validation cross-entropy
    at that epoch), ``collapsed``, ``top_class_share`` and ``majority_rate`` (see
    :func:`collapse_check`), ``best_epoch`` (1-based), ``epochs_run``,
    ``train_seconds`` (the training loop, evaluation included), ``device`` and ``model``.
    """
    # Long on purpose: one training loop whose random draws must run in this order (the
    # seeded fingerprint tests hold it); helpers would only pass its state around.
    config.validate()
    model_name = config.model.lower()
    dev = resolve_device(device)
    x_np, y_np, edges_np, w_np, n_classes = validate_inputs(edges, x, y, edge_weight, num_classes)
    n = x_np.shape[0]
    train_idx, val_idx, test_idx = validate_split(split, n)

    torch_seed = stage_seed(seed, "train")
    cuda_devices = list(range(torch.cuda.device_count())) if dev.type == "cuda" else []
    threads = num_threads
    if threads is None and dev.type == "cpu" and x_np.size + 2 * edges_np.shape[0] < _SMALL:
        threads = 1
    with cpu_threads(threads), torch.random.fork_rng(devices=cuda_devices):
        # Seed only the generators this run uses: torch.manual_seed would also reseed CUDA
        # (and other accelerators) behind fork_rng's back when training on the CPU.
        torch.default_generator.manual_seed(torch_seed)
        if cuda_devices:
            torch.cuda.manual_seed_all(torch_seed)
        model = build_model(
            model_name,
            in_dim=x_np.shape[1],
            num_classes=n_classes,
            hidden=config.hidden,
            dropout=config.dropout,
            heads=config.heads,
        ).to(dev)
        if w_np is not None and not model.uses_edge_weight:
            warnings.warn(
                f"model {model_name!r} does not use edge weights; training on the unweighted graph",
                stacklevel=2,
            )
            w_np = None

        if config.normalize_features:
            x_np = row_normalize(x_np)
        sparse_x = mostly_zero(x_np)
        if config.center_features and sparse_x:
            # Sparse true features (bag-of-words) stay sparse: the model subtracts the projected
            # column means after its first projection, O(nnz) instead of O(n d).
            model.center_inputs(torch.tensor(column_means(x_np), dtype=torch.float32, device=dev))
        elif config.center_features:
            x_np = center_columns(x_np)
        x_t = feature_tensor(x_np, dev, sparse=sparse_x)
        y_t = torch.tensor(y_np, dtype=torch.int64, device=dev)
        adj, w_t = _graph(model, edges_np, w_np, n, dev)
        del edges_np, w_np  # the caller's arrays: nothing here needs them any more
        idx = {
            name: torch.tensor(arr, dtype=torch.int64, device=dev)
            for name, arr in (("train", train_idx), ("val", val_idx), ("test", test_idx))
        }
        y_train = y_t[idx["train"]]
        optimizer = torch.optim.Adam(
            model.parameters(), lr=config.lr, weight_decay=config.weight_decay
        )

        # (epoch, val, test, train correct counts, validation loss, the count of the most
        # predicted class on the evaluated nodes) of the selected epoch
        best: tuple[int, int, int, int, float, int] | None = None
        idx["eval"] = idx["test"] if len(test_idx) else idx["val"]
        by_loss = config.selection == "val_loss"
        epochs_run = 0
        _sync(dev)
        start = time.perf_counter()
        for epoch in steps(range(1, config.epochs + 1), f"training {model_name}: epoch"):
            model.train()
            optimizer.zero_grad(set_to_none=True)
            out = model(x_t, adj, w_t)
            loss = F.cross_entropy(out[idx["train"]], y_train)
            loss.backward()
            optimizer.step()
            epochs_run = epoch

            val_c, test_c, train_c, val_loss, top_c = _correct_counts(
                model, x_t, adj, w_t, y_t, idx, n_classes
            )
            if best is None or (val_loss < best[4] if by_loss else val_c > best[1]):
                best = (epoch, val_c, test_c, train_c, val_loss, top_c)
            if progress is not None:
                progress(epoch, val_c / len(val_idx))
            if config.patience is not None and epoch - best[0] >= config.patience:
                break
        _sync(dev)
        seconds = time.perf_counter() - start

    assert best is not None  # epochs >= 1
    eval_idx = test_idx if len(test_idx) else val_idx
    collapse = collapse_check(
        best[1] / len(val_idx), best[5] / len(eval_idx), y_np[val_idx], y_np[eval_idx]
    )
    return {
        **collapse,
        "val_acc": best[1] / len(val_idx),
        "test_acc": best[2] / len(test_idx) if len(test_idx) else float("nan"),
        "train_acc": best[3] / len(train_idx),
        "val_loss": best[4],
        "best_epoch": best[0],
        "epochs_run": epochs_run,
        "train_seconds": seconds,
        "device": str(dev),
        "model": model_name,
        "selection": config.selection,
    }


def _graph(
    model: torch.nn.Module,
    edges: np.ndarray,
    weight: np.ndarray | None,
    n: int,
    dev: torch.device,
) -> tuple[Tensor | None, Tensor | None]:
    """The graph as ``model`` takes it: nothing for the MLP, GCN's normalised CSR adjacency
    handed to its layers (:meth:`ldpgraph.server.models.GCN.use_normalized`), else
    :func:`graph_tensors`. Said as a stage: at 10^7 nodes building it takes a while."""
    if not model.uses_edges:
        return None, None
    stage(f"training: the graph's adjacency ({edges.shape[0]} edges, {n} nodes)")
    if hasattr(model, "use_normalized"):
        adj = gcn_adjacency(edges, n, dev, weight)
        model.use_normalized(adj)
        return adj, None
    return graph_tensors(edges, weight, n, dev, sparse=model.sparse_adjacency)


#: A model that gives one class to at least this share of the test nodes has collapsed
#: (unless the true labels are that skewed too) ...
COLLAPSE_SHARE = 0.95
#: ... as has one whose validation accuracy is at most this far above the majority-class rate.
COLLAPSE_MARGIN = 0.01


def collapse_check(
    val_acc: float, top_share: float, y_val: np.ndarray, y_eval: np.ndarray
) -> dict[str, Any]:
    """Whether training collapsed onto (about) one class: at the selected epoch the model
    predicts one class for at least :data:`COLLAPSE_SHARE` of the evaluated nodes (the test
    nodes, or the validation nodes without a test set) while the true labels are less skewed,
    or its validation accuracy is within :data:`COLLAPSE_MARGIN` of the majority-class rate
    (the accuracy of always predicting the validation set's most common class). Returns
    ``collapsed``, ``top_class_share`` (that predicted share) and ``majority_rate``."""

    def top(y: np.ndarray) -> float:
        return float(np.bincount(y).max() / y.size) if y.size else 1.0

    majority = top(np.asarray(y_val))
    collapsed = (top_share >= COLLAPSE_SHARE and top(np.asarray(y_eval)) < COLLAPSE_SHARE) or (
        majority < 1.0 and val_acc <= majority + COLLAPSE_MARGIN
    )
    return {
        "collapsed": bool(collapsed),
        "top_class_share": float(top_share),
        "majority_rate": majority,
    }


#: Below this many feature entries plus directed edges, one CPU thread is fastest (Cora, at
#: 3.9M feature entries, still gains from a second core on an idle machine).
_SMALL = 1 << 20


@torch.no_grad()
def _correct_counts(
    model: torch.nn.Module,
    x: Tensor,
    adj: Tensor,
    edge_weight: Tensor | None,
    y: Tensor,
    idx: dict[str, Tensor],
    num_classes: int,
) -> tuple[int, int, int, float, int]:
    """Correct predictions on val, test and train, the validation loss and the count of the
    most predicted class on the ``eval`` nodes, in one host transfer (one GPU sync)."""
    model.eval()
    logits = model(x, adj, edge_weight)
    pred = logits.argmax(dim=1)
    hits = pred == y
    counts = torch.stack([hits[idx[k]].sum().double() for k in ("val", "test", "train")])
    val_loss = F.cross_entropy(logits[idx["val"]], y[idx["val"]]).double().reshape(1)
    top = torch.bincount(pred[idx["eval"]], minlength=num_classes).max().double().reshape(1)
    val_c, test_c, train_c, loss, top_c = torch.cat([counts, val_loss, top]).tolist()
    return int(val_c), int(test_c), int(train_c), float(loss), int(top_c)


def _sync(dev: torch.device) -> None:
    """Wait for queued GPU work so wall-clock timings measure the work, not the queueing."""
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
