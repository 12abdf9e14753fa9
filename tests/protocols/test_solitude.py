"""Solitude (official-code mode, HoGS reproduction): dense reference, estimator step, client
equal to HoGS's, privacy, and the unimplemented label step refused."""

from __future__ import annotations

import numpy as np
import pytest

from ldpgraph.protocols.base import CuratorView
from ldpgraph.protocols.ldp.assemble import adjacency_reports
from ldpgraph.protocols.ldp.solitude import (
    OFFICIAL_L1_ALPHA,
    OFFICIAL_LR,
    official_estimator_step,
)
from ldpgraph.protocols.registry import make_protocol

from .test_hogs import collect, dense_inputs, random_graph, views
from .test_kprop import dense_kprop


@pytest.mark.parametrize("eps,share", [(1.0, 0.5), (4.0, 0.1), (8.0, 0.9)])
@pytest.mark.parametrize("lx", [0, 2])
@pytest.mark.parametrize("drop", [(), (2, 5)])
def test_equals_dense_reference(eps, share, lx, drop):
    g = random_graph(50, 16, seed=int(eps) + lx)
    proto = make_protocol("solitude", epsilon=eps, feature_share=share, lx=lx)
    result = collect(proto, g, seed=3, drop=drop)
    release = proto.server_step(0, result, CuratorView(50, 16), seed=3)
    bits, _, x = dense_inputs(result, 50, 16, None)
    either = np.triu((bits + bits.T) > 0, k=1)
    edges = np.argwhere(either)
    np.testing.assert_array_equal(release.edges, edges)
    ref = dense_kprop(x, edges, 50, lx, "sym", "zero")
    assert np.abs(release.x - ref).max() <= 1e-6
    assert release.stats["estimator_support_equals_rr"]
    assert release.stats["mode"] == "official"


def test_client_is_hogs_client_and_privacy_is_hogs():
    g = random_graph(30, 12, seed=1)
    sol = make_protocol("solitude", epsilon=4.0, feature_share=0.3)
    hogs = make_protocol("hogs", epsilon=4.0, feature_share=0.3)
    for v in views(g):
        a = sol.client_step(0, v, {}, 11)
        b = hogs.client_step(0, v, {}, 11)
        np.testing.assert_array_equal(a.adjacency, b.adjacency)
        np.testing.assert_array_equal(a.features, b.features)
    assert sol.round_epsilon(0) == pytest.approx(4.0)
    rep = sol.privacy_report(12)
    ref = hogs.privacy_report(12)
    assert rep.protocol == "solitude"
    assert rep.epsilon == ref.epsilon and rep.parts == ref.parts
    assert any("1-bit" in note for note in rep.notes)
    assert sol.config() == {
        "protocol": "solitude",
        "epsilon": 4.0,
        "feature_share": 0.3,
        "lx": 2,
        "ly": 0,
    }


def test_official_estimator_step_keeps_the_rr_support():
    g = random_graph(40, 10, seed=2)
    proto = make_protocol("solitude", epsilon=2.0)
    result = collect(proto, g, seed=5)
    reported, _ = adjacency_reports(result.reports, 40)
    s = official_estimator_step(reported)
    np.testing.assert_array_equal((s.toarray() > 0), reported.toarray() > 0)
    np.testing.assert_allclose(s.data, 1.0 - OFFICIAL_L1_ALPHA * OFFICIAL_LR)
    # A shrink larger than 1 empties the graph (soft-threshold, then clamp).
    assert official_estimator_step(reported, l1_alpha=200.0, lr=0.01).nnz == 0


def test_validation():
    with pytest.raises(ValueError, match="label KProp"):
        make_protocol("solitude", epsilon=4.0, ly=2)
    with pytest.raises(ValueError, match="lx"):
        make_protocol("solitude", epsilon=4.0, lx=-1)
    with pytest.raises(ValueError, match="feature_share"):
        make_protocol("solitude", epsilon=4.0, feature_share=1.0)
