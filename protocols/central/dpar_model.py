"""DPAR's model and graph pieces (the mechanism is in :mod:`.dpar`, its accounting in
:mod:`.dpar_privacy`): the adjacency helpers, Π's assembly, the column cap that bounds how many
rows one node reaches, the decoupled model f_θ with its closed-form clipped gradient sum, and the
inference power iteration (Eq. 4). torch is imported inside functions (the registry lists
:mod:`.dpar` without importing torch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .appr import ApprNoise


def _adjacency(edges: np.ndarray, n: int) -> sp.csr_matrix:
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    edges = edges[edges[:, 0] != edges[:, 1]]
    rows = np.concatenate([edges[:, 0], edges[:, 1]])
    cols = np.concatenate([edges[:, 1], edges[:, 0]])
    adj = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    adj.data[:] = 1.0
    return adj


def _drop_cross(adj: sp.csr_matrix, side: np.ndarray) -> sp.csr_matrix:
    """``adj`` without the edges between ``side`` and the rest."""
    coo = adj.tocoo()
    same = side[coo.row] == side[coo.col]
    return sp.csr_matrix((coo.data[same], (coo.row[same], coo.col[same])), shape=adj.shape)


def _assemble(
    idx: np.ndarray, val: np.ndarray, seeds: np.ndarray, n: int, mode: str
) -> sp.csr_matrix:
    """Π from the DP rows of ``seeds``: N×N with identity rows elsewhere, or M×N."""
    m, k = idx.shape
    if mode == "exclude":
        rows = np.repeat(np.arange(m), k)
        return sp.csr_matrix((val.ravel(), (rows, idx.ravel())), shape=(m, n))
    others = np.setdiff1d(np.arange(n), seeds)
    rows = np.concatenate([np.repeat(seeds, k), others])
    cols = np.concatenate([idx.ravel(), others])
    data = np.concatenate([val.ravel(), np.ones(others.size)])
    return sp.csr_matrix((data, (rows, cols)), shape=(n, n))


def _own_rows(seeds: np.ndarray, n: int, mode: str) -> np.ndarray:
    """The row of Π that is each node's own (its label: it leaves with the node), or -1: every
    node with ``identity`` rows, only V_M's with ``exclude`` (row r is ``seeds[r]``)."""
    if mode != "exclude":
        return np.arange(n)
    own = np.full(n, -1, dtype=np.int64)
    own[np.asarray(seeds, dtype=np.int64)] = np.arange(len(seeds))
    return own


def column_rows(pi: sp.spmatrix, own: np.ndarray) -> np.ndarray:
    """Per node (column of Π): how many rows its removal moves, its own row counted whether or
    not Π_jj ≠ 0 (the row leaves with its label) plus every other row i with Π_ij ≠ 0."""
    coo = sp.coo_matrix(pi)
    nonzero = coo.data != 0
    other = nonzero & (coo.row != own[coo.col])
    # Every column counts one row more, own row or not: removing a column that no row owns
    # leaves its readers present with x_j zeroed, which a leg of the triangle bound must
    # count as moved too (the D rows it reads are changed, not removed).
    return np.bincount(coo.col[other], minlength=pi.shape[1]) + 1


def cap_column_rows(pi: sp.spmatrix, own: np.ndarray, d_max: int) -> sp.csr_matrix:
    """Π with every column reaching at most ``d_max`` rows (:func:`column_rows`): the node's
    own row is always kept and always counted, of the other entries the ``d_max − 1`` largest
    in |value| stay (ties: the lower row). A node without an own row (``exclude``) keeps
    ``d_max − 1`` too, so one node moves at most C + 2C·(d_max − 1) of the clipped sum.
    Post-processing of the DP-APPR output."""
    if d_max < 1:
        raise ValueError(f"column_rows_cap must be >= 1, got {d_max}")
    coo = sp.coo_matrix(pi)
    keep = coo.data != 0
    row, col, val = coo.row[keep], coo.col[keep], coo.data[keep]
    is_own = row == own[col]
    others = np.flatnonzero(~is_own)
    # Within each column: largest |value| first, then the lower row.
    order = others[np.lexsort((row[others], -np.abs(val[others]), col[others]))]
    sorted_cols = col[order]
    rank = np.arange(order.size) - np.searchsorted(sorted_cols, sorted_cols, side="left")
    kept = is_own.copy()
    kept[order[rank < d_max - 1]] = True
    return sp.csr_matrix((val[kept], (row[kept], col[kept])), shape=pi.shape)


