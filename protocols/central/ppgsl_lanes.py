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

Not torch's OpenMP threads: OpenMP's workers spin-wait between kernels, and on a loaded
2-core machine they burned 10× the CPU (``docs/benchmarks.md``). The epoch's pieces run as one
TorchScript call (:mod:`.ppgsl_script`, round 5), lane 1's half of each piece a
``torch.jit.fork`` task on torch's inter-op thread: the call holds no GIL, and a waiting lane
blocks. Each lane runs its kernels on one torch thread. From round 6, :meth:`LaneTrainer.train`
runs the epochs after the first :attr:`LaneTrainer.chunk` at a time in one scripted call each,
so no Python runs between two epochs; :class:`Lanes` keeps one Python worker thread, which
draws the next call's negatives (numpy) and their scatter index while a call runs. Tests hold
the two-lane epochs equal to :class:`.ppgsl_surrogate.SurrogateTrainer`'s with ``torch.equal``.
"""

from __future__ import annotations

import os
import queue
import threading
import warnings
from collections.abc import Callable
from typing import Any

import torch

from .ppgsl_sparse import SparseFeatures
from .ppgsl_surrogate import SurrogateTrainer, _no_tick, check_epochs


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
        self._pending: Any = None
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
                self._done.put((fn(), None))
            except BaseException as err:  # noqa: BLE001  (handed to the caller)
                self._done.put((None, err))

    def both(self, fn: Callable[[int], Any]) -> None:
        if self._worker is None:
            fn(0)
            fn(1)
            return
        self.submit(lambda: fn(1))
        try:
            fn(0)
        finally:
            self.result()

    def submit(self, fn: Callable[[], Any]) -> None:
        """Start ``fn()`` on lane 1 (with one lane: run it now); :meth:`result` waits for it."""
        if self._worker is None:
            try:
                self._pending = (fn(), None)
            except BaseException as err:  # noqa: BLE001  (raised by result, as with two lanes)
                self._pending = (None, err)
            return
        self._todo.put(fn)

    def result(self) -> Any:
        """What the submitted ``fn()`` returned; its exception is raised here."""
        value, err = self._pending if self._worker is None else self._done.get()
        if err is not None:
            raise err
        return value

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


def _halves(
    crow: Any, per_row: float = 0.0, lead: float = 0.0
) -> tuple[tuple[int, int], tuple[int, int]]:
    """Two row ranges of about equal cost: a row costs its entries plus ``per_row``, and lane 0
    has ``lead`` (in entries) of other work in the same piece. Any cut gives the same sums."""
    rows = len(crow) - 1
    cost = crow.double() + per_row * torch.arange(rows + 1, dtype=torch.float64)
    cut = min(int(torch.searchsorted(cost, (cost[-1:] - lead) / 2)[0]), rows)
    return (0, cut), (cut, rows)


def _row_sums(
    cols: Any, crow: Any, values: Any, per_row: float = 0.0, lead: float = 0.0
) -> list[_RowSum]:
    return [_RowSum(cols, crow, values, r0, r1) for r0, r1 in _halves(crow, per_row, lead)]


class _SplitAdam:
    """Whether torch's fused Adam step (``torch._fused_adam_``, the kernel
    ``Adam(fused=True).step()`` calls) may run on row ranges of a weight, by the lanes
    (:mod:`.ppgsl_script`): the kernel is elementwise, so the rows updated by two calls on two
    lanes are the rows one call updates, bit for bit (a test holds it), as long as every range
    is a whole number of the kernel's vector blocks (rows of a multiple of 64 elements: the
    caller checks; the scalar tail may round one ulp apart). Only for the optimizer it mirrors:
    one parameter group, fused, no AMSGrad, maximize, capturable, differentiable or tensor lr;
    the state (``step``, ``exp_avg``, ``exp_avg_sq``) is the optimizer's own, created by its
    first ``step()``."""

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


def _scripted(module: torch.nn.Module) -> Any:
    """``module`` scripted; where this torch cannot script it (TorchScript is deprecated from
    torch 2.9), the module itself with a warning: the same results, its lanes one after the
    other (an eager ``torch.jit.fork`` would run at once anyway)."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            return torch.jit.script(module)
    except Exception as err:  # noqa: BLE001  (any failure of the compiler: run it eagerly)
        warnings.warn(
            f"ppgsl: TorchScript failed ({type(err).__name__}); the surrogate's epoch runs on "
            "one core (the same results)",
            RuntimeWarning,
            stacklevel=2,
        )
        module.parallel = False
        return module


