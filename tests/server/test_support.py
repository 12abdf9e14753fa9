"""The server range-checks every report against its mechanism's support: the values the
re-audit found accepted (degrees 1e12, −7.5, 1e300; float32 ±1e30; features 7 and −3 on a {0, 1}
domain) are dropped, counted and named, on the node-by-node and the batched path alike; honest
reports never are; and in a raw upload an edge is kept only when both endpoints report it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols.base import CuratorView, RoundResult
from ldpgraph.protocols.batch import ReportBatch
from ldpgraph.protocols.laplace import DiscreteLaplace
from ldpgraph.protocols.ldp.blink import DEGREE_FIELD
from ldpgraph.protocols.ldp.ldpgen import extra_names
from ldpgraph.protocols.registry import make_protocol, uses_public_features
from ldpgraph.protocols.reports import decode_report, encode_report
from ldpgraph.protocols.support import BITS, DOMAIN, TAIL_NATS, noisy_count
from ldpgraph.protocols.types import Report
from ldpgraph.server.rounds import (
    Replies,
    RoundStats,
    batch_problems,
    report_problem,
    validate_replies,
)
from ldpgraph.simulation.backends.local import run_protocol
from ldpgraph.simulation.datasets import load_dataset
from ldpgraph.simulation.pipeline import curator_view

N, D = 40, 6
BAD_COUNTS = [1e12, -7.5, 1e300, float(-N - 10**6), 2.5]


def test_supports_accept_their_values_only():
    dom = (0.0, 1.0)
    assert BITS.outside(np.array([0, 1, 7, -3]), N, dom).tolist() == [False, False, True, True]
    assert BITS.outside(np.array([0.0, 0.5, 1.0]), N, dom).tolist() == [False, True, False]
    assert DOMAIN.outside(np.array([0.0, 0.25, 1.0, 7.0, -3.0]), N, (0.0, 1.0)).tolist() == [
        False, False, False, True, True,
    ]  # fmt: skip
    count = noisy_count(2.0)
    assert count.tail == math.ceil(TAIL_NATS / 2.0)
    ok = np.array([-count.tail, 0, N - 1, N - 1 + count.tail], dtype=np.float64)
    assert not count.outside(ok, N, dom).any()
    bad = np.array([*BAD_COUNTS, np.nan, np.inf, -np.inf, N + count.tail])
    assert count.outside(bad, N, dom).all()
    with pytest.raises(ValueError):
        noisy_count(0.0)


def test_the_count_support_holds_every_honest_draw_at_the_smallest_rate():
    """The cut is far in the noise's tail: 10^5 draws at ε = 0.05 all fall inside."""
    eps = 0.05
    rng = np.random.default_rng(0)
    noise = DiscreteLaplace(eps).perturb_many(np.zeros(10**5, dtype=np.int64), rng)
    assert not noisy_count(eps).outside(noise.astype(np.float64), 1, (0.0, 1.0)).any()
    # ... and 2e^{−50} bounds the chance of an honest entry past it.
    assert 2 * math.exp(-eps * noisy_count(eps).tail) <= 2 * math.exp(-TAIL_NATS)


def blink_report(node: int, degree: float) -> Report:
    return Report(node, 0, N, np.array([], dtype=np.int32), None, {DEGREE_FIELD: degree})


def ldpgen0_report(node: int, value: float) -> Report:
    return Report(node, 0, N, None, None, dict.fromkeys(extra_names(2), value))


def ldpgen1_report(node: int, value: float) -> Report:
    return Report(node, 1, N, None, np.array([value, 1.0, 2.0], dtype=np.float32))


def raw_report(node: int, value: float) -> Report:
    x = np.zeros(D, dtype=np.float32)
    x[0] = value
    return Report(node, 0, N, np.array([], dtype=np.int32), x)


def onebit_report(node: int, value: float) -> Report:
    x = np.zeros(D, dtype=np.float32)
    x[1] = value
    return Report(node, 0, N, np.array([], dtype=np.int32), x)


