"""Core value types that flow between the client, the server and the runner."""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

#: What a release can be: a synthetic ``graph`` (the LDP protocols, PrivDPR, PPGSL), a trained
#: ``model`` (DPAR: the harness asks it for predictions) or a generated collection of
#: ``graphs`` (DPGGAN/DPGVAE on a collection dataset).
RELEASE_KINDS = ("graph", "model", "graphs")


class Predictor(Protocol):
    """A released model: class labels for the given node ids (the harness scores them against
    true labels the mechanism never saw)."""

    def predict(self, nodes: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class NodeView:
    """What one node knows about the graph: its own row and features, and the sizes n, d."""

    node_id: int
    neighbors: np.ndarray  # sorted int ids of its true neighbours (never contains node_id)
    features: np.ndarray  # its feature row, length d
    num_nodes: int
    feature_domain: tuple[float, float] = (0.0, 1.0)

    @property
    def num_features(self) -> int:
        return int(self.features.shape[0])


@dataclass
class Report:
    """What one node sends in one round.

    ``adjacency`` is the sorted int32 array of the column ids whose reported bit is 1 (the
    diagonal is never reported). ``features`` is the perturbed feature row (uint8 bits for the
    1-bit mechanism, float32 for real-valued mechanisms) or None when the round does not ask
    for features. ``extras`` carries small scalar fields of other protocols (a noisy degree).
    """

    node_id: int
    round: int
    num_nodes: int
    adjacency: np.ndarray | None = None
    features: np.ndarray | None = None
    extras: dict[str, float] = field(default_factory=dict)


@dataclass
class PrivacyReport:
    """What a release spends, stated per protected unit and computed by an accountant.

    ``epsilon`` is the guarantee of the whole per-node report under basic composition of its
    parts; ``parts`` lists each mechanism's own unit, ε and δ. ``notes`` explain what the
    figures mean (e.g. per-bit feature LDP is not vector-level LDP) and where a paper's own
    accounting differs from ours.

    A bare ε hides its unit, and per-bit figures read far smaller than what an edge or a
    feature vector costs, so ``headline`` is the one-line human statement with every unit
    spelled out, and ``unit_epsilons`` holds the accountant's ε per unit: ``adjacency_bit``
    (one bit of one node's report), ``edge`` (both endpoints report the same edge),
    ``feature_bit`` and ``feature_vector`` (d·ε_f, when features are perturbed and d is known).
    """

    protocol: str
    unit: str
    epsilon: float
    delta: float
    accountant: str
    parts: list[dict[str, Any]] = field(default_factory=list)
    paper_epsilon: float | None = None
    notes: list[str] = field(default_factory=list)
    headline: str = ""
    unit_epsilons: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def no_privacy(
        cls, protocol: str, what: str, headline: str, units: tuple[str, ...], note: str
    ) -> PrivacyReport:
        """The report of a non-private reference: raw data to a trusted curator, ε = ∞ (δ = 1)
        for each of ``units``; ``what`` says whose raw data (the unit's text)."""
        return cls(
            protocol=protocol,
            unit=f"none ({what})",
            epsilon=math.inf,
            delta=1.0,
            accountant="none",
            notes=[note],
            headline=headline,
            unit_epsilons=dict.fromkeys(units, math.inf),
        )


@dataclass
class Release:
    """The curator's output and what it cost in privacy.

    ``kind`` says what was released (:data:`RELEASE_KINDS`); evaluation picks what fits it.
    A ``graph`` release holds ``edges`` (as :class:`ldpgraph.protocols.graph.Graph`: each
    undirected edge once, u < v, sorted), the feature matrix ``x`` the models train on and an
    optional ``edge_weight`` aligned with ``edges``; ``protected``, optionally, the ``[s, 2]``
    pairs (u < v) of the uploaded graph that the strategy knew and set out to hide (PPGSL's
    sensitive links: not in the release; the ``attack`` metric scores them too). A ``model``
    release holds ``model`` (a :class:`Predictor`) and an empty graph of ``num_nodes`` rows
    (:meth:`of_model`); a ``graphs`` release holds ``graphs``, one ``graph`` release per
    generated graph (:meth:`of_graphs`).
    """

    edges: np.ndarray
    x: np.ndarray
    privacy: PrivacyReport
    edge_weight: np.ndarray | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    kind: str = "graph"
    model: Predictor | None = None
    graphs: list[Release] = field(default_factory=list)
    protected: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.kind not in RELEASE_KINDS:
            raise ValueError(f"unknown release kind {self.kind!r}; one of {RELEASE_KINDS}")
        if (self.kind == "model") != (self.model is not None):
            raise ValueError("a model release holds a model, and only a model release does")
        if self.kind == "graphs" and not self.graphs:
            raise ValueError("a graphs release holds at least one graph")
        if any(g.kind != "graph" for g in self.graphs):
            raise ValueError("a graphs release holds graph releases only")

    @classmethod
    def of_model(
        cls,
        model: Predictor,
        num_nodes: int,
        privacy: PrivacyReport,
        stats: dict[str, Any] | None = None,
    ) -> Release:
        """A trained predictor over ``num_nodes`` nodes (no graph is released)."""
        return cls(
            edges=np.zeros((0, 2), dtype=np.int64),
            x=np.zeros((num_nodes, 0), dtype=np.float32),
            privacy=privacy,
            stats=dict(stats or {}),
            kind="model",
            model=model,
        )

    @classmethod
    def of_graphs(
        cls, graphs: list[Release], privacy: PrivacyReport, stats: dict[str, Any] | None = None
    ) -> Release:
        """A generated collection (each element a ``graph`` release; one privacy report)."""
        return cls(
            edges=np.zeros((0, 2), dtype=np.int64),
            x=np.zeros((0, 0), dtype=np.float32),
            privacy=privacy,
            stats=dict(stats or {}),
            kind="graphs",
            graphs=list(graphs),
        )

    @property
    def num_nodes(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.edges.shape[0])

    def fingerprint(self) -> str:
        """sha256 of what was released, so two runs can be compared exactly: for a graph the
        sorted edge list (int64) and feature matrix bytes with shapes and dtype; for a model
        its predictions on every node; for a collection its graphs' fingerprints in order."""
        h = hashlib.sha256()
        if self.kind == "model":
            assert self.model is not None
            labels = np.asarray(self.model.predict(np.arange(self.num_nodes)), dtype="<i8")
            h.update(f"model;n{self.num_nodes};".encode())
            h.update(np.ascontiguousarray(labels).tobytes())
            return h.hexdigest()
        if self.kind == "graphs":
            h.update(f"graphs{len(self.graphs)};".encode())
            for graph in self.graphs:
                h.update(graph.fingerprint().encode())
            return h.hexdigest()
        edges = np.ascontiguousarray(self.edges, dtype="<i8")
        x = np.ascontiguousarray(self.x)
        h.update(f"edges{edges.shape};x{x.shape}{x.dtype.str};".encode())
        h.update(edges.tobytes())
        h.update(x.tobytes())
        return h.hexdigest()
