"""PPGSL's two-lane surrogate epoch as one TorchScript call (issue 35, round 5).

:class:`.ppgsl_lanes.LaneTrainer` splits each piece of an epoch into two row ranges, one per
core. Round 4 ran the pieces from Python: eight hand-offs an epoch through blocking queues, and
between two kernels each lane took the GIL back, so the two lanes traded the GIL dozens of times
an epoch. On an idle 2-core machine those trades and wake-ups cost about a third more CPU than
one lane (``docs/benchmarks.md``, round 4). Here the same pieces, the same kernels in the same
order on the same row ranges, are a scripted module: Python calls it once an epoch (from round
6, :meth:`EpochPieces.epochs`: once for a chunk of epochs), the call releases the GIL until it
returns, and lane 1's half of each piece runs as a ``torch.jit.fork`` task on torch's inter-op
thread, joined by ``torch.jit.wait``. The results are the one-core epoch's bit for bit, as
before (the tests compare with ``torch.equal``).

torch is imported at the top (the strategy imports this module inside functions only).
"""

# No ``from __future__ import annotations``: TorchScript reads the annotations as types.
from typing import Optional  # noqa: UP035

import torch
from torch import Tensor

from .ppgsl_surrogate import CLAMP, NORM_EPS

# The row sums' matrices (two lanes each, indexed 2·matrix + lane), written as literals in the
# scripted code (TorchScript reads no module globals): X's rows 0, X's columns 1, Â 2, Âᵀ 3,
# the positives' pattern 4.


