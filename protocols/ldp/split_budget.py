"""The split-budget family of LDP protocols: what HoGS, RR, Blink's feature-private variants,
LDPGen's and Solitude share, written once.

HoGS's dual-privacy split (the HoGS paper, Xu et al., Section III-B, Information Collection): a
node spends ε_f = feature_share·ε on its features, one bit at a time through the 1-bit
mechanism, and the rest, ε_g = (1 − feature_share)·ε, on its graph data. ``feature_share`` is
the paper's δ; we never call it δ, so it cannot be mistaken for the δ of (ε, δ)-DP. The
edge-LDP-only variants (``hogs-edge``, ``rr-edge``, ``blink-*``, ``ldpgen``) treat the features
as public (the registry's ``public_features``): the whole ε goes to the graph and the server
trains on the true features, which it must then hold.

:class:`SplitBudgetProtocol` holds the split and the feature half (the 1-bit reports or the
public rows, the privacy report's feature part and notes); :class:`RRSplitBudgetProtocol` adds
the graph half of the one-round protocols: Warner RR on the adjacency row at ε_a (= ε_g). A
protocol module keeps only what differs: its server step and its own parameters.

Parameters are the registry's checked values (:class:`~ldpgraph.protocols.params.Params`, read
by attribute); nothing here checks them again. numpy only (the client's import path).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..accounting import ACCOUNTANT, bit_part, pure_epsilon, rr_event, unit_summary
from ..base import CuratorView, EpsilonParts, LdpProtocol, ReportSchema, RoundResult
from ..batch import NodeBatch, ReportBatch
from ..params import Param, Params
from ..registry import uses_public_features
from ..types import NodeView, PrivacyReport, Report
from .assemble import feature_reports
from .node_reports import noisy_features, noisy_row, rr_onebit_batch

PUBLIC_UNIT = "adjacency bit (edge LDP); features are public and not protected"
PRIVATE_UNIT = "one adjacency bit plus one feature bit of a node (edge LDP + feature LDP)"
PUBLIC_NOTE = "Features are treated as public: they are neither perturbed nor protected."


class SplitBudgetProtocol(LdpProtocol):
    """A protocol whose node splits ε between its graph data (ε_g) and its 1-bit features
    (ε_f), or spends it all on the graph when the features are public.

    Built by the registry (:meth:`from_params`) from the parameters its name declares; whether
    the features are public is the registered name's ``public_features``."""

    @classmethod
    def from_params(cls, name: str, **params: Any) -> SplitBudgetProtocol:
        return cls(name, Params(params))

    def __init__(self, name: str, params: Params) -> None:
        self.name = name
        self.params = params
        self.public_features = uses_public_features(name)
        #: ε_f's share of ε (HoGS's δ); 0 when the features are public.
        self.feature_share = 0.0 if self.public_features else float(params.feature_share)

    def config(self) -> dict[str, Any]:
        """The name and the declared parameters (what a node rebuilds the protocol from)."""
        return {"protocol": self.name, **self.params}

    def setting(self, param: Param) -> Any:
        """``param``'s value, or its declared default where this protocol's name does not
        declare it (``hogs-edge`` has no ``steps``, ``hogs-arr`` no ``consistency_alpha``)."""
        return self.params.get(param.name, param.default)

    @property
    def eps_graph(self) -> float:
        """ε_g, the budget of the graph data: ε, or (1 − feature_share)·ε with private
        features."""
        eps = self.params.epsilon
        return eps if self.public_features else (1.0 - self.feature_share) * eps

    @property
    def eps_features(self) -> float:
        """ε_f, the ε of each feature bit: feature_share·ε, 0 with public features."""
        return 0.0 if self.public_features else self.feature_share * self.params.epsilon

    def noisy_features(self, view: NodeView, seed: int, round_: int) -> np.ndarray | None:
        """The node's 1-bit features at ε_f (its FEATURES stream), None when they are public."""
        if self.public_features:
            return None
        return noisy_features(view, self.eps_features, seed, round_)

    def server_features(
        self, result: RoundResult, curator: CuratorView
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The feature rows the server starts from and which nodes sent theirs: the curator's
        public rows (None: nobody sends them), or the reported 1-bit rows."""
        if self.public_features:
            if curator.public_features is None:
                raise ValueError(f"{self.name} needs the public features in the curator view")
            return curator.public_features, None
        return feature_reports(result.reports, curator.num_nodes, curator.num_features)

    # -- privacy report pieces ---------------------------------------------------------------
    @property
    def privacy_unit(self) -> str:
        return PUBLIC_UNIT if self.public_features else PRIVATE_UNIT

    def feature_parts(self, num_features: int | None) -> list[dict[str, Any]]:
        """The report's feature line (none with public features)."""
        if self.public_features:
            return []
        return [
            bit_part("features", "one feature bit (feature LDP)", self.eps_features, num_features)
        ]

    def feature_note(self, num_features: int | None) -> str:
        """What ε_f protects: one feature bit, not the vector (HoGS's per-bit definition)."""
        if self.public_features:
            return PUBLIC_NOTE
        eps_f = self.eps_features
        return (
            f"ε_f = {eps_f:g} is per feature BIT. A node's whole feature "
            "vector of d bits is protected only at d·ε_f by composition"
            + (f" = {num_features * eps_f:g}" if num_features else "")
            + ", not at ε_f: do not compare it with the vector-level ε of LPGNN or Solitude."
        )

    def report(self, **fields: Any) -> PrivacyReport:
        """A :class:`PrivacyReport` of this protocol: pure ε (δ = 0), the paper's ε beside it."""
        fields.setdefault("accountant", ACCOUNTANT)
        fields.setdefault("unit", self.privacy_unit)
        return PrivacyReport(
            protocol=self.name, delta=0.0, paper_epsilon=self.params.epsilon, **fields
        )


class RRSplitBudgetProtocol(SplitBudgetProtocol):
    """One round: Warner RR on the adjacency row at ε_a (diagonal never reported) and the
    1-bit mechanism on each feature at ε_f (HoGS, Algorithm 1)."""

    rounds = 1

    @property
    def eps_adjacency(self) -> float:
        """ε_a, the ε of each RR adjacency bit: the whole graph budget."""
        return self.eps_graph

    def round_epsilon(self, round_: int) -> float:
        return self.eps_adjacency + self.eps_features

    def epsilon_parts(self, round_: int) -> EpsilonParts:
        """RR on each adjacency bit (ε_a), the 1-bit mechanism on each feature (ε_f)."""
        return EpsilonParts(self.eps_adjacency, self.eps_features)

    def schema(self, round_: int) -> ReportSchema:
        return ReportSchema(adjacency=True, features=not self.public_features)

    def client_step(
        self, round_: int, view: NodeView, server_msg: dict[str, Any], seed: int
    ) -> Report:
        adj = noisy_row(view, self.eps_adjacency, seed, round_)
        feats = self.noisy_features(view, seed, round_)
        return Report(view.node_id, round_, view.num_nodes, adj, feats)

    def client_step_batch(
        self, round_: int, batch: NodeBatch, server_msg: dict[str, Any], seeds: int | Sequence[int]
    ) -> ReportBatch:
        eps_f = None if self.public_features else self.eps_features
        return rr_onebit_batch(batch, round_, seeds, self.eps_adjacency, eps_f)

    def server_notes(self) -> list[str]:
        """What the server step adds to the report's notes (its post-processing)."""
        return []

    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        """RR at ε_a per adjacency bit and, with private features, the 1-bit mechanism at ε_f
        per feature bit, composed by the accountant."""
        eps_a = self.eps_adjacency
        notes = [
            f"ε_a = {eps_a:g} protects any one bit of a node's adjacency row (edge LDP).",
            "An edge {i, j} is reported by both endpoints; the pair of reports about it is "
            f"2·ε_a = {2 * eps_a:g}-DP for that edge (edge LDP is per row, as in the papers).",
            *self.server_notes(),
            self.feature_note(num_features),
        ]
        events = [rr_event(eps_a)]
        if not self.public_features:
            events.append(rr_event(self.eps_features))
        headline, unit_eps = unit_summary(
            adjacency_label="ε_a",
            rr_adjacency=eps_a,
            feature_bit=None if self.public_features else self.eps_features,
            num_features=num_features,
        )
        return self.report(
            epsilon=pure_epsilon(events),
            parts=[
                bit_part("adjacency", "one adjacency bit (edge LDP)", eps_a),
                *self.feature_parts(num_features),
            ],
            notes=notes,
            headline=headline,
            unit_epsilons=unit_eps,
        )
