"""What full-batch training of a release will cost, said before it starts.

Training is full-batch on every device (:mod:`ldpgraph.server.training`): on a GPU a 10^6-node
release trains in seconds, on two CPU cores it can take an hour. So before training a large
release the run says what to expect: the memory the tensors and activations take, and the
time per epoch and in all, from a count of the model's floating-point work (dense projections
and sparse propagations, forward, backward and the evaluation pass) divided by this machine's
measured rates for a dense and a sparse-dense product (a ~0.1 s calibration, once per process).
It is an estimate (within 1.6x of the epochs measured on the 2-core development machine, GCN,
SAGE, GAT and MLP from 3·10^4 to 10^5 nodes); what the run then takes is recorded as
``timings.train``.
"""

from __future__ import annotations

import functools
import time
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from ldpgraph.server.training import SPARSE_FEATURES_MAX_DENSITY, TrainConfig

#: Releases from this many nodes on ...
LARGE_NODES = 100_000
#: ... or with this many directed edges plus stored feature entries get an estimate.
LARGE_ENTRIES = 20_000_000
#: One epoch: the training forward pass, its backward (about twice the forward) and the
#: evaluation forward pass.
PASSES_PER_EPOCH = 4
#: A sparse (bag-of-words) input costs this much more than its forward product: the backward
#: multiplies by its transpose.
_SPARSE_INPUT = 2.0
#: What the counted work leaves out (autograd, the optimiser, Python): measured epochs over the
#: count, on the 2-core development machine (GCN, SAGE, GAT, MLP on 3·10^4 to 10^5 nodes;
#: steady-state epochs over the estimate: 0.6 to 1.5).
_OVERHEAD = 1.5
#: Reads and writes of every activation entry in one pass by the elementwise operations.
_TOUCHES = 12
#: float32 activations kept per node and output column of a layer for the backward pass
#: (projection, propagation, ReLU, dropout and their gradients).
_ACTIVATION_COPIES = 6


@dataclass(frozen=True)
class TrainingCost:
    """The estimate for one training run (see the module docstring)."""

    nodes: int
    edges: int
    model: str
    device: str
    epochs: int
    memory_bytes: int
    seconds_per_epoch: float

    @property
    def seconds(self) -> float:
        return self.seconds_per_epoch * self.epochs

    def describe(self) -> str:
        return (
            f"full-batch {self.model} on {self.nodes:,} nodes / {self.edges:,} edges on the "
            f"{self.device}: about {_size(self.memory_bytes)} and "
            f"{_duration(self.seconds_per_epoch)} per epoch, {_duration(self.seconds)} for "
            f"{self.epochs} epochs (an estimate)"
        )


def is_large(nodes: int, edges: int, feature_entries: int) -> bool:
    """Whether a release is large enough to say what training it will cost."""
    return nodes >= LARGE_NODES or 2 * edges + feature_entries >= LARGE_ENTRIES


def estimate(
    nodes: int,
    edges: int,
    x: np.ndarray,
    config: TrainConfig,
    num_classes: int,
    device: str | torch.device = "cpu",
    nonzero: int | None = None,
) -> TrainingCost:
    """The memory and time of training ``config.model`` full-batch on a release.

    Args:
        nodes: nodes of the release.
        edges: undirected edges of the release.
        x: its feature matrix (for its shape and how many entries are non-zero).
        config: the training settings (model, hidden, heads, epochs).
        num_classes: output classes.
        device: where training runs; the rates are measured there.
        nonzero: the non-zero entries of ``x`` when the caller has counted them.
    """
    dev = torch.device(device)
    n, d = int(nodes), int(np.asarray(x).shape[1])
    nnz = int(np.count_nonzero(x)) if nonzero is None else int(nonzero)
    sparse_x = nnz <= SPARSE_FEATURES_MAX_DENSITY * n * d
    e = 2 * int(edges)  # directed
    h, c, heads = int(config.hidden), int(num_classes), int(config.heads)
    model = config.model.lower()
    width = {"gcn": h, "mlp": h, "sage": 2 * h, "gat": heads * h}[model]
    dense = 2.0 * n * width * c * (2 if model == "sage" else 1)
    sparse = 0.0
    if sparse_x:  # and the backward's product with its transpose, about as much again
        sparse += _SPARSE_INPUT * 2.0 * nnz * width
    else:
        dense += 2.0 * n * d * width
    if model == "gcn":
        sparse += 2.0 * (e + n) * (h + c)
    elif model == "sage":
        sparse += 2.0 * e * (h + c)
    elif model == "gat":
        sparse += 2.0 * (e + n) * (heads * h + c) + 20.0 * (e + n) * (heads + 1)
    # Bytes the elementwise work moves (bias, ReLU, dropout, normalisation, loss, and for
    # GAT the per-edge attention and the gathered messages).
    moved = _TOUCHES * 4.0 * n * (width + c)
    if model == "gat":
        moved += _TOUCHES * 4.0 * (e + n) * (heads + 1) + 6 * 4.0 * (e + n) * (heads * h + c)
    dense_rate, sparse_rate, bandwidth = _rates(dev.type, torch.get_num_threads())
    work = dense / dense_rate + sparse / sparse_rate + moved / bandwidth
    per_epoch = _OVERHEAD * PASSES_PER_EPOCH * work

    memory = _memory_bytes(model, n, d, nnz if sparse_x else None, e, width, c, heads)
    return TrainingCost(
        nodes=n,
        edges=int(edges),
        model=model,
        device=str(dev) if dev.type != "cpu" else "CPU",
        epochs=int(config.epochs),
        memory_bytes=int(memory),
        seconds_per_epoch=float(per_epoch),
    )


