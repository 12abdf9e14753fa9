"""Core value types that flow between the client, the server and the runner."""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


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


@dataclass
class Release:
    """The curator's output: a synthetic graph (to train on) and what it cost in privacy.

    ``edges`` follows :class:`ldpgraph.protocols.graph.Graph`: each undirected edge once,
    u < v, sorted. ``x`` is the feature matrix the models train on; ``edge_weight`` (aligned
    with ``edges``) is optional.
    """

    edges: np.ndarray
    x: np.ndarray
    privacy: PrivacyReport
    edge_weight: np.ndarray | None = None
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.edges.shape[0])

    def fingerprint(self) -> str:
        """sha256 of the synthetic graph: sorted edge list (int64) and feature matrix bytes,
        with shapes and dtype, so two runs can be compared exactly."""
        h = hashlib.sha256()
        edges = np.ascontiguousarray(self.edges, dtype="<i8")
        x = np.ascontiguousarray(self.x)
        h.update(f"edges{edges.shape};x{x.shape}{x.dtype.str};".encode())
        h.update(edges.tobytes())
        h.update(x.tobytes())
        return h.hexdigest()
