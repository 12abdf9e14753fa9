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
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from typing import Any, Protocol

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.utils import to_torch_csr_tensor

from ldpgraph.protocols.rng import stage_seed
from ldpgraph.server.choices import MODELS, SELECTIONS
from ldpgraph.server.models import build_model


class SplitLike(Protocol):
    """Anything with integer index arrays ``train``, ``val`` and ``test`` (duck-typed)."""

    train: Sequence[int] | np.ndarray
    val: Sequence[int] | np.ndarray
    test: Sequence[int] | np.ndarray


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


def resolve_device(device: str | torch.device | None) -> torch.device:
    """``None`` means the GPU when one is present, else the CPU."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {str(dev)!r} requested but CUDA is not available")
    return dev


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
    config.validate()
    model_name = config.model.lower()
    dev = resolve_device(device)
    x_np, y_np, edges_np, w_np, n_classes = _validate_inputs(edges, x, y, edge_weight, num_classes)
    n = x_np.shape[0]
    train_idx, val_idx, test_idx = _validate_split(split, n)

    torch_seed = stage_seed(seed, "train")
    cuda_devices = list(range(torch.cuda.device_count())) if dev.type == "cuda" else []
    threads = num_threads
    if threads is None and dev.type == "cpu" and x_np.size + 2 * edges_np.shape[0] < _SMALL:
        threads = 1
    with _cpu_threads(threads), torch.random.fork_rng(devices=cuda_devices):
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
        sparse_x = _mostly_zero(x_np)
        if config.center_features and sparse_x:
            # Sparse true features (bag-of-words) stay sparse: the model subtracts the projected
            # column means after its first projection, O(nnz) instead of O(n d).
            model.center_inputs(torch.tensor(column_means(x_np), dtype=torch.float32, device=dev))
        elif config.center_features:
            x_np = center_columns(x_np)
        x_t = _feature_tensor(x_np, dev, sparse=sparse_x)
        y_t = torch.tensor(y_np, dtype=torch.int64, device=dev)
        adj, w_t = _graph_tensors(edges_np, w_np, n, dev, sparse=model.sparse_adjacency)
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
        for epoch in range(1, config.epochs + 1):
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


@contextmanager
def _cpu_threads(threads: int | None) -> Iterator[None]:
    """Run the block with ``threads`` torch CPU threads, then restore the previous setting."""
    if threads is None:
        yield
        return
    if threads < 1:
        raise ValueError(f"num_threads must be >= 1, got {threads}")
    previous = torch.get_num_threads()
    if threads == previous:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


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
    offset into the first layer."""
    x = np.asarray(x, dtype=np.float32)
    return x - column_means(x)[None, :]


#: Features with at most this fraction of non-zero entries go to the models as sparse CSR.
SPARSE_FEATURES_MAX_DENSITY = 0.1


def _mostly_zero(x: np.ndarray) -> bool:
    """Whether ``x`` goes to the models as sparse CSR (see :data:`SPARSE_FEATURES_MAX_DENSITY`)."""
    return bool(x.size) and np.count_nonzero(x) <= SPARSE_FEATURES_MAX_DENSITY * x.size


def _feature_tensor(x: np.ndarray, dev: torch.device, sparse: bool | None = None) -> Tensor:
    """``x`` as float32: sparse CSR when mostly zeros (bag-of-words), else dense.
    ``sparse`` passes in :func:`_mostly_zero` when the caller has computed it already.

    The first layer's projection dominates training on wide bag-of-words inputs (Facebook
    page-page: 22470 x 4714 at 0.3 % non-zero); as CSR it costs O(nnz) instead of O(n d). The
    models compute the same function either way (floating-point summation order aside). Dense
    inputs (the 1-bit mechanism's reports, reconstructed features) stay dense.
    """
    if sparse is None:
        sparse = _mostly_zero(x)
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
    # torch.tensor copies, so read-only or strided numpy inputs need no special care.
    return torch.tensor(x, dtype=torch.float32, device=dev)


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


def _graph_tensors(
    edges: np.ndarray,
    edge_weight: np.ndarray | None,
    n: int,
    dev: torch.device,
    sparse: bool,
) -> tuple[Tensor, Tensor | None]:
    """PyG's both-directions ``edge_index`` (and weights), or a symmetric CSR adjacency."""
    both = np.concatenate([edges, edges[:, ::-1]], axis=0).T
    edge_index = torch.tensor(both, dtype=torch.int64, device=dev)
    weight = None
    if edge_weight is not None:
        w = np.concatenate([edge_weight, edge_weight]).astype(np.float32)
        weight = torch.tensor(w, device=dev)
    if not sparse:
        return edge_index, weight
    # The graph is symmetric, so the adjacency equals its transpose (PyG's adj_t).
    with warnings.catch_warnings():
        # torch flags CSR support as beta and sparse invariant checks as off, once per process.
        warnings.filterwarnings("ignore", message=".*[Ss]parse.*", category=UserWarning)
        adj = to_torch_csr_tensor(edge_index, weight, size=(n, n))
    return adj, None


def _validate_inputs(
    edges: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    edge_weight: np.ndarray | None,
    num_classes: int | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, int]:
    """Check shapes, ranges and the canonical edge form; return normalised arrays."""
    x = np.asarray(x)
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"x must be a non-empty 2-D [n, d] array, got shape {x.shape}")
    if x.dtype == np.bool_:
        x = x.astype(np.uint8)
    if not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)):
        raise ValueError(f"x must be numeric, got dtype {x.dtype}")
    if np.issubdtype(x.dtype, np.floating) and not np.isfinite(x).all():
        raise ValueError("x contains NaN or infinite values")
    n = x.shape[0]

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
        if np.unique(edges[:, 0] * n + edges[:, 1]).size != edges.shape[0]:
            raise ValueError("edges contain duplicate rows")

    if edge_weight is not None:
        edge_weight = np.asarray(edge_weight, dtype=np.float64)
        if edge_weight.shape != (edges.shape[0],):
            raise ValueError(
                f"edge_weight must have shape ({edges.shape[0]},) to match edges, "
                f"got {edge_weight.shape}"
            )
        if not np.isfinite(edge_weight).all() or (edge_weight < 0).any():
            raise ValueError("edge_weight must be finite and non-negative")
    return x, y, edges, edge_weight, num_classes


def _validate_split(split: SplitLike, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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


def _sync(dev: torch.device) -> None:
    """Wait for queued GPU work so wall-clock timings measure the work, not the queueing."""
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
