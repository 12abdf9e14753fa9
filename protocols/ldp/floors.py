"""The two reference points every figure carries: the non-private graph and the feature-only
floor (an MLP on the features a protocol gives the server, with no edges at all)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..accounting import ACCOUNTANT, bit_part, unit_summary
from ..base import (
    EPSILON,
    FEATURE_SHARE,
    CuratorView,
    EpsilonParts,
    LdpProtocol,
    ReportSchema,
    RoundResult,
)
from ..batch import NodeBatch, ReportBatch
from ..graph import canonical_edges
from ..registry import register
from ..support import DOMAIN
from ..types import NodeView, PrivacyReport, Release, Report
from .assemble import adjacency_reports, feature_reports
from .node_reports import noisy_features, rr_onebit_batch


@register(
    "none",
    label="non-private",
    summary="non-private: the original graph and features (upper bound)",
)
class NonPrivate(LdpProtocol):
    """``none``: nodes upload their true row and features (ε = ∞). Only nodes that trust the
    curator take part; the release is the original graph (the upper bound in every figure)
    restricted to the edges both endpoints uploaded."""

    name = "none"
    raw_upload = True
    privacy_model = "none"

    def config(self) -> dict[str, Any]:
        return {"protocol": self.name}

    def round_epsilon(self, round_: int) -> float:
        return math.inf

    def schema(self, round_: int) -> ReportSchema:
        return ReportSchema(adjacency=True, features=True, feature_support=DOMAIN)

    def client_step(self, round_: int, view: NodeView, server_msg: dict, seed: int) -> Report:
        feats = np.asarray(view.features)
        if feats.dtype != np.uint8 and np.isin(feats, (0, 1)).all():
            feats = feats.astype(np.uint8)
        elif feats.dtype != np.uint8:
            feats = feats.astype(np.float32)
        return Report(
            view.node_id, round_, view.num_nodes, np.asarray(view.neighbors, dtype=np.int32), feats
        )

    def client_step_batch(
        self, round_: int, batch: NodeBatch, server_msg: dict, seeds: int | Sequence[int]
    ):
        if batch.features.dtype != np.uint8:  # the dtype is chosen row by row: node by node
            return super().client_step_batch(round_, batch, server_msg, seeds)
        return ReportBatch(
            round_,
            batch.num_nodes,
            batch.nodes.copy(),
            np.asarray(batch.indptr, dtype=np.int64).copy(),
            np.asarray(batch.indices, dtype=np.int32).copy(),
            features=np.array(batch.features, dtype=np.uint8),
        )

    def server_step(
        self, round_: int, result: RoundResult, curator: CuratorView, seed: int
    ) -> Release:
        release, _ = self.upload(result, curator)
        return release

    def upload(self, result: RoundResult, curator: CuratorView) -> tuple[Release, Any]:
        """The raw release and the reports' n × n CSR (row u: the pairs u reported), built
        once: the central strategies rank degree bounds over each node's own report."""
        n, d = curator.num_nodes, curator.num_features
        reported, _ = adjacency_reports(result.reports, n)
        # An edge is kept only when both endpoints upload it: one consenting node cannot
        # inject an edge to another, nor reveal an edge of a node that did not upload (the
        # cost: an edge whose other endpoint refused or dropped out is not in the graph).
        confirmed = reported.multiply(reported.T).tocoo()
        edges = canonical_edges(np.stack([confirmed.row, confirmed.col], axis=1), n)
        one_sided = int(reported.nnz - confirmed.nnz)
        dtype = np.uint8
        reports = result.reports
        if isinstance(reports, ReportBatch):  # one feature dtype for all its rows
            if reports.features is not None and reports.features.dtype != np.uint8:
                dtype = np.float32
        elif any(r.features is not None and r.features.dtype != np.uint8 for r in reports.values()):
            dtype = np.float32
        x, _ = feature_reports(result.reports, n, d, dtype=dtype)
        release = Release(
            edges=edges,
            x=x,
            privacy=self.privacy_report(d),
            stats={"adjacency_reports": len(result.reports), "one_sided_edges_dropped": one_sided},
        )
        return release, reported

    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        return PrivacyReport.no_privacy(
            self.name,
            "raw data to a trusted curator",
            "no privacy: each node's raw adjacency row and feature vector go to a trusted "
            "curator (ε = ∞ per adjacency bit, per edge and per feature vector)",
            ("adjacency_bit", "edge", "feature_bit", "feature_vector"),
            "No privacy: the non-private upper bound.",
        )


