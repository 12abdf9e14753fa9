"""The split-budget base, as a contract over every registered protocol built on it: the split
follows the registry's ``public_features``, the rounds spend exactly ε, a public-feature
protocol's server refuses a curator view without the features, and the privacy report states
what ε_f protects."""

from __future__ import annotations

import numpy as np
import pytest

from ldpgraph.protocols.base import CuratorView, RoundResult
from ldpgraph.protocols.ldp.split_budget import (
    PRIVATE_UNIT,
    PUBLIC_NOTE,
    PUBLIC_UNIT,
    RRSplitBudgetProtocol,
    SplitBudgetProtocol,
)
from ldpgraph.protocols.registry import make_protocol, protocol_info, protocol_names
from ldpgraph.protocols.types import NodeView

FAMILY = [
    name
    for name in protocol_names()
    if issubclass(protocol_info(name).resolve(), SplitBudgetProtocol)
]


def test_the_family_holds_the_split_budget_ldp_protocols():
    """The contract below runs over every one (so it cannot pass on an empty family)."""
    assert {"hogs", "hogs-edge", "rr", "rr-edge", "solitude", "ldpgen", "fp-blink"} <= set(FAMILY)


@pytest.mark.parametrize("name", FAMILY)
def test_split_follows_the_registry_and_spends_epsilon(name):
    declared = protocol_info(name).param_names
    share = {"feature_share": 0.25} if "feature_share" in declared else {}
    proto = make_protocol(name, epsilon=4.0, **share)
    public = protocol_info(name).public_features
    assert proto.public_features == public
    assert ("feature_share" in declared) != public  # a public-feature variant has no share
    if public:
        assert proto.eps_features == 0.0 and proto.eps_graph == 4.0
    else:
        assert proto.eps_features == pytest.approx(1.0) and proto.eps_graph == pytest.approx(3.0)
    spent = sum(proto.round_epsilon(r) for r in range(proto.rounds))
    assert spent == pytest.approx(4.0, abs=1e-12)
    rep = proto.privacy_report(num_features=10)
    assert rep.unit == (PUBLIC_UNIT if public else PRIVATE_UNIT)
    if public:
        assert PUBLIC_NOTE in rep.notes
    else:
        assert any("per feature BIT" in note and "= 10" in note for note in rep.notes)


@pytest.mark.parametrize("name", [n for n in FAMILY if protocol_info(n).public_features])
def test_public_features_come_from_the_curator_only(name):
    proto = make_protocol(name, epsilon=4.0)
    view = NodeView(0, np.array([1, 2]), np.array([1.0, 0.0]), 5)
    assert proto.noisy_features(view, 7, 0) is None
    with pytest.raises(ValueError, match=f"{name} needs the public features"):
        proto.server_features(RoundResult({}), CuratorView(5, 2))
    x = np.ones((5, 2), np.float32)
    got, sent = proto.server_features(RoundResult({}), CuratorView(5, 2, public_features=x))
    assert got is x and sent is None


@pytest.mark.parametrize("name", [n for n in FAMILY if not protocol_info(n).public_features])
def test_private_features_are_the_one_bit_reports(name):
    proto = make_protocol(name, epsilon=4.0, feature_share=0.5)
    view = NodeView(0, np.array([1, 2]), np.array([1.0, 0.0, 1.0]), 5)
    bits = proto.noisy_features(view, 7, 0)
    assert bits.dtype == np.uint8 and bits.shape == (3,) and set(bits.tolist()) <= {0, 1}
    if isinstance(proto, RRSplitBudgetProtocol):
        report = proto.client_step(0, view, proto.config(), 7)
        np.testing.assert_array_equal(report.features, bits)  # the same FEATURES stream
