"""The ``local`` backend: every node's client step in this machine's processes.

Each node still uses only its own view and its own random streams, so the reports are exactly
those the Flower backend collects for the same seed; and each node passes the same guard as a
Flower node (:mod:`ldpgraph.client.budget`): a round over its budget, or a raw upload it did not
consent to, is refused and the node counted as missing.

The admitted nodes are collected in ranges, each range by the protocol's batched client step
(:meth:`~ldpgraph.protocols.base.LdpProtocol.client_step_batch`: the same reports, byte for
byte, without a Python object per node), on ``workers`` forked processes (default: every core
this process may use, for rounds of at least :data:`PARALLEL_MIN_NODES` nodes; the
``LDPGRAPH_LOCAL_WORKERS`` environment variable or the ``workers`` argument choose; 1 is
serial). The reports come back as one :class:`~ldpgraph.protocols.batch.ReportBatch`, at the
size of the reports. ``batched=False`` runs the former node-by-node loop (the reference the
tests and benchmarks compare against).
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from ldpgraph.client.budget import Ledger, NodeSettings, admit_many
from ldpgraph.client.units import round_charge
from ldpgraph.protocols.base import CuratorView, LdpProtocol, RoundResult
from ldpgraph.protocols.batch import BatchBuilder, NodeBatch, ReportBatch
from ldpgraph.protocols.graph import Graph
from ldpgraph.protocols.messages import RoundMessage
from ldpgraph.protocols.types import NodeView, Release
from ldpgraph.server.rounds import Replies, RoundStats, run_rounds

log = logging.getLogger("ldpgraph.simulation")

#: Rounds with fewer admitted nodes are collected in this process (a fork costs more).
PARALLEL_MIN_NODES = 20_000
#: Nodes per batch handed to one client-step call (and one worker task).
CHUNK_NODES = 8192
WORKERS_ENV = "LDPGRAPH_LOCAL_WORKERS"


def node_view(graph: Graph, node: int) -> NodeView:
    return NodeView(
        node, graph.neighbors(node), graph.x[node], graph.num_nodes, graph.feature_domain
    )


def total_epsilon(protocol: LdpProtocol) -> float:
    """What one node spends over all of ``protocol``'s rounds (a simulated node's default
    budget: enough for one run, not for two)."""
    return float(sum(protocol.round_epsilon(r) for r in range(protocol.rounds)))


def _nested() -> bool:
    """Whether this process is already one of several: a sweep's worker process, a Ray task
    (their parents share out the cores), or a daemon (which may not have children)."""
    if multiprocessing.parent_process() is not None or multiprocessing.current_process().daemon:
        return True
    ray = sys.modules.get("ray")
    return bool(ray is not None and getattr(ray, "is_initialized", lambda: False)())


def collection_workers(workers: int | None, num_nodes: int) -> int:
    """How many processes collect a round of ``num_nodes`` nodes: ``workers`` when given, else
    ``$LDPGRAPH_LOCAL_WORKERS``, else every core this process may use (1 below
    :data:`PARALLEL_MIN_NODES` nodes, inside a sweep's worker or a Ray task, or where
    processes cannot be forked)."""
    if workers is None:
        env = os.environ.get(WORKERS_ENV, "").strip()
        if env:
            try:
                workers = int(env)
            except ValueError:
                raise ValueError(f"{WORKERS_ENV} must be an integer, got {env!r}") from None
        elif num_nodes < PARALLEL_MIN_NODES or _nested():
            workers = 1
        else:
            workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    if multiprocessing.current_process().daemon:
        return 1  # a daemonic process may not have children
    return min(workers, max(1, -(-num_nodes // CHUNK_NODES)))


def collect_round(
    protocol: LdpProtocol,
    graph: Graph,
    round_: int,
    server_msg: dict[str, Any],
    seed: int,
    progress: Callable[[int], None] | None = None,
    settings: NodeSettings | None = None,
    ledger: Ledger | None = None,
    workers: int | None = None,
    batched: bool = True,
) -> RoundResult:
    """Every node's report for one round. With ``settings`` (and ``ledger``: what the nodes
    spent in earlier rounds) each node is admitted by its guard first, and draws from the
    streams its settings name; without, every node answers from ``seed`` (a reference
    collection for tests and benchmarks). ``workers``: processes to collect with (see
    :func:`collection_workers`); ``batched=False``: node by node in this process, one
    :class:`Report` object each (the former path, for comparisons)."""
    admitted = np.arange(graph.num_nodes, dtype=np.int64)
    missing = admitted[:0]
    if settings is not None:
        # Every node shares one settings: admitted at once, the ledger's spends one array.
        ledger = ledger if ledger is not None else Ledger(None, "local")
        admission = admit_many(
            ledger,
            admitted,
            round_charge(protocol, round_, graph.num_nodes, graph.num_features),
            round_,
            settings,
            protocol.raw_upload,
        )
        # Asked in ascending order, so both come sorted (no set difference over n nodes).
        admitted, missing = admission.admitted, admission.refused
    if not batched:
        nodes = admitted.tolist()
        reports = {}
        for i, node in enumerate(nodes):
            stream = seed if settings is None else settings.stream_seed()
            reports[node] = protocol.client_step(round_, node_view(graph, node), server_msg, stream)
            if progress is not None and (i + 1) % 1024 == 0:
                progress(1024)
        if progress is not None:
            progress(len(nodes) % 1024)
        return RoundResult(reports, missing)
    job = _Job(protocol, graph, round_, server_msg, seed, settings, admitted)
    ranges = [(lo, min(lo + CHUNK_NODES, admitted.size))
              for lo in range(0, admitted.size, CHUNK_NODES)]  # fmt: skip
    joined = _Joined(round_, graph.num_nodes, admitted.size)
    _run_job(job, ranges, collection_workers(workers, admitted.size), joined.add, progress)
    return RoundResult(joined.finish(), missing)


class _Joined:
    """The ranges' reports joined as they arrive: one :class:`ReportBatch` (each part copied
    in and freed), or a dict once a part is one (a protocol whose reports do not pack)."""

    def __init__(self, round_: int, num_nodes: int, rows: int) -> None:
        self.builder: BatchBuilder | None = BatchBuilder(round_, num_nodes, rows)
        self.plain: dict[int, Any] = {}

    def add(self, part: Mapping[int, Any]) -> None:
        if self.builder is not None and isinstance(part, ReportBatch):
            try:
                self.builder.add(part)
                return
            except ValueError:
                pass
        if self.builder is not None:
            self.plain = dict(self.builder.finish().items())
            self.builder = None
        self.plain.update(part.items())

    def finish(self) -> Mapping[int, Any]:
        return self.builder.finish() if self.builder is not None else self.plain


class _Job:
    """One round's collection, shared with forked workers (inherited, never pickled)."""

    def __init__(
        self,
        protocol: LdpProtocol,
        graph: Graph,
        round_: int,
        server_msg: dict[str, Any],
        seed: int,
        settings: NodeSettings | None,
        nodes: np.ndarray,
    ) -> None:
        self.protocol = protocol
        self.graph = graph
        self.round = round_
        self.server_msg = server_msg
        self.seed = seed
        self.settings = settings
        self.nodes = nodes

    def run(self, bounds: tuple[int, int]) -> Mapping[int, Any]:
        """The reports of the admitted nodes ``nodes[lo:hi]``."""
        lo, hi = bounds
        batch = NodeBatch.of_graph(self.graph, self.nodes[lo:hi])
        if self.settings is None:
            seeds: int | list[int] = self.seed
        elif self.settings.seed is not None:
            seeds = self.settings.seed
        else:
            # Fresh OS entropy for every node's request (drawn in the worker that serves it).
            seeds = [self.settings.stream_seed() for _ in range(hi - lo)]
        return self.protocol.client_step_batch(self.round, batch, self.server_msg, seeds)


