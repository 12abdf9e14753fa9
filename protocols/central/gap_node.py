"""GAP at node level (central DP; Sajadmanesh, Shamsabadi, Bellet, Gatica-Perez, USENIX
Security 2023, its node-level variant GAP-NDP): gap-edge's three modules (:mod:`.gap`) with
every part that reads a node's upload made node-private.

1. **Degree bound** (the paper's maximum-degree bound, made stable): every node u gives each
   neighbour a priority (a keyed hash of the pair) and *proposes* to the D lowest; the curator
   keeps an edge {u, w} when both uploaded and each proposed to the other. Proposals are made
   over the reported neighbour lists, which do not depend on whether some other node uploaded,
   so one node's upload adds or removes only its own kept edges (at most D): no other node's
   neighbourhood is re-drawn (:func:`bounded_edges`).
2. **Encoder** (§4.1) trained by DP-SGD over the training slots (one example = one node's
   features and label), per-node clipping, Poisson sampling (:mod:`.dpsgd`).
3. **Aggregation perturbation** (§4.2) on the bounded graph: per hop, one node's upload moves at
   most D rows other than its own by a unit vector, sensitivity √D, σ = z·√D.
4. **Classifier** (§4.3) trained by DP-SGD on [H₀ ‖ … ‖ H_K] of the training slots.

One noise multiplier z for all three, calibrated so that dp-accounting's ε of the composed
event equals the request (:mod:`.gap_node_privacy`; proof docs/privacy/gap.md). Training nodes
get no class in the release (−1): their prediction would read their own raw features.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import progress
from ..base import CuratorView
from ..params import Params
from ..registry import register
from ..rng import stage_rng, stage_seed
from ..types import PrivacyReport, Release
from . import gap_node_privacy as gnp
from .base import UploadedGraph
from .gap import GapModel, GapRelease, adjacency, noisy_sum, normalise_rows
from .gap_params import NODE_PARAMS


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on uint64 (wrapping arithmetic): a keyed hash to uniform bits."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def pair_priorities(src: np.ndarray, dst: np.ndarray, key: int) -> np.ndarray:
    """A uniform 64-bit priority for each directed pair (u, w), a function of (key, u, w)
    alone: the same pair gets the same priority whatever else is in the edge list."""
    with np.errstate(over="ignore"):
        k = _mix(np.asarray([key], dtype=np.uint64))
        return _mix(_mix(k ^ src.astype(np.uint64)) ^ dst.astype(np.uint64))


def reports_of(graph: UploadedGraph) -> np.ndarray:
    """The directed pairs (u, w), w in u's own report: ``graph.reported`` as uploaded, or, for
    a graph built from an edge list, both directions of every edge (the list standing for each
    uploaded node's report). Self-pairs dropped."""
    if graph.reported is not None:
        pairs = np.asarray(graph.reported, dtype=np.int64).reshape(-1, 2)
    else:
        e = np.asarray(graph.edges, dtype=np.int64).reshape(-1, 2)
        pairs = np.concatenate([e, e[:, ::-1]])
    return pairs[pairs[:, 0] != pairs[:, 1]]


def proposals(pairs: np.ndarray, max_degree: int, key: int) -> np.ndarray:
    """Whether u proposes to w, for each directed pair (u, w) of ``pairs`` (w in u's report):
    w among the ``max_degree`` lowest-priority entries of u's report (:func:`pair_priorities`
    under ``key``). A function of u's own report and the key alone, so one node's absence
    changes no other node's proposals."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if len(pairs) == 0:
        return np.zeros(0, dtype=bool)
    src, dst = pairs[:, 0], pairs[:, 1]
    order = np.lexsort((pair_priorities(src, dst, key), src))
    sorted_src = src[order]
    start = np.searchsorted(sorted_src, sorted_src, side="left")
    rank = np.empty(len(src), dtype=np.int64)
    rank[order] = np.arange(len(src)) - start
    return rank < max_degree


def mutual(pairs: np.ndarray, ok: np.ndarray, n: int) -> np.ndarray:
    """Mask of the pairs (u, w) with ``ok`` whose reverse (w, u) is also among ``pairs`` with
    ``ok`` (both ends proposed to each other)."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    keys = pairs[:, 0] * n + pairs[:, 1]
    back = pairs[:, 1] * n + pairs[:, 0]
    return ok & np.isin(back, keys[ok])


def bounded_edges(pairs: np.ndarray, uploaded: np.ndarray, max_degree: int, key: int) -> np.ndarray:
    """The kept canonical edges: {u, w} with both endpoints uploaded and each among the other's
    ``max_degree`` proposals over its own report (:func:`proposals`); ``pairs`` are the directed
    report pairs (:func:`reports_of`). Removing node v removes only kept edges at v."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    if len(pairs) == 0:
        return np.zeros((0, 2), dtype=np.int64)
    up = np.asarray(uploaded, dtype=bool)
    ok = proposals(pairs, max_degree, key) & up[pairs[:, 0]] & up[pairs[:, 1]]
    kept = pairs[mutual(pairs, ok, len(up))]
    kept = kept[kept[:, 0] < kept[:, 1]]
    return np.unique(kept, axis=0)


def training_inputs(
    name: str, graph: UploadedGraph, curator: CuratorView
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """(labels, training slots, uploaded, present slots, class count) of a node-level DP-SGD
    release: the slots are public (the split), a slot is present when its node uploaded and
    the curator holds its label; the class count is the task's public one."""
    labels, slots = curator.labels, curator.train_nodes
    if labels is None or slots is None or len(slots) == 0:
        raise ValueError(f"{name} trains on the curator's training labels; it has none")
    labels = np.asarray(labels, dtype=np.int64)
    slots = np.unique(np.asarray(slots, dtype=np.int64))
    uploaded = np.asarray(graph.uploaded, dtype=bool)
    present = uploaded[slots] & (labels[slots] >= 0)
    return labels, slots, uploaded, present, curator.classes()


def _mlp(dims: list[int], gen: Any, device: str) -> dict[str, Any]:
    """Weights and biases uniform ±1/√fan_in (torch's default), as a dict for torch.func."""
    import torch

    params = {}
    for i, (fan_in, fan_out) in enumerate(zip(dims[:-1], dims[1:], strict=True)):
        bound = fan_in**-0.5
        params[f"w{i}"] = (
            torch.rand((fan_in, fan_out), generator=gen, device=device) * 2 - 1
        ) * bound
        params[f"b{i}"] = (torch.rand((fan_out,), generator=gen, device=device) * 2 - 1) * bound
    return params


def forward(params: dict[str, Any], x: Any, upto: int | None = None) -> Any:
    """The MLP's output (ReLU between layers); ``upto``: the first layers only, the last of
    them without ReLU (gap-edge's embedding)."""
    import torch

    layers = len(params) // 2
    stop = layers if upto is None else upto
    for i in range(stop):
        x = x @ params[f"w{i}"] + params[f"b{i}"]
        if i < stop - 1:
            x = torch.relu(x)
    return x


def example_loss(params: dict[str, Any], x: Any, y: Any) -> Any:
    """Cross-entropy of one node's example (the unit DP-SGD clips)."""
    import torch

    return torch.nn.functional.cross_entropy(forward(params, x[None]), y[None])


def clipped_sum(params: dict[str, Any], batch: tuple[Any, ...], clip: float):
    """Σ_i ḡ_i of the MLP's per-node gradients clipped to ℓ2 ≤ ``clip``, in closed form (a
    linear layer's per-example gradient is aᵢ⊗gᵢ, of norm ‖aᵢ‖·‖gᵢ‖: no B×d×h tensor), and the
    norms before clipping. Equal to :func:`.dpsgd.generic_clipped_sum` of :func:`example_loss`
    (a test holds it); an all-absent batch sums to zero."""
    import torch

    x, y = batch
    if x.shape[0] == 0:
        return {k: torch.zeros_like(v) for k, v in params.items()}, x.new_zeros(0)
    layers = len(params) // 2
    inputs, pre = [], []
    a = x
    for i in range(layers):
        inputs.append(a)
        z = a @ params[f"w{i}"] + params[f"b{i}"]
        pre.append(z)
        a = torch.relu(z) if i < layers - 1 else z
    loss = torch.nn.functional.cross_entropy(a, y, reduction="sum")
    grads = torch.autograd.grad(loss, pre)  # row i: ∂loss_i/∂z_i (z_i reaches loss_i only)
    squares = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)
    for a_in, g in zip(inputs, grads, strict=True):
        squares = squares + (a_in.pow(2).sum(1) + 1.0) * g.pow(2).sum(1)
    norms = squares.sqrt()
    factor = 1.0 / torch.clamp(norms / clip, min=1.0)
    out = {}
    for i, (a_in, g) in enumerate(zip(inputs, grads, strict=True)):
        scaled = g * factor[:, None]
        out[f"w{i}"] = a_in.detach().T @ scaled
        out[f"b{i}"] = scaled.sum(0)
    return out, norms.detach()


