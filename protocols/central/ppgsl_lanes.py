"""PPGSL's surrogate epoch on two CPU cores, bit for bit the one-core epoch (issue 35).

A release trains 5 000 surrogate epochs (the paper's defaults) one after another: each epoch
needs the optimizer step of the one before, so epochs cannot run side by side. Inside an epoch
almost every piece is a set of independent rows: a sparse row sum (``embedding_bag``: each
output row sums its own entries in order), a dense product's output rows, a link score per
pair, an elementwise update. Such a piece split into two row ranges, one per core, computes
every output element with the same operations in the same order as the whole piece, so the
result is the same to the bit whether one lane runs both halves or two lanes run one each. The
pieces that reduce over rows (the bias gradients, Hᵀ·G) are not split: one lane computes each
of them whole while the other lane does other work.

Two threads, not torch's OpenMP threads: OpenMP's workers spin-wait between kernels, and on a
loaded 2-core machine they burned 10× the CPU (``docs/benchmarks.md``); a Python thread here
blocks in a queue while idle and torch releases the GIL inside every kernel. Each lane runs
its kernels on one torch thread. A test holds the two-lane epoch equal to
:class:`.ppgsl_surrogate.SurrogateTrainer`'s with ``torch.equal``.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from .ppgsl_sparse import SparseFeatures
from .ppgsl_surrogate import CLAMP, NORM_EPS, SurrogateTrainer


def default_lanes(device: Any) -> int:
    """Two lanes on a CPU with at least two cores available to this process, else one."""
    if torch.device(device).type != "cpu":
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (not Linux)
        cores = os.cpu_count() or 1
    return 2 if cores >= 2 else 1


class Lanes:
    """Lane 0 is the calling thread; lane 1 a worker thread (``lanes = 2``) or, with one lane,
    the calling thread again after lane 0. ``both(fn)`` runs ``fn(0)`` and ``fn(1)`` and
    returns when both are done; a lane's exception is raised in the caller."""

    def __init__(self, lanes: int) -> None:
        if lanes not in (1, 2):
            raise ValueError(f"ppgsl: lanes must be 1 or 2, got {lanes}")
        self.lanes = lanes
        self._todo: queue.SimpleQueue = queue.SimpleQueue()
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        self._worker: threading.Thread | None = None
        if lanes == 2:
            self._worker = threading.Thread(target=self._serve, name="ppgsl-lane-1", daemon=True)
            self._worker.start()

    def _serve(self) -> None:
        torch.set_grad_enabled(False)  # grad mode is per thread; lane 1 never builds graphs
        while True:
            fn = self._todo.get()
            if fn is None:
                return
            try:
                self._done.put((fn(1), None))
            except BaseException as err:  # noqa: BLE001  (handed to the caller)
                self._done.put((None, err))

    def both(self, fn: Callable[[int], Any]) -> None:
        if self._worker is None:
            fn(0)
            fn(1)
            return
        self._todo.put(fn)
        try:
            fn(0)
        finally:
            _, err = self._done.get()
        if err is not None:
            raise err

    def close(self) -> None:
        if self._worker is not None:
            self._todo.put(None)
            self._worker.join()
            self._worker = None

    def __enter__(self) -> Lanes:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _RowSum:
    """A CSR matrix's row sum M·h restricted to the rows ``[r0, r1)``: the same bags, the
    same entries in the same order as the whole product's, written into those rows of an
    output (``embedding_bag``'s out variant: no copy)."""

    def __init__(self, cols: Any, crow: Any, values: Any, r0: int, r1: int) -> None:
        a, b = int(crow[r0]), int(crow[r1])
        self.r0, self.r1, self.a, self.b = r0, r1, a, b
        self.cols, self.offsets = cols[a:b], crow[r0:r1] - a
        self.values = None if values is None else values[a:b]
        self.scratch = [torch.empty(0, dtype=torch.int64, device=cols.device) for _ in range(3)]

    def into(self, h: Any, out: Any, weights: Any = None) -> Any:
        """Rows ``[r0, r1)`` of M·h into ``out`` (per-entry ``weights`` replace the values);
        returns those rows."""
        if weights is None and self.values is not None:
            weights = self.values.to(h.dtype)
        rows = out[self.r0 : self.r1]
        s1, s2, s3 = self.scratch
        torch.ops.aten._embedding_bag_forward_only.out(
            h, self.cols, self.offsets, False, 0, False, weights, False, -1,
            out0=rows, out1=s1, out2=s2, out3=s3,
        )  # fmt: skip
        return rows


