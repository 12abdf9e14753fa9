"""``solitude``: Solitude (Lin, Li, Wang, TIFS'22) as the HoGS paper reproduces it, in the
mode of its official code (github.com/WanyuGroup/TIFS2022-Solitude).

WHAT IS IMPLEMENTED
- Client (HoGS's reproduction, the HoGS paper Section V): RR on the adjacency row with ε_a =
  (1−share)·ε and HoGS's per-bit 1-bit mechanism on the features with ε_f = share·ε — exactly
  HoGS's client step, the split-budget one of :mod:`.split_budget`. The diagonal is never
  reported (deviation: the official Solitude code also perturbs the diagonal).
- Server, graph: the graph estimator of the official code, analysed: one
  step on ‖S − Ã‖_F + γ·L_GNN from S = Ã, a proximal L1 step (soft-threshold by
  ``l1_alpha``·``lr``), clamp to [0, 1]. At S = Ã the Frobenius term's gradient is 0 and L_GNN
  is computed on the perturbed graph, so it gives no gradient to S either; the step reduces to
  S = clip(Ã − α·lr, 0, 1) on the reported ones, whose support — what the official code trains
  on — is the reported graph itself. :func:`official_estimator_step` computes that step and
  the server checks the support (``stats['estimator_support_equals_rr']``). The released graph
  is undirected: a pair is an edge if either endpoint reported it (the OR of Ã and Ãᵀ;
  deviation: the official code keeps the directed edge set).
- Server, features: KProp with ``lx`` steps (LPGNN's operator: symmetric normalisation, no
  self-loops, isolated nodes zeroed, as the official code does) on the raw 1-bit reports, over
  the released graph. ``lx = 0`` releases the raw bits.
- Labels: :func:`ldpgraph.protocols.ldp.kprop.label_kprop_targets` computes Solitude's label KProp
  targets softmax(Ā^{ly}·Y′) (validation labels included, test rows zeroed).

WHAT IS NOT IMPLEMENTED
- The paper's mode (Lin, Li, Wang, TIFS'22): a learned adjacency Â trained JOINTLY with the
  GNN (GNN evaluated on Â, alternating θ/Â steps with ‖Â − Ã‖_F and ‖Â‖_1 regularisers). It
  needs the model in the loop (torch) and is not part of this protocol.
- Label KProp in training: the trainer does not consume label targets yet, so ``ly`` must be 0
  (the protocol rejects ly > 0 rather than silently ignoring it). The helper above is tested and
  ready for the trainer.
- LPGNN's multi-bit vector-level features (Solitude's original feature mechanism): HoGS's
  reproduction uses the 1-bit per-bit mechanism, and so does this protocol; the multi-bit
  mechanism is in :mod:`.multibit`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..base import EPSILON, FEATURE_SHARE, CuratorView, RoundResult
from ..graph import canonical_edges
from ..params import Param, Params
from ..registry import register
from ..types import PrivacyReport, Release
from .assemble import adjacency_reports
from .kprop import kprop
from .split_budget import RRSplitBudgetProtocol

#: The official code's estimator constants: L1 proximal weight α and model lr.
OFFICIAL_L1_ALPHA = 5e-4
OFFICIAL_LR = 0.01


def official_estimator_step(
    reported: sp.csr_matrix, l1_alpha: float = OFFICIAL_L1_ALPHA, lr: float = OFFICIAL_LR
) -> sp.csr_matrix:
    """One estimator update of the official code from S = Ã: the smooth part's
    gradient is 0 at S = Ã (see the module docstring), then soft-threshold by α·lr and clamp to
    [0, 1]. Returns S as a sparse matrix with zeros eliminated."""
    s = reported.astype(np.float64).tocsr(copy=True)
    shrink = l1_alpha * lr
    s.data = np.clip(np.sign(s.data) * np.maximum(np.abs(s.data) - shrink, 0.0), 0.0, 1.0)
    s.eliminate_zeros()
    return s


LX = Param(
    "lx",
    int,
    2,
    "feature propagation steps (KProp of the 1-bit features over the released graph)",
    low=0,
    server_side=True,
)
LY = Param("ly", int, 0, "label propagation steps (only 0 is implemented)", low=0, server_side=True)


@register(
    "solitude",
    label="Solitude",
    params=(EPSILON, FEATURE_SHARE, LX, LY),
    summary="Solitude in its official-code mode (as HoGS reproduces it): RR graph (OR) + "
    "KProp(lx) of 1-bit features; the joint learned-graph training is not implemented",
)
class SolitudeProtocol(RRSplitBudgetProtocol):
    """Solitude (official-code mode) under HoGS's split: see the module docstring."""

    def __init__(self, name: str, params: Params) -> None:
        if params.ly != 0:
            raise ValueError(
                "solitude: label KProp (ly > 0) is not wired into training yet; use ly = 0"
            )
        super().__init__(name, params)

    def server_step(
        self, round_: int, result: RoundResult, curator: CuratorView, seed: int
    ) -> Release:
        n, d = curator.num_nodes, curator.num_features
        reported, observed = adjacency_reports(result.reports, n)
        estimate = official_estimator_step(reported)
        same_support = estimate.nnz == reported.nnz
        coo = estimate.tocoo()
        edges = canonical_edges(np.stack([coo.row, coo.col], axis=1), n)
        x0, feat_obs = self.server_features(result, curator)
        x = kprop(x0, edges, n, self.params.lx, norm="sym", isolated="zero").astype(np.float32)
        stats = {
            "adjacency_reports": int(observed.sum()),
            "feature_reports": int(feat_obs.sum()),
            "reported_ones": int(reported.nnz),
            "estimator_support_equals_rr": bool(same_support),
            "mode": "official",
            "lx": self.params.lx,
            "ly": self.params.ly,
        }
        return Release(edges=edges, x=x, privacy=self.privacy_report(d), stats=stats)

    def server_notes(self) -> list[str]:
        return [
            "The estimator step, the OR of a pair's two reports and KProp (lx) are "
            "post-processing of the reports: tuning lx on one collection spends nothing more. "
            "Tuning the split (feature_share) or ε is not: each configuration collects fresh "
            "reports, so a node spends the sum of the ε of every collection a sweep used."
        ]

    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        rep = super().privacy_report(num_features)
        rep.notes.append(
            "Solitude reproduced as in the HoGS paper: HoGS's per-bit 1-bit features, not the "
            "vector-level multi-bit mechanism of the original Solitude."
        )
        return rep
