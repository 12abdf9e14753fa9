"""The shape every LDP protocol has: rounds, a client step and a server step."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .batch import NodeBatch, ReportBatch
from .params import Param
from .support import BITS, Support
from .types import NodeView, PrivacyReport, Release, Report

#: The largest ε a run accepts. From ε ≈ 40 on randomized response flips a bit with probability
#: e^-ε < 1e-17 (no noise left to measure), and from ε ≈ 710 e^ε overflows a float.
MAX_EPSILON = 100.0

# Parameters several protocols share (a protocol may narrow one with ``Param.but``).
EPSILON = Param(
    "epsilon",
    float,
    8.0,
    "total privacy budget ε per node (the sum of its parts: adjacency bits, features, degree)",
    low=0.0,
    low_open=True,
    high=MAX_EPSILON,
)
#: HoGS's δ. 0.1 won the reproduction's δ sweeps (docs/reproduction, Fig. 8); the former 0.5
#: collapsed to the majority class at ε <= 6.
FEATURE_SHARE = Param(
    "feature_share",
    float,
    0.1,
    "share of ε spent on features (the HoGS paper's δ): ε_f = share·ε, ε_a = (1 − share)·ε; "
    "0.1 won the reproduction's δ sweeps (Cora, CiteSeer, Facebook)",
    low=0.0,
    high=1.0,
    low_open=True,
    high_open=True,
)
STEPS = Param(
    "steps",
    int,
    1,
    "feature reconstruction steps l (HoGS's averaging over the reconstructed graph; 0 keeps "
    "the noisy features)",
    low=0,
    server_side=True,
)


@dataclass(frozen=True)
class CuratorView:
    """What the server legitimately knows: sizes, the public feature domain, only when a
    protocol declares features public (edge-LDP-only settings) the feature matrix, and the
    training side of the task it trains for: the ``train_nodes`` and ``val_nodes`` of the split
    and ``labels`` (length n) holding the true label of those nodes and −1 everywhere else. It
    never holds a test label: a strategy that trains (central DP) can use what the curator
    trains with anyway, and nothing it could report on. ``device`` is where the curator
    computes ("cpu", "cuda", …)."""

    num_nodes: int
    num_features: int
    feature_domain: tuple[float, float] = (0.0, 1.0)
    public_features: np.ndarray | None = None
    labels: np.ndarray | None = None
    train_nodes: np.ndarray | None = None
    val_nodes: np.ndarray | None = None
    device: str = "cpu"
    #: A collection dataset's public graph offsets (graph k is nodes ``ptr[k]:ptr[k+1]`` of
    #: the union; None for a single graph): what a ``graphs`` release splits the upload by.
    graph_ptr: np.ndarray | None = None
    #: Whether a central release may derive its noise from the run seed (an explicitly
    #: seeded run: replayable, not a private release). False: the strategy draws its release
    #: seed from OS entropy on the server, never written anywhere.
    replayable: bool = False
    #: The task's number of classes: public metadata of the data set (the label set), not
    #: read from any node's label, so a node's presence cannot change a model's output size.
    #: None when the run has no labelled task.
    num_classes: int | None = None

    def classes(self) -> int:
        """:attr:`num_classes`, else (a view built without it, e.g. in a unit test) one more
        than the largest label the curator holds."""
        if self.num_classes is not None:
            return int(self.num_classes)
        if self.labels is None:
            raise ValueError("the curator knows no labels: there is no class count")
        return int(np.asarray(self.labels).max()) + 1

    def __post_init__(self) -> None:
        if self.labels is None:
            return
        labels = np.asarray(self.labels)
        if labels.shape != (self.num_nodes,):
            raise ValueError(f"curator labels have shape {labels.shape}, not ({self.num_nodes},)")
        known = np.zeros(self.num_nodes, dtype=bool)
        for nodes in (self.train_nodes, self.val_nodes):
            if nodes is not None:
                known[np.asarray(nodes, dtype=np.int64)] = True
        if (labels[~known] != -1).any():
            raise ValueError(
                "the curator may know the labels of training and validation nodes only"
            )


def training_labels(y: np.ndarray, train: np.ndarray, val: np.ndarray) -> np.ndarray:
    """``y`` with every label outside ``train`` and ``val`` replaced by −1 (what a
    :class:`CuratorView` may hold)."""
    out = np.full(np.asarray(y).shape[0], -1, dtype=np.int64)
    for nodes in (train, val):
        nodes = np.asarray(nodes, dtype=np.int64)
        out[nodes] = np.asarray(y, dtype=np.int64)[nodes]
    return out


@dataclass(frozen=True)
class ReportSchema:
    """What a round's report must contain, and where its mechanism's values lie
    (:mod:`ldpgraph.protocols.support`); the server validates replies against it.
    ``feature_support``: of the feature vector (default: the 1-bit mechanism's {0, 1});
    ``extra_support``: of every scalar extra, required when there are extras."""

    adjacency: bool = True
    features: bool = False
    extras: tuple[str, ...] = ()
    feature_support: Support = BITS
    extra_support: Support | None = None

    def __post_init__(self) -> None:
        if self.extras and self.extra_support is None:
            raise ValueError(f"report extras {self.extras} declare no support")

    def expected(self) -> dict[str, Any]:
        """The keyword arguments of :func:`~ldpgraph.protocols.reports.decode_report` that
        say what this round's report carries."""
        return {
            "expect_adjacency": self.adjacency,
            "expect_features": self.features,
            "extras": self.extras,
        }


@dataclass(frozen=True)
class EpsilonParts:
    """What one round's report spends per unit of a node's data, for the node's own count:
    ``adjacency_bit``, the ε one bit of its adjacency row costs in this round (every mechanism
    that sees the row, composed: its RR bit, each count the bit moves by 1); ``feature_bit``,
    the ε one feature coordinate costs (0 when the features are not sent). A node that counts
    per bit is charged their sum (the round's ε); one that counts per vector, the composition
    over every coordinate its row and feature vector can change (``ldpgraph.client.units``)."""

    adjacency_bit: float
    feature_bit: float


@dataclass
class RoundResult:
    """The reports of one round, keyed by node id (a dict, or a compact
    :class:`~ldpgraph.protocols.batch.ReportBatch`), with the ids that sent none (or a bad
    one)."""

    reports: Mapping[int, Report]
    missing: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


class LdpProtocol(ABC):
    """A local-DP protocol: ``rounds`` rounds of client steps, each followed by a server step.

    The server step of the last round returns a :class:`Release`; earlier ones return the
    message (a flat dict) sent to the nodes with the next round. A protocol is rebuilt on the
    client from :meth:`config`, so everything a client step needs must be in it.
    """

    name: str = ""
    rounds: int = 1
    #: True for protocols that upload raw data (only to a curator the node trusts).
    raw_upload: bool = False
    #: The privacy model: "ldp" (nodes perturb), "central" (a trusted curator's mechanism on
    #: the raw upload) or "none" (the non-private bound).
    privacy_model: str = "ldp"

    @classmethod
    def privacy_model_of(cls, name: str) -> str:
        """The privacy model of what this class builds under the registered ``name``, known
        without building it (``--help`` groups by it): a class registered under a private
        name and its non-private reference overrides this."""
        return cls.privacy_model

    @classmethod
    def from_params(cls, name: str, **params: Any) -> LdpProtocol:
        """Build from the registry's checked parameters; ``name`` is the registered name (a
        class registered under several names tells them apart by it)."""
        return cls(**params)

    @abstractmethod
    def config(self) -> dict[str, Any]:
        """The protocol's public parameters as a flat dict (name included)."""

    @abstractmethod
    def round_epsilon(self, round_: int) -> float:
        """The ε a node spends in this round (what its budget is charged)."""

    def epsilon_parts(self, round_: int) -> EpsilonParts | None:
        """The round's ε per adjacency bit and per feature coordinate; None when the protocol
        does not state them (a node counting per vector then refuses the round: fail closed)."""
        return None

    def check_request(self, round_: int, message: Mapping[str, Any], num_nodes: int) -> None:
        """Raise ValueError when the round's public values cannot drive a client step. The node
        calls this before any charge, on the message alone (never on its data), so a malformed
        request is refused uncharged and its refusal says nothing about the node's data."""
        return None

    @abstractmethod
    def schema(self, round_: int) -> ReportSchema:
        """What the report of this round carries."""

    def public_message(self, round_: int, seed: int) -> dict[str, Any]:
        """Public values the server adds to round ``round_``'s message, derived from the run
        seed (e.g. LDPGen's initial partition). Never a node's randomness: a node draws its
        noise from its own streams."""
        return {}

    def num_features(self, round_: int, message: dict[str, Any], d: int) -> int:
        """Length of the feature part of this round's reports (default: the graph's d; a
        protocol whose round reports another vector, like LDPGen's degree vector, says so)."""
        return d

    @abstractmethod
    def client_step(
        self, round_: int, view: NodeView, server_msg: dict[str, Any], seed: int
    ) -> Report:
        """One node's report for this round, from its own view and random streams only."""

    def client_step_batch(
        self,
        round_: int,
        batch: NodeBatch,
        server_msg: dict[str, Any],
        seeds: int | Sequence[int],
    ) -> Mapping[int, Report]:
        """The reports of every node of ``batch`` for this round (``seeds``: one stream seed
        for all nodes, or one per node): exactly what :meth:`client_step` gives node by node.
        This default calls it node by node and packs the reports into a
        :class:`~ldpgraph.protocols.batch.ReportBatch` (a dict when they do not pack); a
        protocol overrides it with a faster path only where that gives the same reports, byte
        for byte."""
        reports = [
            self.client_step(
                round_, view, server_msg, seeds if isinstance(seeds, int | np.integer) else seeds[k]
            )
            for k, view in enumerate(batch.views())
        ]
        try:
            return ReportBatch.from_reports(batch.nodes, reports, round_, batch.num_nodes)
        except ValueError:
            return dict(zip(batch.nodes.tolist(), reports, strict=True))

    @abstractmethod
    def server_step(
        self, round_: int, result: RoundResult, curator: CuratorView, seed: int
    ) -> dict[str, Any] | Release:
        """Turn the round's reports into the next message, or into the release."""

    @abstractmethod
    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        """What one node's participation costs, from the accountant (``num_features`` lets
        the report state vector-level figures)."""


class ClientSideOf(LdpProtocol):
    """A protocol whose nodes run another protocol's client side unchanged (``client_side``):
    the ε a round charges, the report schema and the client step are that protocol's; only
    the server side (and the parameters it is described by) is this protocol's own."""

    client_side: LdpProtocol

    def round_epsilon(self, round_: int) -> float:
        return self.client_side.round_epsilon(round_)

    def epsilon_parts(self, round_: int) -> EpsilonParts | None:
        return self.client_side.epsilon_parts(round_)

    def check_request(self, round_: int, message: Mapping[str, Any], num_nodes: int) -> None:
        self.client_side.check_request(round_, message, num_nodes)

    def schema(self, round_: int) -> ReportSchema:
        return self.client_side.schema(round_)

    def client_step(
        self, round_: int, view: NodeView, server_msg: dict[str, Any], seed: int
    ) -> Report:
        return self.client_side.client_step(round_, view, server_msg, seed)

    def client_step_batch(
        self,
        round_: int,
        batch: NodeBatch,
        server_msg: dict[str, Any],
        seeds: int | Sequence[int],
    ) -> Mapping[int, Report]:
        return self.client_side.client_step_batch(round_, batch, server_msg, seeds)
