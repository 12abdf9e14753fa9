"""The ``local`` backend: every node's client step in one process, node after node.

Each node still uses only its own view and its own random streams, so the reports are exactly
those the Flower backend collects for the same seed; and each node passes the same guard as a
Flower node (:mod:`ldpgraph.client.budget`): a round over its budget, or a raw upload it did not
consent to, is refused and the node counted as missing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ldpgraph.client.budget import Ledger, NodeSettings, admit_nodes
from ldpgraph.protocols.base import CuratorView, LdpProtocol, RoundResult
from ldpgraph.protocols.graph import Graph
from ldpgraph.protocols.types import NodeView, Release

from ..collection import NoReportsError, require_reports


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


def run_protocol(
    protocol: LdpProtocol,
    graph: Graph,
    curator: CuratorView,
    seed: int,
    progress: Callable[[int], None] | None = None,
    settings: NodeSettings | None = None,
) -> tuple[Release, dict[str, float]]:
    """Run every round locally; returns the release and the seconds spent collecting and
    reconstructing. ``settings``: every simulated node's own settings (default: seeded from
    ``seed``, a budget of exactly this run's ε, no consent to raw upload)."""
    if settings is None:
        settings = NodeSettings(budget=total_epsilon(protocol), seed=seed)
    ledger = Ledger(None, "local")
    msg: dict[str, Any] = {**protocol.config(), **protocol.public_message(0, seed)}
    timings = {"collect": 0.0, "reconstruct": 0.0}
    rounds = []
    for round_ in range(protocol.rounds):
        t0 = time.perf_counter()
        result = collect_round(protocol, graph, round_, msg, seed, progress, settings, ledger)
        t1 = time.perf_counter()
        refused = int(result.missing.size)
        rounds.append(
            {
                "asked": graph.num_nodes,
                "replied": len(result.reports),
                "refused": refused,
                "rejected": 0,
                "missing": 0,
            }
        )
        require_reports(protocol.name, round_, len(result.reports), graph.num_nodes, refused)
        out = protocol.server_step(round_, result, curator, seed)
        timings["collect"] += t1 - t0
        timings["reconstruct"] += time.perf_counter() - t1
        if isinstance(out, Release):
            out.stats.setdefault("collection", {}).update(
                {"backend": "local", "rounds": rounds, "node_randomness": settings.randomness}
            )
            return out, timings
        msg = {**protocol.config(), **out, **protocol.public_message(round_ + 1, seed)}
    raise RuntimeError(f"protocol {protocol.name} finished its rounds without a release")


__all__ = ["NoReportsError", "collect_round", "node_view", "run_protocol", "total_epsilon"]