CASES = [
    # (protocol, round, report maker, bad values, the reason's words)
    ("blink-hard", 0, blink_report, BAD_COUNTS, "field 'degree' outside"),
    ("ldpgen", 0, ldpgen0_report, BAD_COUNTS, "field 'deg0' outside"),
    ("ldpgen", 1, ldpgen1_report, [1e30, -1e30, 0.5, 3e9], "features outside"),
    ("none", 0, raw_report, [7.0, -3.0, 1.5], "features outside"),
    ("hogs", 0, onebit_report, [7.0, -3.0, 0.5], "features outside"),
]


@pytest.mark.parametrize(("name", "round_", "make", "bad", "words"), CASES)
def test_out_of_range_reports_are_dropped_counted_and_named(name, round_, make, bad, words):
    proto = make_protocol(name, epsilon=4.0) if name != "none" else make_protocol(name)
    length = 3 if (name, round_) == ("ldpgen", 1) else D
    schema = proto.schema(round_)
    good = {node: make(node, 1.0) for node in range(10)}
    evil = {10 + i: make(10 + i, v) for i, v in enumerate(bad)}
    reports = {**good, **evil}
    # Node by node, and as one batch: the same nodes with the same first reason.
    singles = {
        v: p
        for v, r in reports.items()
        if (p := report_problem(r, v, round_, N, length, schema, (0.0, 1.0))) is not None
    }
    assert set(singles) == set(evil), singles
    assert all(words in p for p in singles.values()), singles
    batch = ReportBatch.from_reports(np.array(sorted(reports)), list(reports.values()), round_, N)
    assert batch_problems(batch, round_, N, length, schema, (0.0, 1.0)) == singles
    stats = RoundStats(asked=N, replied=len(reports))
    result, stats = validate_replies(proto, round_, Replies(reports, stats), N, length)
    assert sorted(result.reports) == sorted(good)
    assert stats.rejected == len(bad) and stats.replied == len(good)
    (reason,) = stats.reasons
    assert words in reason and "support" in reason and stats.reasons[reason] == len(bad)


def test_the_wire_carries_the_values_the_support_check_drops():
    """The decoder accepts a finite float32 1e30 (it bounds sizes, not values): the support
    check is what drops it."""
    proto = make_protocol("ldpgen", epsilon=4.0)
    rep = ldpgen1_report(3, 1e30)
    back = decode_report(encode_report(rep), num_nodes=N, round_=1, num_features=3,
                         node_id=3, **proto.schema(1).expected())  # fmt: skip
    assert report_problem(back, 3, 1, N, 3, proto.schema(1)) is not None


@pytest.mark.parametrize("name", ["blink-hard", "ldpgen", "hogs", "none"])
def test_honest_reports_are_never_dropped(name):
    from ldpgraph.client.budget import NodeSettings

    graph = load_dataset("synthetic:n=80,classes=2,d=8,avg_degree=6,seed=5")
    proto = make_protocol(name, epsilon=0.5) if name != "none" else make_protocol(name)
    curator = curator_view(graph, uses_public_features(name))
    settings = NodeSettings(budget=math.inf, trust_curator=True, seed=0)
    release, _ = run_protocol(proto, graph, curator, 1, settings=settings)
    for stats in release.stats["collection"]["rounds"]:
        assert stats["rejected"] == 0 and stats["replied"] == 80, stats


def test_raw_upload_keeps_only_edges_both_endpoints_report():
    """Node 0 claims edges to 1 and 2; only 1 reports the edge back. The one-sided edge (0, 2)
    is not in the curator's graph, and is counted."""
    proto = make_protocol("none")
    rows = {0: [1, 2], 1: [0], 2: [3], 3: [2]}
    reports = {
        v: Report(v, 0, 4, np.array(r, dtype=np.int32), np.zeros(2, np.uint8))
        for v, r in rows.items()
    }
    release = proto.server_step(0, RoundResult(reports), CuratorView(4, 2), 0)
    assert sorted(map(tuple, release.edges.tolist())) == [(0, 1), (2, 3)]
    assert release.stats["one_sided_edges_dropped"] == 1
