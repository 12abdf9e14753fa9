"""Plain randomized response: the noisy graph as it is, with no denoising.

``rr-edge`` is the "RR" baseline of Blink's official code (github.com/zhxchd/Blink_GNN, the
code of Zhu, Tan, Xiao, CCS'23): each node reports
its adjacency row through Warner RR with the whole ε (diagonal never reported) and the GNN
trains on the public, true features.

``rr`` is the same with HoGS's dual-privacy split (the HoGS paper, Xu et al., Section III-B,
Information Collection): ε_a =
(1 − feature_share)·ε on the adjacency row and ε_f = feature_share·ε per feature bit through
the 1-bit mechanism; the server keeps the raw noisy bits as the features (no reconstruction).
``feature_share`` is the HoGS paper's δ.

Symmetrisation. Blink_GNN trains on the reported ones as a *directed* edge list; a
:class:`Release` is undirected, so the server combines the two reports about a pair:
``combine="or"`` (default; an edge if either endpoint reported it: the undirected version of
the directed RR graph, doubling the false-positive rate), ``"and"`` (both reported it; squares
the keep probability) or ``"lower"`` (Blink_GNN's SymRR without its +1 offset: the
pair {i, j} takes the report of the node with the larger id). A node that did not reply has no
report: under "or" its pairs rest on the other endpoint's bit, under "and" they are never
edges, under "lower" they are edges iff the larger-id endpoint (if present) reported them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..accounting import ACCOUNTANT, bit_part, pure_epsilon, rr_event, unit_summary
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
from ..params import Param
from ..registry import register
from ..types import NodeView, PrivacyReport, Release, Report
from .assemble import adjacency_reports, feature_reports
from .node_reports import noisy_features, noisy_row, rr_onebit_batch

COMBINE = ("or", "and", "lower")
COMBINE_PARAM = Param(
    "combine",
    str,
    "or",
    "how the two reported bits of a pair make an edge: or (either), and (both), lower (the "
    "lower-id endpoint's)",
    choices=COMBINE,
    server_side=True,
)


@dataclass(frozen=True)
class RRParams:
    """``feature_share`` is the HoGS paper's δ (ε_f = share·ε); ignored with public features."""

    epsilon: float
    feature_share: float = FEATURE_SHARE.default
    public_features: bool = False
    combine: str = COMBINE_PARAM.default

    def __post_init__(self) -> None:
        if not math.isfinite(self.epsilon) or self.epsilon <= 0:
            raise ValueError(f"epsilon must be a finite number > 0, got {self.epsilon}")
        if not self.public_features and not 0.0 < self.feature_share < 1.0:
            raise ValueError(
                f"feature share must be in (0, 1) when features are private, got "
                f"{self.feature_share} (use rr-edge for public features)"
            )
        if self.combine not in COMBINE:
            raise ValueError(f"combine must be one of {COMBINE}, got {self.combine!r}")

    @property
    def eps_adjacency(self) -> float:
        return self.epsilon if self.public_features else (1.0 - self.feature_share) * self.epsilon

    @property
    def eps_features(self) -> float:
        return 0.0 if self.public_features else self.feature_share * self.epsilon


