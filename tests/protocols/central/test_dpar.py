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
    # proven (the default): the calibration target is the request, met by the release.
    assert report.epsilon == pytest.approx(8.0, rel=1e-6) and report.epsilon <= 8.0 + 1e-9
    assert report.unit == "node" and report.delta == pytest.approx(2e-3)
    # paper: its own figure beside a headline the release computes (∞ until then).
    paper = make_protocol(name, epsilon_convention="paper").privacy_report()
    assert paper.paper_epsilon == pytest.approx(8.0) and paper.epsilon == math.inf


def test_proven_budgets_claim_no_amplification():
    """proven: the raw budget on G is the request itself. The q′ subsample does not amplify
    here (an absent slot stays in the run as an isolated vertex, so whether a slot was kept is
    visible: Balle et al.'s Thm. 8 does not apply), so the headline claims none."""
    from ldpgraph.protocols.central.dpar_privacy import amplified, deamplified

    for eps, q in ((0.01, 0.5), (1.0, 0.09), (8.0, 0.09), (800.0, 0.3)):
        assert amplified(deamplified(eps, q), q) == pytest.approx(eps, rel=1e-9)
    b = make_protocol("dpar-gm", epsilon=4.0).budgets()
    assert b.eps_raw == 4.0 and b.delta_raw == 2e-3
    assert b.eps_pr + b.eps_sgd == pytest.approx(4.0, rel=1e-12)
    fixed = make_protocol("dpar-gm", epsilon=4.0, node_sampling="fixed").budgets()
    assert fixed.eps_raw == 4.0 and fixed.delta_raw == 2e-3


