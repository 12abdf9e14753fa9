"""The Sybil hook for experiments (simulation/adversary.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ldpgraph.client.budget import NodeSettings
from ldpgraph.protocols.base import CuratorView
from ldpgraph.protocols.batch import ReportBatch
from ldpgraph.protocols.messages import RoundMessage
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.server.rounds import round_message, validate_replies
from ldpgraph.simulation.adversary import SybilAttack, SybilCollector
from ldpgraph.simulation.backends.local import LocalCollector, run_protocol
from ldpgraph.simulation.datasets.synthetic import synthetic_graph

ROOT = Path(__file__).resolve().parents[2]


def graph():
    return synthetic_graph(n=300, classes=3, d=40, feature_density=0.2, seed=1)


@pytest.mark.parametrize(
    ("name", "params"),
    [("hogs", {}), ("hogs-edge", {}), ("rr", {}), ("blink-hybrid", {})],
)
@pytest.mark.parametrize("mode", ["flood", "stealth"])
def test_forged_reports_pass_validation_as_honest_ones_do(name, params, mode):
    g = graph()
    proto = make_protocol(name, epsilon=4.0, **params)
    settings = NodeSettings(budget=1e9, seed=3)
    attack = SybilAttack(0.1, mode=mode, seed=4)
    coll = SybilCollector(LocalCollector(g, 3, settings), attack, g)
    message: RoundMessage = round_message(proto, 0, 3)
    length = proto.num_features(0, message.protocol_values(), g.num_features)
    replies = coll.collect(proto, message, length)
    assert isinstance(replies.reports, ReportBatch)  # packs with the honest batch
    result, stats = validate_replies(proto, 0, replies, g.num_nodes, length)
    assert stats.rejected == 0 and stats.replied == g.num_nodes
    assert result.missing.size == 0
    plan = coll.plan
    assert plan is not None and plan.sybils.size == 30
    honest_node = int(np.setdiff1d(np.arange(g.num_nodes), plan.sybils)[0])
    honest = result.reports[honest_node]
    for v in plan.sybils.tolist():
        forged = result.reports[v]
        assert forged.adjacency is not None
        assert forged.adjacency.dtype == honest.adjacency.dtype
        assert set(plan.sybils.tolist()) - {v} <= set(forged.adjacency.tolist())
        if honest.features is not None:
            assert forged.features.dtype == honest.features.dtype
            assert set(np.unique(forged.features).tolist()) <= {0, 1}
        assert set(forged.extras) == set(honest.extras)
        for value in forged.extras.values():
            assert value == g.num_nodes - 1  # the largest value in range


PINNED = {
    # Released before the screening existed (commit 0394c36), default settings, seed 7.
    ("hogs", 4.0): "303d87ee00053adc831fc55c05aef29929a7565fa657859aea60c340b29a643b",
    ("hogs", 8.0): "a94e95b20a3d4d3a915a484198a4c1417779a09c9b7f3aee878f75a787e95b34",
    ("hogs-edge", 4.0): "20ac3950975d64bbf9d8cd1d52fd992a6a28d643565acc95bb6b460e00201538",
}


@pytest.mark.parametrize(("name", "eps"), sorted(PINNED))
def test_no_attack_and_no_screening_release_as_before(name, eps):
    """Screening off and no Sybils (with or without the wrapper): byte-identical releases."""
    g = graph()
    proto = make_protocol(name, epsilon=eps)
    x = g.x if name == "hogs-edge" else None
    cur = CuratorView(g.num_nodes, g.num_features, g.feature_domain, x)
    plain, _ = run_protocol(proto, g, cur, 7)
    assert plain.fingerprint() == PINNED[(name, eps)]
    settings = NodeSettings(budget=1e9, seed=7)
    coll = SybilCollector(LocalCollector(g, 7, settings), SybilAttack(0.0), g)
    wrapped, _ = run_protocol(proto, g, cur, 7, settings=settings, collector=coll)
    assert wrapped.fingerprint() == PINNED[(name, eps)]
    assert "consistency" not in plain.stats
    assert "consistency_alpha" not in proto.config()


def test_sybil_choice():
    g = graph()
    top = SybilAttack(0.05, choice="top-degree").sybils(g)
    deg = g.degrees()
    assert top.size == 15
    assert deg[top].min() >= np.sort(deg)[::-1][14]
    a = SybilAttack(0.05, seed=1).sybils(g)
    assert np.array_equal(a, SybilAttack(0.05, seed=1).sybils(g))
    assert not np.array_equal(a, SybilAttack(0.05, seed=2).sybils(g))
    proto = make_protocol("hogs", epsilon=4.0)
    by_class = SybilAttack(0.05, seed=1).plan(g, proto)
    anyone = SybilAttack(0.05, targets="any", seed=1).plan(g, proto)
    assert set(g.y[by_class.targets].tolist()) == {by_class.target_class}
    assert anyone.targets.tolist() == np.setdiff1d(np.arange(g.num_nodes), a).tolist()
    with pytest.raises(ValueError, match="targets"):
        SybilAttack(0.1, targets="some")
    with pytest.raises(ValueError, match="fraction"):
        SybilAttack(1.0)
    with pytest.raises(ValueError, match="mode"):
        SybilAttack(0.1, mode="loud")


def test_hook_is_off_every_deployed_path():
    """Only experiments and tests import the adversary: no client, server, backend or CLI code."""
    for folder in ("client", "server", "protocols", "simulation"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "adversary.py":
                continue
            assert "adversary" not in path.read_text(), path