@dataclass(frozen=True)
class SlotSgd:
    """One slot-wise DP-SGD run's public settings: Poisson rate ``q``, ``steps`` over
    ``epochs`` (for progress), clip ``C``, the noise's std on the clipped sum and Adam's
    ``lr``."""

    q: float
    steps: int
    epochs: int
    clip: float
    std: float
    lr: float


def noisy_step(params: dict[str, Any], batch: tuple[Any, Any], clip: float, std: float, gen):
    """One DP-SGD release: Σ of the batch's per-example gradients clipped to ``clip`` (closed
    form, :func:`clipped_sum`) plus N(0, std²) on every coordinate."""
    import torch

    from . import dpsgd

    detached = {k: v.detach().requires_grad_(True) for k, v in params.items()}
    with torch.enable_grad():
        total, _ = clipped_sum(detached, batch, clip)
    return dpsgd.add_noise({k: v.detach() for k, v in total.items()}, std, gen)


def dp_fit(
    params: dict[str, Any], make_batch: Any, holds: Any, sgd: SlotSgd, gen: Any, label: str
) -> dict[str, Any]:
    """DP-SGD (Abadi et al. 2016, Alg. 1, with Adam as post-processing) of ``params`` over
    the example slots: ``sgd.steps`` Poisson samples of rate q over the slots (a slot whose
    ``holds`` is false is sampled and holds no example), per-example clipping to C, noise std
    on the sum, divided by the public q·slots. ``make_batch(slot indices)`` gives the held
    examples' (inputs, labels). The :mod:`.dpsgd` primitives, in a loop of its own so that
    each epoch can say progress and absent slots are sampled like present ones. gap-node and
    dp-sage both train through it."""
    import torch

    from . import dpsgd

    rows = len(holds)
    device = str(holds.device)
    leaves = {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}
    opt = torch.optim.Adam(leaves.values(), lr=sgd.lr)
    expected = sgd.q * rows
    per_epoch = math.ceil(sgd.steps / sgd.epochs)
    done = 0
    for _ in progress.steps(range(sgd.epochs), label, total=sgd.epochs):
        for _ in range(min(per_epoch, sgd.steps - done)):
            idx = dpsgd.poisson_sample(rows, sgd.q, gen, device)
            noisy = noisy_step(leaves, make_batch(idx[holds[idx]]), sgd.clip, sgd.std, gen)
            for k, leaf in leaves.items():
                leaf.grad = (noisy[k] / expected).to(leaf.dtype)
            opt.step()
            done += 1
    return {k: v.detach() for k, v in leaves.items()}