class EpochPieces(torch.nn.Module):
    """The epoch's eight pieces over two lanes (``parallel``: lane 1 on torch's inter-op
    thread; else lane 0 then lane 1 on the caller). The row sums are ``embedding_bag``'s
    out variant over each lane's rows, the dense products write their row ranges, the
    reductions over rows (∂L/∂b₁, ∂L/∂b₂, Hᵀ·G) run whole on lane 0; with ``step`` the last
    piece also applies torch's fused Adam kernel to W₁'s rows on the lane that computed their
    gradient and to the other weights on lane 0. Built by
    :class:`.ppgsl_lanes.LaneTrainer` from its row ranges and buffers."""

    cols: list[Tensor]
    offsets: list[Tensor]
    values: list[Tensor]
    weighted: list[bool]
    r0: list[int]
    r1: list[int]
    a: list[int]
    b: list[int]
    scratch: list[Tensor]
    dense_x: Optional[Tensor]  # noqa: UP045
    feature_halves: list[int]
    node_halves: list[int]
    weights: list[Tensor]
    buf: list[Tensor]

    def __init__(
        self,
        sums: list,
        dense_x: Tensor | None,
        feature_halves: tuple,
        node_halves: tuple,
        weights: list[Tensor],
        buf: dict[str, Tensor],
        target: Tensor,
        pos_src: Tensor,
        k: int,
        adam: tuple[float, float, float, float, float],
        parallel: bool,
    ) -> None:
        super().__init__()
        empty = torch.empty(0)
        self.cols = [s.cols for s in sums]
        self.offsets = [s.offsets for s in sums]
        self.values = [empty if s.values is None else s.values for s in sums]
        self.weighted = [s.values is not None for s in sums]
        self.r0 = [s.r0 for s in sums]
        self.r1 = [s.r1 for s in sums]
        self.a = [s.a for s in sums]
        self.b = [s.b for s in sums]
        self.scratch = [t for s in sums for t in s.scratch]
        self.dense_x = dense_x
        self.feature_halves = [int(v) for half in feature_halves for v in half]
        self.node_halves = [int(v) for half in node_halves for v in half]
        self.weights = [w.detach() for w in weights]  # views: the steps write the weights
        names = ("xw", "h", "hw", "z", "zn", "norm", "big", "p", "gs", "gz", "gq", "gpre")
        self.buf = [buf[name] for name in (*names, "back", "u", "v")]
        self.target = target
        self.pos_src = pos_src
        self.k = k
        self.cut = min(k // 64 * 64, 2 * k)  # σ's vectorised loop groups both halves as one
        self.lr, self.beta1, self.beta2, self.weight_decay, self.eps = adam
        self.parallel = parallel
        self.clamp, self.norm_eps = CLAMP, NORM_EPS  # TorchScript reads no module globals

    def _sum(self, m: int, lane: int, h: Tensor, out: Tensor, w: Optional[Tensor]) -> Tensor:  # noqa: UP045
        """Rows ``[r0, r1)`` of the row sum ``m``·h into ``out`` (``w``: per-entry weights in
        place of the values); returns those rows."""
        i = 2 * m + lane
        rows = out[self.r0[i] : self.r1[i]]
        if w is None and self.weighted[i]:
            w = self.values[i].to(h.dtype)
        # its first output is ``rows`` itself, returned from it (the optimizer keeps the call)
        return torch.ops.aten._embedding_bag_forward_only(
            h, self.cols[i], self.offsets[i], False, 0, False, w, False, -1,
            out0=rows, out1=self.scratch[3 * i], out2=self.scratch[3 * i + 1],
            out3=self.scratch[3 * i + 2],
        )[0]  # fmt: skip

    def _adam(self, params: list[Tensor], grads: list[Tensor], state: list[list[Tensor]]) -> None:
        torch._fused_adam_(
            params, grads, state[0], state[1], [], state[2],
            lr=self.lr, beta1=self.beta1, beta2=self.beta2, weight_decay=self.weight_decay,
            eps=self.eps, amsgrad=False, maximize=False, grad_scale=None, found_inf=None,
        )  # fmt: skip

    def piece(
        self, which: int, lane: int, index: list[Tensor], grads: list[Tensor], step: bool,
        state: list[list[Tensor]],
    ) -> int:  # fmt: skip
        """Lane ``lane``'s half of piece ``which`` (0-7, in order)."""
        w1, b1, w2, b2 = self.weights
        xw, h, hw, z, zn, norm, big, p, gs, gz, gq, gpre, back, u, v = self.buf
        gw1, gb1, gw2, gb2 = grads
        k = self.k
        i = 2 * 2 + lane
        r0, r1 = self.r0[i], self.r1[i]
        dense_x = self.dense_x
        if which == 0:  # X W₁
            if dense_x is None:
                self._sum(0, lane, w1, xw, None)
            else:
                n0, n1 = self.node_halves[2 * lane], self.node_halves[2 * lane + 1]
                torch.mm(dense_x[n0:n1], w1, out=xw[n0:n1])
        elif which == 1:  # H = relu(Â X W₁ + b₁), H W₂
            rows = self._sum(2, lane, xw, h, None).add_(b1).clamp_min_(0.0)
            torch.mm(rows, w2, out=hw[r0:r1])
        elif which == 2:  # z = Â H W₂ + b₂ and its unit rows
            rows = self._sum(2, lane, hw, z, None).add_(b2)
            nz = torch.linalg.vector_norm(rows, dim=1, keepdim=True)
            big[r0:r1] = nz > self.norm_eps
            nz.clamp_min_(self.norm_eps)
            norm[r0:r1] = nz
            torch.div(rows, nz, out=zn[r0:r1])
        elif which == 3:  # σ(cos) and ∂L/∂s per pair, by pair ranges
            a, b = (0, self.cut) if lane == 0 else (self.cut, 2 * k)
            zu, zv = zn.index_select(0, u[a:b]), zn.index_select(0, v[a:b])
            pr = torch.sigmoid(torch.linalg.vecdot(zu, zv))
            p[a:b] = pr
            g = pr.clone()
            if a < k:
                g[: min(b, k) - a] -= self.target[a : min(b, k)]
            gs[a:b] = g.div_(k).mul_((pr >= self.clamp) & (pr <= 1 - self.clamp))
        elif which == 4:  # ∂L/∂z through the normalisation, by rows
            j = 2 * 4 + lane
            s0, s1 = self.r0[j], self.r1[j]
            gzn = self._sum(4, lane, zn, gz, gs[self.pos_src[self.a[j] : self.b[j]]])
            g_neg = gs[k:]
            for side in range(2):  # the negatives whose end ``side`` is in this lane's rows
                mine, others, dest = index[6 * lane + 3 * side : 6 * lane + 3 * side + 3]
                terms = zn.index_select(0, others).mul_(g_neg.index_select(0, mine).unsqueeze(1))
                gzn.index_add_(0, dest, terms)
            rows = zn[s0:s1]
            dot = torch.linalg.vecdot(gzn, rows).unsqueeze(1).mul_(big[s0:s1])
            gzn.sub_(rows.mul(dot)).div_(norm[s0:s1])
        elif which == 5:  # Âᵀ ∂L/∂z, relu's backward by rows; lane 0 also ∂L/∂b₂
            if lane == 0:
                torch.sum(gz, 0, out=gb2)
            j = 2 * 3 + lane
            t0, t1 = self.r0[j], self.r1[j]
            rows = self._sum(3, lane, gz, gq, None)
            torch.mm(rows, w2.t(), out=gpre[t0:t1])
            gpre[t0:t1] = torch.ops.aten.threshold_backward(gpre[t0:t1], h[t0:t1], 0.0)
        elif which == 6:  # Âᵀ ∂L/∂pre; lane 0 also ∂L/∂b₁
            if lane == 0:
                torch.sum(gpre, 0, out=gb1)
            self._sum(3, lane, gpre, back, None)
        else:  # ∂L/∂W₁ = Xᵀ Âᵀ ∂L/∂pre by feature rows; lane 0 also ∂L/∂W₂ (whole)
            if lane == 0:
                torch.mm(h.t(), gq, out=gw2)
            f0, f1 = self.feature_halves[2 * lane], self.feature_halves[2 * lane + 1]
            if dense_x is None:
                self._sum(1, lane, back, gw1, None)
            else:
                torch.mm(dense_x[:, f0:f1].t(), back, out=gw1[f0:f1])
            if step:  # the lists are the caller's (a list built here would look dead to
                # TorchScript's optimizer, which would drop the kernel that writes through it)
                adam = state[5 * lane : 5 * lane + 5]
                self._adam(adam[0], adam[1], adam[2:])
                if lane == 0:
                    self._adam(state[10], state[11], state[12:15])
        return which

    def forward(
        self,
        neg: Tensor,
        index: list[Tensor],
        grads: list[Tensor],
        step: bool,
        state: list[list[Tensor]],
    ) -> Tensor:
        """One epoch's forward and backward into ``grads`` ``[W₁, b₁, W₂, b₂]`` for the
        negatives ``neg`` (``index``: :meth:`.ppgsl_lanes.LaneTrainer.negatives_index`), and with
        ``step`` the optimizer's step (``state``: for W₁'s rows on
        lane 0, on lane 1, then for b₁, W₂, b₂: the lists of the weights, their gradients,
        Adam's ``exp_avg``, ``exp_avg_sq`` and ``step``, as :meth:`adam_lists` builds them; the
        counters advance here, before the kernels read them). Returns the pair probabilities
        (positives first)."""
        k = self.k
        self.buf[13][k:] = neg[:, 0]
        self.buf[14][k:] = neg[:, 1]
        done = 0  # the lanes' pieces counted: each wait's result is used, so none is dropped
        for which in range(8):
            if which == 7 and step:
                torch._foreach_add_(state[15], 1)  # every counter one step on, as Adam does
            if self.parallel:
                other = torch.jit.fork(self.piece, which, 1, index, grads, step, state)
                done += self.piece(which, 0, index, grads, step, state)
                done += torch.jit.wait(other)
            else:
                done += self.piece(which, 0, index, grads, step, state)
                done += self.piece(which, 1, index, grads, step, state)
        assert done == 56  # 2 · (0 + 1 + … + 7)
        return self.buf[7]

    @torch.jit.export
    def epochs(
        self, negs: list[Tensor], index: list[list[Tensor]], grads: list[Tensor],
        state: list[list[Tensor]],
    ) -> Tensor:  # fmt: skip
        """:meth:`forward` with the optimizer's step for each of the negatives ``negs`` (and
        their ``index``), one epoch after another in this one call. Returns the last epoch's
        pair probabilities."""
        p = self.buf[7]
        for e in range(len(negs)):
            p = self.forward(negs[e], index[e], grads, True, state)
        return p