def notice(
    nodes: int,
    edges: int,
    x: np.ndarray,
    config: TrainConfig,
    num_classes: int,
    device: str | torch.device = "cpu",
) -> str | None:
    """What to tell the user before training a large release (None for a small one): on the
    CPU the estimated memory and time; on a GPU only a warning when the estimate does not fit
    its memory (full-batch training there takes seconds)."""
    x = np.asarray(x)
    nnz = int(np.count_nonzero(x))
    if not is_large(nodes, edges, nnz):
        return None
    dev = torch.device(device)
    cost = estimate(nodes, edges, x, config, num_classes, dev, nonzero=nnz)
    if dev.type == "cuda":
        total = torch.cuda.get_device_properties(dev).total_memory
        if cost.memory_bytes <= 0.9 * total:
            return None
        return (
            f"training will need about {_size(cost.memory_bytes)} on {dev}, which has "
            f"{_size(total)}: full-batch training may run out of GPU memory (--device cpu "
            "trains in host memory)"
        )
    return f"training: {cost.describe()}; --device cuda trains on a GPU where there is one"


@functools.lru_cache(maxsize=8)
def _rates(device_type: str, threads: int) -> tuple[float, float, float]:
    """Floating-point operations per second of a dense product and of a sparse-dense product,
    and bytes per second of an elementwise operation, on this machine (the best of three
    tries each, after a warm-up)."""
    dev = torch.device("cuda" if device_type == "cuda" else "cpu")
    gen = torch.Generator().manual_seed(0)
    a = torch.rand(4096, 256, generator=gen).to(dev)
    b = torch.rand(256, 64, generator=gen).to(dev)
    rows, per_row, cols = 1 << 16, 16, 32
    idx = torch.randint(0, rows, (rows * per_row,), generator=gen)
    crow = torch.arange(0, rows * per_row + 1, per_row)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ss]parse.*", category=UserWarning)
        adj = torch.sparse_csr_tensor(crow, idx, torch.rand(idx.numel(), generator=gen),
                                      size=(rows, rows)).to(dev)  # fmt: skip
    h = torch.rand(rows, cols, generator=gen).to(dev)
    big = torch.rand(1 << 22, generator=gen).to(dev)
    out = torch.empty_like(big)

    def best(fn, flops: float) -> float:
        fn()
        times = []
        for _ in range(3):
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            t0 = time.perf_counter()
            fn()
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            times.append(time.perf_counter() - t0)
        return flops / max(min(times), 1e-9)

    dense = best(lambda: a @ b, 2.0 * 4096 * 256 * 64)
    sparse = best(lambda: adj @ h, 2.0 * rows * per_row * cols)
    moved = best(lambda: torch.mul(big, big, out=out), 2.0 * 4 * big.numel())
    return dense, sparse, moved


def _size(nbytes: float) -> str:
    gib = nbytes / 2**30
    return f"{gib:.1f} GiB" if gib >= 1 else f"{nbytes / 2**20:.0f} MiB"


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"


def _memory_bytes(
    model: str, n: int, d: int, nnz: int | None, e: int, width: int, c: int, heads: int
) -> int:
    """Bytes training holds: the feature tensor (sparse when ``nnz`` is given), the graph
    (GCN and SAGE: one CSR adjacency, int32 indices and float32 values, GCN's with its
    self-loops; GAT: edge_index; the MLP: none) and the activations kept for the backward
    pass."""
    memory = (nnz * 12 + 8 * n) if nnz is not None else 4 * n * d  # the feature tensor
    if model == "gcn":
        memory += 8 * (e + n) + 4 * n
    if model == "sage":
        memory += 8 * e + 4 * n
    if model == "gat":
        memory += 16 * e + 16 * (e + n) + _ACTIVATION_COPIES * 4 * (e + n) * (heads + 1)
    memory += _ACTIVATION_COPIES * 4 * n * (width + c)
    return memory
