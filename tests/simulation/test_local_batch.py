"""The local backend's batched collection gives the reports of the node-by-node loop, byte for
byte, serially and on forked workers, behind the nodes' guards; and the run's release and
counts are those of the loop."""

from __future__ import annotations

import numpy as np
import pytest

from ldpgraph.client.budget import Ledger, NodeSettings, admit_nodes
from ldpgraph.protocols.batch import ReportBatch
from ldpgraph.protocols.graph import Graph
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.simulation.backends import local
from ldpgraph.simulation.backends.local import (
    LocalCollector,
    ReplayCollector,
    collect_round,
    collection_workers,
    run_protocol,
)
from ldpgraph.simulation.datasets.synthetic import synthetic_graph
from ldpgraph.simulation.pipeline import curator_view

from ..protocols.test_batch import assert_same_reports

N = 2500


@pytest.fixture(scope="module")
def graph():
    return synthetic_graph(n=N, avg_degree=10.0, d=32, seed=4)


@pytest.fixture
def small_chunks(monkeypatch):
    # Several ranges per round, so that two workers both get some.
    monkeypatch.setattr(local, "CHUNK_NODES", 300)


def spent_ledger(proto, nodes, settings) -> Ledger:
    """A ledger where ``nodes`` already spent their whole budget (on another round)."""
    ledger = Ledger(None, "local")
    admitted, _ = admit_nodes(ledger, nodes, settings.budget, 7, settings, proto.raw_upload)
    assert admitted == nodes
    return ledger


@pytest.mark.parametrize(("name", "workers"), [("hogs", 1), ("hogs", 2), ("blink-hard", 2)])
def test_batched_collection_equals_the_node_loop_behind_the_guards(
    graph, small_chunks, name, workers
):
    proto = make_protocol(name, epsilon=4.0)
    settings = NodeSettings(budget=4.0, seed=3)
    spent = list(range(0, N, 9))  # these nodes refuse: their budget is gone
    loop = collect_round(
        proto, graph, 0, proto.config(), 0, settings=settings,
        ledger=spent_ledger(proto, spent, settings), batched=False,
    )  # fmt: skip
    seen = []
    batched = collect_round(
        proto, graph, 0, proto.config(), 0, progress=seen.append, settings=settings,
        ledger=spent_ledger(proto, spent, settings), workers=workers,
    )  # fmt: skip
    assert isinstance(batched.reports, ReportBatch)
    assert batched.missing.tolist() == loop.missing.tolist() == spent
    assert sum(seen) == N - len(spent) and len(seen) > 1
    assert_same_reports(loop.reports, batched.reports)


def test_unseeded_nodes_draw_fresh_entropy_in_every_worker(graph, small_chunks):
    proto = make_protocol("hogs-edge", epsilon=3.0)
    settings = NodeSettings(budget=100.0)
    a = collect_round(proto, graph, 0, proto.config(), 0, settings=settings, workers=2)
    b = collect_round(proto, graph, 0, proto.config(), 0, settings=settings, workers=2)
    assert len(a.reports) == len(b.reports) == N
    # No two nodes (in any two workers) and no two requests share a stream.
    rows = [a.reports[v].adjacency.tobytes() for v in range(N)]
    assert len(set(rows)) == N
    assert sum(a.reports[v].adjacency.tobytes() == b.reports[v].adjacency.tobytes()
               for v in range(N)) < N // 10  # fmt: skip


@pytest.mark.parametrize("name", ["hogs", "rr"])
def test_a_run_releases_the_same_graph_either_way(graph, name):
    proto = make_protocol(name, epsilon=6.0)
    curator = curator_view(graph, False)
    settings = NodeSettings(budget=6.0, seed=1)
    fingerprints, rounds = [], []
    for batched, workers in ((False, 1), (True, 1), (True, 2)):
        collector = LocalCollector(graph, 1, settings, workers=workers, batched=batched)
        release, _ = run_protocol(proto, graph, curator, 1, settings=settings, collector=collector)
        fingerprints.append(release.fingerprint())
        rounds.append(release.stats["collection"]["rounds"])
    assert len(set(fingerprints)) == 1
    assert rounds[0] == rounds[1] == rounds[2]


def test_a_replayed_batch_serves_every_run_unchanged(graph):
    proto = make_protocol("hogs", epsilon=6.0)
    curator = curator_view(graph, False)
    settings = NodeSettings(budget=6.0, seed=2)
    replay = ReplayCollector(LocalCollector(graph, 2, settings))
    first, _ = run_protocol(proto, graph, curator, 2, settings=settings, collector=replay)
    second, _ = run_protocol(proto, graph, curator, 2, settings=settings, collector=replay)
    assert first.fingerprint() == second.fingerprint()
    assert isinstance(replay.replies.reports, ReportBatch)


def test_worker_count(monkeypatch):
    monkeypatch.delenv(local.WORKERS_ENV, raising=False)
    assert collection_workers(None, 100) == 1  # small rounds stay in this process
    assert collection_workers(3, 10 * local.CHUNK_NODES) == 3
    assert collection_workers(8, local.CHUNK_NODES) == 1  # one range: one worker
    monkeypatch.setenv(local.WORKERS_ENV, "2")
    assert collection_workers(None, 100_000) == 2
    monkeypatch.setenv(local.WORKERS_ENV, "two")
    with pytest.raises(ValueError, match="LDPGRAPH_LOCAL_WORKERS"):
        collection_workers(None, 100_000)
    with pytest.raises(ValueError, match=">= 1"):
        collection_workers(0, 100_000)


def test_raw_uploads_pack_and_rows_of_mixed_types_stay_a_dict(graph):
    # ``none`` (every central strategy's client side): binary features pack into a batch; on
    # real-valued features a node sends an all-0/1 row as uint8 and the others as float32, so
    # the default client_step_batch keeps them in a dict, as sent.
    proto = make_protocol("none")
    settings = NodeSettings(budget=1.0, trust_curator=True)
    loop = collect_round(proto, graph, 0, {}, 0, settings=settings, batched=False)
    batched = collect_round(proto, graph, 0, {}, 0, settings=settings)
    assert isinstance(batched.reports, ReportBatch)
    assert_same_reports(loop.reports, batched.reports)
    x = graph.x.astype(np.float32) * np.float32(0.5)
    x[:10] = graph.x[:10]
    mixed = Graph("mixed", graph.edges, x, graph.y, graph.feature_domain)
    loop = collect_round(proto, mixed, 0, {}, 0, settings=settings, batched=False)
    batched = collect_round(proto, mixed, 0, {}, 0, settings=settings, workers=2)
    assert isinstance(batched.reports, dict)
    assert_same_reports(loop.reports, batched.reports)
    real = 10 + int(np.flatnonzero(graph.x[10:].any(axis=1))[0])  # a row with a 0.5 in it
    assert {batched.reports[v].features.dtype.type for v in (0, real)} == {np.uint8, np.float32}
    refused = collect_round(proto, graph, 0, {}, 0, settings=NodeSettings(budget=1.0))
    assert len(refused.reports) == 0 and refused.missing.size == N
    assert np.array_equal(refused.missing, np.arange(N))
