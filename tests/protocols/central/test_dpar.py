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


# --- DP-SGD sensitivity: faithful (the paper's) and strict (spec A9) -----------------------

#: Releases of the code before ``sgd_sensitivity`` existed (seed 5, the FAST settings on the
#: SMALL graph): the fingerprint of the predictions and the noise multiplier. A faithful run
#: must still give exactly these.
FAITHFUL_GOLDEN = {
    "dpar-gm": ("e7d6e06bf87594a18101bd87650791e7e96cc443fd496eac1e9af8074cbbc587",
                1.1064531802298478),
    "dpar-em1": ("d6f5ffe2ef5a2b7fb6e7d535974f3155685a7cfeea3c9c0d3ad26f46ac6d3463",
                 1.158122733803097),
    "dpar-features": ("a6681cc09eacfec6eb50f1e8e6990f20a6fb111b0184499285288294b10828a0",
                      0.6581122250924429),
}  # fmt: skip


def _brute_cap(pi, own, d_max):
    """The column cap one column at a time: the own entry, then the d_max − 1 largest |value|
    of the others (ties: the lower row)."""
    dense = pi.toarray()
    out = np.zeros_like(dense)
    for j in range(dense.shape[1]):
        if own[j] >= 0:
            out[own[j], j] = dense[own[j], j]
        others = [i for i in np.flatnonzero(dense[:, j]) if i != own[j]]
        others.sort(key=lambda i: (-abs(dense[i, j]), i))
        for i in others[: d_max - 1]:
            out[i, j] = dense[i, j]
    return out


def test_column_cap_keeps_the_own_row_and_the_largest_entries():
    import scipy.sparse as sp

    from ldpgraph.protocols.central.dpar import _own_rows, cap_column_rows, column_rows

    # Column 0: own entry the smallest, four others (one negative and large); column 1: a
    # node whose own row does not select itself (Π_11 = 0) still counts its row.
    dense = np.zeros((6, 6))
    dense[:, 0] = [0.01, 0.5, -0.9, 0.2, 0.3, 0.0]
    dense[[0, 2, 3], 1] = [0.4, 0.1, 0.3]
    for j in range(2, 6):
        dense[j, j] = 1.0
    pi = sp.csr_matrix(dense)
    own = np.arange(6)
    assert column_rows(pi, own)[:2].tolist() == [5, 4]
    capped = cap_column_rows(pi, own, 3).toarray()
    np.testing.assert_array_equal(capped[:, 0], [0.01, 0.5, -0.9, 0, 0, 0])
    np.testing.assert_array_equal(capped[:, 1], [0.4, 0, 0, 0.3, 0, 0])
    np.testing.assert_array_equal(capped[:, 2:], dense[:, 2:])
    assert column_rows(sp.csr_matrix(capped), own).max() == 3
    only_own = cap_column_rows(pi, own, 1).toarray()
    np.testing.assert_array_equal(only_own, np.diag(np.diag(dense)))
    # exclude: row r is seeds[r]; a node without a row keeps d_max − 1 entries too.
    seeds = np.array([1, 4])
    own_x = _own_rows(seeds, 5, "exclude")
    assert own_x.tolist() == [-1, 0, -1, -1, 1]
    rng = np.random.default_rng(0)
    for mode, n_rows in (("identity", 40), ("exclude", 12)):
        seeds = np.sort(rng.choice(40, size=12, replace=False))
        own = _own_rows(seeds, 40, mode)
        pi = sp.random(n_rows, 40, density=0.2, random_state=1, format="csr")
        pi.data = np.round(pi.data - 0.5, 1)  # negatives and ties, some explicit zeros
        if mode == "identity":
            pi = (pi + sp.identity(40) * 0.05).tocsr()
        for d_max in (1, 2, 4):
            capped = cap_column_rows(pi, own, d_max)
            np.testing.assert_array_equal(capped.toarray(), _brute_cap(pi, own, d_max))
            assert column_rows(capped, own).max() <= d_max


def test_strict_rate():
    from ldpgraph.protocols.central.dpar import strict_rate

    assert strict_rate(0.1, 1) == 0.1  # exactly q: strict = faithful when D = 1
    assert strict_rate(0.278, 4) == pytest.approx(1 - (1 - 0.278) ** 4, rel=1e-12)
    assert strict_rate(1.0, 3) == 1.0


def test_faithful_release_is_unchanged(small):
    """Same seed, same predictions and noise as before the strict mode existed."""
    graph, split = small
    for name, (fingerprint, multiplier) in FAITHFUL_GOLDEN.items():
        rel = _release(name, graph, split, seed=5)
        assert rel.stats["noise_multiplier"] == pytest.approx(multiplier, rel=1e-12), name
        assert rel.fingerprint() == fingerprint, name
        explicit = _release(name, graph, split, seed=5, sgd_sensitivity="faithful")
        assert explicit.fingerprint() == fingerprint, name


