"""The central-DP path in the types: release kinds, a curator view that never holds a test
label, and CentralStrategy turning a mechanism into a one-round raw-upload protocol whose round
message is the plain upload (nodes need none of the strategy's code)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from ldpgraph.protocols.base import CuratorView, RoundResult, training_labels
from ldpgraph.protocols.ldp.floors import NonPrivate
from ldpgraph.protocols.registry import protocol_from_config
from ldpgraph.protocols.types import NodeView, PrivacyReport, Release
from ldpgraph.simulation.datasets import synthetic_graph
from ldpgraph.simulation.splits import split_for

from ...support.central import curator_for
from ...support.toy_central import MajorityModel, ToyDegreeGraph, ToyMajority


def _privacy() -> PrivacyReport:
    return PrivacyReport("t", "edge", 1.0, 0.0, "closed form")


@pytest.fixture(scope="module")
def small():
    graph = synthetic_graph(n=200, classes=3, avg_degree=6, d=20, seed=1)
    return graph, split_for(graph.num_nodes, 0)


def _views(graph):
    return [
        NodeView(v, graph.neighbors(v), graph.x[v], graph.num_nodes, graph.feature_domain)
        for v in range(graph.num_nodes)
    ]


def test_release_kinds_are_checked_and_fingerprinted():
    model = Release.of_model(MajorityModel(2), 5, _privacy())
    assert model.kind == "model" and model.num_nodes == 5 and model.num_edges == 0
    assert model.fingerprint() == Release.of_model(MajorityModel(2), 5, _privacy()).fingerprint()
    assert model.fingerprint() != Release.of_model(MajorityModel(1), 5, _privacy()).fingerprint()
    edges = np.array([[0, 1]])
    graph = Release(edges, np.zeros((3, 2), np.uint8), _privacy())
    assert graph.kind == "graph"
    both = Release.of_graphs([graph, graph], _privacy())
    assert both.fingerprint() != Release.of_graphs([graph], _privacy()).fingerprint()
    with pytest.raises(ValueError, match="kind"):
        Release(edges, np.zeros((3, 2)), _privacy(), kind="table")
    with pytest.raises(ValueError, match="model"):
        Release(edges, np.zeros((3, 2)), _privacy(), kind="model")
    with pytest.raises(ValueError, match="model"):
        Release(edges, np.zeros((3, 2)), _privacy(), model=MajorityModel(0))
    with pytest.raises(ValueError, match="at least one"):
        Release.of_graphs([], _privacy())
    with pytest.raises(ValueError, match="graph releases only"):
        Release.of_graphs([model], _privacy())


def test_curator_view_never_holds_a_test_label(small):
    graph, split = small
    labels = training_labels(graph.y, split.train, split.val)
    assert (labels[split.test] == -1).all()
    np.testing.assert_array_equal(labels[split.train], graph.y[split.train])
    np.testing.assert_array_equal(labels[split.val], graph.y[split.val])
    with pytest.raises(ValueError, match="training and validation nodes only"):
        CuratorView(graph.num_nodes, graph.num_features, labels=graph.y, train_nodes=split.train)
    with pytest.raises(ValueError, match="shape"):
        CuratorView(graph.num_nodes, graph.num_features, labels=labels[:-1])


def test_central_round_message_is_the_plain_upload(small):
    graph, split = small
    strategy = ToyDegreeGraph(2.0)
    assert strategy.config() == NonPrivate().config()
    assert isinstance(protocol_from_config(strategy.config()), NonPrivate)
    assert strategy.rounds == 1 and strategy.raw_upload and strategy.round_epsilon(0) == np.inf
    view = _views(graph)[3]
    mine = strategy.client_step(0, view, strategy.config(), 0)
    plain = NonPrivate().client_step(0, view, strategy.config(), 0)
    np.testing.assert_array_equal(mine.adjacency, plain.adjacency)
    np.testing.assert_array_equal(mine.features, plain.features)


def _collect(strategy, graph, refusing=()):
    reports = {
        v.node_id: strategy.client_step(0, v, strategy.config(), 0)
        for v in _views(graph)
        if v.node_id not in refusing
    }
    return RoundResult(reports, np.asarray(sorted(refusing), dtype=np.int64))


def test_graph_release_from_the_uploaded_graph(small):
    graph, split = small
    strategy = ToyDegreeGraph(4.0)
    refusing = {0, 5, 7}
    seeded = curator_for(graph, split, replayable=True)
    release = strategy.server_step(0, _collect(strategy, graph, refusing), seeded, 3)
    assert release.kind == "graph" and release.num_nodes == graph.num_nodes
    assert release.stats["uploaded_nodes"] == graph.num_nodes - len(refusing)
    assert (release.x[sorted(refusing)] == 0).all()  # a refusing node's features never arrive
    assert release.privacy.unit == "edge" and release.privacy.epsilon == 4.0
    assert release.num_edges > 0
    again = strategy.server_step(0, _collect(strategy, graph, refusing), seeded, 3)
    assert again.fingerprint() == release.fingerprint()  # the seed drives every draw
    assert release.stats["replayable"] and "replayable" in release.stats["release_noise"]


def test_an_unseeded_release_draws_its_noise_from_os_entropy(small, monkeypatch):
    """Without an explicitly seeded run the release seed is 63 bits of OS entropy, drawn at
    release time: the same run seed gives another release, and the record says so."""
    from ldpgraph.protocols.central import base

    graph, split = small
    strategy = ToyDegreeGraph(4.0)
    result = _collect(strategy, graph, set())
    unseeded = curator_for(graph, split, replayable=False)
    assert not CuratorView(graph.num_nodes, graph.num_features).replayable  # the default
    prints = {strategy.server_step(0, result, unseeded, 3).fingerprint() for _ in range(4)}
    assert len(prints) == 4
    release = strategy.server_step(0, result, unseeded, 3)
    assert release.stats["replayable"] is False
    assert release.stats["release_noise"].startswith("OS entropy")
    seen = []
    monkeypatch.setattr(base.secrets, "randbits", lambda k: seen.append(k) or 12345)
    pinned = strategy.server_step(0, result, unseeded, 3)
    assert seen == [63]  # the strategy ran on the entropy's seed, not the run seed
    by_seed = strategy.server_step(0, result, curator_for(graph, split, replayable=True), 12345)
    assert pinned.fingerprint() == by_seed.fingerprint()


def test_model_release_uses_training_labels_only(small):
    graph, split = small
    strategy = ToyMajority(8.0)
    curator = curator_for(graph, split)
    release = strategy.server_step(0, _collect(strategy, graph), curator, 0)
    assert release.kind == "model"
    majority = np.bincount(graph.y[split.train]).argmax()
    assert (release.model.predict(split.test) == majority).all()
    # Without training labels the strategy has nothing to learn from: a clear error.
    bare = CuratorView(graph.num_nodes, graph.num_features)
    with pytest.raises(ValueError, match="training labels"):
        strategy.server_step(0, _collect(strategy, graph), bare, 0)


def test_wrong_kind_is_refused(small):
    graph, split = small

    class Liar(ToyMajority):
        kind = "graph"

    with pytest.raises(RuntimeError, match="released a 'model'"):
        Liar(1.0).server_step(0, _collect(Liar(1.0), graph), curator_for(graph, split), 0)


def test_noisy_degrees_have_the_discrete_laplace_spread(small):
    """The toy's noise is the discrete Laplace at rate ε/2: the spread of the noisy degree
    sum over many seeds matches n·Var K within a 99.9 % band (a wrong rate ε fails)."""
    graph, split = small
    strategy = ToyDegreeGraph(1.0)
    result = _collect(strategy, graph)
    curator = curator_for(graph, split)
    true_sum = 2 * graph.num_edges
    sums = np.array(
        [strategy.server_step(0, result, curator, s).stats["noisy_degree_sum"] for s in range(300)]
    )
    var = graph.num_nodes * strategy.mechanism.variance
    assert abs(sums.mean() - true_sum) < 3.3 * np.sqrt(var / sums.size)
    ratio = sums.var(ddof=1) / var  # ~ χ²(299)/299: 99.9 % band ≈ [0.76, 1.28]
    assert 0.76 < ratio < 1.28, ratio


def test_client_path_imports_no_central_code():
    code = (
        "import sys\n"
        "import ldpgraph.client.app\n"
        "from ldpgraph.protocols.registry import protocol_from_config\n"
        "protocol_from_config({'protocol': 'none'})\n"
        "bad = [m for m in sys.modules if m.startswith('ldpgraph.protocols.central')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
