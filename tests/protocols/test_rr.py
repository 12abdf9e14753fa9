"""Plain RR (``rr``, ``rr-edge``): the budget split end to end, the combined graph against the
dense reference, and the privacy report. The same release through Flower as locally is
tests/simulation/test_flower.py's (one engine start for every baseline)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols.base import CuratorView, RoundResult
from ldpgraph.protocols.graph import Graph, canonical_edges
from ldpgraph.protocols.ldp.assemble import adjacency_reports
from ldpgraph.protocols.mechanisms import flip_probability
from ldpgraph.protocols.registry import (
    make_protocol,
    protocol_from_config,
    protocol_names,
    uses_public_features,
)
from ldpgraph.protocols.types import NodeView

from ..reference.blink import dense_rr

Z999 = 3.2905


def inside(successes: int, trials: int, p: float) -> bool:
    return abs(successes / trials - p) <= Z999 * math.sqrt(p * (1 - p) / trials)


def random_graph(n: int, d: int, seed: int) -> Graph:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    pairs = rng.integers(0, n, size=(3 * n, 2))
    x = (rng.random((n, d)) < 0.5).astype(np.uint8)
    return Graph("rand", canonical_edges(pairs, n), x, y.astype(np.int64))


def collect(proto, g: Graph, seed: int, drop=()) -> RoundResult:
    reports = {
        i: proto.client_step(0, NodeView(i, g.neighbors(i), g.x[i], g.num_nodes), {}, seed)
        for i in range(g.num_nodes)
        if i not in drop
    }
    return RoundResult(reports, np.array(sorted(drop), dtype=np.int64))


def test_budget_split_end_to_end():
    """ε = 5, feature_share = 0.3: adjacency bits flip with p(3.5), feature bits follow the
    1-bit mechanism at ε_f = 1.5 (> 1.5·10^5 bits each); the unsplit budget is rejected."""
    g = random_graph(400, 60, seed=1)
    proto = make_protocol("rr", epsilon=5.0, feature_share=0.3)
    assert proto.eps_adjacency == pytest.approx(3.5)
    assert proto.eps_features == pytest.approx(1.5)
    result = collect(proto, g, seed=9)
    reported, _ = adjacency_reports(result.reports, 400)
    true = g.adjacency()
    n_ones = true.nnz
    kept = int(reported.multiply(true).sum())
    flipped = int(reported.nnz) - kept
    zeros = 400 * 399 - n_ones
    assert inside(flipped, zeros, flip_probability(3.5))
    assert inside(kept, n_ones, 1 - flip_probability(3.5))
    assert not inside(flipped, zeros, flip_probability(5.0))
    bits = np.stack([result.reports[i].features for i in range(400)])
    e = math.exp(1.5)
    for value, exact in ((0, 1 / (e + 1)), (1, e / (e + 1))):
        mask = g.x == value
        assert inside(int(bits[mask].sum()), int(mask.sum()), exact)
        assert not inside(int(bits[mask].sum()), int(mask.sum()), 1 / (math.exp(5.0) + 1))
    assert all(0 < r.adjacency.size and i not in r.adjacency for i, r in result.reports.items())


@pytest.mark.parametrize("combine", ["or", "and", "lower"])
@pytest.mark.parametrize("eps", [0.5, 2.0, 6.0])
@pytest.mark.parametrize("drop", [(), (1, 4, 30)])
def test_server_equals_dense(combine, eps, drop):
    g = random_graph(50, 10, seed=int(eps * 10))
    proto = make_protocol("rr", epsilon=eps, feature_share=0.4, combine=combine)
    result = collect(proto, g, seed=2, drop=drop)
    release = proto.server_step(0, result, CuratorView(50, 10), seed=2)
    reported, _ = adjacency_reports(result.reports, 50)
    np.testing.assert_array_equal(
        release.edges, dense_rr(reported.toarray().astype(np.int64), combine)
    )
    x = np.zeros((50, 10), np.uint8)
    for node, rep in result.reports.items():
        x[node] = rep.features
    np.testing.assert_array_equal(release.x, x)  # the raw noisy bits, no reconstruction
    assert release.edge_weight is None
    assert release.stats["adjacency_reports"] == 50 - len(drop)


def test_rr_edge_uses_public_features_and_the_whole_budget():
    g = random_graph(30, 6, seed=3)
    proto = make_protocol("rr-edge", epsilon=3.0)
    assert proto.eps_adjacency == 3.0 and proto.round_epsilon(0) == 3.0
    assert not proto.schema(0).features
    result = collect(proto, g, seed=1)
    assert all(r.features is None for r in result.reports.values())
    release = proto.server_step(0, result, CuratorView(30, 6, public_features=g.x), seed=1)
    np.testing.assert_array_equal(release.x, g.x)
    with pytest.raises(ValueError, match="public features"):
        proto.server_step(0, result, CuratorView(30, 6), seed=1)


@pytest.mark.parametrize("name", ["rr", "rr-edge"])
def test_privacy_report(name):
    share = {"feature_share": 0.25} if name == "rr" else {}
    proto = make_protocol(name, epsilon=4.0, **share)
    rep = proto.privacy_report(num_features=50)
    parts = {p["part"]: p for p in rep.parts}
    closed = {"adjacency": 3.0, "features": 1.0} if name == "rr" else {"adjacency": 4.0}
    assert set(parts) == set(closed)
    for key, eps in closed.items():
        assert parts[key]["epsilon_closed_form"] == pytest.approx(eps)
        assert eps - 1e-9 <= parts[key]["epsilon"] <= eps + 1e-4 + 1e-9
    assert 4.0 - 1e-9 <= rep.epsilon <= 4.0 + 2e-4 + 1e-9
    assert rep.delta == 0.0


def test_registry_and_config_round_trip():
    for name in ("rr", "rr-edge", "blink-hard", "blink-soft", "blink-hybrid", "fp-blink"):
        assert name in protocol_names()
    assert "blink-fr" in protocol_names()
    assert uses_public_features("rr-edge") and uses_public_features("blink-soft")
    assert uses_public_features("hogs-edge") and not uses_public_features("rr")
    assert not uses_public_features("fp-blink") and not uses_public_features("blink-fr")
    for name, params in (("rr", {"feature_share": 0.2, "combine": "lower"}), ("rr-edge", {})):
        proto = make_protocol(name, epsilon=2.0, **params)
        again = protocol_from_config({**proto.config(), "seed": 1})
        assert again.params == proto.params and again.name == name
    with pytest.raises(ValueError, match="combine"):
        make_protocol("rr", epsilon=1.0, combine="xor")
    with pytest.raises(ValueError, match="feature_share"):
        make_protocol("rr", epsilon=1.0, feature_share=1.0)