class LaneTrainer(SurrogateTrainer):
    """:class:`.ppgsl_surrogate.SurrogateTrainer` with each epoch's pieces split over two
    lanes (:class:`.ppgsl_script.EpochPieces`); the same results bit for bit
    (``forward_backward`` is replaced; the optimizer's step is the same fused Adam, run on W₁'s
    row halves by the lanes that computed those rows of its gradient). With one lane
    (:class:`Lanes` ``(1)``) ``epoch`` is the one-core trainer's."""

    #: At most this many epochs per scripted call in :meth:`train` (:meth:`chunk_size`).
    chunk = 64
    #: The bytes of negatives and their index one call's epochs may hold: two calls' worth are
    #: alive at once (the running call's and the next, drawn meanwhile).
    chunk_bytes = 32 << 20

    def __init__(self, *args: Any, lanes: Lanes, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lanes = lanes
        n = len(self.crow) - 1
        self.n = n
        self.a_hat = _row_sums(self.cols, self.crow, self.values)
        self.a_hat_t = _row_sums(self.cols, self.crow, self.values_t)
        self.pos_sums = _row_sums(self.pos_cols, self.pos_crow, None)
        self.pos_src = self.pos_order % max(self.k, 1)  # the pattern's entry -> its positive
        # The last piece: ∂L/∂W₁ by feature rows and their Adam step on both lanes, and ∂L/∂W₂
        # (Hᵀ·G, a GEMM n × h₁ × h₂) on lane 0 alone, so lane 0 gets fewer feature rows. Costs
        # measured per lane on the 2-core machine (Cora-ML): h₁ multiply-adds of the GEMM about
        # 2/3 of an entry of a row sum at width h₁ (n·h₂·2/3 entries), Adam's row of h₁ about
        # h₁/5 entries.
        h1, h2 = self.weights[0].shape[1], self.weights[2].shape[1]
        if isinstance(self.x, SparseFeatures):
            self.x_rows = _row_sums(self.x.rows.cols, self.x.rows.crow, self.x.rows.values)
            xc = self.x.cols
            self.x_cols = _row_sums(xc.cols, xc.crow, xc.values, h1 / 5, n * h2 * 2 / 3)
            self.feature_halves = tuple((s.r0, s.r1) for s in self.x_cols)
        else:  # dense X: halves (a GEMM's row blocks give the whole GEMM's sums only at some
            # cuts; this one is tested)
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
        w1, w2, k = self.weights[0], self.weights[2], self.k
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
        self.grads = [new(w1.shape), new(h1), new(w2.shape), new(h2)]  # ∂L/∂W₁, b₁, W₂, b₂
        self._pieces_module: Any = None
        self._adam_lists: list[list[torch.Tensor]] | None = None
        self._ahead: tuple[torch.Tensor, list[torch.Tensor]] | None = None

    def _script(self) -> Any:
        """The epoch's pieces as one scripted module (:mod:`.ppgsl_script`), built on first use."""
        if self._pieces_module is None:
            from .ppgsl_script import EpochPieces

            sparse = isinstance(self.x, SparseFeatures)
            x_sums = [*self.x_rows, *self.x_cols] if sparse else [*self.a_hat, *self.a_hat]
            g = self.opt.param_groups[0]
            adam = (g["lr"], *g["betas"], g["weight_decay"], g["eps"]) if self.adam else (0.0,) * 5
            module = EpochPieces(
                [*x_sums, *self.a_hat, *self.a_hat_t, *self.pos_sums],
                None if sparse else self.x, self.feature_halves, self.node_halves,
                self.weights, self.buf, self.target, self.pos_src, self.k,
                tuple(float(v) for v in adam), parallel=self.lanes.lanes == 2,
            )  # fmt: skip
            self._pieces_module = _scripted(module)
        return self._pieces_module

    def _lists_for_adam(self) -> list[list[torch.Tensor]]:
        """The fused Adam kernel's lists (:meth:`.ppgsl_script.EpochPieces.forward`): W₁'s row
        ranges per lane, then the other weights; views of the optimizer's own state, which it
        updates in place (built once its first ``step()`` has created it)."""
        st, w = self.opt.state, [t.detach() for t in self.weights]
        out: list[list[torch.Tensor]] = []
        for f0, f1 in self.feature_halves:
            rows = (w[0], self.grads[0], st[self.weights[0]]["exp_avg"],
                    st[self.weights[0]]["exp_avg_sq"])  # fmt: skip
            out += [[t[f0:f1]] for t in rows] + [[st[self.weights[0]]["step"]]]
        rest = self.weights[1:]
        out += [w[1:], self.grads[1:], [st[t]["exp_avg"] for t in rest],
                [st[t]["exp_avg_sq"] for t in rest], [st[t]["step"] for t in rest]]  # fmt: skip
        # the counters, each once (the kernels above read them)
        return [*out, [st[t]["step"] for t in self.weights]]

    def negatives_index(self, neg: torch.Tensor) -> list[torch.Tensor]:
        """Per lane and per end of the negative pairs: the pairs whose end falls in the lane's
        rows of ∂L/∂ẑ, their other ends, and the row each term adds to (the same index arrays
        the scatter computed in the epoch before; now drawn ahead with the negatives)."""
        (_, cut), (_, rows) = ((s.r0, s.r1) for s in self.pos_sums)
        assert self.pos_sums[0].r0 == 0 and self.pos_sums[1].r0 == cut and rows == self.n
        halves: list[list[torch.Tensor]] = [[], []]
        with torch.no_grad():
            for side in (0, 1):
                ends, others = neg[:, side], neg[:, 1 - side]
                upper = ends >= cut  # lane 1's rows; lane 0's are the rest
                for lane, mask in ((0, ~upper), (1, upper)):
                    mine = torch.nonzero(mask).squeeze(1)
                    at = ends.index_select(0, mine)
                    halves[lane] += [mine, others.index_select(0, mine), at.sub_(cut * lane)]
        return halves[0] + halves[1]

    def _index(self, neg: torch.Tensor) -> list[torch.Tensor]:
        if self._ahead is not None and self._ahead[0] is neg:
            return self._ahead[1]
        self._ahead = (neg, self.negatives_index(neg))
        return self._ahead[1]

    def ahead(self, draw: Callable[[], torch.Tensor]) -> Callable[[], torch.Tensor]:
        """``draw`` (the next epoch's negatives, run on lane 1 during an epoch) followed by
        their :meth:`negatives_index`, kept for that epoch."""

        def both() -> torch.Tensor:
            neg = draw()
            self._ahead = (neg, self.negatives_index(neg))
            return neg

        return both

    def epoch(
        self, neg: torch.Tensor, with_loss: bool = True, meanwhile: Callable[[], Any] | None = None
    ) -> torch.Tensor | None:
        """One step of the optimizer; lane 1's Python thread runs ``meanwhile()`` while the
        scripted epoch runs (the call releases the GIL)."""
        if self.lanes.lanes == 1:  # the pieces one after the other (the learner uses
            # SurrogateTrainer itself for one lane)
            return super().epoch(neg, with_loss, meanwhile)
        split = self.adam is not None and self.adam.ready()
        index = self._index(neg)  # before lane 1 replaces it with the next epoch's
        if meanwhile is not None:
            self.lanes.submit(meanwhile)
        try:
            loss, grads = self._pieces(neg, with_loss, step=split, index=index)
        finally:
            if meanwhile is not None:
                self.lanes.result()
        if not split:  # the first epoch (the optimizer's state), or another optimizer: whole
            for w, g in zip(self.weights, grads, strict=True):
                w.grad = g
            self.opt.step()
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
        index: list[torch.Tensor] | None = None,
    ) -> tuple[torch.Tensor | None, list[torch.Tensor]]:
        """The epoch's eight pieces (:class:`.ppgsl_script.EpochPieces`); with ``step`` the last
        one also runs the optimizer's step."""
        index = self._index(neg) if index is None else index
        state: list[list[torch.Tensor]] = []
        if step:
            if self._adam_lists is None:
                self._adam_lists = self._lists_for_adam()
            state = self._adam_lists
        # unoptimised: the same kernels in the order written, none dropped or reordered by
        # TorchScript's passes (and no optimisation pass on the first calls)
        with torch.no_grad(), torch.jit.optimized_execution(False):
            p = self._script()(neg, index, self.grads, step, state)
            loss = self._loss(p) if with_loss else None
        return loss, self.grads

    def chunk_size(self) -> int:
        """Epochs per scripted call: :attr:`chunk`, fewer where an epoch's negatives and index
        (64 bytes per positive pair: the pairs, and three int64 entries per pair and side in
        the index) would pass :attr:`chunk_bytes` (Cora-ML: 0.47 MB an epoch, 64 epochs)."""
        return max(1, min(self.chunk, self.chunk_bytes // (64 * max(self.k, 1))))

    def train(
        self, draw: Callable[[], torch.Tensor], epochs: int, tick: Callable[[int], None] = _no_tick
    ) -> torch.Tensor:
        """:meth:`.ppgsl_surrogate.SurrogateTrainer.train`, the same epochs bit for bit. On two
        lanes with the optimizer's step split (torch's fused Adam), after the first epoch
        (which creates the optimizer's state) the epochs run :meth:`chunk_size` at a time in one
        scripted call each (:meth:`.ppgsl_script.EpochPieces.epochs`): no Python between two
        epochs. Lane 1's Python thread draws the next call's negatives and their index while a
        call runs, in the order one epoch after another draws them."""
        check_epochs(epochs)
        if self.lanes.lanes == 1:
            return super().train(draw, epochs, tick)
        if self.adam is None:  # another optimizer: its step runs in Python after each epoch
            return super().train(self.ahead(draw), epochs, tick)

        def chunk_of(count: int) -> tuple[list[torch.Tensor], list[list[torch.Tensor]]]:
            negs = [draw() for _ in range(count)]
            return negs, [self.negatives_index(neg) for neg in negs]

        ready: list[Any] = []
        left = epochs - 1
        chunk = self.chunk_size()
        first = min(chunk, left)
        loss = self.epoch(  # a whole step: it creates the optimizer's state
            draw(),
            with_loss=left == 0,
            meanwhile=(lambda: ready.append(chunk_of(first))) if left else None,
        )
        tick(1)
        while left:
            negs, index = ready.pop()
            left -= len(negs)
            after = min(chunk, left)
            if after:
                self.lanes.submit(lambda count=after: ready.append(chunk_of(count)))
            try:
                if self._adam_lists is None:
                    self._adam_lists = self._lists_for_adam()
                with torch.no_grad(), torch.jit.optimized_execution(False):
                    p = self._script().epochs(negs, index, self.grads, self._adam_lists)
            finally:
                if after:
                    self.lanes.result()
            tick(len(negs))
            if not left:
                loss = self._loss(p)
        assert loss is not None, "ppgsl: a surrogate trains at least one epoch"
        return loss