@pytest.mark.parametrize(
    "params,needle",
    [
        ({"delta": 1.0}, "delta must be in (0, 1)"),
        ({"delta": 0.0}, "delta must be in (0, 1)"),
        ({"delta": 0.5, "q_prime": 0.1, "epsilon_convention": "paper"}, "delta/q_prime"),
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
    assert a.stats["rows"] == a.stats["kept_slots"]  # identity rows (reference)
    assert a.stats["appr_rows"] == 15
    assert a.stats["sgd_steps"] == 3 * math.ceil(a.stats["rows"] / 60)
    parts = {p["part"]: p for p in a.privacy.parts}
    assert parts["dp-appr"]["gm_sigma"] > 0 and parts["dp-appr"]["M"] == 15
    assert parts["dp-sgd"]["epsilon"] <= parts["dp-sgd"]["target_epsilon"] * (1 + 1e-9)
    assert parts["dp-sgd"]["epsilon"] == pytest.approx(parts["dp-sgd"]["target_epsilon"], rel=1e-3)
    assert a.privacy.epsilon <= 8.0 * (1 + 1e-9)
    assert a.privacy.epsilon == pytest.approx(8.0, rel=1e-3)
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
    assert privacy["unit"] == "node" and privacy["epsilon"] == pytest.approx(8.0, rel=1e-3)
    assert privacy["paper_epsilon"] is not None and privacy["paper_epsilon"] > 0
    assert record["release"]["uploaded_nodes"] == 300
    with pytest.raises(ConfigError, match="uploads raw data"):
        RunConfig(protocol="dpar-gm", dataset=SMALL).validate()
    with pytest.raises(ConfigError, match="delta must be in"):
        _config("dpar-gm", delta=2.0)


@pytest.mark.slow
@pytest.mark.engine
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


# --- the proof's claims, held to the code (docs/privacy/dpar.md) ---------------------------


def _without(graph, j):
    """``graph`` with node j's data removed: no features, no label, no edge (the neighbour)."""
    keep = (graph.edges != j).all(axis=1)
    x = graph.x.copy()
    x[j] = 0
    return Graph(graph.name, graph.edges[keep], x, graph.y, graph.feature_domain)


def _release_absent(name, graph, split, j, seed=0, **params):
    """The release when node j did not upload (its report is missing)."""
    declared = protocol_info(name).param_names
    fast = {k: v for k, v in FAST.items() if k in declared}
    strategy = make_protocol(name, **{**fast, **params})
    result = _collect(strategy, graph)
    del result.reports[j]
    return strategy.server_step(0, result, curator_for(graph, split), seed)


def test_public_sizes_do_not_depend_on_membership(small):
    """N, q, T, the kept slots, the seeds and the candidate set are counts of public slots:
    removing a training node changes none of them (the audit found q = B/N data-dependent)."""
    graph, split = small
    j = int(split.train[3])
    for name in ("dpar-em1", "dpar-gm", "dpar-features"):
        a = _release(name, graph, split, seed=2)
        b = _release_absent(name, graph, split, j, seed=2)
        for key in ("kept_slots", "rows", "sgd_q", "sgd_steps", "training_slots"):
            assert a.stats[key] == b.stats[key], (name, key)
        assert b.stats["training_nodes"] == a.stats["training_nodes"] - 1


def _rows_and_examples(pi, here, x, y):
    """Every row's example as the release builds it: neighbour features (absent: zero),
    weights, label; absent rows hold none."""
    from ldpgraph.protocols.central.dpar import _padded

    idx, w = _padded(pi)
    xs = (x * here[:, None])[idx]
    return [(xs[r], w[r], y[r]) if here[r] else None for r in range(pi.shape[0])]


def test_one_node_moves_at_most_D_rows_and_C_times_2D_minus_1(small):
    """Brute force on a tiny Π (the released rows fixed, as the composition argument fixes
    them): removing node j changes at most column_rows(Π)[j] ≤ D examples, and the clipped
    gradient sum by at most C·(2D − 1), for every j and random θ."""
    import scipy.sparse as sp
    import torch

    from ldpgraph.protocols.central.dpar import (
        _own_rows,
        cap_column_rows,
        column_rows,
        target_clipped_sum,
    )

    rng = np.random.default_rng(0)
    n, d, h, c, clip = 12, 5, 4, 3, 1.0
    seeds = np.sort(rng.choice(n, 6, replace=False))
    idx = np.stack([rng.choice(n, 3, replace=False) for _ in seeds])
    val = rng.normal(size=idx.shape)
    pi = _assemble(idx, val, seeds, n, "identity")
    own = _own_rows(seeds, n, "identity")
    pi = column_bound(cap_column_rows(pi, own, 3), 1.0, "normalize")
    cols = column_rows(pi, own)
    big_d = int(cols.max())
    assert big_d <= 3
    x = rng.normal(size=(n, d)).astype(np.float32)
    y = rng.integers(0, c, n)
    here = rng.random(n) < 0.9
    params = {"w1": torch.randn(d, h), "w2": torch.randn(h, c) * 3}
    for j in np.flatnonzero(here):
        gone = here.copy()
        gone[j] = False
        a = _rows_and_examples(pi, here, x, y)
        b = _rows_and_examples(pi, gone, x, y)

        def same(u, v):
            if u is None or v is None:
                return u is v
            return all(np.array_equal(s, t) for s, t in zip(u, v, strict=True))

        changed = [r for r in range(n) if not same(a[r], b[r])]
        counted = {r for r in np.flatnonzero(pi[:, [j]].toarray().ravel()) if r != own[j]}
        assert set(changed) <= counted | {own[j]} and len(changed) <= cols[j] <= big_d

        def total(examples):
            ex = [e for e in examples if e is not None]
            xb = torch.as_tensor(np.stack([e[0] for e in ex]))
            wb = torch.as_tensor(np.stack([e[1] for e in ex]), dtype=torch.float32)
            yb = torch.as_tensor(np.array([e[2] for e in ex]))
            ones = torch.ones_like(xb)
            batch = (xb, wb, yb, ones, torch.ones((*xb.shape[:2], h)))
            return target_clipped_sum(params, batch, clip)[0]

        ga, gb = total(a), total(b)
        diff = math.sqrt(sum(float((ga[k] - gb[k]).pow(2).sum()) for k in ga))
        assert diff <= clip * (2 * cols[j] - 1) + 1e-5
    assert sp.issparse(pi)


def test_pure_composition_matches_dp_accounting():
    """The exact composition of pure-DP pieces equals dp-accounting's PLD of the randomized
    responses that dominate them (to the PLD's discretisation)."""
    from dp_accounting import NeighboringRelation, dp_event, pld

    from ldpgraph.protocols.accounting import rr_event
    from ldpgraph.protocols.central.dpar_privacy import pure_composition_epsilon

    for groups in ([(0.1, 30)], [(0.1, 20), (0.3, 10)], [(0.02, 140), (0.05, 140)]):
        acc = pld.PLDAccountant(NeighboringRelation.REPLACE_ONE, value_discretization_interval=1e-4)
        acc.compose(dp_event.ComposedDpEvent([rr_event(e) for e, k in groups for _ in range(k)]))
        ours, ref = pure_composition_epsilon(groups, 1e-3), acc.get_epsilon(1e-3)
        # The PLD rounds each event's loss up by at most its discretisation interval.
        assert ref - 1e-4 * sum(k for _, k in groups) <= ours <= ref + 1e-9
        assert ours <= sum(e * k for e, k in groups)


def test_gaussian_bound_matches_dp_accounting():
    from dp_accounting.pld import privacy_loss_distribution as pld

    from ldpgraph.protocols.central.dpar_privacy import calibrate_gm, gaussian_epsilon, gm_epsilon

    for mu in (0.1, 0.7, 3.0):
        ref = pld.from_gaussian_mechanism(1 / mu, value_discretization_interval=1e-5)
        assert gaussian_epsilon(mu, 1e-5) == pytest.approx(
            ref.get_epsilon_for_delta(1e-5), abs=1e-3
        )
    sigma = calibrate_gm(5.0, 1e-2, 0.01, 70)
    assert gm_epsilon(sigma, 0.01, 70, 1e-2) == pytest.approx(5.0, rel=1e-6)


def test_strict_sgd_bound_is_the_triangle_of_two_dp_accounting_legs():
    """D = 1 is dp-accounting's DP-SGD; D ≥ 2 the weak triangle inequality of two legs, each
    recomputed here with dp-accounting's RdpAccountant, and the calibration hits its target."""
    from dp_accounting import dp_event, rdp

    from ldpgraph.protocols.central.dpar_privacy import (
        calibrate_strict_sgd,
        strict_rate,
        strict_sgd_epsilon,
    )
    from ldpgraph.protocols.central.dpsgd import sgd_epsilon

    q, steps, delta = 0.3, 50, 1e-3
    # D = 1: dp-accounting's DP-SGD, on a coarser order grid (never below it).
    ours, ref = strict_sgd_epsilon(1.2, q, steps, 1, delta), sgd_epsilon(1.2, q, steps, delta)
    assert ref - 1e-9 <= ours <= 1.03 * ref
    z, big_d = 9.0, 3

    def leg(rows, order):
        acc = rdp.RdpAccountant(orders=[order])
        event = dp_event.GaussianDpEvent(z / rows)
        acc.compose(dp_event.PoissonSampledDpEvent(strict_rate(q, rows), event), steps)
        return acc._rdp[0]

    alpha = 4.0
    w = (alpha - 0.5) / (alpha - 1)
    expected = max(
        w * leg(big_d, 2 * alpha) + leg(big_d - 1, 2 * alpha - 1),
        w * leg(big_d - 1, 2 * alpha) + leg(big_d, 2 * alpha - 1),
    )
    from ldpgraph.protocols.central.dpar_privacy import strict_sgd_rdp

    orders, values = strict_sgd_rdp(z, q, steps, big_d)
    assert values[list(orders).index(alpha)] == pytest.approx(expected, rel=1e-9)
    target = 3.0
    z_cal = calibrate_strict_sgd(target, delta, q, steps, big_d)
    got = strict_sgd_epsilon(z_cal, q, steps, big_d, delta)
    assert got <= target * (1 + 1e-9) and got == pytest.approx(target, rel=1e-3)
    # The proven bound at D = 3 needs more noise than the paper's τ-scaled one.
    assert z_cal > 2 * calibrate_strict_sgd(target, delta, q, steps, 1)


def test_em1_values_are_exact_discrete_laplace():
    """EM1's released values are the clipped value on the grid C2/L plus integer noise of the
    discrete Laplace law the accounting covers: its frequencies sit inside 99.9 % intervals."""
    from ldpgraph.protocols.central.appr import ApprNoise, dp_appr

    noise = ApprNoise.proven("em1", 4.0, 1e-3, 5, 2, 0.01, 0.001, 0.5)
    assert 0 < noise.eps_value and noise.levels >= 1
    appr = np.zeros((4000, 6))
    appr[:, 0] = 0.0004  # one large entry (clipped at C2 = 0.001? no: below it)
    idx, val = dp_appr(appr, noise, 2, 0.01, 0.001, np.random.default_rng(7))
    grid = 0.001 / noise.levels
    ints = np.rint(val / grid).astype(np.int64)
    np.testing.assert_allclose(ints * grid, val, atol=1e-12)  # values live on the grid
    base = np.where(idx == 0, round(0.0004 / grid), 0)
    k = (ints - base).ravel()
    mech = noise.value_mechanism()
    for lo_hi in ((0, 0), (-3, 3), (1, 10**9)):
        p = float(mech.pmf(np.arange(lo_hi[0], min(lo_hi[1], 10**5) + 1)).sum())
        hits = ((k >= lo_hi[0]) & (k <= lo_hi[1])).mean()
        half = 3.3 * math.sqrt(p * (1 - p) / k.size)
        assert abs(hits - p) <= half + 1e-12, (lo_hi, hits, p)


def test_training_nodes_get_no_prediction_and_absent_nodes_no_edge(small):
    """A training node's class would be f_θ(x_v), a function of its own raw features: the
    release holds none for it (-1; accuracy skips it), only θ and the non-training nodes'
    classes. Edges to a node that did not upload never reach inference."""
    graph, split = small
    rel = _release("dpar-gm", graph, split, seed=1)
    assert (rel.model.predict(split.train) == -1).all()
    assert (rel.model.predict(split.test) >= 0).all()
    # A test node that does not upload: its edges go, whoever reported them.
    j = int(split.test[0])
    a = _release_absent("dpar-features", graph, split, j, seed=1)
    b = _release_absent("dpar-features", _without(graph, j), split, j, seed=1)
    assert a.fingerprint() == b.fingerprint()


def test_paper_convention_headline_is_the_proven_epsilon_of_its_noise(small):
    """paper: the paper's calibration, paper_epsilon its figure, the headline the proven ε of
    that noise (far larger); proven at the same request needs more noise."""
    graph, split = small
    paper = _release("dpar-gm", graph, split, seed=5, epsilon_convention="paper")
    proven = _release("dpar-gm", graph, split, seed=5)
    assert paper.privacy.paper_epsilon == pytest.approx(8.0, rel=1e-3)
    assert paper.privacy.epsilon > 3 * 8.0
    assert proven.privacy.epsilon == pytest.approx(8.0, rel=1e-3)
    assert proven.stats["noise_multiplier"] > 5 * paper.stats["noise_multiplier"]
    sgd = {p["part"]: p for p in paper.privacy.parts}["dp-sgd"]
    assert sgd["D"] == paper.stats["column_rows"] >= 2 and sgd["epsilon_paper"] < sgd["epsilon"]
    assert "epsilon_convention=paper" in paper.privacy.headline


def test_column_cap_applies_under_proven_and_paper_strict_only(small):
    graph, split = small
    paper = _release("dpar-gm", graph, split, seed=5, epsilon_convention="paper")
    strict = _release(
        "dpar-gm", graph, split, seed=5, epsilon_convention="paper", sgd_sensitivity="strict",
        column_rows_cap=2,
    )  # fmt: skip
    proven = _release("dpar-gm", graph, split, seed=5, column_rows_cap=2)
    assert paper.stats["column_rows"] > 2
    assert strict.stats["column_rows"] <= 2 and proven.stats["column_rows"] <= 2
    assert strict.stats["noise_multiplier"] > paper.stats["noise_multiplier"]


def test_proven_features_is_standard_dp_sgd(small):
    """Features trains on Π = I: D = 1, proven is dp-accounting's DP-SGD at the request."""
    from ldpgraph.protocols.central.dpsgd import sgd_epsilon

    graph, split = small
    rel = _release("dpar-features", graph, split, seed=5)
    sgd = {p["part"]: p for p in rel.privacy.parts}["dp-sgd"]
    assert sgd["D"] == 1
    eps = sgd_epsilon(rel.stats["noise_multiplier"], sgd["q"], sgd["steps"], sgd["delta"])
    assert eps == pytest.approx(sgd["target_epsilon"], rel=1e-3)
    assert eps == pytest.approx(8.0, rel=1e-3)  # no amplification claimed
    assert rel.privacy.epsilon == pytest.approx(8.0, rel=1e-3)


@pytest.mark.parametrize(
    "params,needle",
    [
        ({"sgd_sensitivity": "loose"}, "unknown sgd_sensitivity"),
        ({"column_rows_cap": 0}, "column_rows_cap must be in >= 1"),
        ({"column_rows_cap": 1.5}, "column_rows_cap must be of type int"),
        ({"epsilon_convention": "sound"}, "unknown epsilon_convention"),
    ],
)
def test_bad_sensitivity_parameters_are_one_line_errors(params, needle):
    with pytest.raises(ProtocolParameterError) as exc:
        make_protocol("dpar-gm", **params)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_conventions_run_from_the_run_configuration():
    record = run(_config("dpar-em0", epsilon_convention="paper", sgd_sensitivity="strict",
                         column_rows_cap=2))  # fmt: skip
    assert record["config"]["sgd_sensitivity"] == "strict"
    sgd = {p["part"]: p for p in record["privacy"]["parts"]}["dp-sgd"]
    assert sgd["sensitivity"] == "strict" and sgd["D_max"] == 2 and sgd["D"] <= 2
    assert record["privacy"]["paper_epsilon"] == pytest.approx(8.0, rel=1e-3)
    assert record["privacy"]["epsilon"] > 8.0
