"""PPGSL's learner and its pieces (Wu et al. 2025; the strategy is :mod:`.ppgsl`): the sensitive
links, the parameterised pairs, the GCN surrogate link-inference attacker (SITP), the
propagation over the learned weights, and the learning loop (L = L_priv + α·L_util). torch is
imported inside functions."""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import islice
from typing import Any

import numpy as np

from .. import progress
from ..params import Params, ProtocolParameterError
from ..rng import stage_rng, stage_seed
from .baselines import pair_keys, sample_free_pairs
from .ppgsl_negatives import PairTable, fresh_negatives, negatives_tensor  # noqa: F401  (re-exported)

#: The surrogate's GCN widths [P §V-A6].
HIDDEN = (128, 64)
#: The stage-stream prefix of every random draw.
STREAM = "ppgsl"


@dataclass
class Learned:
    """What training leaves: the parameterised pairs ``[p, 2]``, their original adjacency and
    learned weights A′ (clamped), and the logs."""

    pairs: np.ndarray
    original: np.ndarray
    weights: np.ndarray
    log: dict[str, Any] = field(default_factory=dict)


def split_sensitive(edges: np.ndarray, share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(public E, sensitive E_s): a seeded round(share·m) of the canonical ``edges`` (at least
    one) are sensitive; a one-line error when that leaves no public edge or none at all."""
    m = len(edges)
    count = max(1, int(round(share * m)))
    if m < 2 or count >= m:
        raise ProtocolParameterError(
            f"ppgsl: sensitive_share = {share:g} of {m} uploaded edges leaves no public edge or "
            "no sensitive link; a graph with more edges is needed"
        )
    pick = np.zeros(m, dtype=bool)
    pick[stage_rng(seed, f"{STREAM}/sensitive").choice(m, size=count, replace=False)] = True
    return edges[~pick].copy(), edges[pick].copy()


def parameterised_pairs(
    public: np.ndarray, sensitive: np.ndarray, n: int, k: int, fgp: bool, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The learnable pairs (E first, then the candidates) and A on them: sparse, k·|E|
    uniform pairs outside E ∪ E_s (all of them when fewer are free); FGP, every pair i < j
    outside E_s."""
    taken = np.sort(np.concatenate([pair_keys(public, n), pair_keys(sensitive, n)]))
    if fgp:
        iu, iv = np.triu_indices(n, 1)
        keys = np.setdiff1d(iu.astype(np.int64) * n + iv, taken, assume_unique=True)
        cand = np.stack([keys // n, keys % n], axis=1)
    else:
        free = n * (n - 1) // 2 - len(taken)
        want = min(k * len(public), free)
        cand = sample_free_pairs(n, want, taken, stage_rng(seed, f"{STREAM}/candidates"))
    pairs = np.concatenate([public, cand]).astype(np.int64)
    original = np.concatenate([np.ones(len(public)), np.zeros(len(cand))]).astype(np.float32)
    return pairs, original


class Surrogate:
    """The 2-layer edge-weighted GCN + σ(cos) head, its weights drawn Glorot-uniform from
    ``gen`` (PyG's GCNConv initialisation; biases zero)."""

    def __init__(self, in_dim: int, gen: Any, device: Any) -> None:
        import torch

        dims = (in_dim, *HIDDEN)
        self.weights = []
        for a, b in zip(dims[:-1], dims[1:], strict=True):
            bound = math.sqrt(6.0 / (a + b))
            w = (torch.rand(a, b, generator=gen) * 2.0 - 1.0) * bound
            self.weights.append(w.to(device).requires_grad_(True))
            self.weights.append(torch.zeros(b, device=device, requires_grad=True))

    def parameters(self) -> list:
        return self.weights

    def freeze(self) -> None:
        for w in self.weights:
            w.requires_grad_(False)


class Propagation:
    """Â = D^-1/2 (A′ + I) D^-1/2 applied to node rows, A′ given per parameterised pair (both
    directions), differentiable in the weights: the self-loop term plus one sparse product
    (:mod:`.ppgsl_sparse`; the pattern is built once, the values from A′ at each call)."""

    def __init__(self, pairs: Any, n: int) -> None:
        import torch

        from .ppgsl_sparse import CsrPattern

        self.src = torch.cat([pairs[:, 0], pairs[:, 1]])
        self.dst = torch.cat([pairs[:, 1], pairs[:, 0]])
        self.n = n
        self.pattern = CsrPattern(self.src, self.dst, n)
        loops = torch.arange(n, device=self.src.device)
        #: the pattern with the diagonal too, for :class:`FixedPropagation`'s single product
        self.looped = CsrPattern(torch.cat([self.src, loops]), torch.cat([self.dst, loops]), n)

    def normalise(self, w: Any) -> tuple[Any, Any]:
        """(Â's off-diagonal values in CSR order, its diagonal D^-1) from the weights ``w``."""
        import torch

        w2 = torch.cat([w, w])
        deg = torch.ones(self.n, dtype=w.dtype, device=w.device).index_add(0, self.dst, w2)
        dinv = deg.rsqrt()
        norm = w2 * dinv[self.src] * dinv[self.dst]
        return norm[self.pattern.order], dinv * dinv

    def __call__(self, h: Any, w: Any) -> Any:
        return self.bind(w.to(h.dtype))(h)

    def bind(self, w: Any) -> Callable[[Any], Any]:
        """Â at the weights ``w`` as a function of the rows, normalised once for both layers
        (differentiable in ``w``)."""
        from .ppgsl_sparse import spmm

        values, diag = self.normalise(w)
        diag = diag.unsqueeze(1)
        return lambda h: h * diag.to(h.dtype) + spmm(values.to(h.dtype), h, self.pattern)

    def fixed(self, w: Any) -> FixedPropagation:
        """The propagation for constant weights ``w`` (the surrogate's N₁ epochs on a detached
        A′): Â's values are computed once, not every epoch."""
        return FixedPropagation(self, w)


class FixedPropagation:
    """:class:`Propagation` at constant weights, called as ``prop(h, w)`` (``w`` is ignored:
    it is the one given to :meth:`Propagation.fixed`): Â with its diagonal as one sparse
    matrix, so a layer is one product forward and one backward. Only Â's non-zero entries are
    kept (pairs at weight 0, half of PPGSL-sparse's pairs at the start, add exact zeros)."""

    def __init__(self, prop: Propagation, w: Any) -> None:
        import torch

        w = w.detach()
        w2 = torch.cat([w, w])
        deg = torch.ones(prop.n, dtype=w.dtype, device=w.device).index_add(0, prop.dst, w2)
        dinv = deg.rsqrt()
        norm = torch.cat([w2 * dinv[prop.src] * dinv[prop.dst], dinv * dinv])
        values = norm[prop.looped.order]
        keep = values != 0
        self.pattern = prop.looped.subset(keep)
        self.values = values[keep]

    def __call__(self, h: Any, w: Any = None) -> Any:
        from .ppgsl_sparse import spmm

        return spmm(self.values.to(h.dtype), h, self.pattern)

    def bind(self, w: Any = None) -> FixedPropagation:
        return self


def encode(model: Surrogate, xw1: Any, prop: Propagation, w: Any) -> Any:
    """z = Â·relu(Â·X W₁ + b₁) W₂ + b₂, with X W₁ given (it does not depend on A′)."""
    w1, b1, w2, b2 = model.weights
    a_hat = prop.bind(w.to(xw1.dtype))  # Â's normalisation once for both layers
    h = (a_hat(xw1) + b1).relu()
    return a_hat(h @ w2) + b2


def link_prob(z: Any, pairs: Any) -> Any:
    """σ(cos(z_i, z_j)) per pair (τ = 1, literal [R]): the rows normalised once (eps 1e-8, as
    ``cosine_similarity``), then one gather per endpoint (``index_select``, whose backward is a
    plain ``index_add``, not the sort-based backward of fancy indexing)."""
    import torch
    import torch.nn.functional as F

    zn = F.normalize(z, dim=1, eps=1e-8)
    dots = (zn.index_select(0, pairs[:, 0]) * zn.index_select(0, pairs[:, 1])).sum(1)
    return torch.sigmoid(dots)


def feature_matrix(x: np.ndarray, device: Any) -> Any:
    """X for ``_mm``: sparse (row lists with its transpose, :class:`.ppgsl_sparse.SparseFeatures`)
    when mostly zeros, the identity when the graph has no features (PolBlogs [R]), else a
    dense tensor."""
    import torch

    from .ppgsl_sparse import SparseFeatures

    n = x.shape[0]
    if x.shape[1] == 0:
        idx = torch.arange(n)
        return SparseFeatures(
            torch.sparse_coo_tensor(
                torch.stack([idx, idx]), torch.ones(n), (n, n), check_invariants=True
            ).to(device)
        )
    x = np.asarray(x, dtype=np.float32)
    if np.count_nonzero(x) < 0.1 * x.size:
        rows, cols = np.nonzero(x)
        idx = torch.as_tensor(np.stack([rows, cols]), dtype=torch.int64)
        return SparseFeatures(
            torch.sparse_coo_tensor(
                idx, torch.as_tensor(x[rows, cols]), x.shape, check_invariants=True
            ).to(device)
        )
    return torch.as_tensor(x, device=device)


def learn(
    public: np.ndarray,
    sensitive: np.ndarray,
    x: np.ndarray,
    n: int,
    p: Params,
    seed: int,
    device: str = "cpu",
    num_threads: int | None = 1,
    project: bool = False,
    on_retrain: Callable[..., None] | None = None,
    lanes: int | None = None,
) -> Learned:
    """Algorithm 1 lines 3–19: the learned A′ on the parameterised pairs.

    Args:
        project: clamp θ into [0, 1] after every step (a projection variant, an ablation:
            entries then never freeze; not the default).
        on_retrain: diagnostics hook, called after each retrain as ``on_retrain(step, model,
            xw1, prop, w_fix)`` (the frozen surrogate, X·W₁, the propagation, A′ detached).
        lanes: CPU cores for the surrogate's epochs (1 or 2; None: 2 where the process has
            two, :func:`.ppgsl_lanes.default_lanes`). The result is the same bit for bit.
    """
    # Long on purpose: one training loop whose random draws must run in this order (the
    # seeded fingerprint tests hold it); helpers would only pass its state around.
    import torch

    from ..torch_env import cpu_threads
    from .ppgsl_lanes import Lanes, LaneTrainer, default_lanes
    from .ppgsl_surrogate import SurrogateTrainer

    keep_freed_memory()

    dev = torch.device(device)
    pairs_np, original_np = parameterised_pairs(public, sensitive, n, p.ppgsl_k, p.ppgsl_fgp, seed)
    progress.stage(f"PPGSL: {len(pairs_np)} parameterised pairs, {len(sensitive)} sensitive links")
    on_cpu = dev.type == "cpu"
    lanes = (default_lanes(dev) if lanes is None else lanes) if on_cpu else 1
    with cpu_threads(num_threads if on_cpu else None), Lanes(lanes) as pool:
        pairs = torch.as_tensor(pairs_np, device=dev)
        sens = torch.as_tensor(sensitive, device=dev)
        original = torch.as_tensor(original_np, device=dev)
        theta = torch.nn.Parameter(original.clone())
        opt_theta = torch.optim.Adam([theta], lr=p.ppgsl_lr)
        prop = Propagation(pairs, n)
        xt = feature_matrix(x, dev)
        gen = torch.Generator().manual_seed(stage_seed(seed, f"{STREAM}/surrogate"))
        neg_rng = stage_rng(seed, f"{STREAM}/negatives")
        tables = PairTable(n) if PairTable.fits(n) else None
        alpha, mu = p.ppgsl_alpha, p.ppgsl_mu
        summed = p.ppgsl_priv_reduction == "sum"
        log: dict[str, Any] = {
            "retrains": 0,
            "attack_loss": [],
            "priv_loss": [],
            "util_loss": [],
            "movable": [],
        }
        model: Surrogate | None = None
        retrains = -(-p.ppgsl_epochs // mu)
        for step in progress.steps(range(p.ppgsl_epochs), "PPGSL learner step"):
            if step % mu == 0:  # SITP: a fresh surrogate, trained on the current A′ (detached)
                progress.stage(
                    f"PPGSL surrogate {step // mu + 1}/{retrains}: {p.ppgsl_attack_epochs} epochs"
                )
                model = Surrogate(xt.shape[1], gen, dev)
                opt = torch.optim.Adam(
                    model.parameters(), lr=p.ppgsl_attack_lr, **_adam_kernel(dev)
                )
                w_fix = theta.detach().clamp(0.0, 1.0)
                support = w_fix > 0
                pos, w_pos = pairs[support], w_fix[support]
                taken = np.sort(pair_keys(pairs_np[support.cpu().numpy()], n))
                table = tables.reset(taken) if tables is not None else None
                # Â is constant over the N₁ epochs; their backward is written out, on the CPU
                # split over the lanes (the same results bit for bit)
                fixed = prop.fixed(w_fix)
                if on_cpu and lanes == 2:  # one lane: the one-core epoch, unscripted
                    trainer = LaneTrainer(model.weights, xt, fixed, pos, w_pos, opt, lanes=pool)
                else:
                    trainer = SurrogateTrainer(model.weights, xt, fixed, pos, w_pos, opt)

                negatives = partial(negatives_tensor, n, len(pos), taken, neg_rng, table, dev)
                # the next epochs' negatives are drawn while the epochs before run (the same
                # draws in the same order as one after another)
                bar = progress.steps(
                    range(p.ppgsl_attack_epochs), "PPGSL surrogate epoch", every_s=10.0
                )
                loss = trainer.train(negatives, p.ppgsl_attack_epochs, partial(_advance, bar))
                deque(bar, maxlen=0)  # the bar's last line
                model.freeze()
                xw1 = _mm(xt, model.weights[0]).detach()
                log["retrains"] += 1
                # θ entries inside [0, 1]: the only ones this surrogate can still move
                log["movable"].append(int(((theta >= 0) & (theta <= 1)).sum()))
                if on_retrain is not None:
                    on_retrain(step, model, xw1, prop, w_fix)
                assert loss is not None  # the last epoch returned it
                log["attack_loss"].append(float(loss))
            assert model is not None
            w = theta.clamp(0.0, 1.0)
            z = encode(model, xw1, prop, w)
            p_s = link_prob(z, sens).clamp(max=1 - 1e-7)
            ce = -torch.log1p(-p_s)  # Eq. 7: CE(p, 0) per sensitive link
            priv = ce.sum() if summed else ce.mean()
            util = 2.0 * ((original - w) ** 2).sum()  # Eq. 8 over the full symmetric matrix
            total = priv + alpha * util
            opt_theta.zero_grad(set_to_none=True)
            total.backward()
            opt_theta.step()
            if project:
                with torch.no_grad():
                    theta.clamp_(0.0, 1.0)
            if step % mu == 0 or step == p.ppgsl_epochs - 1:
                log["priv_loss"].append(float(priv.detach()))
                log["util_loss"].append(float(util.detach()))
        weights = theta.detach().clamp(0.0, 1.0).cpu().numpy().astype(np.float64)
    return Learned(pairs_np, original_np, weights, log)


def _advance(bar: Iterator[Any], count: int) -> None:
    """``count`` steps of a :func:`.progress.steps` bar."""
    deque(islice(bar, count), maxlen=0)


def keep_freed_memory() -> None:
    """Let glibc's malloc keep freed blocks of up to 16 MiB in the heap (and up to 64 MiB free
    at its top) instead of unmapping them: a surrogate epoch allocates and frees some 5 MiB of
    tensors, and with glibc's default the pages of those blocks went back to the kernel and
    faulted in again every epoch (about 1 100 page faults an epoch on Cora-ML, a sixth of its
    CPU time on a loaded machine). Process-wide and idempotent; nothing happens off glibc."""
    global _KEPT
    if _KEPT:
        return
    _KEPT = True
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 16 << 20)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, 64 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):  # not glibc: its malloc keeps its own policy
        pass


_KEPT = False


def _adam_kernel(dev: Any) -> dict[str, Any]:
    """Adam's fused kernel where torch has it for the device (one pass over W₁'s 368 k entries
    on Cora-ML instead of a dozen; the same update up to rounding)."""
    try:
        from torch.utils._foreach_utils import _get_fused_kernels_supported_devices
    except ImportError:  # pragma: no cover (torch < 2.4)
        return {}
    return {"fused": True} if dev.type in _get_fused_kernels_supported_devices() else {}


def _mm(x: Any, w: Any) -> Any:
    """X·W for a :func:`feature_matrix` X."""
    from .ppgsl_sparse import SparseFeatures

    return x.matmul(w) if isinstance(x, SparseFeatures) else x @ w
