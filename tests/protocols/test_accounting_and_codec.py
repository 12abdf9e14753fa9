"""The closed forms of the per-bit ε against dp-accounting, and the wire codec's checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols.accounting import PLD_DISCRETIZATION, pure_epsilon, rr_event
from ldpgraph.protocols.registry import make_protocol, protocol_names
from ldpgraph.protocols.reports import ReportError, decode_report, encode_report
from ldpgraph.protocols.types import Report

from ..support.params import at_epsilon


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
    rep = make_protocol("hogs", epsilon=8.0, feature_share=0.25).privacy_report(1433)
    parts = {p["part"]: p for p in rep.parts}
    assert parts["adjacency"]["epsilon"] == pytest.approx(6.0, abs=1e-3)
    assert parts["features"]["epsilon"] == pytest.approx(2.0, abs=1e-3)
    assert rep.epsilon == pytest.approx(8.0, abs=1e-3) and rep.epsilon >= 8.0 - 1e-9
    assert any("2866" in note for note in rep.notes)  # d·ε_f for the whole vector
    edge = make_protocol("hogs-edge", epsilon=5.0).privacy_report()
    assert edge.epsilon == pytest.approx(5.0, abs=1e-3) and len(edge.parts) == 1
    # τ and l are post-processing; tuning the split or ε collects fresh reports, which count.
    tuning = [note for note in rep.notes if "post-processing" in note]
    assert tuning and "spends none" not in " ".join(rep.notes)
    assert "fresh reports" in tuning[0] and "sum" in tuning[0]


D = 1433


@pytest.mark.parametrize("name", protocol_names())
def test_every_protocol_states_its_units(name):
    """The headline names its units and unit_epsilons holds the accountant's figures: an edge
    is reported by both endpoints (2× one adjacency bit, RR bit and any count it moves), a
    feature vector costs d·ε_f."""
    rep = make_protocol(name, **at_epsilon(name, 4.0)).privacy_report(num_features=D)
    eps, text = rep.unit_epsilons, rep.headline
    assert text and rep.to_dict()["headline"] == text
    assert rep.to_dict()["unit_epsilons"] == eps and rep.to_dict()["epsilon"] == rep.epsilon
    if name == "none":
        assert "no privacy" in text
        assert all(math.isinf(v) for v in eps.values()) and {"edge", "feature_vector"} <= set(eps)
        return
    model = make_protocol(name, **at_epsilon(name, 4.0)).privacy_model
    if model == "empirical" or rep.unit == "edge" and model == "central":
        # Edge-level central DP (DPGGAN, EdgeRand, LapGraph): one edge; an empirical defence
        # (PPGSL, random edge changes) claims no ε and says so.
        assert set(eps) == {"edge"}
        if model == "empirical":
            assert math.isinf(eps["edge"]) and "no" in text and "guarantee" in text
        else:
            assert "edge-level" in text and eps["edge"] >= rep.epsilon - 1e-9
        return
    if model != "ldp":
        # Node-level central DP (one node's whole row, features and label): the sound figure,
        # never below the paper's; a strategy's non-private twin states none.
        assert set(eps) == {"node"}
        assert "no privacy" in text if math.isinf(eps["node"]) else "node-level" in text
        assert eps["node"] >= rep.epsilon - 1e-9 or math.isinf(eps["node"])
        return
    adjacency = [
        p for p in rep.parts if p["part"] == "adjacency" or p["mechanism"] == "discrete-laplace"
    ]
    features = [p for p in rep.parts if p["part"] == "features"]
    if adjacency:
        per_bit = sum(p["epsilon_closed_form"] for p in adjacency)
        slack = 2 * len(adjacency) * PLD_DISCRETIZATION + 1e-9
        assert per_bit - 1e-9 <= eps["adjacency_bit"] <= per_bit + slack / 2
        assert 2 * per_bit - 1e-9 <= eps["edge"] <= 2 * per_bit + slack
        assert "per adjacency bit" in text and "one edge" in text and "both endpoints" in text
    else:
        assert eps["edge"] == 0.0 and "no adjacency" in text
    if features:
        eps_f = features[0]["epsilon_closed_form"]
        assert eps["feature_bit"] == pytest.approx(features[0]["epsilon"], abs=1e-12)
        assert D * eps_f - 1e-9 <= eps["feature_vector"] <= D * (eps_f + PLD_DISCRETIZATION)
        assert "per feature bit" in text and f"feature vector of d = {D} bits" in text
    else:
        assert "feature_vector" not in eps and "features are public" in text
    without_d = make_protocol(name, **at_epsilon(name, 4.0)).privacy_report()
    assert "feature_vector" not in without_d.unit_epsilons


def test_feature_vector_is_the_composition_of_its_bits():
    """d·(per-bit ε) equals the PLD accountant's composition of the d bits where the latter
    is usable (small d: at d ≳ 100 its δ = 0 figure breaks down numerically)."""
    for d, share in ((20, 0.5), (64, 0.3)):
        rep = make_protocol("features-only", epsilon=4.0, feature_share=share).privacy_report(d)
        composed = pure_epsilon([rr_event(4.0 * share)] * d)
        assert rep.unit_epsilons["feature_vector"] == pytest.approx(composed, abs=1e-9)


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
