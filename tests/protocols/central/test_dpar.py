"""DPAR (protocols/central/dpar.py) as a central strategy: registered variants build from their
defaults, the privacy report states the sound node-level ε beside the paper's, bad input is a
one-line error, the release is seeded and inductive (cross edges and training data never move a
test prediction's graph), and the harness runs it end to end (local; Flower in the slow test)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols.base import RoundResult
from ldpgraph.protocols.central.appr import column_bound
from ldpgraph.protocols.central.dpar import _assemble, power_iteration
from ldpgraph.protocols.graph import Graph
from ldpgraph.protocols.params import ProtocolParameterError
from ldpgraph.protocols.registry import describe, make_protocol, protocol_info
from ldpgraph.protocols.types import NodeView
from ldpgraph.simulation.config import ConfigError, RunConfig
from ldpgraph.simulation.datasets import synthetic_graph
from ldpgraph.simulation.pipeline import run
from ldpgraph.simulation.splits import split_for

from ...support.central import curator_for, local_and_flower

VARIANTS = ("dpar-em0", "dpar-em1", "dpar-gm", "dpar-nodp", "dpar-features")
SMALL = "synthetic:n=300,classes=3,d=16,avg_degree=6,seed=2"
FAST = dict(q_prime=0.6, appr_nodes=15, sgd_epochs=3)


@pytest.fixture(scope="module")
def small():
    graph = synthetic_graph(n=300, classes=3, avg_degree=6, d=16, seed=2)
    return graph, split_for(graph.num_nodes, 0)


def _collect(strategy, graph: Graph) -> RoundResult:
    reports = {}
    for v in range(graph.num_nodes):
        view = NodeView(v, graph.neighbors(v), graph.x[v], graph.num_nodes, graph.feature_domain)
        reports[v] = strategy.client_step(0, view, strategy.config(), 0)
    return RoundResult(reports)


def _release(name, graph, split, seed=0, **params):
    declared = protocol_info(name).param_names
    fast = {k: v for k, v in FAST.items() if k in declared}
    strategy = make_protocol(name, **{**fast, **params})
    return strategy.server_step(0, _collect(strategy, graph), curator_for(graph, split), seed)


@pytest.mark.parametrize("name", VARIANTS)
def test_variants_build_and_describe(name):
    proto = make_protocol(name)
    assert proto.name == name and proto.kind == "model" and proto.raw_upload
    info = describe(name)
    assert info["privacy_unit"] in (
        "node",
        "none (non-private DPAR: raw data to a trusted curator)",
    )
    report = proto.privacy_report()
    if name == "dpar-nodp":
        assert report.epsilon == math.inf
        return
    # The paper's convention gives back the configured ε; the sound figure is larger here
    # (raw ε ≈ 89 on the subsample: the linear q′ rule understates it).
    assert report.paper_epsilon == pytest.approx(8.0)
    assert report.epsilon > report.paper_epsilon and report.unit == "node"
    assert report.delta == pytest.approx(2e-3)
    assert any("paper's ε" in n for n in report.notes)


def test_small_epsilon_sound_figure_is_close_to_the_papers():
    """At small raw ε the linear and the standard amplification agree to first order."""
    report = make_protocol("dpar-features", epsilon=0.01, q_prime=0.5).privacy_report()
    assert report.epsilon == pytest.approx(report.paper_epsilon, rel=0.05)


@pytest.mark.parametrize(
    "params,needle",
    [
        ({"delta": 1.0}, "delta must be in (0, 1)"),
        ({"delta": 0.0}, "delta must be in (0, 1)"),
        ({"delta": 0.5, "q_prime": 0.1}, "delta/q_prime"),
        ({"top_k": 0}, "top_k must be in >= 1"),
        ({"column_mode": "scale"}, "unknown column_mode"),
    ],
)
def test_bad_parameters_are_one_line_errors(params, needle):
    with pytest.raises(ProtocolParameterError) as exc:
        make_protocol("dpar-gm", **params)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_bad_graphs_are_one_line_errors(small):
    graph, split = small
    with pytest.raises(ValueError, match="appr_nodes M = 500"):
        _release("dpar-gm", graph, split, appr_nodes=500)
    with pytest.raises(ValueError, match="top_k K = 400"):
        _release("dpar-em0", graph, split, top_k=400)
    with pytest.raises(ProtocolParameterError, match="unreachable"):
        _release("dpar-features", graph, split, epsilon=1e-6, delta=1e-12, q_prime=1.0)
    strategy = make_protocol("dpar-gm", **FAST)
    with pytest.raises(ValueError, match="training labels"):
        strategy.server_step(0, _collect(strategy, graph), curator_for(graph, split, False), 0)


def test_release_is_seeded_and_reports_its_mechanism(small):
    graph, split = small
    a = _release("dpar-gm", graph, split, seed=3)
    b = _release("dpar-gm", graph, split, seed=3)
    assert a.kind == "model" and a.fingerprint() == b.fingerprint()
    assert a.stats["rows"] == a.stats["subsampled_nodes"]  # identity rows (reference)
    assert a.stats["appr_rows"] == 15
    assert a.stats["sgd_steps"] == 3 * math.ceil(a.stats["rows"] / 60)
    parts = {p["part"]: p for p in a.privacy.parts}
    assert parts["dp-appr"]["gm_sigma"] > 0 and parts["dp-appr"]["M"] == 15
    assert parts["dp-sgd"]["epsilon"] <= parts["dp-sgd"]["target_epsilon"] + 1e-9
    assert parts["dp-sgd"]["epsilon"] == pytest.approx(parts["dp-sgd"]["target_epsilon"], rel=1e-3)
    pred = a.model.predict(split.test)
    assert pred.shape == split.test.shape and set(np.unique(pred)) <= {0, 1, 2}


def test_cross_edges_never_reach_a_prediction(small):
    """Inductive: every training–non-training edge is dropped before anything else, so adding
    more of them changes nothing in the release."""
    graph, split = small
    is_train = np.zeros(graph.num_nodes, dtype=bool)
    is_train[split.train] = True
    rng = np.random.default_rng(0)
    extra = np.stack([rng.choice(split.train, 80), rng.choice(split.test, 80)], axis=1)
    edges = np.unique(np.sort(np.concatenate([graph.edges, extra]), axis=1), axis=0)
    more = Graph(graph.name, edges, graph.x, graph.y, graph.feature_domain)
    for name in ("dpar-em1", "dpar-nodp"):
        a = _release(name, graph, split, seed=1)
        b = _release(name, more, split, seed=1)
        assert a.fingerprint() == b.fingerprint(), name


def test_training_data_never_moves_the_test_graph(small):
    """Test predictions depend on training data only through θ: with θ fixed, Eq. 4 on the
    non-training side reads no training node."""
    graph, split = small
    from ldpgraph.protocols.central.appr import with_self_loops
    from ldpgraph.protocols.central.dpar import _adjacency, _drop_cross

    is_train = np.zeros(graph.num_nodes, dtype=bool)
    is_train[split.train] = True
    adj = with_self_loops(_drop_cross(_adjacency(graph.edges, graph.num_nodes), is_train))
    h = np.random.default_rng(1).normal(size=(graph.num_nodes, 3))
    base = power_iteration(adj, h, 0.25, 2)
    h2 = h.copy()
    h2[split.train] = 100.0
    np.testing.assert_allclose(power_iteration(adj, h2, 0.25, 2)[~is_train], base[~is_train])


def test_pi_assembly_and_column_bound():
    idx = np.array([[0, 3], [1, 3]])
    val = np.array([[0.5, -0.2], [0.1, 0.9]])
    seeds = np.array([0, 2])
    pi = _assemble(idx, val, seeds, 5, "identity").toarray()
    np.testing.assert_allclose(pi[[1, 3, 4]], np.eye(5)[[1, 3, 4]])
    np.testing.assert_allclose(pi[0, [0, 3]], [0.5, -0.2])
    bounded = column_bound(_assemble(idx, val, seeds, 5, "identity"), 1.0, "clip").toarray()
    assert (np.abs(bounded).sum(0) <= 1 + 1e-12).all()
    assert _assemble(idx, val, seeds, 5, "exclude").shape == (2, 5)


def test_nodp_learns_the_synthetic_graph(small):
    graph, split = small
    rel = _release("dpar-nodp", graph, split, seed=0, sgd_epochs=40)
    acc = (rel.model.predict(split.test) == graph.y[split.test]).mean()
    assert acc > 0.6


def _config(protocol: str, backend: str = "local", **kw) -> RunConfig:
    base = dict(protocol=protocol, dataset=SMALL, backend=backend, trust_curator=True, **FAST)
    return RunConfig(**{**base, **kw}).validate()


def test_pipeline_runs_dpar_gm_end_to_end():
    record = run(_config("dpar-gm"))
    assert record["release_kind"] == "model"
    assert 0.0 <= record["accuracy"]["test"] <= 1.0
    privacy = record["privacy"]
    assert privacy["unit"] == "node" and privacy["paper_epsilon"] == pytest.approx(8.0, rel=1e-4)
    assert privacy["epsilon"] > 0 and record["release"]["uploaded_nodes"] == 300
    with pytest.raises(ConfigError, match="uploads raw data"):
        RunConfig(protocol="dpar-gm", dataset=SMALL).validate()
    with pytest.raises(ConfigError, match="delta must be in"):
        _config("dpar-gm", delta=2.0)


@pytest.mark.slow
def test_flower_backend_releases_what_the_local_backend_releases():
    _, flower = local_and_flower(_config("dpar-gm", seed=4))
    assert flower["release_kind"] == "model"


def test_padded_rows_hold_each_rows_entries_in_order():
    import scipy.sparse as sp

    from ldpgraph.protocols.central.dpar import _padded

    pi = sp.random(50, 40, density=0.1, random_state=1, format="csr")
    idx, w = _padded(pi)
    assert idx.shape == w.shape == (50, max(np.diff(pi.indptr)))
    for r in range(pi.shape[0]):  # the reference: one row at a time
        a, b = pi.indptr[r], pi.indptr[r + 1]
        assert (idx[r, : b - a] == pi.indices[a:b]).all() and (w[r, : b - a] == pi.data[a:b]).all()
        assert not w[r, b - a :].any() and not idx[r, b - a :].any()
