"""Sybil nodes for poisoning experiments: an attacker who controls a share of the node-clients.

For experiments and tests only. Nothing in the client, the server or the ``ldpgraph`` CLI
imports this module, and it reaches a run only as a collector wrapped around the ``local``
backend's (:class:`SybilCollector`), so no deployed node's code path can take it.

The attacker (after Wu, Cao, Jia, Gong, "Poisoning attacks to local differential privacy
protocols for graphs", whose fake nodes claim edges to target nodes) controls ``fraction`` of
the nodes, drawn at random or the highest-degree ones, and knows the graph's labels (a strong
attacker: it picks its targets). Instead of its nodes' randomized reports it sends well-formed
reports the server's checks accept:

* adjacency: a clique among its own nodes (each such pair is reported by both endpoints, so it
  looks confirmed) plus claimed edges to honest nodes of one target class;
* features: 0/1 bits, all ones (``flood``: the vector whose cosine with every report is
  largest, so every claimed pair passes HoGS's similarity gate) or, ``stealth``, as many ones
  as an honest report can hold, on the target class's most frequent bits;
* any scalar field a round asks for (a noisy degree): the largest value in range, n − 1.

``stealth`` keeps each node's claims to honest nodes at about (n − 1)·p, the number of claims
an honest node's RR flips make, so that the consistency screening of
:mod:`ldpgraph.protocols.ldp.consistency` cannot tell it from honest noise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ldpgraph.protocols.base import LdpProtocol
from ldpgraph.protocols.batch import ReportBatch
from ldpgraph.protocols.graph import Graph
from ldpgraph.protocols.mechanisms import flip_probability
from ldpgraph.protocols.messages import RoundMessage
from ldpgraph.protocols.types import Report
from ldpgraph.server.rounds import Collector, Replies

MODES = ("flood", "stealth")
CHOICES = ("random", "top-degree")
TARGETS = ("class", "any")


@dataclass(frozen=True)
class SybilAttack:
    """What the attacker does. ``fraction``: share of the nodes it controls (0 ≤ k < 1);
    ``choice``: which (``random`` or ``top-degree``); ``mode``: ``flood`` or ``stealth``;
    ``targets``: ``class`` (the honest nodes of one class) or ``any`` (every honest node:
    claims that cross classes); ``target_class``: the class it attacks (None: the largest
    among honest nodes; the class whose feature profile ``stealth`` copies with ``any``);
    ``fanout``: claims to targets per Sybil (None: every target in ``flood``, (n − 1)·p in
    ``stealth``); ``clique``: whether Sybils claim each other; ``seed``: its own randomness."""

    fraction: float
    choice: str = "random"
    mode: str = "flood"
    targets: str = "class"
    target_class: int | None = None
    fanout: int | None = None
    clique: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.fraction < 1.0:
            raise ValueError(f"fraction must be in [0, 1), got {self.fraction}")
        if self.choice not in CHOICES:
            raise ValueError(f"choice must be one of {CHOICES}, got {self.choice!r}")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.targets not in TARGETS:
            raise ValueError(f"targets must be one of {TARGETS}, got {self.targets!r}")
        if self.fanout is not None and self.fanout < 0:
            raise ValueError(f"fanout must be >= 0, got {self.fanout}")

    def sybils(self, graph: Graph) -> np.ndarray:
        """The nodes the attacker controls (sorted int64)."""
        n = graph.num_nodes
        count = int(round(self.fraction * n))
        if count == 0:
            return np.zeros(0, dtype=np.int64)
        if self.choice == "top-degree":
            order = np.lexsort((np.arange(n), -graph.degrees()))
            return np.sort(order[:count]).astype(np.int64)
        rng = np.random.default_rng([self.seed, 0x5B11])
        return np.sort(rng.choice(n, size=count, replace=False)).astype(np.int64)

    def plan(self, graph: Graph, protocol: LdpProtocol) -> SybilPlan:
        """The Sybils, their targets and the reports they will send (for ``protocol``)."""
        sybils = self.sybils(graph)
        honest = np.ones(graph.num_nodes, dtype=bool)
        honest[sybils] = False
        y = np.asarray(graph.y)
        target_class = self.target_class
        if target_class is None:
            target_class = int(np.bincount(y[honest]).argmax()) if honest.any() else 0
        of_class = honest & (y == target_class)
        targets = np.flatnonzero(of_class if self.targets == "class" else honest).astype(np.int64)
        eps_a = getattr(protocol, "eps_adjacency", None)  # the split-budget protocols' ε_a, ε_f
        eps_f = getattr(protocol, "eps_features", 0.0) or None
        fanout = self.fanout
        if fanout is None:
            if self.mode == "flood" or eps_a is None:
                fanout = targets.size
            else:  # as many claims as an honest node's flips make, on average
                fanout = int(round((graph.num_nodes - 1) * flip_probability(eps_a)))
        features = self._features(graph, np.flatnonzero(of_class), eps_f)
        return SybilPlan(self, sybils, targets, target_class, min(fanout, targets.size), features)

    def _features(self, graph: Graph, targets: np.ndarray, eps_f: float | None) -> np.ndarray:
        d = graph.num_features
        if self.mode == "flood" or eps_f is None:
            return np.ones(d, dtype=np.uint8)
        # Stealth: as many ones as an honest report of all-ones features would hold on
        # average (d·e^ε/(e^ε+1)), on the bits most frequent in the target class.
        ones = int(math.floor(d * math.exp(eps_f) / (math.exp(eps_f) + 1.0)))
        freq = np.asarray(graph.x[targets], dtype=np.float64).mean(axis=0)
        top = np.argsort(-freq, kind="stable")[:ones]
        out = np.zeros(d, dtype=np.uint8)
        out[top] = 1
        return out


@dataclass(frozen=True)
class SybilPlan:
    """One attack on one graph: its Sybils, the honest targets, the class they belong to, the
    claims per Sybil and the feature row every Sybil sends."""

    attack: SybilAttack
    sybils: np.ndarray
    targets: np.ndarray
    target_class: int
    fanout: int
    features: np.ndarray

    def report(self, node: int, round_: int, num_nodes: int, protocol: LdpProtocol) -> Report:
        """Sybil ``node``'s forged report for ``round_``: in the shape the round asks for."""
        schema = protocol.schema(round_)
        adjacency = features = None
        if schema.adjacency:
            rng = np.random.default_rng([self.attack.seed, 0xA77AC, node, round_])
            claims = rng.choice(self.targets, size=self.fanout, replace=False)
            parts = [claims]
            if self.attack.clique:
                parts.append(self.sybils[self.sybils != node])
            adjacency = np.unique(np.concatenate(parts)).astype(np.int32)
        if schema.features:
            features = self.features.copy()
        extras = {key: float(num_nodes - 1) for key in schema.extras}
        return Report(node, round_, num_nodes, adjacency, features, extras)