_ACTIVE: _Job | None = None


def _run_active(bounds: tuple[int, int]) -> Mapping[int, Any]:
    assert _ACTIVE is not None
    return _ACTIVE.run(bounds)


def _run_job(
    job: _Job,
    ranges: list[tuple[int, int]],
    workers: int,
    sink: Callable[[Mapping[int, Any]], None],
    progress: Callable[[int], None] | None,
) -> None:
    """Every range's reports, handed to ``sink`` in order: from this process, or from
    ``workers`` forked ones."""
    global _ACTIVE

    def done(bounds: tuple[int, int], part: Mapping[int, Any]) -> None:
        sink(part)
        if progress is not None:
            progress(bounds[1] - bounds[0])

    if workers > 1 and len(ranges) > 1:
        _ACTIVE = job
        try:
            pool = multiprocessing.get_context("fork").Pool(workers)
        except OSError as exc:  # no processes to spare: collect here
            _ACTIVE = None
            log.warning("local backend: cannot fork %d workers (%s); collecting serially",
                        workers, exc)  # fmt: skip
        else:
            try:
                with pool:
                    for bounds, part in zip(ranges, pool.imap(_run_active, ranges), strict=True):
                        done(bounds, part)
                return
            finally:
                _ACTIVE = None
    for bounds in ranges:
        done(bounds, job.run(bounds))


class LocalCollector:
    """Collects each round by calling every node's client step on this machine, each node
    behind its own guard (``settings``; ``ledger``: what the nodes spent in earlier rounds);
    ``workers`` and ``batched`` as :func:`collect_round` takes them."""

    def __init__(
        self,
        graph: Graph,
        seed: int,
        settings: NodeSettings,
        progress: Callable[[int], None] | None = None,
        workers: int | None = None,
        batched: bool = True,
    ) -> None:
        self.graph = graph
        self.seed = seed
        self.settings = settings
        self.progress = progress
        self.workers = workers
        self.batched = batched
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
            self.workers,
            self.batched,
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
        # Fresh counts for each run (the round loop completes them in place); a batch is
        # read-only, so every run may share it.
        if not isinstance(reports, ReportBatch):
            reports = dict(reports)
        return Replies(reports, replace(stats, reasons=Counter(stats.reasons)), seconds)


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
        {
            "backend": "local",
            "rounds": done.rounds,
            "node_randomness": settings.randomness,
            "node_units": {settings.unit: graph.num_nodes},
            # The harness plays every node and no one times a reply: the sparse rows.
            "node_sampling": {"sparse": graph.num_nodes},
        }
    )
    return done.release, done.timings


__all__ = [
    "CHUNK_NODES",
    "PARALLEL_MIN_NODES",
    "LocalCollector",
    "ReplayCollector",
    "collect_round",
    "collection_workers",
    "node_view",
    "run_protocol",
    "total_epsilon",
]
