"""DP-SAGE: the node-level DP-GNN of Daigavane, Madan, Sinha, Thakurta, Aggarwal & Jain
("Node-Level Differentially Private Graph Neural Networks", 2021): a 1-layer GraphSAGE model
trained by DP-SGD on per-node 1-hop subgraphs of a degree-bounded graph, per-subgraph
clipping and Gaussian noise. The baseline "SAGE" of the DPAR paper (Zhang et al., WWW 2024,
Table 1). The proof as run is docs/privacy/sage.md.

1. **Degree bound** (the paper's in/out-degree bound by sampling, made stable): gap-node's
   sampler (:func:`.gap_node.bounded_edges`): every node proposes to its K lowest-priority
   reported neighbours (a keyed hash of the pair); {u, w} is kept when both uploaded and each
   proposed to the other. One node's upload adds or removes only its own ≤ K kept edges.
2. **Complete subgraphs.** Training slot u's 1-hop subgraph (u and its kept neighbours) holds
   an example only when u is present and *every* node u proposed to is present and proposed
   back (:func:`complete_nodes`). Removing node v then *removes* the subgraph examples of v and
   of its ≤ K kept neighbours and changes no other example (a neighbour that merely lost v
   would otherwise be a changed example, which add/remove accounting does not cover).
3. **Self examples.** Every present slot also holds a subgraph-free example (u alone, the
   aggregate zero), so nodes whose subgraph is incomplete still train the model. One node
   therefore removes at most D = K + 2 examples (its own two and ≤ K neighbours' subgraphs).
4. **Model**: one GraphSAGE layer with the mean aggregator, ReLU(W·[x_u ‖ mean_{w∈N(u)} x_w]),
   and a linear decoder; DP-SGD (Abadi et al. 2016) with Poisson sampling over the 2N public
   example slots, per-example clipping to C, noise std z·C on the sum.
5. **Accounting**: add/remove of a group of ≤ D examples, dp-accounting's Poisson-subsampled
   Gaussian at rate 1 − (1 − q)^D and multiplier z/D (:func:`.dpar_bounded.group_sgd_epsilon`,
   the same group argument as ``dpar-bounded``), calibrated so the proven ε equals the request.

Inference is inductive (as DPAR's): a non-training node is classified from its own features and
the mean of its non-training neighbours' features; training nodes get no class (−1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import progress
from ..base import EPSILON, CuratorView
from ..params import Param, Params
from ..registry import register
from ..rng import stage_seed
from ..types import PrivacyReport, Release
from . import base
from .base import UploadedGraph
from .dpar_model import SgdPlan
from .gap import GapModel, GapRelease
from .gap_node import (
    SlotSgd,
    _mlp,
    dp_fit,
    forward,
    mutual,
    proposals,
    reports_of,
    training_inputs,
)
from .report_parts import ReportPart

NAME = "dp-sage"

SAGE_EPSILON = EPSILON.but(
    help="node-level ε of the whole release (DP-SGD over the degree-bounded 1-hop subgraphs, "
    "dp-accounting): the proven bound"
)
SAGE_DELTA = base.DELTA.but(
    default=1e-5, help="δ of the node-level (ε, δ) guarantee; 0 or unset: 1e-5"
)
SAGE_ACCOUNTANT = base.ACCOUNTANT_PARAM.but(
    help="dp-accounting accountant of the DP-SGD steps: rdp (the paper's) or pld"
)
SAGE_MAX_DEGREE = Param(
    "sage_max_degree", int, 3,
    "K: each node keeps at most K neighbours (mutual lowest random priorities); one node "
    "removes at most K + 2 training examples [P: the paper's degree bound; value I]", low=1,
)  # fmt: skip
SAGE_HIDDEN = Param("sage_hidden", int, 64, "hidden units of the GraphSAGE layer [I]", low=1)
SAGE_EPOCHS = Param(
    "sage_epochs", int, 10,
    "DP-SGD epochs over the 2N example slots (steps = epochs·⌈2N/B⌉) [I]", low=1,
)  # fmt: skip
SAGE_BATCH_SIZE = Param(
    "sage_batch_size", int, 256,
    "DP-SGD expected batch size B (Poisson rate B/2N over the example slots) [I]", low=1,
)  # fmt: skip
SAGE_CLIP = Param(
    "sage_clip", float, 1.0, "per-subgraph gradient clip C [P: clipping; value I]", low=0.0,
    low_open=True,
)  # fmt: skip
SAGE_LR = Param("sage_lr", float, 0.01, "Adam learning rate [I]", low=0.0, low_open=True)

#: The parameters of ``dp-sage``, in the order listings show them.
PARAMS = (
    SAGE_EPSILON, SAGE_DELTA, SAGE_ACCOUNTANT, SAGE_MAX_DEGREE, SAGE_HIDDEN, SAGE_EPOCHS,
    SAGE_BATCH_SIZE, SAGE_CLIP, SAGE_LR,
)  # fmt: skip


# --- the degree bound and the example rows -------------------------------------------------


def complete_nodes(
    pairs: np.ndarray, uploaded: np.ndarray, max_degree: int, key: int
) -> tuple[np.ndarray, np.ndarray]:
    """(complete, kept): ``complete[u]`` when u uploaded and every node u proposed to (over
    its own report: :func:`.gap_node.proposals`) uploaded and proposed back (its subgraph is
    then u and all its proposals); ``kept`` the directed kept pairs (u, w) (mutual proposals
    between uploaded nodes), each edge both ways. ``pairs``: the directed report pairs
    (:func:`.gap_node.reports_of`)."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    up = np.asarray(uploaded, dtype=bool)
    n = len(up)
    if len(pairs) == 0:
        return up.copy(), pairs
    prop = proposals(pairs, max_degree, key) & up[pairs[:, 0]]
    ok = mutual(pairs, prop & up[pairs[:, 1]], n)
    broken = np.zeros(n, dtype=bool)
    np.logical_or.at(broken, pairs[prop & ~ok, 0], True)
    return up & ~broken, pairs[ok]


