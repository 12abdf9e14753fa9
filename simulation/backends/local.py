"""The ``local`` backend: every node's client step in one process, node after node.

Each node still uses only its own view and its own random streams, so the reports are exactly
those the Flower backend collects for the same seed; and each node passes the same guard as a
Flower node (:mod:`ldpgraph.client.budget`): a round over its budget, or a raw upload it did not
consent to, is refused and the node counted as missing.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ldpgraph.client.budget import Ledger, NodeSettings, admit_nodes
from ldpgraph.protocols.base import CuratorView, LdpProtocol, RoundResult
from ldpgraph.protocols.graph import Graph
from ldpgraph.protocols.messages import RoundMessage
from ldpgraph.protocols.types import NodeView, Release
from ldpgraph.server.rounds import Replies, RoundStats, run_rounds


def node_view(graph: Graph, node: int) -> NodeView:
    return NodeView(
        node, graph.neighbors(node), graph.x[node], graph.num_nodes, graph.feature_domain
    )


def total_epsilon(protocol: LdpProtocol) -> float:
    """What one node spends over all of ``protocol``'s rounds (a simulated node's default
    budget: enough for one run, not for two)."""
    return float(sum(protocol.round_epsilon(r) for r in range(protocol.rounds)))


def collect_round(
    protocol: LdpProtocol,
    graph: Graph,
    round_: int,
    server_msg: dict[str, Any],
    seed: int,
    progress: Callable[[int], None] | None = None,
    settings: NodeSettings | None = None,
    ledger: Ledger | None = None,
) -> RoundResult:
    """Every node's report for one round. With ``settings`` (and ``ledger``: what the nodes
    spent in earlier rounds) each node is admitted by its guard first, and draws from the
    streams its settings name; without, every node answers from ``seed`` (a reference
    collection for tests and benchmarks)."""
    nodes = list(range(graph.num_nodes))
    if settings is not None:
        ledger = ledger if ledger is not None else Ledger(None, "local")
        nodes, _refused = admit_nodes(
            ledger,
            nodes,
            float(protocol.round_epsilon(round_)),
            round_,
            settings,
            protocol.raw_upload,
        )
    reports = {}
    for i, node in enumerate(nodes):
        stream = seed if settings is None else settings.stream_seed()
        reports[node] = protocol.client_step(round_, node_view(graph, node), server_msg, stream)
        if progress is not None and (i + 1) % 1024 == 0:
            progress(1024)
    if progress is not None:
        progress(len(nodes) % 1024)
    missing = np.setdiff1d(np.arange(graph.num_nodes), np.asarray(nodes, dtype=np.int64))
    return RoundResult(reports, missing)


class LocalCollector:
    """Collects each round by calling every node's client step in this process, each node
    behind its own guard (``settings``; ``ledger``: what the nodes spent in earlier rounds)."""

    def __init__(
        self,
        graph: Graph,
        seed: int,
        settings: NodeSettings,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        self.graph = graph
        self.seed = seed
        self.settings = settings
        self.progress = progress
        self.ledger = Ledger(None, "local")

    def collect(self, protocol: LdpProtocol, message: RoundMessage, length: int | None) -> Replies:
        # The nodes read what a Flower node's protocol reads: the protocol's values of the
        # message (its data lies here, so there are no where-values).
        result = collect_round(
            protocol,
            self.graph,
            message.round,
            message.protocol_values(),
            self.seed,
            self.progress,
            self.settings,
            self.ledger,
        )
        refused = int(result.missing.size)
        stats = RoundStats(asked=self.graph.num_nodes, replied=len(result.reports), refused=refused)
        if refused:
            stats.reasons["refused by the node"] += refused
        return Replies(result.reports, stats)


class ReplayCollector:
    """Collects round 0 once through ``inner`` and hands the same reports to every later run:
    the sweep reconstructs one collection with many server-side settings (τ, l: post-processing,
    no budget spent). Only for one-round protocols, whose reports no server step shaped."""

    def __init__(self, inner: LocalCollector) -> None:
        self.inner = inner
        self.replies: Replies | None = None

    def collect(self, protocol: LdpProtocol, message: RoundMessage, length: int | None) -> Replies:
        if message.round != 0 or protocol.rounds != 1:
            raise ValueError("only the reports of a one-round protocol can be replayed")
        if self.replies is None:
            t0 = time.perf_counter()
            first = self.inner.collect(protocol, message, length)
            self.replies = first._replace(seconds=time.perf_counter() - t0)
        reports, stats, seconds = self.replies
        # Fresh counts for each run (the round loop completes them in place).
        return Replies(dict(reports), replace(stats, reasons=Counter(stats.reasons)), seconds)


def run_protocol(
    protocol: LdpProtocol,
    graph: Graph,
    curator: CuratorView,
    seed: int,
    progress: Callable[[int], None] | None = None,
    settings: NodeSettings | None = None,
    collector: LocalCollector | ReplayCollector | None = None,
) -> tuple[Release, dict[str, float]]:
    """Run every round locally; returns the release and the seconds spent collecting and
    reconstructing. ``settings``: every simulated node's own settings (default: seeded from
    ``seed``, a budget of exactly this run's ε, no consent to raw upload). ``collector``: one
    already made (a replay of earlier reports), instead of a fresh one."""
    if settings is None:
        settings = NodeSettings(budget=total_epsilon(protocol), seed=seed)
    if collector is None:
        collector = LocalCollector(graph, seed, settings, progress)
    done = run_rounds(protocol, collector, curator, seed)
    done.release.stats.setdefault("collection", {}).update(
        {"backend": "local", "rounds": done.rounds, "node_randomness": settings.randomness}
    )
    return done.release, done.timings


__all__ = [
    "LocalCollector",
    "ReplayCollector",
    "collect_round",
    "node_view",
    "run_protocol",
    "total_epsilon",
]