def _halves(crow: Any) -> tuple[tuple[int, int], tuple[int, int]]:
    """Two row ranges with about half of the entries each."""
    rows = len(crow) - 1
    cut = min(int(torch.searchsorted(crow, crow[-1:] // 2)[0]), rows)
    return (0, cut), (cut, rows)


def _row_sums(cols: Any, crow: Any, values: Any) -> list[_RowSum]:
    return [_RowSum(cols, crow, values, r0, r1) for r0, r1 in _halves(crow)]


class _SplitAdam:
    """torch's fused Adam step (``torch._fused_adam_``, the kernel ``Adam(fused=True).step()``
    calls) applied to row ranges of a weight: the kernel is elementwise, so the rows updated by
    two calls on two lanes are the rows one call updates, bit for bit (a test holds it), as long
    as every range is a whole number of the kernel's vector blocks (rows of a multiple of 64
    elements: the caller checks; the scalar tail may round one ulp apart). Used
    only for the optimizer it mirrors: one parameter group, fused, no AMSGrad, maximize,
    capturable, differentiable or tensor lr; the state (``step``, ``exp_avg``,
    ``exp_avg_sq``) is the optimizer's own, created by its first ``step()``."""

    def __init__(self, opt: Any) -> None:
        self.opt = opt
        self.group = opt.param_groups[0]

    @staticmethod
    def usable(opt: Any) -> bool:
        if not isinstance(opt, torch.optim.Adam) or len(opt.param_groups) != 1:
            return False
        g = opt.param_groups[0]
        plain = not any(
            g.get(key, False)
            for key in ("amsgrad", "maximize", "capturable", "differentiable", "foreach")
        )
        decoupled = g.get("decoupled_weight_decay", False)
        return bool(g.get("fused")) and plain and not decoupled and not torch.is_tensor(g["lr"])

    def ready(self) -> bool:
        """Whether the optimizer's state exists (after its first ``step()``)."""
        return all(len(self.opt.state[p]) > 0 for p in self.group["params"])

    def count(self) -> None:
        """One step more on every parameter's counter (before the kernels read it)."""
        torch._foreach_add_([self.opt.state[p]["step"] for p in self.group["params"]], 1)

    def update(self, params: list, rows: tuple[int, int] | None = None) -> None:
        """The step on ``params`` (whole), or on the rows ``[r0, r1)`` of the one in ``params``."""
        state, g = self.opt.state, self.group
        cut = (lambda t: t) if rows is None else (lambda t: t[rows[0] : rows[1]])
        beta1, beta2 = g["betas"]
        with torch.no_grad():
            torch._fused_adam_(
                [cut(p) for p in params], [cut(p.grad) for p in params],
                [cut(state[p]["exp_avg"]) for p in params],
                [cut(state[p]["exp_avg_sq"]) for p in params], [],
                [state[p]["step"] for p in params],
                amsgrad=False, lr=g["lr"], beta1=beta1, beta2=beta2,
                weight_decay=g["weight_decay"], eps=g["eps"], maximize=False,
                grad_scale=None, found_inf=None,
            )  # fmt: skip


class LaneTrainer(SurrogateTrainer):
    """:class:`.ppgsl_surrogate.SurrogateTrainer` with each epoch's pieces split over two
    :class:`Lanes`; the same results bit for bit (``forward_backward`` is replaced; the
    optimizer's step is the same fused Adam, run on W₁'s row halves by the lanes that computed
    those rows of its gradient)."""

    def __init__(self, *args: Any, lanes: Lanes, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lanes = lanes
        n = len(self.crow) - 1
        self.n = n
        self.a_hat = _row_sums(self.cols, self.crow, self.values)
        self.a_hat_t = _row_sums(self.cols, self.crow, self.values_t)
        self.pos_sums = _row_sums(self.pos_cols, self.pos_crow, None)
        self.pos_src = self.pos_order % max(self.k, 1)  # the pattern's entry -> its positive
        if isinstance(self.x, SparseFeatures):
            self.x_rows = _row_sums(self.x.rows.cols, self.x.rows.crow, self.x.rows.values)
            self.x_cols = _row_sums(self.x.cols.cols, self.x.cols.crow, self.x.cols.values)
            self.feature_halves = tuple((s.r0, s.r1) for s in self.x_cols)
        else:
            f = self.x.shape[1]
            self.feature_halves = ((0, f // 2), (f // 2, f))
        half = n // 2
        self.node_halves = ((0, half), (half, n))
        # Row halves of W₁ are whole vector blocks of the kernel only while a row is a multiple
        # of 64 elements: otherwise a half's scalar tail (one rounding apart from the
        # vectorised loop) would hold elements the whole step computes vectorised.
        aligned = self.weights[0].shape[1] % 64 == 0
        self.adam = _SplitAdam(self.opt) if aligned and _SplitAdam.usable(self.opt) else None
        # the epoch's buffers, reused (every element is written before it is read)
        w1, w2 = self.weights[0], self.weights[2]
        h1, h2, k = w1.shape[1], w2.shape[1], self.k
        new = w1.new_empty
        self.buf = {
            "xw": new(n, h1), "h": new(n, h1), "hw": new(n, h2), "z": new(n, h2),
            "zn": new(n, h2), "norm": new(n, 1), "p": new(2 * k), "gs": new(2 * k),
            "gz": new(n, h2), "gq": new(n, h2), "gpre": new(n, h1), "back": new(n, h1),
            "big": torch.empty(n, 1, dtype=torch.bool, device=w1.device),
            "u": torch.empty(2 * k, dtype=torch.int64, device=w1.device),
            "v": torch.empty(2 * k, dtype=torch.int64, device=w1.device),
        }  # fmt: skip
        self.buf["u"][:k] = self.pos[:, 0]
        self.buf["v"][:k] = self.pos[:, 1]

    def _x_rows(self, lane: int, w1: Any, out: Any) -> None:
        """Rows of X·W₁ into ``out``."""
        if isinstance(self.x, SparseFeatures):
            self.x_rows[lane].into(w1, out)
        else:
            r0, r1 = self.node_halves[lane]
            torch.mm(self.x[r0:r1], w1, out=out[r0:r1])

    def _x_t_rows(self, lane: int, g: Any, out: Any) -> None:
        """Rows (feature rows) of Xᵀ·g into ``out``."""
        if isinstance(self.x, SparseFeatures):
            self.x_cols[lane].into(g, out)
        else:
            f0, f1 = self.feature_halves[lane]
            torch.mm(self.x[:, f0:f1].t(), g, out=out[f0:f1])

    def epoch(
        self, neg: torch.Tensor, with_loss: bool = True, meanwhile: Callable[[], Any] | None = None
    ) -> torch.Tensor | None:
        """One step of the optimizer; lane 1 runs ``meanwhile()`` during the last piece."""
        if self.lanes.lanes == 1:  # the one-core epoch itself, without the split's overhead
            return super().epoch(neg, with_loss, meanwhile)
        split = self.adam is not None and self.adam.ready()
        loss, grads = self._pieces(neg, with_loss, step=split, meanwhile=meanwhile)
        if split:
            return loss
        for w, g in zip(self.weights, grads, strict=True):  # the first epoch: the state
            w.grad = g

        def step(lane: int) -> None:
            if lane == 0:
                self.opt.step()
            elif meanwhile is not None:
                meanwhile()

        self.lanes.both(step)
        return loss

    def forward_backward(
        self, neg: torch.Tensor, with_loss: bool = True
    ) -> tuple[torch.Tensor | None, list[torch.Tensor]]:
        """:meth:`.ppgsl_surrogate.SurrogateTrainer.forward_backward` in pieces over the lanes
        (with one lane too: the test compares the pieces, run one after the other, with the
        whole). The gradients are fresh tensors (the pieces write into reused buffers)."""
        loss, grads = self._pieces(neg, with_loss)
        return loss, [g.clone() for g in grads]

    def _pieces(
        self,
        neg: torch.Tensor,
        with_loss: bool,
        step: bool = False,
        meanwhile: Callable[[], Any] | None = None,
    ) -> tuple[torch.Tensor | None, list[torch.Tensor]]:
        """The epoch's eight pieces; with ``step`` the last one also runs the optimizer's step
        (W₁'s rows on the lane that computed their gradient, the rest on lane 0) and lane 1
        ``meanwhile()``."""
        w1, b1, w2, b2 = (w.detach() for w in self.weights)
        k, b = self.k, self.buf
        xw, h, hw, z, zn, norm, big = (
            b[key] for key in ("xw", "h", "hw", "z", "zn", "norm", "big")
        )
        p, gs, gz, gq, gpre, back = (b[key] for key in ("p", "gs", "gz", "gq", "gpre", "back"))
        u, v = b["u"], b["v"]
        u[k:] = neg[:, 0]
        v[k:] = neg[:, 1]
        gw1 = self.weights[0].grad if step else w1.new_empty(w1.shape)
        # the pair ranges' cut: a multiple of 64, where torch's vectorised elementwise loops
        # (σ's is not the scalar tail's formula bit for bit) group both halves as the whole
        cut = min(k // 64 * 64, 2 * k)
        out: dict[str, Any] = {}
        with torch.no_grad():

            def layer1(lane: int) -> None:  # X W₁
                self._x_rows(lane, w1, xw)

            def layer2(lane: int) -> None:  # H = relu(Â X W₁ + b₁), H W₂
                s = self.a_hat[lane]
                rows = s.into(xw, h).add_(b1).clamp_min_(0.0)
                torch.mm(rows, w2, out=hw[s.r0 : s.r1])

            def head(lane: int) -> None:  # z = Â H W₂ + b₂ and its unit rows
                s = self.a_hat[lane]
                rows = s.into(hw, z).add_(b2)
                nz = torch.linalg.vector_norm(rows, dim=1, keepdim=True)
                big[s.r0 : s.r1] = nz > NORM_EPS
                nz.clamp_min_(NORM_EPS)
                norm[s.r0 : s.r1] = nz
                torch.div(rows, nz, out=zn[s.r0 : s.r1])

            def scores(lane: int) -> None:  # σ(cos) and ∂L/∂s per pair, by pair ranges
                a, b = (0, cut) if lane == 0 else (cut, 2 * k)
                zu, zv = zn.index_select(0, u[a:b]), zn.index_select(0, v[a:b])
                pr = torch.sigmoid(torch.linalg.vecdot(zu, zv))
                p[a:b] = pr
                g = pr.clone()
                if a < k:
                    g[: min(b, k) - a] -= self.target[a : min(b, k)]
                gs[a:b] = g.div_(k).mul_((pr >= CLAMP) & (pr <= 1 - CLAMP))

            def unit_grad(lane: int) -> None:  # ∂L/∂z through the normalisation, by rows
                s = self.pos_sums[lane]
                r0, r1 = s.r0, s.r1
                gzn = s.into(zn, gz, weights=gs[self.pos_src[s.a : s.b]])
                g_neg = gs[k:]
                for ends, others in ((neg[:, 0], neg[:, 1]), (neg[:, 1], neg[:, 0])):
                    mine = torch.nonzero((ends >= r0) & (ends < r1)).squeeze(1)
                    terms = zn.index_select(0, others[mine]).mul_(g_neg[mine].unsqueeze(1))
                    gzn.index_add_(0, ends[mine] - r0, terms)
                rows = zn[r0:r1]
                dot = torch.linalg.vecdot(gzn, rows).unsqueeze(1).mul_(big[r0:r1])
                gzn.sub_(rows.mul(dot)).div_(norm[r0:r1])

            def layer2_back(lane: int) -> None:  # Âᵀ ∂L/∂z, relu's backward by rows; ∂L/∂b₂
                if lane == 0:
                    out["gb2"] = gz.sum(0)
                s = self.a_hat_t[lane]
                rows = s.into(gz, gq)
                torch.mm(rows, w2.t(), out=gpre[s.r0 : s.r1])
                gpre[s.r0 : s.r1] = torch.ops.aten.threshold_backward(
                    gpre[s.r0 : s.r1], h[s.r0 : s.r1], 0.0
                )

            def layer1_back(lane: int) -> None:  # Âᵀ ∂L/∂pre; lane 0 also ∂L/∂b₁
                if lane == 0:
                    out["gb1"] = gpre.sum(0)
                self.a_hat_t[lane].into(gpre, back)

            def weights(lane: int) -> None:
                """∂L/∂W₁ = Xᵀ Âᵀ ∂L/∂pre by feature rows; lane 0 also ∂L/∂W₂ (a reduction
                over rows: whole). With ``step``: each lane's rows of W₁ stepped, lane 0 the
                other weights, lane 1 ``meanwhile()``."""
                if lane == 0:
                    out["gw2"] = h.t() @ gq
                self._x_t_rows(lane, back, gw1)
                if not step:
                    return
                assert self.adam is not None
                self.adam.update([self.weights[0]], self.feature_halves[lane])
                if lane == 0:
                    rest = self.weights[1:]
                    for w, g in zip(rest, (out["gb1"], out["gw2"], out["gb2"]), strict=True):
                        w.grad = g
                    self.adam.update(rest)
                elif meanwhile is not None:
                    meanwhile()

            for piece in (layer1, layer2, head, scores, unit_grad, layer2_back, layer1_back):
                self.lanes.both(piece)
            if step:
                assert self.adam is not None
                self.adam.count()  # every counter one step on, before the kernels read them
            self.lanes.both(weights)
            loss = None
            if with_loss:
                pc = p.clamp(CLAMP, 1 - CLAMP)
                loss = F.binary_cross_entropy(pc[:k], self.target) + F.binary_cross_entropy(
                    pc[k:], torch.zeros_like(pc[k:])
                )
        return loss, [gw1, out["gb1"], out["gw2"], out["gb2"]]