@register(
    "gap-node",
    label="GAP-NDP",
    params=NODE_PARAMS,
    summary="GAP (central, node DP): degree-bounded graph, DP-SGD encoder, K perturbed "
    "aggregations, DP-SGD classifier",
)
class GapNode(GapRelease):
    """GAP at node level (module docstring)."""

    name = "gap-node"
    kind = "model"

    def __init__(self, **params: Any) -> None:
        p = {param.name: param.default for param in NODE_PARAMS}
        p.update(params)
        self.p = Params(p)

    def _release(
        self, graph: UploadedGraph, curator: CuratorView, seed: int, device: str
    ) -> Release:
        import torch

        p = self.p
        labels, slots, uploaded, present, classes = training_inputs(self.name, graph, curator)
        n = graph.num_nodes
        plan = gnp.NodePlan.of(len(slots), p)
        z = gnp.calibrate(float(p.epsilon), float(p.delta), plan, p.accountant)
        sigma = z * gnp.node_sensitivity(p.gap_max_degree)
        gen = torch.Generator(device=device)
        gen.manual_seed(stage_seed(seed, f"{self.name}/sgd"))
        x_np = np.asarray(graph.x, dtype=np.float32) * uploaded[:, None]
        x = torch.as_tensor(x_np, device=device)
        y = torch.as_tensor(np.where(labels >= 0, labels, 0), device=device)
        slots_t = torch.as_tensor(slots, device=device)
        present_t = torch.as_tensor(present, device=device)
        progress.stage(f"{self.name}: encoder DP-SGD ({plan.steps} steps)")
        enc = _mlp([graph.num_features, p.gap_hidden, p.gap_embed, classes], gen, device)
        sgd = SlotSgd(plan.q, plan.steps, p.gap_sgd_epochs, p.gap_clip, z * p.gap_clip, p.gap_lr)

        def on_slots(inputs: Any) -> Any:
            return lambda sel: (inputs[slots_t[sel]], y[slots_t[sel]])

        enc = dp_fit(enc, on_slots(x), present_t, sgd, gen, "encoder epoch")
        with torch.no_grad():
            h0 = forward(enc, x, upto=2).cpu().numpy().astype(np.float64)
        key = stage_seed(seed, f"{self.name}/degree")
        kept = bounded_edges(reports_of(graph), uploaded, p.gap_max_degree, key)
        adj = adjacency(kept, n, uploaded)
        rng = stage_rng(seed, f"{self.name}/agg")
        hops = [normalise_rows(h0)]
        for _ in progress.steps(range(p.gap_hops), "aggregation hop", total=p.gap_hops):
            hops.append(normalise_rows(noisy_sum(adj, hops[-1], sigma, rng)))
        zin = torch.as_tensor(np.concatenate(hops, axis=1), dtype=torch.float32, device=device)
        progress.stage(f"{self.name}: classifier DP-SGD ({plan.steps} steps)")
        cls = _mlp([zin.shape[1], p.gap_hidden, classes], gen, device)
        cls = dp_fit(cls, on_slots(zin), present_t, sgd, gen, "classifier epoch")
        with torch.no_grad():
            pred = forward(cls, zin).argmax(1).cpu().numpy()
        is_train = np.zeros(n, dtype=bool)
        is_train[slots] = True
        weights = {k: v.detach().cpu().numpy() for k, v in cls.items()}
        model = GapModel(weights, np.where(is_train | ~uploaded, -1, pred))
        report = self.privacy_report(slots=len(slots))
        stats = {
            "training_nodes": int(present.sum()),
            "training_slots": int(len(slots)),
            "aggregated_edges": int(len(kept)),
            "hops": int(p.gap_hops),
            "sigma": float(sigma),
            "noise_multiplier": float(z),
        }
        return Release.of_model(model, n, report, stats)

    def privacy_report(
        self, num_features: int | None = None, *, slots: int | None = None, **_: Any
    ) -> PrivacyReport:
        """Node-level (ε, δ) (docs/privacy/gap.md, gap-node); before a release the target."""
        return gnp.privacy_report(self.name, self.p, slots)
