"""PPGSL's surrogate attacker trained with its forward and backward written out (issue 35).

A release trains ⌈N₂/μ⌉ fresh surrogates for N₁ epochs each (5 000 epochs at the paper's
defaults), on an A′ that is constant for the whole retrain. Through autograd one epoch is about
forty small kernels, each allocating its output; on a 2-core CPU the graph bookkeeping and the
page faults of those allocations cost as much as the arithmetic. Written out, the epoch is the
same arithmetic (the 2-layer GCN of :func:`.ppgsl_model.encode`, the σ(cos) head of
:func:`.ppgsl_model.link_prob`, the two mean binary cross-entropies) with the chain rule applied
by hand: the gradients equal autograd's up to float rounding (a test holds them to 1e-10 in
float64), and the updates go through the same fused Adam.

Two simplifications that are exact in real arithmetic: the cross-entropy's and the sigmoid's
derivatives combine into (p − t)/k (autograd multiplies (p − t)/(p(1 − p)) by p(1 − p)), and Â's
transpose uses the stored twin values (Â is symmetric up to rounding).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from .ppgsl_sparse import SparseFeatures, bag_sum

#: Clamp of the link probability before the cross-entropy (as :func:`.ppgsl_model.learn`).
CLAMP = 1e-7
#: ``F.normalize``'s eps.
NORM_EPS = 1e-8


def _no_tick(count: int) -> None:
    """The default progress callback of :meth:`SurrogateTrainer.train`: nothing."""


def check_epochs(epochs: int) -> None:
    """A one-line error for a surrogate trained fewer than one epoch (it has no loss)."""
    if epochs < 1:
        raise ValueError(f"ppgsl: a surrogate trains at least one epoch, got {epochs}")


class SurrogateTrainer:
    """The N₁ epochs of one surrogate on a fixed propagation: ``epoch(neg)`` runs one forward,
    the written-out backward and one optimizer step, and returns the loss (a 0-d tensor).

    Args:
        weights: the surrogate's ``[W₁, b₁, W₂, b₂]`` (leaf tensors the optimizer holds).
        x: the feature matrix (:class:`.ppgsl_sparse.SparseFeatures` or a dense tensor).
        fixed: the retrain's :class:`.ppgsl_model.FixedPropagation`.
        pos: the positive pairs ``[k, 2]``; ``target``: their soft targets w′ (length k).
        opt: the optimizer over ``weights``.
    """

    def __init__(
        self, weights: list, x: Any, fixed: Any, pos: torch.Tensor, target: torch.Tensor, opt: Any
    ) -> None:
        self.weights, self.x, self.opt = weights, x, opt
        pat = fixed.pattern
        self.cols, self.crow = pat.cols, pat.crow
        self.values = fixed.values
        self.values_t = fixed.values[pat.twin]  # Âᵀ's values on the same (symmetric) pattern
        self.pos, self.k = pos, len(pos)
        self.target = target
        # the positives' half of ∂L/∂ẑ as a sparse product over a pattern sorted once per
        # retrain (a gather, not a scatter): entries (i, j) and (j, i) per positive pair
        rows = torch.cat([pos[:, 0], pos[:, 1]])
        self.pos_order = torch.argsort(rows, stable=True)
        self.pos_cols = torch.cat([pos[:, 1], pos[:, 0]])[self.pos_order]
        crow = torch.zeros(len(self.crow), dtype=torch.int64, device=rows.device)
        crow[1:] = torch.cumsum(torch.bincount(rows, minlength=len(crow) - 1), 0)
        self.pos_crow = crow

    def _prop(self, h: torch.Tensor, transpose: bool = False) -> torch.Tensor:
        values = self.values_t if transpose else self.values
        return bag_sum(self.cols, self.crow, values.to(h.dtype), h)

    def _x_mm(self, w: torch.Tensor) -> torch.Tensor:
        return self.x.rows.mm(w) if isinstance(self.x, SparseFeatures) else self.x @ w

    def _x_t_mm(self, g: torch.Tensor) -> torch.Tensor:
        return self.x.cols.mm(g) if isinstance(self.x, SparseFeatures) else self.x.t() @ g

    def forward_backward(
        self, neg: torch.Tensor, with_loss: bool = True
    ) -> tuple[torch.Tensor | None, list[torch.Tensor]]:
        """(the loss, or None without ``with_loss``; the gradients of ``weights``) for the
        negatives ``neg`` ``[k, 2]``."""
        w1, b1, w2, b2 = (w.detach() for w in self.weights)
        k = self.k
        with torch.no_grad():
            pre = self._prop(self._x_mm(w1)).add_(b1)  # Â X W₁ + b₁
            h = pre.clamp_min(0.0)
            z = self._prop(h @ w2).add_(b2)  # Â H W₂ + b₂
            norm = torch.linalg.vector_norm(z, dim=1, keepdim=True)
            big = norm > NORM_EPS
            norm.clamp_min_(NORM_EPS)
            zn = z / norm
            u = torch.cat([self.pos[:, 0], neg[:, 0]])
            v = torch.cat([self.pos[:, 1], neg[:, 1]])
            zu, zv = zn.index_select(0, u), zn.index_select(0, v)
            p = torch.sigmoid(torch.linalg.vecdot(zu, zv))
            loss = self._loss(p) if with_loss else None
            # ∂L/∂s: (p − t)/k per pair where the clamp passes, 0 where it cut (with τ = 1,
            # cos ∈ [−1, 1] keeps p inside [0.27, 0.73]: the clamp never cuts, kept for fidelity)
            gs = p.clone()
            gs[:k] -= self.target
            gs.div_(k).mul_((p >= CLAMP) & (p <= 1 - CLAMP))
            # ∂L/∂ẑ_i = Σ_j gs_ij ẑ_j: the positives as a sparse product, the negatives scattered
            gp = torch.cat([gs[:k], gs[:k]])[self.pos_order]
            gzn = bag_sum(self.pos_cols, self.pos_crow, gp, zn)
            g_neg = gs[k:].unsqueeze(1)
            gzn.index_add_(0, u[k:], zv[k:].mul_(g_neg)).index_add_(0, v[k:], zu[k:].mul_(g_neg))
            # normalize's backward: (g − ẑ⟨g, ẑ⟩)/‖z‖ where ‖z‖ > eps, g/eps elsewhere
            dot = torch.linalg.vecdot(gzn, zn).unsqueeze(1).mul_(big)
            gz = gzn.sub_(zn.mul_(dot)).div_(norm)
            gb2 = gz.sum(0)
            gq = self._prop(gz, transpose=True)
            gw2 = h.t() @ gq
            gpre = torch.ops.aten.threshold_backward(gq @ w2.t(), h, 0.0)  # relu's backward
            gb1 = gpre.sum(0)
            gw1 = self._x_t_mm(self._prop(gpre, transpose=True))
        return loss, [gw1, gb1, gw2, gb2]

    def epoch(
        self, neg: torch.Tensor, with_loss: bool = True, meanwhile: Callable[[], Any] | None = None
    ) -> torch.Tensor | None:
        """One step of the optimizer; the loss (before the step) only ``with_loss``;
        ``meanwhile()`` (work that does not touch the weights) after the step."""
        loss, grads = self.forward_backward(neg, with_loss)
        for w, g in zip(self.weights, grads, strict=True):
            w.grad = g
        self.opt.step()
        if meanwhile is not None:
            meanwhile()
        return loss

    def _loss(self, p: torch.Tensor) -> torch.Tensor:
        """The two mean binary cross-entropies from the pair probabilities ``p`` (positives
        first, then the negatives)."""
        k = self.k
        with torch.no_grad():
            pc = p.clamp(CLAMP, 1 - CLAMP)
            return F.binary_cross_entropy(pc[:k], self.target) + F.binary_cross_entropy(
                pc[k:], torch.zeros_like(pc[k:])
            )

    def train(
        self, draw: Callable[[], torch.Tensor], epochs: int, tick: Callable[[int], None] = _no_tick
    ) -> torch.Tensor:
        """``epochs`` epochs, each on fresh negatives ``draw()`` (drawn in order, the next
        during the step before); returns the last epoch's loss. ``tick(count)`` after each
        ``count`` epochs done (progress)."""
        check_epochs(epochs)
        neg = draw()
        loss = None
        for epoch in range(epochs):
            last = epoch == epochs - 1
            ahead: list[torch.Tensor] = []
            meanwhile = None if last else lambda: ahead.append(draw())  # noqa: B023
            loss = self.epoch(neg, with_loss=last, meanwhile=meanwhile)
            neg = ahead[0] if ahead else neg
            tick(1)
        assert loss is not None, "ppgsl: a surrogate trains at least one epoch"
        return loss
