"""The one round loop (ldpgraph.server.rounds) over a fake collector: the messages it sends,
when it stops, what it counts, and which reports it drops."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ldpgraph.client.budget import NodeSettings
from ldpgraph.protocols.base import CuratorView, LdpProtocol, ReportSchema, RoundResult
from ldpgraph.protocols.messages import RoundMessage
from ldpgraph.protocols.registry import make_protocol, protocol_names, uses_public_features
from ldpgraph.protocols.support import noisy_count
from ldpgraph.protocols.types import PrivacyReport, Release, Report
from ldpgraph.server.rounds import (
    NoReportsError,
    Replies,
    RoundStats,
    report_problem,
    run_rounds,
)
from ldpgraph.simulation.backends.local import run_protocol, total_epsilon
from ldpgraph.simulation.datasets import load_dataset
from ldpgraph.simulation.datasets.graph_collections import union
from ldpgraph.simulation.pipeline import curator_view
from ldpgraph.simulation.splits import split_for

from ..support.params import for_small_graph

N = 6


class Phases(LdpProtocol):
    """LDPGen-shaped: every round the server feeds back the sum of the nodes' extras; the
    server step of round ``release_at`` releases (``None``: never)."""

    name = "phases"

    def __init__(self, rounds: int, release_at: int | None = None) -> None:
        self.rounds = rounds
        self.release_at = rounds - 1 if release_at is None else release_at
        if release_at is None and rounds == 0:
            self.release_at = -1
        self.seen: list[dict[int, Report]] = []

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "rounds": self.rounds}

    def round_epsilon(self, round_: int) -> float:
        return 1.0

    def schema(self, round_: int) -> ReportSchema:
        return ReportSchema(
            adjacency=True, features=False, extras=("value",), extra_support=noisy_count(1.0)
        )

    def public_message(self, round_: int, seed: int) -> dict[str, Any]:
        if round_ >= self.rounds:
            raise AssertionError(f"asked for the public values of round {round_}")
        return {"public": 100 * seed + round_}

    def client_step(self, round_, view, server_msg, seed) -> Report:  # pragma: no cover
        raise NotImplementedError

    def server_step(self, round_: int, result: RoundResult, curator, seed: int):
        self.seen.append(dict(result.reports))
        total = sum(r.extras["value"] for r in result.reports.values())
        if round_ == self.release_at:
            edges = np.zeros((0, 2), dtype=np.int64)
            x = np.zeros((curator.num_nodes, 1), dtype=np.float32)
            return Release(edges=edges, x=x, privacy=self.privacy_report())
        return {"feedback": total}

    def privacy_report(self, num_features=None) -> PrivacyReport:
        return PrivacyReport(self.name, "test", 1.0, 0.0, "none")


def honest(node: int, round_: int, message: dict[str, Any]) -> Report:
    adj = np.array([j for j in (node - 1, node + 1) if 0 <= j < N], dtype=np.int32)
    return Report(node, round_, N, adj, None, {"value": float(message.get("feedback", 1.0))})


class FakeCollector:
    """Answers every node honestly except those in ``tamper`` (node -> how to break it) and
    those in ``refuse``; records every message it was given."""

    def __init__(self, tamper: dict[int, str] | None = None, refuse: set[int] | None = None):
        self.tamper = tamper or {}
        self.refuse = refuse or set()
        self.messages: list[tuple[int, dict[str, Any]]] = []

    def collect(self, protocol, message: RoundMessage, length) -> Replies:
        assert message.op == "report"
        round_ = message.round
        message = message.protocol_values()
        self.messages.append((round_, message))
        stats = RoundStats(asked=N, refused=len(self.refuse))
        reports = {}
        for node in range(N):
            if node in self.refuse:
                continue
            rep = honest(node, round_, message)
            how = self.tamper.get(node)
            if how == "diagonal":
                rep.adjacency = np.array([node], dtype=np.int32)
            elif how == "unsorted":
                rep.adjacency = np.array([5, 1], dtype=np.int32)
            elif how == "range":
                rep.adjacency = np.array([N], dtype=np.int32)
            elif how == "round":
                rep.round = round_ + 1
            elif how == "impostor":
                rep.node_id = (node + 1) % N
            elif how == "extra":
                rep.extras = {}
            elif how == "features":
                rep.features = np.ones(3, dtype=np.uint8)
            reports[node] = rep
        stats.replied = len(reports)
        return Replies(reports, stats)


CURATOR = CuratorView(N, 1)
GRAPH = load_dataset("synthetic:n=80,classes=3,d=12,avg_degree=4,seed=1")
#: 80 nodes in four graphs of 20: GRAPH's edges inside each block of 20 node ids.
_BLOCK = GRAPH.edges[(GRAPH.edges // 20)[:, 0] == (GRAPH.edges // 20)[:, 1]]
COLLECTION = union(
    "toy-collection",
    [(_BLOCK[_BLOCK[:, 0] // 20 == k] - 20 * k, 20) for k in range(4)],
    np.zeros(4, dtype=np.int64),
)


@pytest.mark.parametrize("rounds", [1, 2, 3])
def test_one_message_per_round_and_none_after_the_last(rounds):
    proto, col = Phases(rounds), FakeCollector()
    done = run_rounds(proto, col, CURATOR, seed=7)
    assert isinstance(done.release, Release)
    assert [r for r, _ in col.messages] == list(range(rounds))
    assert len(done.rounds) == rounds and len(proto.seen) == rounds
    assert set(done.timings) == {"collect", "reconstruct"}


def test_feedback_and_public_values_reach_the_next_round():
    proto, col = Phases(3), FakeCollector()
    run_rounds(proto, col, CURATOR, seed=2)
    (_, m0), (_, m1), (_, m2) = col.messages
    assert m0["public"] == 200 and "feedback" not in m0 and m0["name"] == "phases"
    assert m1 == {
        "protocol": "phases",
        "name": "phases",
        "rounds": 3,
        "feedback": 6.0,
        "public": 201,
    }
    # Round 1's nodes echo the feedback: the server sums what they sent.
    assert m2["feedback"] == 36.0 and m2["public"] == 202


def test_an_early_release_stops_the_rounds():
    proto, col = Phases(3, release_at=1), FakeCollector()
    done = run_rounds(proto, col, CURATOR, seed=0)
    assert [r for r, _ in col.messages] == [0, 1] and len(done.rounds) == 2


def test_no_release_after_the_last_round_is_an_error_without_another_message():
    proto, col = Phases(2, release_at=5), FakeCollector()
    with pytest.raises(RuntimeError, match="2 round\\(s\\) without a release"):
        run_rounds(proto, col, CURATOR, seed=0)
    assert [r for r, _ in col.messages] == [0, 1]


def test_invalid_reports_are_dropped_and_counted():
    tamper = {
        0: "diagonal",
        1: "unsorted",
        2: "range",
        3: "round",
        4: "impostor",
        5: "extra",
    }
    col = FakeCollector({k: v for k, v in tamper.items() if k < 3}, refuse={3})
    proto = Phases(1)
    done = run_rounds(proto, col, CURATOR, seed=0)
    stats = done.rounds[0]
    assert stats["asked"] == N and stats["refused"] == 1
    assert stats["rejected"] == 3 and stats["replied"] == 2
    assert sorted(proto.seen[0]) == [4, 5]
    reasons = " | ".join(stats["reasons"])
    for needle in ("diagonal", "unsorted", "out of range"):
        assert needle in reasons


@pytest.mark.parametrize(
    "how,needle",
    [
        ("round", "round"),
        ("impostor", "in the place of"),
        ("extra", "'value'"),
        ("features", "did not ask"),
    ],
)
def test_each_kind_of_bad_report_is_named(how, needle):
    col = FakeCollector({2: how})
    rep = col.collect(Phases(1), RoundMessage.report(0, {"protocol": "phases"}), None).reports[2]
    problem = report_problem(rep, 2, 0, N, None, Phases(1).schema(0))
    assert problem is not None and needle in problem


def test_a_round_without_any_report_stops_the_run():
    col = FakeCollector(refuse=set(range(N)))
    with pytest.raises(NoReportsError, match="no node reported in round 0"):
        run_rounds(Phases(2), col, CURATOR, seed=0)
    assert len(col.messages) == 1


def test_a_round_of_only_rejected_reports_stops_the_run():
    col = FakeCollector(dict.fromkeys(range(N), "diagonal"))
    with pytest.raises(NoReportsError):
        run_rounds(Phases(1), col, CURATOR, seed=0)


@pytest.mark.parametrize("name", sorted(protocol_names()))
def test_every_protocol_through_the_local_collector_passes_validation(name):
    """The local backend feeds the same loop: every honest report of every protocol passes
    (the curator knows the training labels, which a central strategy trains on)."""
    proto = make_protocol(name, **for_small_graph(name, 4.0))
    settings = NodeSettings(budget=total_epsilon(proto), trust_curator=True, seed=3)
    graph = COLLECTION if name in ("dpggan", "dpgvae") else GRAPH  # they learn from collections
    curator = curator_view(graph, uses_public_features(name), split_for(graph.num_nodes, 0))
    release, _ = run_protocol(proto, graph, curator, 3, settings=settings)
    rounds = release.stats["collection"]["rounds"]
    assert len(rounds) == proto.rounds
    assert all(r["replied"] == 80 and r["rejected"] == 0 for r in rounds), rounds