def _padded(pi: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """Per-row neighbour indices and weights, zero-padded to the longest row."""
    pi = sp.csr_matrix(pi)
    lengths = np.diff(pi.indptr)
    width = max(1, int(lengths.max()) if lengths.size else 1)
    idx = np.zeros((pi.shape[0], width), dtype=np.int64)
    w = np.zeros((pi.shape[0], width), dtype=np.float64)
    rows = np.repeat(np.arange(pi.shape[0]), lengths)
    slot = np.arange(pi.nnz) - np.repeat(pi.indptr[:-1], lengths)  # position within its row
    idx[rows, slot] = pi.indices
    w[rows, slot] = pi.data
    return idx, w


def _init_mlp(d: int, hidden: int, classes: int, gen: Any, device: str) -> dict[str, Any]:
    """W1 (d×h), W2 (h×c), uniform ±1/√fan_in (nn.Linear's default bound), no biases [R]."""
    import torch

    def uniform(rows: int, cols: int) -> torch.Tensor:
        bound = 1.0 / math.sqrt(rows)
        u = torch.rand(rows, cols, generator=gen, device=device)
        return (2.0 * u - 1.0) * bound

    return {"w1": uniform(d, hidden), "w2": uniform(hidden, classes)}


def _mask(shape: tuple[int, ...], rate: float, gen: Any, device: str) -> Any:
    """An inverted-dropout mask (kept entries scaled by 1/(1 − rate)) from ``gen``."""
    import torch

    if rate <= 0:
        return torch.ones(shape, device=device)
    keep = torch.rand(shape, generator=gen, device=device) >= rate
    return keep.float() / (1.0 - rate)


def mlp_logits(params: dict[str, Any], x: Any, keep_in: Any = None, keep_h: Any = None) -> Any:
    """f_θ(x) = ReLU(dropout(x)·W1) → dropout → ·W2 (logits)."""
    import torch

    if keep_in is not None:
        x = x * keep_in
    h = torch.relu(x @ params["w1"])
    if keep_h is not None:
        h = h * keep_h
    return h @ params["w2"]


def target_loss(params: dict[str, Any], x: Any, w: Any, y: Any, keep_in: Any, keep_h: Any) -> Any:
    """One target node's loss: cross-entropy of Σ_u Π_vu·f_θ(X_u) (aggregated logits, Eq. 1)
    against its label; ``x`` [K, d] are its neighbours' features, ``w`` [K] their weights."""
    import torch

    agg = (w[:, None] * mlp_logits(params, x, keep_in, keep_h)).sum(0)
    return torch.nn.functional.cross_entropy(agg[None, :], y[None])


def target_clipped_sum(
    params: dict[str, Any], batch: tuple[Any, ...], clip: float
) -> tuple[dict[str, Any], Any]:
    """Σ_i ḡ_i of :func:`target_loss` over a batch in closed form, and the per-target norms.

    Equal to ``dpsgd.generic_clipped_sum(target_loss, ...)`` without materialising B
    gradients of W1 (B·d·h floats, the cost of a step). For target i with neighbours k:
    ∇W2_i = Σ_k h_ik ⊗ δo_ik (small, kept), ∇W1_i = Σ_k a_ik ⊗ δz_ik with a the dropped-out
    input and δz the pre-activation gradient, whose squared norm is Σ_kl (a_ik·a_il)(δz_ik·δz_il)
    (K×K Gram matrices); the clipped sum of ∇W1 is one matmul aᵀ(c·δz) over all B·K rows.
    """
    import torch

    x, w, y, keep_in, keep_h = batch
    w1, w2 = params["w1"], params["w2"]
    a = x * keep_in  # [B, K, d]
    z = a @ w1  # [B, K, h]
    h = torch.relu(z) * keep_h
    agg = (w[..., None] * (h @ w2)).sum(1)  # [B, c]
    d_agg = torch.softmax(agg, dim=1)
    d_agg[torch.arange(y.shape[0], device=y.device), y] -= 1.0
    d_out = w[..., None] * d_agg[:, None, :]  # [B, K, c]
    g2 = torch.einsum("bkh,bkc->bhc", h, d_out)  # per-target ∇W2
    d_z = (d_out @ w2.T) * keep_h * (z > 0)  # [B, K, h]
    sq1 = (torch.einsum("bkd,bld->bkl", a, a) * torch.einsum("bkh,blh->bkl", d_z, d_z)).sum((1, 2))
    norms = (sq1.clamp(min=0.0) + g2.pow(2).sum((1, 2))).sqrt()
    if math.isfinite(clip):
        factor = 1.0 / torch.clamp(norms / clip, min=1.0)
    else:
        factor = torch.ones_like(norms)
    scaled = d_z * factor[:, None, None]
    s1 = a.reshape(-1, a.shape[-1]).T @ scaled.reshape(-1, scaled.shape[-1])
    s2 = torch.einsum("bhc,b->hc", g2, factor)
    return {"w1": s1, "w2": s2}, norms


@dataclass(frozen=True)
class SparseFeatures:
    """Node features as CSR tensors (``indptr``, ``indices``, ``values``; ``d`` columns): a
    DP-SGD step gathers only the nonzero features of its rows (DPAR's datasets are bags of
    words, about 1 % dense), and draws the input dropout only where it can matter (a dropped
    zero stays zero, so the law of a·W1 is the dense mask's)."""

    indptr: Any
    indices: Any
    values: Any
    d: int

    @classmethod
    def of(cls, x: np.ndarray, device: str) -> SparseFeatures:
        import torch

        csr = sp.csr_matrix(np.asarray(x, dtype=np.float32))
        csr.eliminate_zeros()
        return cls(
            torch.as_tensor(csr.indptr.astype(np.int64), device=device),
            torch.as_tensor(csr.indices.astype(np.int64), device=device),
            torch.as_tensor(csr.data.astype(np.float32), device=device),
            int(csr.shape[1]),
        )

    def gather(self, nodes: Any) -> tuple[Any, Any, Any]:
        """For each of ``nodes`` (a slot each): (slot of every nonzero, its feature, its value)."""
        import torch

        starts = self.indptr[nodes]
        lengths = self.indptr[nodes + 1] - starts
        slot = torch.repeat_interleave(torch.arange(nodes.numel(), device=nodes.device), lengths)
        offset = torch.cumsum(lengths, 0) - lengths  # where each slot's run begins
        pos = torch.arange(slot.numel(), device=nodes.device) - offset[slot] + starts[slot]
        return slot, self.indices[pos], self.values[pos]


def sparse_target_batch(
    feats: SparseFeatures, nbr_idx: Any, nbr_w: Any, y: Any, rate: float, hidden: int,
    gen: Any,
) -> tuple[Any, ...]:  # fmt: skip
    """One DP-SGD batch for :func:`sparse_clipped_sum`: the targets' Π entries as slots
    (padding, weight 0, dropped: it adds nothing), every slot's nonzero features with the
    inverted-dropout mask applied, and the hidden layer's mask per slot."""
    import torch

    live = nbr_w != 0
    b = y.shape[0]
    target = torch.arange(b, device=y.device)[:, None].expand_as(nbr_idx)[live]
    nodes, weights = nbr_idx[live], nbr_w[live]
    slot, feat, val = feats.gather(nodes)
    if rate > 0:
        keep = torch.rand(val.shape, generator=gen, device=val.device) >= rate
        val = val * keep.float() / (1.0 - rate)
    keep_h = _mask((nodes.numel(), hidden), rate, gen, str(y.device))
    return target, slot, feat, val, weights, y, keep_h, torch.tensor(feats.d)


def sparse_clipped_sum(
    params: dict[str, Any], batch: tuple[Any, ...], clip: float
) -> tuple[dict[str, Any], Any]:
    """:func:`target_clipped_sum` on a :func:`sparse_target_batch` (equal up to float
    rounding, test_sparse_clipped_sum_equals_the_dense_one): the same per-target gradients,
    with W1's products over the nonzero inputs only (A, slots × d, sparse: z = A·W1 and
    Σ_i c_i·∇W1_i = Aᵀ(c·δz)). Target i's ∇W1 = Σ_k a_ik ⊗ δz_ik: with one slot its squared
    norm is ‖a‖²·‖δz‖²; with several (DP-APPR rows) it is summed over the rows of ∇W1_i,
    found by grouping that target's nonzeros by feature."""
    import torch

    target, slot, feat, val, weights, y, keep_h, d_t = batch
    w1, w2 = params["w1"], params["w2"]
    b, d, n_slots = y.shape[0], int(d_t), weights.shape[0]
    a = torch.sparse_coo_tensor(
        torch.stack([slot, feat]), val, (n_slots, d), check_invariants=False
    )
    z = torch.sparse.mm(a, w1)  # [S, h]
    h = torch.relu(z) * keep_h
    agg = torch.zeros(b, w2.shape[1], dtype=w2.dtype, device=w2.device)
    agg.index_add_(0, target, weights[:, None] * (h @ w2))
    d_agg = torch.softmax(agg, dim=1)
    d_agg[torch.arange(b, device=y.device), y] -= 1.0
    d_out = weights[:, None] * d_agg[target]  # [S, c]
    g2 = torch.zeros(b, *w2.shape, dtype=w2.dtype, device=w2.device)
    g2.index_add_(0, target, h[:, :, None] * d_out[:, None, :])  # per-target ∇W2
    d_z = (d_out @ w2.T) * keep_h * (z > 0)  # [S, h]
    # ‖∇W1_i‖²: one slot: ‖a‖²·‖δz‖²; several: Σ_f ‖Σ_k a_ik[f]·δz_ik‖² over its features.
    per_target = torch.bincount(target, minlength=b)
    a_sq = torch.zeros(n_slots, dtype=val.dtype, device=val.device).index_add_(0, slot, val * val)
    single = per_target[target] == 1
    sq1 = torch.zeros(b, dtype=w1.dtype, device=w1.device)
    sq1.index_add_(0, target[single], a_sq[single] * d_z[single].pow(2).sum(1))
    multi = ~single[slot]
    if multi.any():
        slot_m, feat_m = slot[multi], feat[multi]
        owner = target[slot_m]
        keys, inverse = torch.unique(owner * d + feat_m, return_inverse=True)
        rows = torch.zeros(keys.numel(), w1.shape[1], dtype=w1.dtype, device=w1.device)
        rows.index_add_(0, inverse, val[multi][:, None] * d_z[slot_m])
        sq1.index_add_(0, torch.div(keys, d, rounding_mode="floor"), rows.pow(2).sum(1))
    norms = (sq1 + g2.pow(2).sum((1, 2))).sqrt()
    if math.isfinite(clip):
        factor = 1.0 / torch.clamp(norms / clip, min=1.0)
    else:
        factor = torch.ones_like(norms)
    a_t = torch.sparse_coo_tensor(
        torch.stack([feat, slot]), val, (d, n_slots), check_invariants=False
    )
    s1 = torch.sparse.mm(a_t, d_z * factor[target][:, None])
    s2 = torch.einsum("bhc,b->hc", g2, factor)
    return {"w1": s1, "w2": s2}, norms


def power_iteration(adj: sp.csr_matrix, h: np.ndarray, alpha: float, steps: int) -> np.ndarray:
    """Eq. 4: Q⁽⁰⁾ = H, Q⁽ᵖ⁾ = (1−α)·D⁻¹A·Q⁽ᵖ⁻¹⁾ + α·H (``adj`` with self-loops)."""
    deg = np.asarray(adj.sum(axis=1)).ravel()
    walk = sp.diags(1.0 / np.maximum(deg, 1e-12)) @ adj
    out = h
    for _ in range(steps):
        out = (1.0 - alpha) * (walk @ out) + alpha * h
    return out


# --- what the strategy builds and releases -----------------------------------------------


@dataclass(frozen=True)
class Budgets:
    """Raw budgets on G (before the q′ amplification), split between the two phases."""

    eps_raw: float
    delta_raw: float
    eps_pr: float
    delta_pr: float
    eps_sgd: float
    delta_sgd: float


@dataclass(frozen=True)
class Structure:
    """What :meth:`Dpar.structure` builds before training: the labels, the training mask, who
    is present, the inductive adjacency, the kept slots (and which hold data), Π, the node of
    each Π row (local index), the DP-APPR noise and the DP-SGD plan."""

    labels: np.ndarray
    is_train: np.ndarray
    present: np.ndarray
    inductive: sp.csr_matrix
    kept: np.ndarray
    here: np.ndarray
    pi: sp.csr_matrix
    row_nodes: np.ndarray
    noise: ApprNoise | None
    plan: SgdPlan


@dataclass(frozen=True)
class SgdPlan:
    """DP-SGD as run: Poisson rate ``q`` per row, ``steps``, ``rows`` = D (the most rows one
    node reaches, its own counted), ``noise`` = the noise std over C, and how it was found."""

    q: float
    steps: int
    rows: int
    noise: float
    calibration: str


class DparModel:
    """The released predictor: θ (``weights``) and the class of every non-training node from
    Eq. 4 on the inference graph (non-training nodes that uploaded). A training node's class
    would be f_θ(x_v), a function of its own raw features: it is not released (``-1``)."""

    def __init__(self, weights: dict[str, np.ndarray], labels: np.ndarray) -> None:
        self.weights = weights
        self.labels = np.asarray(labels, dtype=np.int64)

    def predict(self, nodes: np.ndarray) -> np.ndarray:
        return self.labels[np.asarray(nodes, dtype=np.int64)]