@register(
    "features-only",
    label="MLP floor",
    params=(
        EPSILON,
        FEATURE_SHARE.but(
            high_open=False,
            help="share of ε spent on the 1-bit features (what HoGS spends on features at the "
            "same ε and split); give it 1 for the MLP floor",
        ),
    ),
    summary="feature-only floor: 1-bit features, no edges (train with --model mlp)",
)
class FeaturesOnly(LdpProtocol):
    """``features-only``: the MLP floor. Nodes send only their 1-bit-perturbed features with
    ε_f = feature_share·ε (what HoGS spends on features at the same ε and split); the release
    has no edges."""

    name = "features-only"

    def __init__(self, epsilon: float, feature_share: float = FEATURE_SHARE.default) -> None:
        if not math.isfinite(epsilon) or epsilon <= 0:
            raise ValueError(f"epsilon must be a finite number > 0, got {epsilon}")
        if not 0.0 < feature_share <= 1.0:
            raise ValueError(f"feature share must be in (0, 1], got {feature_share}")
        self.epsilon = float(epsilon)
        self.feature_share = float(feature_share)

    @property
    def eps_features(self) -> float:
        return self.epsilon * self.feature_share

    def config(self) -> dict[str, Any]:
        return {"protocol": self.name, "epsilon": self.epsilon, "feature_share": self.feature_share}

    def round_epsilon(self, round_: int) -> float:
        return self.eps_features

    def epsilon_parts(self, round_: int) -> EpsilonParts:
        """No adjacency; the 1-bit mechanism on each feature (ε_f)."""
        return EpsilonParts(0.0, self.eps_features)

    def schema(self, round_: int) -> ReportSchema:
        return ReportSchema(adjacency=False, features=True)

    def client_step(self, round_: int, view: NodeView, server_msg: dict, seed: int) -> Report:
        feats = noisy_features(view, self.eps_features, seed, round_)
        return Report(view.node_id, round_, view.num_nodes, None, feats)

    def client_step_batch(
        self, round_: int, batch: NodeBatch, server_msg: dict, seeds: int | Sequence[int]
    ) -> ReportBatch:
        return rr_onebit_batch(batch, round_, seeds, None, self.eps_features)

    def server_step(
        self, round_: int, result: RoundResult, curator: CuratorView, seed: int
    ) -> Release:
        x, observed = feature_reports(result.reports, curator.num_nodes, curator.num_features)
        return Release(
            edges=np.zeros((0, 2), dtype=np.int64),
            x=x,
            privacy=self.privacy_report(curator.num_features),
            stats={"feature_reports": int(observed.sum())},
        )

    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        part = bit_part(
            "features", "one feature bit (feature LDP)", self.eps_features, num_features
        )
        headline, unit_eps = unit_summary(
            adjacency_label=None, feature_bit=self.eps_features, num_features=num_features
        )
        return PrivacyReport(
            protocol=self.name,
            unit="one feature bit of a node (feature LDP); no edges sent",
            epsilon=part["epsilon"],
            delta=0.0,
            accountant=ACCOUNTANT,
            parts=[part],
            paper_epsilon=self.eps_features,
            notes=["Feature-only floor: an MLP on the perturbed features, no graph."],
            headline=headline,
            unit_epsilons=unit_eps,
        )