def poisoned(
    reports: Mapping[int, Report], forged: Mapping[int, Report], round_: int, num_nodes: int
) -> Mapping[int, Report]:
    """``reports`` with the Sybils' replaced by ``forged``: a :class:`ReportBatch` again when
    the collection was one (and the forged reports pack with it), else a dict."""
    if isinstance(reports, ReportBatch):
        merged = dict(reports.drop(forged.keys()).items())
    else:
        merged = {v: r for v, r in reports.items() if v not in forged}
    merged.update(forged)
    nodes = np.array(sorted(merged), dtype=np.int64)
    if isinstance(reports, ReportBatch):
        try:
            return ReportBatch.from_reports(nodes, [merged[v] for v in nodes], round_, num_nodes)
        except ValueError:
            pass
    return {int(v): merged[int(v)] for v in nodes}


class SybilCollector:
    """A collector whose Sybil nodes answer with the attacker's reports; every other node's
    reply is ``inner``'s, unchanged. With no Sybils it returns ``inner``'s replies as they are
    (the release is byte-identical to a run without the wrapper)."""

    def __init__(self, inner: Collector, attack: SybilAttack, graph: Graph) -> None:
        self.inner = inner
        self.attack = attack
        self.graph = graph
        self.plan: SybilPlan | None = None

    def collect(self, protocol: LdpProtocol, message: RoundMessage, length: int | None) -> Replies:
        replies = self.inner.collect(protocol, message, length)
        if self.plan is None:
            self.plan = self.attack.plan(self.graph, protocol)
        plan = self.plan
        if plan.sybils.size == 0:
            return replies
        n = self.graph.num_nodes
        forged = {
            int(v): plan.report(int(v), message.round, n, protocol) for v in plan.sybils.tolist()
        }
        reports = poisoned(replies.reports, forged, message.round, n)
        stats = replace(replies.stats, reasons=replies.stats.reasons.copy())
        stats.replied = len(reports)
        return Replies(reports, stats, replies.seconds)


def describe(plan: SybilPlan) -> dict[str, Any]:
    """What the attack was, for a result row."""
    return {
        "mode": plan.attack.mode,
        "choice": plan.attack.choice,
        "targets_of": plan.attack.targets,
        "sybils": int(plan.sybils.size),
        "target_class": plan.target_class,
        "targets": int(plan.targets.size),
        "fanout": plan.fanout,
        "clique": plan.attack.clique,
        "feature_ones": int(plan.features.sum()),
    }


__all__ = ["SybilAttack", "SybilCollector", "SybilPlan", "describe", "poisoned"]
