"""The ``local`` backend: every node's client step in one process, node after node.

Each node still uses only its own view and its own random streams, so the reports are exactly
those the Flower backend collects for the same seed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ldpgraph.protocols.base import CuratorView, LdpProtocol, RoundResult
from ldpgraph.protocols.graph import Graph
from ldpgraph.protocols.types import NodeView, Release


def node_view(graph: Graph, node: int) -> NodeView:
    return NodeView(
        node, graph.neighbors(node), graph.x[node], graph.num_nodes, graph.feature_domain
    )


def collect_round(
    protocol: LdpProtocol,
    graph: Graph,
    round_: int,
    server_msg: dict[str, Any],
    seed: int,
    progress: Callable[[int], None] | None = None,
) -> RoundResult:
    reports = {}
    for node in range(graph.num_nodes):
        reports[node] = protocol.client_step(round_, node_view(graph, node), server_msg, seed)
        if progress is not None and (node + 1) % 1024 == 0:
            progress(1024)
    if progress is not None:
        progress(graph.num_nodes % 1024)
    return RoundResult(reports, np.zeros(0, dtype=np.int64))


def run_protocol(
    protocol: LdpProtocol,
    graph: Graph,
    curator: CuratorView,
    seed: int,
    progress: Callable[[int], None] | None = None,
) -> tuple[Release, dict[str, float]]:
    """Run every round locally; returns the release and the seconds spent collecting and
    reconstructing."""
    import time

    msg: dict[str, Any] = protocol.config()
    timings = {"collect": 0.0, "reconstruct": 0.0}
    for round_ in range(protocol.rounds):
        t0 = time.perf_counter()
        result = collect_round(protocol, graph, round_, msg, seed, progress)
        t1 = time.perf_counter()
        out = protocol.server_step(round_, result, curator, seed)
        timings["collect"] += t1 - t0
        timings["reconstruct"] += time.perf_counter() - t1
        if isinstance(out, Release):
            return out, timings
        msg = {**protocol.config(), **out}
    raise RuntimeError(f"protocol {protocol.name} finished its rounds without a release")