def test_strict_calibration_is_reproduced_by_the_accountant(small):
    """The strict noise multiplier z spends exactly the ε_sgd target at the rate
    1 − (1 − q)^D, by an independent dp-accounting call; the noise std is z·(2D − 1)·C."""
    from dp_accounting import dp_event, rdp

    graph, split = small
    rel = _release("dpar-gm", graph, split, seed=5, sgd_sensitivity="strict", column_rows_cap=2)
    part = {p["part"]: p for p in rel.privacy.parts}["dp-sgd"]
    d, q, steps, z = part["D"], part["q"], part["steps"], part["noise_multiplier_effective"]
    assert d == rel.stats["column_rows"] == 2 and part["D_max"] == 2
    rate = 1 - (1 - q) ** d
    acc = rdp.RdpAccountant()  # add/remove is dp-accounting's default relation
    acc.compose(dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(z)), steps)
    target = part["target_epsilon"]
    assert acc.get_epsilon(part["delta"]) == pytest.approx(target, rel=1e-3)
    assert part["epsilon"] == pytest.approx(target, rel=1e-3)
    assert rel.stats["noise_multiplier"] == pytest.approx(z * (2 * d - 1), rel=1e-12)
    assert part["epsilon_faithful"] < target  # the paper's accounting of the same noise
    assert any("strict sensitivity" in n and "convexity" in n for n in rel.privacy.notes)


def test_strict_is_standard_dp_sgd_on_features(small):
    """Features trains on Π = I: D = 1, so strict is faithful's standard DP-SGD, whatever
    the cap."""
    graph, split = small
    fingerprint, multiplier = FAITHFUL_GOLDEN["dpar-features"]
    for cap in (1, 4):
        rel = _release("dpar-features", graph, split, seed=5, sgd_sensitivity="strict",
                       column_rows_cap=cap)  # fmt: skip
        assert rel.stats["column_rows"] == 1
        assert rel.stats["noise_multiplier"] == multiplier
        assert rel.fingerprint() == fingerprint


def test_strict_noise_exceeds_faithful_and_caps_the_columns(small):
    graph, split = small
    faithful = _release("dpar-gm", graph, split, seed=5)
    strict = _release("dpar-gm", graph, split, seed=5, sgd_sensitivity="strict", column_rows_cap=2)
    assert faithful.stats["column_rows"] > 2 and strict.stats["column_rows"] == 2
    assert strict.stats["pi_nonzeros"] < faithful.stats["pi_nonzeros"]
    assert strict.stats["noise_multiplier"] > 2 * faithful.stats["noise_multiplier"]
    # Headline ε: the strict one, calibrated to the same target (so the same figure here).
    assert strict.privacy.epsilon == pytest.approx(faithful.privacy.epsilon, rel=1e-3)
    assert "strict DP-SGD sensitivity" in strict.privacy.headline


def test_faithful_report_carries_the_strict_figure(small):
    from ldpgraph.protocols.central.dpar import INDICATIVE

    graph, split = small
    rel = _release("dpar-gm", graph, split, seed=5)
    parts = {p["part"]: p for p in rel.privacy.parts}
    ind, sgd = parts["dp-sgd-strict-indicative"], parts["dp-sgd"]
    assert ind["indicative"] == INDICATIVE == "indicative: data-dependent D, no cap applied"
    assert ind["D"] == sgd["D"] == rel.stats["column_rows"] >= 2
    assert ind["epsilon"] > 5 * sgd["epsilon"] and ind["epsilon_total"] > rel.privacy.epsilon
    assert INDICATIVE in rel.privacy.headline and rel.privacy.paper_epsilon == pytest.approx(
        8.0, rel=1e-3
    )
    # Features: D = 1, the strict figure is the faithful one.
    feat = _release("dpar-features", graph, split, seed=5)
    parts = {p["part"]: p for p in feat.privacy.parts}
    assert parts["dp-sgd-strict-indicative"]["epsilon"] == parts["dp-sgd"]["epsilon"]
    assert parts["dp-sgd-strict-indicative"]["epsilon_total"] == feat.privacy.epsilon


@pytest.mark.parametrize(
    "params,needle",
    [
        ({"sgd_sensitivity": "loose"}, "unknown sgd_sensitivity"),
        ({"column_rows_cap": 0}, "column_rows_cap must be in >= 1"),
        ({"column_rows_cap": 1.5}, "column_rows_cap must be of type int"),
    ],
)
def test_bad_sensitivity_parameters_are_one_line_errors(params, needle):
    with pytest.raises(ProtocolParameterError) as exc:
        make_protocol("dpar-gm", **params)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_strict_runs_from_the_run_configuration():
    record = run(_config("dpar-em0", sgd_sensitivity="strict", column_rows_cap=2))
    assert record["config"]["sgd_sensitivity"] == "strict"
    sgd = {p["part"]: p for p in record["privacy"]["parts"]}["dp-sgd"]
    assert sgd["sensitivity"] == "strict" and sgd["D_max"] == 2 and sgd["D"] <= 2