def combine_reports(reported, combine: str) -> np.ndarray:
    """Canonical undirected edges (u < v) from the CSR of reported 1-bits."""
    n = reported.shape[0]
    coo = reported.tocoo()
    rows = coo.row.astype(np.int64)
    cols = coo.col.astype(np.int64)
    if combine == "or":
        pairs = np.stack([rows, cols], axis=1)
    elif combine == "lower":
        keep = cols < rows
        pairs = np.stack([rows[keep], cols[keep]], axis=1)
    else:  # "and": both (i, j) and (j, i) reported
        lo = np.minimum(rows, cols)
        hi = np.maximum(rows, cols)
        keys, counts = np.unique(lo * n + hi, return_counts=True)
        both = keys[counts == 2]
        pairs = np.stack([both // n, both % n], axis=1)
    return canonical_edges(pairs, n)


@register(
    "rr",
    label="RR",
    params=(EPSILON, FEATURE_SHARE, COMBINE_PARAM),
    summary="plain RR adjacency (OR of both reports) + raw 1-bit features, no denoising",
)
@register(
    "rr-edge",
    params=(EPSILON, COMBINE_PARAM),
    public_features=True,
    summary="plain RR adjacency (OR of both reports), features public (Blink_GNN's RR)",
)
class RRProtocol(LdpProtocol):
    """``rr`` (RR adjacency + 1-bit features) and ``rr-edge`` (RR adjacency, public features)."""

    rounds = 1

    @classmethod
    def from_params(cls, name: str, **params: Any) -> RRProtocol:
        return cls(RRParams(public_features=name == "rr-edge", **params))

    def __init__(self, params: RRParams) -> None:
        self.params = params
        self.public_features = params.public_features
        self.name = "rr-edge" if params.public_features else "rr"

    def config(self) -> dict[str, Any]:
        p = self.params
        out: dict[str, Any] = {"protocol": self.name, "epsilon": p.epsilon, "combine": p.combine}
        if not p.public_features:
            out["feature_share"] = p.feature_share
        return out

    def round_epsilon(self, round_: int) -> float:
        return self.params.eps_adjacency + self.params.eps_features

    def epsilon_parts(self, round_: int) -> EpsilonParts:
        """RR on each adjacency bit (ε_a), the 1-bit mechanism on each feature (ε_f)."""
        return EpsilonParts(self.params.eps_adjacency, self.params.eps_features)

    def schema(self, round_: int) -> ReportSchema:
        return ReportSchema(adjacency=True, features=not self.params.public_features)

    def client_step(
        self, round_: int, view: NodeView, server_msg: dict[str, Any], seed: int
    ) -> Report:
        p = self.params
        adj = noisy_row(view, p.eps_adjacency, seed, round_)
        feats = None if p.public_features else noisy_features(view, p.eps_features, seed, round_)
        return Report(view.node_id, round_, view.num_nodes, adj, feats)

    def client_step_batch(
        self, round_: int, batch: NodeBatch, server_msg: dict[str, Any], seeds: int | Sequence[int]
    ) -> ReportBatch:
        p = self.params
        eps_f = None if p.public_features else p.eps_features
        return rr_onebit_batch(batch, round_, seeds, p.eps_adjacency, eps_f)

    def server_step(
        self, round_: int, result: RoundResult, curator: CuratorView, seed: int
    ) -> Release:
        p = self.params
        n, d = curator.num_nodes, curator.num_features
        reported, observed = adjacency_reports(result.reports, n)
        edges = combine_reports(reported, p.combine)
        if p.public_features:
            if curator.public_features is None:
                raise ValueError(f"{self.name} needs the public features in the curator view")
            x = curator.public_features
            feature_count = n
        else:
            x, feat_obs = feature_reports(result.reports, n, d)
            feature_count = int(feat_obs.sum())
        stats = {
            "adjacency_reports": int(observed.sum()),
            "feature_reports": feature_count if not p.public_features else 0,
            "reported_ones": int(reported.nnz),
            "combine": p.combine,
        }
        return Release(edges=edges, x=x, privacy=self.privacy_report(d), stats=stats)

    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        p = self.params
        parts = [bit_part("adjacency", "one adjacency bit (edge LDP)", p.eps_adjacency)]
        notes = [
            f"ε_a = {p.eps_adjacency:g} protects any one bit of a node's adjacency row (edge "
            "LDP). Combining the two reports of a pair and training are post-processing.",
            "An edge {i, j} is reported by both endpoints; the pair of reports about it is "
            f"2·ε_a = {2 * p.eps_adjacency:g}-DP for that edge (edge LDP is per row, as in the "
            "papers).",
        ]
        if p.public_features:
            total = pure_epsilon([rr_event(p.eps_adjacency)])
            unit = "adjacency bit (edge LDP); features are public and not protected"
            notes.append(
                "Features are treated as public: they are neither perturbed nor protected."
            )
        else:
            parts.append(
                bit_part("features", "one feature bit (feature LDP)", p.eps_features, num_features)
            )
            total = pure_epsilon([rr_event(p.eps_adjacency), rr_event(p.eps_features)])
            unit = "one adjacency bit plus one feature bit of a node (edge LDP + feature LDP)"
            notes.append(
                f"ε_f = {p.eps_features:g} is per feature BIT (HoGS's definition); the whole "
                "d-bit vector is protected only at d·ε_f"
                + (f" = {num_features * p.eps_features:g}" if num_features else "")
                + "."
            )
        headline, unit_eps = unit_summary(
            adjacency_label="ε_a",
            rr_adjacency=p.eps_adjacency,
            feature_bit=None if p.public_features else p.eps_features,
            num_features=num_features,
        )
        return PrivacyReport(
            protocol=self.name,
            unit=unit,
            epsilon=total,
            delta=0.0,
            accountant=ACCOUNTANT,
            parts=parts,
            paper_epsilon=p.epsilon,
            notes=notes,
            headline=headline,
            unit_epsilons=unit_eps,
        )
