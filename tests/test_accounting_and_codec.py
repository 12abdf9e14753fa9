"""The closed forms of the per-bit ε against dp-accounting, and the wire codec's checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols.accounting import PLD_DISCRETIZATION, pure_epsilon, rr_event
from ldpgraph.protocols.hogs import HogsParams, HogsProtocol
from ldpgraph.protocols.reports import ReportError, decode_report, encode_report
from ldpgraph.protocols.types import Report


@pytest.mark.parametrize("eps", [0.1, 1.0, 2.5, 4.0, 8.0])
def test_rr_closed_form_matches_accountant(eps):
    acc = pure_epsilon([rr_event(eps)])
    assert eps - 1e-9 <= acc <= eps + PLD_DISCRETIZATION + 1e-9
    # The exact likelihood ratio of the 1-bit mechanism at its extremes is e^eps.
    p1 = 1 / (math.exp(eps) + 1)
    assert math.log((1 - p1) / p1) == pytest.approx(eps)


def test_composition_adds_up():
    acc = pure_epsilon([rr_event(1.5), rr_event(2.5)])
    assert 4.0 - 1e-9 <= acc <= 4.0 + 2 * PLD_DISCRETIZATION
    acc10 = pure_epsilon([rr_event(0.3)] * 10)
    assert 3.0 - 1e-9 <= acc10 <= 3.0 + 10 * PLD_DISCRETIZATION


def test_hogs_privacy_report():
    rep = HogsProtocol(HogsParams(8.0, feature_share=0.25)).privacy_report(1433)
    parts = {p["part"]: p for p in rep.parts}
    assert parts["adjacency"]["epsilon"] == pytest.approx(6.0, abs=1e-3)
    assert parts["features"]["epsilon"] == pytest.approx(2.0, abs=1e-3)
    assert rep.epsilon == pytest.approx(8.0, abs=1e-3) and rep.epsilon >= 8.0 - 1e-9
    assert any("2866" in note for note in rep.notes)  # d·ε_f for the whole vector
    edge = HogsProtocol(HogsParams(5.0, public_features=True)).privacy_report()
    assert edge.epsilon == pytest.approx(5.0, abs=1e-3) and len(edge.parts) == 1


def roundtrip(report: Report, **kw) -> Report:
    return decode_report(encode_report(report), **kw)


def test_codec_roundtrip_both_forms():
    sparse = Report(3, 0, 1000, np.array([1, 5, 999], np.int32), np.array([1, 0, 1], np.uint8))
    wire = encode_report(sparse)
    assert wire["adj_fmt"] == "idx" and wire["feat_fmt"] == "bits"
    back = roundtrip(sparse, num_nodes=1000, round_=0, num_features=3, expect_features=True)
    np.testing.assert_array_equal(back.adjacency, sparse.adjacency)
    np.testing.assert_array_equal(back.features, sparse.features)
    dense = Report(0, 0, 100, np.arange(1, 80, dtype=np.int32))
    assert encode_report(dense)["adj_fmt"] == "bits"
    np.testing.assert_array_equal(
        roundtrip(dense, num_nodes=100, round_=0).adjacency, dense.adjacency
    )


@pytest.mark.parametrize(
    "mutate,reason",
    [
        (lambda w: w.update(adj=np.array([5, 3], "<i4").tobytes()), "unsorted"),
        (lambda w: w.update(adj=np.array([3, 3], "<i4").tobytes()), "unsorted or duplicated"),
        (lambda w: w.update(adj=np.array([1, 100], "<i4").tobytes()), "out of range"),
        (lambda w: w.update(adj=b"\x01\x02\x03"), "multiple of 4"),
        (lambda w: w.update(round=1), "round"),
        (lambda w: w.update(node="3"), "integer"),
        (lambda w: w.pop("adj"), "missing field"),
        (lambda w: w.update(adj_fmt="zip"), "unknown adjacency format"),
        (lambda w: w.update(adj=np.array([3], "<i4").tobytes()), "diagonal"),
        (lambda w: w.update(adj=np.arange(1, 100, dtype="<i4").tobytes() * 9), "exceeds"),
    ],
)
def test_codec_rejects(mutate, reason):
    wire = encode_report(Report(3, 0, 100, np.array([1, 2], np.int32)))
    mutate(wire)
    with pytest.raises(ReportError, match=reason):
        decode_report(wire, num_nodes=100, round_=0)


def test_codec_rejects_non_mapping_and_bad_features():
    with pytest.raises(ReportError, match="mapping"):
        decode_report([1, 2], num_nodes=10, round_=0)
    wire = encode_report(Report(1, 0, 10, np.array([2], np.int32), np.ones(12, np.uint8)))
    with pytest.raises(ReportError, match="d=12"):
        decode_report(wire, num_nodes=10, round_=0, num_features=11, expect_features=True)
    wire["feat"] = wire["feat"][:1]
    with pytest.raises(ReportError, match="packed features"):
        decode_report(wire, num_nodes=10, round_=0, num_features=12, expect_features=True)