def neighbour_mean(x: np.ndarray, pairs: np.ndarray, n: int) -> np.ndarray:
    """Row u: the mean of x over the targets of ``pairs`` with source u (zero when none)."""
    import scipy.sparse as sp

    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    count = np.bincount(pairs[:, 0], minlength=n).astype(np.float64)
    w = 1.0 / np.maximum(count, 1.0)[pairs[:, 0]]
    mean = sp.csr_matrix((w, (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    return np.asarray(mean @ np.asarray(x, dtype=np.float32), dtype=np.float32)


def example_rows(
    slots: np.ndarray, present: np.ndarray, complete: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The 2N public example slots: slot i is training slot i's self example, slot N + i its
    subgraph example. Returns (node of each slot, whether it holds an example): a self
    example when the slot's node is present, a subgraph example when it is also complete."""
    nodes = np.concatenate([slots, slots])
    holds = np.concatenate([present, present & complete[slots]])
    return nodes, holds


# --- accounting -----------------------------------------------------------------------------


def group_size(max_degree: int) -> int:
    """D: the examples one node's upload can remove (its self and subgraph examples and the
    subgraph examples of its ≤ K kept neighbours)."""
    return max_degree + 2


def plan_of(slots: int, p: Any) -> SgdPlan:
    """The DP-SGD plan of ``slots`` training slots: q = B/2N, T = epochs·⌈2N/B⌉, multiplier
    z = D·z_leg with z_leg dp-accounting's calibration at rate 1 − (1 − q)^D."""
    from . import dpsgd
    from .dpar_privacy import quiet_absl, strict_rate

    if slots < 1:
        raise ValueError(f"{NAME} needs at least one training slot")
    rows = 2 * slots
    q = min(1.0, p.sage_batch_size / rows)
    steps = p.sage_epochs * math.ceil(rows / min(p.sage_batch_size, rows))
    d = group_size(p.sage_max_degree)
    with quiet_absl():
        z = dpsgd.calibrate_noise_multiplier(
            float(p.epsilon), float(p.delta), strict_rate(q, d), steps, p.accountant
        )
    how = f"proven: {p.accountant.upper()}, add/remove of D = {d} examples (group)"
    return SgdPlan(q, steps, d, z * d, how)


def plan_epsilon(plan: SgdPlan, delta: float, accountant: str) -> float:
    """The proven ε of ``plan``'s noise (dpar-bounded's group accounting, the same argument)."""
    from .dpar_bounded import group_sgd_epsilon

    return group_sgd_epsilon(plan, delta, accountant)


@dataclass(frozen=True, kw_only=True)
class SagePart(ReportPart):
    """The whole dp-sage release: one DP-SGD run, accounted as a group of D examples."""

    part: str = NAME
    mechanism: str = (
        "DP-SGD over degree-bounded 1-hop subgraph examples and self examples, per-example "
        "clipping, Gaussian noise; one node removes at most D examples"
    )
    unit: str = "node"
    epsilon: float
    delta: float
    noise_multiplier: float
    group: int
    max_degree: int
    slots: int
    q: float
    steps: int
    clip: float
    accountant: str


def privacy_report(p: Any, slots: int | None = None) -> PrivacyReport:
    """Node-level (ε, δ) of ``dp-sage``: before a release the calibration target, after it the
    proven figure of the noise run."""
    notes = [
        "Node-level DP under add/remove of one training node's upload: its features, its label "
        "and its neighbour report (docs/privacy/sage.md). The other nodes' reports, the split "
        "and the test graph used at inference are not protected.",
        "ε is dp-accounting's for DP-SGD under add/remove of a group of D = K + 2 examples "
        "(Poisson rate 1 − (1 − q)^D, multiplier z/D), calibrated so it equals the request.",
        "Hyper-parameters were not chosen privately; the class count is public.",
    ]
    d = group_size(p.sage_max_degree)
    head = f"node-level (ε = {{eps:.4g}}, δ = {p.delta:.3g}), proven (add/remove one training "
    head += f"node's upload; K = {p.sage_max_degree}, D = {d})"
    acc = f"dp_accounting {p.accountant.upper()} (docs/privacy/sage.md)"
    if slots is None:
        eps = float(p.epsilon)
        return PrivacyReport(
            protocol=NAME, unit="node", epsilon=eps, delta=p.delta, accountant=acc,
            notes=notes, headline=head.format(eps=eps), unit_epsilons={"node": eps},
        )  # fmt: skip
    plan = plan_of(slots, p)
    eps = plan_epsilon(plan, p.delta, p.accountant)
    part = SagePart(
        epsilon=eps, delta=p.delta, noise_multiplier=plan.noise, group=d,
        max_degree=p.sage_max_degree, slots=slots, q=plan.q, steps=plan.steps,
        clip=p.sage_clip, accountant=plan.calibration,
    )  # fmt: skip
    return PrivacyReport(
        protocol=NAME, unit="node", epsilon=eps, delta=p.delta, accountant=acc,
        parts=[part.as_dict()], notes=notes, headline=head.format(eps=eps),
        unit_epsilons={"node": eps},
    )  # fmt: skip


@register(
    NAME,
    label="SAGE (DP-GNN)",
    params=PARAMS,
    summary="Daigavane et al.'s node-level DP-GNN (central): 1-layer GraphSAGE by DP-SGD on "
    "degree-bounded 1-hop subgraphs",
)
class DpSage(GapRelease):
    """DP-SAGE (module docstring). Uploads as gap-node does (features and neighbour report)."""

    name = NAME
    kind = "model"

    def __init__(self, **params: Any) -> None:
        p = {param.name: param.default for param in PARAMS}
        p.update(params)
        self.p = Params(p)

    def _release(
        self, graph: UploadedGraph, curator: CuratorView, seed: int, device: str
    ) -> Release:
        import torch

        p = self.p
        labels, slots, uploaded, present, classes = training_inputs(NAME, graph, curator)
        n = graph.num_nodes
        key = stage_seed(seed, f"{NAME}/degree")
        complete, kept = complete_nodes(reports_of(graph), uploaded, p.sage_max_degree, key)
        x = np.asarray(graph.x) * uploaded[:, None].astype(graph.x.dtype)  # absent: no row
        nodes, holds = example_rows(slots, present, complete)
        plan = plan_of(len(slots), p)
        progress.stage(f"{NAME}: DP-SGD ({plan.steps} steps, noise multiplier {plan.noise:.3g})")
        gen = torch.Generator(device=device)
        gen.manual_seed(stage_seed(seed, f"{NAME}/sgd"))
        x_t = torch.as_tensor(x, device=device)
        agg_t = torch.as_tensor(neighbour_mean(x, kept, n), device=device)
        nodes_t = torch.as_tensor(nodes, device=device)
        y_t = torch.as_tensor(np.where(labels[nodes] >= 0, labels[nodes], 0), device=device)
        is_sub = torch.arange(len(nodes), device=device) >= len(slots)

        def make_batch(idx: Any) -> tuple[Any, Any]:
            u = nodes_t[idx]
            a = agg_t[u] * is_sub[idx, None]  # self examples: no aggregate
            return torch.cat([x_t[u].float(), a], dim=1), y_t[idx]

        model = _mlp([2 * x.shape[1], p.sage_hidden, classes], gen, device)
        holds_t = torch.as_tensor(holds, device=device)
        sgd = SlotSgd(
            plan.q, plan.steps, p.sage_epochs, p.sage_clip, plan.noise * p.sage_clip, p.sage_lr
        )
        model = dp_fit(model, make_batch, holds_t, sgd, gen, "dp-sage epoch")
        pred = self._infer(model, x, graph.edges, slots, uploaded, device)
        weights = {k: v.cpu().numpy() for k, v in model.items()}
        report = self.privacy_report(slots=len(slots))
        stats = {
            "training_nodes": int(present.sum()),
            "training_slots": int(len(slots)),
            "subgraph_examples": int(holds[len(slots) :].sum()),
            "kept_edges": int(len(kept) // 2),
            "noise_multiplier": float(plan.noise),
        }
        return Release.of_model(GapModel(weights, pred), n, report, stats)

    @staticmethod
    def _infer(model, x, edges, slots, uploaded, device) -> np.ndarray:
        """Classes of the uploaded non-training nodes from their features and the mean of
        their uploaded non-training neighbours' (the test graph: no training node is read)."""
        import torch

        n = len(uploaded)
        test = uploaded.copy()
        test[slots] = False
        e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
        e = e[test[e[:, 0]] & test[e[:, 1]] & (e[:, 0] != e[:, 1])]
        pairs = np.concatenate([e, e[:, ::-1]])
        agg = neighbour_mean(x, pairs, n)
        pred = np.full(n, -1, dtype=np.int64)
        where = np.flatnonzero(test)
        for start in range(0, len(where), 4096):  # chunks: no n×2d matrix at once
            rows = where[start : start + 4096]
            z_in = np.concatenate([x[rows].astype(np.float32), agg[rows]], axis=1)
            with torch.no_grad():
                out = forward(model, torch.as_tensor(z_in, device=device))
            pred[rows] = out.argmax(1).cpu().numpy()
        return pred

    def privacy_report(
        self, num_features: int | None = None, *, slots: int | None = None, **_: Any
    ) -> PrivacyReport:
        """Node-level (ε, δ) (docs/privacy/sage.md); before a release the target."""
        return privacy_report(self.p, slots)
