"""DPGGAN / DPGVAE (protocols/central/dpggan.py): per-node gradients by parameter copies
against autograd, clipping and noise through the shared DP-SGD code (a variance test), the
accountant against the Gaussian's closed form, calibration and one-line errors, the edge
selection (the Laplace count by its mean absolute deviation), the privacy report's caveat,
seeded releases and the harness end to end."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import chi2

from ldpgraph.protocols.base import CuratorView, RoundResult
from ldpgraph.protocols.central import dpggan as dg
from ldpgraph.protocols.central.dpsgd import clip_per_example, sgd_epsilon
from ldpgraph.protocols.params import ProtocolParameterError
from ldpgraph.protocols.registry import make_protocol as _make_protocol
from ldpgraph.protocols.types import NodeView
from ldpgraph.simulation.config import RunConfig
from ldpgraph.simulation.datasets.graph_collections import NotACollectionError, union
from ldpgraph.simulation.pipeline import check_collection

from ...conftest import needs_mirror
from ...support.gaussian import gaussian_epsilon


def make_protocol(name: str, **params):
    """The registry's strategy with the paper's training (``dpg_training paper``): this file
    tests it; the bounded default is tests/protocols/central/test_dpggan_bounded.py."""
    return _make_protocol(name, **{"dpg_training": "paper", **params})


FAST = dict(dpg_steps=30, dpg_q=0.3)


def _theta(seed: int = 0) -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    _, theta, _, _ = dg.init_params(6, gen)
    return {k: v.double() for k, v in theta.items()}


# --- per-node gradients, clipping, noise -------------------------------------------------------


@pytest.mark.parametrize("kind", ["bce", "gan"])
def test_per_node_gradients_sum_to_the_full_gradient(kind):
    torch.manual_seed(0)
    theta = _theta()
    z = torch.randn(5, dg.LATENT, dtype=torch.float64)
    a = (torch.rand(5, 5) < 0.5).double().triu(1)
    a = a + a.T
    gen = torch.Generator().manual_seed(1)
    _, _, disc_g, disc_f = dg.init_params(5, gen)
    disc_g = {k: v.double() for k, v in disc_g.items()}
    disc_f = {k: v.double() for k, v in disc_f.items()}

    def loss(f_rows):
        p = dg.soft_adjacency(f_rows)
        if kind == "bce":
            off = 1 - torch.eye(5, dtype=p.dtype)
            return (torch.nn.functional.binary_cross_entropy(p, a, reduction="none") * off).sum()
        fake = dg._disc_features(dg._normalised(p), disc_g["w0"], disc_g)
        real = dg._disc_features(dg._normalised(a), disc_g["w0"], disc_g)
        return (real - fake).pow(2).sum() - 0.1 * torch.nn.functional.logsigmoid(
            dg._disc_logit(fake, disc_f)
        )

    per_node, value = dg.per_node_generator_grads(loss, z, theta)
    shared = {k: v.clone().requires_grad_(True) for k, v in theta.items()}
    full = torch.autograd.grad(loss(dg.generator(z, shared)), list(shared.values()))
    assert float(value) == pytest.approx(float(loss(dg.generator(z, theta))))
    for (k, g), ref in zip(per_node.items(), full, strict=True):
        assert g.shape == (5, *theta[k].shape)
        torch.testing.assert_close(g.sum(0), ref, atol=1e-10, rtol=1e-9)
    if kind == "bce":
        # node 0's gradient is not that of its own row of the loss alone: P = σ(F Fᵀ) couples
        # the rows, and a symmetric loss counts the pair (0, j) twice, so it is exactly twice
        live = {k: v.clone().requires_grad_(True) for k, v in theta.items()}
        fixed = {k: v.detach() for k, v in theta.items()}
        f = torch.cat([dg.generator(z[:1], live), dg.generator(z[1:], fixed)])
        p = dg.soft_adjacency(f)
        row0 = torch.nn.functional.binary_cross_entropy(p[0, 1:], a[0, 1:], reduction="sum")
        (alone,) = torch.autograd.grad(row0, [live["w1"]])
        assert not torch.allclose(per_node["w1"][0], alone)
        torch.testing.assert_close(per_node["w1"][0], 2 * alone, atol=1e-10, rtol=1e-9)


def test_clipping_through_the_shared_dpsgd_code():
    gen = torch.Generator().manual_seed(0)
    grads = {k: torch.randn(8, *v.shape, generator=gen, dtype=torch.float64) * 3
             for k, v in _theta().items()}  # fmt: skip
    clip = 2.0
    out = dg.dp_generator_gradient(grads, clip, 0.0, 4.0, None)
    clipped, norms = clip_per_example(grads, clip)
    assert (norms > clip).all()  # every example is clipped here
    for k in grads:
        torch.testing.assert_close(out[k], clipped[k].sum(0) / 4.0)
    flat = torch.cat([clipped[k].reshape(8, -1) for k in grads], 1)
    assert torch.allclose(flat.norm(dim=1), torch.full((8,), clip, dtype=torch.float64))
    # a small gradient passes unchanged
    small = {k: g * 1e-4 for k, g in grads.items()}
    out = dg.dp_generator_gradient(small, clip, 0.0, 1.0, None)
    for k in grads:
        torch.testing.assert_close(out[k], small[k].sum(0))


def test_noise_std_is_sigma_times_clip_over_the_divisor():
    # zero gradients: (N(0, (σC)²) per coordinate) / divisor; 816 coordinates × 60 draws
    sigma, clip, divisor = 1.7, 3.0, 2.5
    zero = {k: torch.zeros((1, *v.shape), dtype=torch.float64) for k, v in _theta().items()}
    gen = torch.Generator().manual_seed(3)
    draws = torch.cat([
        torch.cat([v.reshape(-1) for v in dg.dp_generator_gradient(
            zero, clip, sigma * clip, divisor, gen).values()])
        for _ in range(60)
    ]).numpy() * divisor  # fmt: skip
    assert draws.size == 60 * 816
    # chi-square test of the variance at level 1e-6 on each side
    stat = float((draws**2).sum() / (sigma * clip) ** 2)
    lo, hi = chi2.ppf(1e-6, draws.size), chi2.ppf(1 - 1e-6, draws.size)
    assert lo < stat < hi
    # a std off by 5% would fail
    assert not lo < stat / 1.05**2 < hi and not lo < stat * 1.05**2 < hi
    assert abs(draws.mean()) < 5 * sigma * clip / math.sqrt(draws.size)


# --- accounting and calibration ------------------------------------------------------------------


def test_accountant_against_the_gaussian_closed_form():
    # q = 1 (no subsampling): T Gaussian steps of multiplier σ are one Gaussian of μ = √T/σ
    s = make_protocol(
        "dpgvae", epsilon=3.0, dpg_q=1.0, dpg_steps=10_000, accountant="pld",
        dpg_calibration="steps", dpg_sigma=20.0, dpg_edge_selection="bernoulli",
    )  # fmt: skip
    plan = s.plan()
    exact = gaussian_epsilon(math.sqrt(plan.steps) / 20.0, 1e-5)
    assert plan.epsilon_train == pytest.approx(exact, rel=2e-3)
    assert plan.epsilon_train <= 3.0
    # the next step would pass ε (T is the largest within the budget)
    assert gaussian_epsilon(math.sqrt(plan.steps + 1) / 20.0, 1e-5) > 3.0 * (1 - 2e-3)


def test_calibrated_sigma_spends_the_training_share():
    s = make_protocol("dpggan", epsilon=1.0, dpg_steps=500, dpg_q=0.05)
    plan = s.plan()
    assert plan.epsilon_count == pytest.approx(0.05)
    assert plan.epsilon_train == pytest.approx(0.95, rel=1e-3)
    assert sgd_epsilon(plan.sigma * 0.98, 0.05, 500, 1e-5) > 0.95  # less noise: over budget
    assert plan.epsilon_paper == pytest.approx(
        2 * 0.05 * math.sqrt(500 * math.log(1e5)) / plan.sigma
    )
    report = s.privacy_report()
    # No proof for the paper's training: the headline is ∞, the paper's claim beside it
    # (the accountant under its sensitivity C: the requested ε), the closed form in the parts.
    assert report.unit == "edge" and report.epsilon == math.inf
    assert report.unit_epsilons == {"edge": math.inf}
    assert report.paper_epsilon == pytest.approx(1.0, rel=1e-3)
    assert report.parts[0]["epsilon_paper_closed_form"] == pytest.approx(plan.epsilon_paper)
    assert report.parts[1]["part"] == "edge count"
    assert report.parts[1]["epsilon"] == pytest.approx(0.05)  # proven: the count alone
    assert report.headline.startswith("edge-level ε = ∞: no proven edge-level bound")
    assert any("2·B·C" in note and "paper-claimed" in note for note in report.notes)


def test_the_proven_convention_is_refused_in_one_line():
    from ldpgraph.simulation.config import ConfigError

    for name in ("dpggan", "dpgvae"):
        with pytest.raises(ProtocolParameterError, match="no proof is implemented") as err:
            make_protocol(name, epsilon_convention="proven", **FAST)
        assert "\n" not in str(err.value)
        config = RunConfig(protocol=name, dataset="dblp-collection", trust_curator=True,
                           epsilon_convention="proven", dpg_training="paper")  # fmt: skip
        with pytest.raises(ConfigError, match="epsilon-convention proven"):
            config.validate()
        # the bounded default calibrates to its proof under either convention
        RunConfig(protocol=name, dataset="dblp-collection", trust_curator=True,
                  epsilon_convention="proven").validate()  # fmt: skip
    assert make_protocol("dpggan", epsilon_convention="paper", **FAST).p["epsilon_convention"] == (
        "paper"
    )


def test_paper_rule_steps_at_sigma_5():
    # σ = 5, q = 0.01, δ = 1e-5: the paper's closed form allows 5,428 steps at
    # ε = 1; a numeric accountant allows more (RDP ≈ 14,874 with orders up to 2048)
    s = make_protocol("dpgvae", epsilon=1.0, dpg_calibration="steps", dpg_steps=100_000,
                      dpg_edge_selection="bernoulli")  # fmt: skip
    plan = s.plan()
    paper_t = (1.0 * 5 / (2 * 0.01)) ** 2 / math.log(1e5)
    assert round(paper_t) == 5429
    assert plan.steps > paper_t and plan.epsilon_train <= 1.0
    assert plan.steps == 14874  # the RDP figure above
    assert sgd_epsilon(5.0, 0.01, plan.steps + 1, 1e-5) > 1.0


def test_unreachable_epsilon_is_one_line_error():
    with pytest.raises(ProtocolParameterError, match="unreachable") as err:
        make_protocol("dpggan", epsilon=1e-4, dpg_q=1.0, dpg_steps=2000)
    assert "\n" not in str(err.value)
    with pytest.raises(ProtocolParameterError, match="unreachable") as err:
        make_protocol("dpggan", epsilon=0.1, dpg_calibration="steps", dpg_sigma=0.5, dpg_q=1.0)
    assert "\n" not in str(err.value)
    # refused when the run is configured, before anything is collected
    from ldpgraph.simulation.config import ConfigError

    config = RunConfig(protocol="dpgvae", dataset="dblp-collection", trust_curator=True,
                       epsilon=1e-4, dpg_q=1.0, dpg_training="paper")  # fmt: skip
    with pytest.raises(ConfigError, match="unreachable") as err:
        config.validate()
    assert "\n" not in str(err.value)


def test_topk_true_reports_infinite_epsilon():
    report = make_protocol("dpggan", dpg_edge_selection="topk_true", **FAST).privacy_report()
    assert report.epsilon == math.inf and report.paper_epsilon < math.inf
    assert any("true edge count" in note for note in report.notes)


# --- generation --------------------------------------------------------------------------------


def test_edge_selection():
    rng = np.random.default_rng(0)
    probs = rng.random((30, 30))
    probs = (probs + probs.T) / 2
    s = make_protocol("dpggan", dpg_edge_selection="topk_true", **FAST)
    edges = dg.select_edges(probs, 40, s.plan(), s.p, rng)
    assert edges.shape == (40, 2) and (edges[:, 0] < edges[:, 1]).all()
    iu = np.triu_indices(30, 1)
    assert probs[edges[:, 0], edges[:, 1]].min() >= np.sort(probs[iu])[-40]
    # topk_dp: M̃ − M is discrete Laplace of parameter ε_M (integer noise, never a float
    # Laplace rounded): P[M̃ − M = 0] and E|M̃ − M| = 2a/(1 − a²), a = e^{−ε_M}, within 6
    # standard errors over 3,000 draws
    s = make_protocol("dpggan", epsilon=2.0, **FAST)
    a = math.exp(-s.plan().epsilon_count)
    dev = np.array([dg.select_edges(probs, 200, s.plan(), s.p, rng).shape[0] - 200
                    for _ in range(3000)])  # fmt: skip
    mean_abs, var_abs = 2 * a / (1 - a * a), 2 * a * (1 + a * a) / (1 - a * a) ** 2
    assert abs(np.abs(dev).mean() - mean_abs) < 6 * math.sqrt(var_abs / 3000)
    p0 = (1 - a) / (1 + a)
    assert abs((dev == 0).mean() - p0) < 6 * math.sqrt(p0 * (1 - p0) / 3000)
    with pytest.raises(ProtocolParameterError, match="discrete Laplace"):
        make_protocol("dpggan", epsilon=0.01, **FAST)  # ε_M = 5e-4 < MIN_EPSILON
    thr = make_protocol("dpggan", dpg_edge_selection="threshold", **FAST)
    assert len(dg.select_edges(probs, 0, thr.plan(), thr.p, rng)) == (probs[iu] > 0.5).sum()


# --- the strategy on a collection --------------------------------------------------------------


def _toy_collection():
    rng = np.random.default_rng(1)
    parts = []
    for n in (12, 9, 15):
        pairs = np.array([(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < 0.3])
        parts.append((pairs, n))
    return union("toy", parts, np.array([0, 1, 0]))


def _release(name, graph, seed=0, refusing=(), **params):
    strategy = make_protocol(name, **{**FAST, **params})
    reports = {}
    for v in range(graph.num_nodes):
        if v in refusing:
            continue
        view = NodeView(v, graph.neighbors(v), graph.x[v], graph.num_nodes, graph.feature_domain)
        reports[v] = strategy.client_step(0, view, strategy.config(), 0)
    result = RoundResult(reports, np.asarray(sorted(refusing), dtype=np.int64))
    curator = CuratorView(  # seeded: the release is replayable from ``seed``
        graph.num_nodes, graph.num_features, graph_ptr=graph.meta.get("graph_ptr"),
        replayable=True,
    )  # fmt: skip
    return strategy.server_step(0, result, curator, seed)


@pytest.mark.parametrize("name", ["dpggan", "dpgvae"])
def test_release_is_one_graph_per_graph_and_seeded(name):
    graph = _toy_collection()
    a = _release(name, graph, seed=3)
    assert a.kind == "graphs" and len(a.graphs) == 3
    assert [g.num_nodes for g in a.graphs] == [12, 9, 15]
    for g in a.graphs:
        assert (g.edges[:, 0] < g.edges[:, 1]).all() and g.edges.max() < g.num_nodes
    assert a.fingerprint() == _release(name, graph, seed=3).fingerprint()
    assert a.fingerprint() != _release(name, graph, seed=4).fingerprint()
    assert a.privacy.unit == "edge" and a.stats["graphs"] == 3
    # topk_true: exactly the original edge counts
    true = _release(name, graph, dpg_edge_selection="topk_true")
    ptr = graph.meta["graph_ptr"]
    counts = [int(((graph.edges >= ptr[k]) & (graph.edges < ptr[k + 1])).all(1).sum())
              for k in range(3)]  # fmt: skip
    assert [g.num_edges for g in true.graphs] == counts


def test_cross_graph_edges_and_refusing_nodes_are_left_out_and_stats_hold_no_true_count():
    """An uploaded edge between two graphs is dropped (not an error one edge could trigger), a
    refusing node's links are not used, and no exact edge count of the input is released."""
    import dataclasses

    graph = _toy_collection()
    base = _release("dpgvae", graph, seed=2)
    joined = dataclasses.replace(graph, edges=np.vstack([graph.edges, [[0, 12]]]))
    assert _release("dpgvae", joined, seed=2).fingerprint() == base.fingerprint()
    assert not any("original" in key for key in base.stats)
    refusing = {1, 14}
    keep = ~np.isin(graph.edges, list(refusing)).any(axis=1)
    cut = dataclasses.replace(graph, edges=graph.edges[keep])
    a = _release("dpgvae", graph, seed=2, refusing=refusing)
    assert a.fingerprint() == _release("dpgvae", cut, seed=2, refusing=refusing).fingerprint()


def test_every_step_is_noised_at_the_decayed_clip_and_generation_ignores_the_graph(
    monkeypatch,
):
    """The loop runs exactly the plan's T steps, each one a noisy generator update (empty
    Poisson samples too) with std σ·C·multiplier at the current C, C decayed by γ once per
    ⌈1/q⌉ steps; generation reads neither the graph nor the encoder: with training stubbed
    out, two different graphs of one size and edge count give the same output."""
    from ldpgraph.protocols.central import dpggan_train as dpggan  # where the reference lives

    strategy = make_protocol("dpgvae", epsilon=1.0, dpg_steps=25, dpg_q=0.2, dpg_clip=5.0,
                             dpg_clip_decay=0.5, dpg_sensitivity_multiplier=2.0)  # fmt: skip
    plan = strategy.plan()
    calls = []
    real = dpggan.dp_generator_gradient

    def spy(per_node, clip, std, divisor, gen):
        calls.append((clip, std, divisor))
        return real(per_node, clip, std, divisor, gen)

    monkeypatch.setattr(dpggan, "dp_generator_gradient", spy)
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [0, 4]])
    _, info = dpggan.fit_and_generate(edges, 5, plan, strategy.p, False, seed=0, k=0)
    assert len(calls) == plan.steps == 25 and info["empty_steps"] > 0  # q·N = 1: some empty
    for step, (clip, std, divisor) in enumerate(calls):
        want = 5.0 * 0.5 ** (step // 5)  # ⌈1/0.2⌉ = 5 steps an epoch
        assert clip == pytest.approx(want) and std == pytest.approx(plan.sigma * want * 2.0)
        assert divisor == pytest.approx(0.2 * 5)
    # generation: the same with any graph once training does nothing
    monkeypatch.setattr(dpggan, "_train_step", lambda *a, **k: None)
    monkeypatch.setattr(
        dpggan,
        "dp_generator_gradient",
        lambda per_node, *a: {k: v.sum(0) * 0 for k, v in per_node.items()},
    )
    other = np.array([[0, 2], [1, 3], [2, 4], [0, 3], [1, 4]])
    outs = [dpggan.fit_and_generate(e, 5, plan, strategy.p, False, seed=0, k=0)[0]
            for e in (edges, other)]  # fmt: skip
    np.testing.assert_array_equal(outs[0], outs[1])


def test_batch_balanced_bce_changes_the_generator_gradient():
    n = 8
    adj = torch.zeros(n, n, dtype=torch.float64)
    adj[0, 1] = adj[1, 0] = adj[2, 3] = adj[3, 2] = 1.0
    seen = []
    for balanced in (False, True):
        enc, theta, dg_, df_ = (
            {k: v.double().requires_grad_(True) for k, v in d.items()}
            for d in dg.init_params(n, torch.Generator().manual_seed(0))
        )
        opts = (_Recorder(theta.values()), _Recorder(enc.values()), _Recorder([]))
        dg._train_step(torch.arange(n), adj, enc, theta, dg_, df_, False, 0.1, 0.1, 1e9, 0.0,
                       1.0, torch.Generator().manual_seed(5), torch.Generator().manual_seed(6),
                       opts, balanced)  # fmt: skip
        seen.append(opts[0].seen)
    assert any(not torch.allclose(a, b) for a, b in zip(*seen, strict=True))


def test_node_level_curator_is_one_line_error():
    from ldpgraph.simulation.datasets import synthetic_graph

    graph = synthetic_graph(n=20, classes=2, avg_degree=3, d=4, seed=0)
    with pytest.raises(ProtocolParameterError, match="collection") as err:
        _release("dpggan", graph)
    assert "\n" not in str(err.value)


def test_node_level_dataset_to_dpggan_is_one_line_error():
    for protocol in ("dpggan", "dpgvae"):
        config = RunConfig(protocol=protocol, dataset="cora", metrics="none")
        with pytest.raises(NotACollectionError, match="is one graph") as err:
            check_collection(config)
        assert "\n" not in str(err.value)


@pytest.mark.slow
@needs_mirror
def test_dblp_collection_end_to_end(tmp_path):
    from ldpgraph.simulation.pipeline import run

    config = RunConfig(
        protocol="dpggan", dataset="dblp-collection", epsilon=1.0, trust_curator=True,
        metrics="collection", backend="local", dpg_steps=20, collection_motif_limit=20_000,
        dpg_training="paper",  # the paper's training: headline ∞, the paper's figure beside
    ).validate()  # fmt: skip
    record = run(config)
    assert record["release_kind"] == "graphs"
    section = record["collection_stats"]
    assert section["graphs"] == 69
    assert round(section["table1"]["cpl"]["original"], 4) == 3.6943
    for stat in section["table1"].values():
        assert stat["abs_diff"] is None or math.isfinite(stat["abs_diff"])
    assert 0.0 <= section["table2"]["degree_cosine"] <= 1.0
    assert record["privacy"]["unit"] == "edge"
    assert record["privacy"]["epsilon"] == math.inf
    assert record["privacy"]["paper_epsilon"] == pytest.approx(1.0, rel=1e-3)


class _Recorder:
    """An optimizer stand-in that records the gradients it would apply."""

    def __init__(self, params):
        self.params = list(params)
        self.seen = None

    def step(self):
        self.seen = [p.grad.clone() for p in self.params]


@pytest.mark.parametrize("gan", [True, False])
def test_noise_reaches_the_generator_only(gan):
    # The same step with two noise streams: the encoder's and the discriminator's gradients
    # are identical (no noise), the generator's differ by exactly (noise_a − noise_b)/divisor.
    n = 10
    adj = torch.zeros(n, n, dtype=torch.float64)
    for u, v in [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (6, 7), (7, 8)]:
        adj[u, v] = adj[v, u] = 1.0
    idx = torch.arange(n)
    runs = []
    for noise_seed in (1, 2):
        enc, theta, dg_, df_ = (
            {k: v.double().requires_grad_(True) for k, v in d.items()}
            for d in dg.init_params(n, torch.Generator().manual_seed(0))
        )
        opts = (_Recorder(theta.values()), _Recorder(enc.values()),
                _Recorder([*dg_.values(), *df_.values()]))  # fmt: skip
        dg._train_step(idx, adj, enc, theta, dg_, df_, gan, 0.1, 0.1, 1.0, 2.0, 3.0,
                       torch.Generator().manual_seed(5),
                       torch.Generator().manual_seed(noise_seed), opts)  # fmt: skip
        noise = [torch.randn(v.shape, generator=g, dtype=torch.float64) for g in
                 [torch.Generator().manual_seed(noise_seed)] for v in theta.values()]  # fmt: skip
        runs.append((opts, noise))
    (a, na), (b, nb) = runs
    for ga, gb in zip(a[1].seen, b[1].seen, strict=True):
        torch.testing.assert_close(ga, gb)  # encoder
    if gan:
        for ga, gb in zip(a[2].seen, b[2].seen, strict=True):
            torch.testing.assert_close(ga, gb)  # discriminator
    else:
        assert a[2].seen is None  # DPGVAE has no discriminator step
    for ga, gb, xa, xb in zip(a[0].seen, b[0].seen, na, nb, strict=True):
        torch.testing.assert_close(ga - gb, 2.0 * (xa - xb) / 3.0)  # std σC = 2, divisor 3


def test_encoder_generation_is_an_ablation_with_infinite_epsilon_that_reads_the_graph(
    monkeypatch,
):
    """dpg_generation encoder (the official code's evaluation) embeds the real graph: its
    report says ε = ∞, and with training stubbed out two graphs of one size and edge count now
    give different outputs (the prior's generation gives the same, test above)."""
    from ldpgraph.protocols.central import dpggan_train as dpggan  # where the reference lives

    strategy = make_protocol("dpgvae", dpg_generation="encoder", dpg_steps=3, **_no_steps(FAST))
    report = strategy.privacy_report()
    assert report.epsilon == math.inf and report.paper_epsilon < math.inf
    assert any("not edge-DP" in note and "encoder" in note for note in report.notes)
    assert make_protocol("dpgvae", dpg_steps=3, **_no_steps(FAST)).privacy_report().epsilon == (
        math.inf  # no proof for the paper's training either way (docs/privacy/dpggan.md)
    )
    monkeypatch.setattr(dpggan, "_train_step", lambda *a, **k: None)
    monkeypatch.setattr(
        dpggan,
        "dp_generator_gradient",
        lambda per_node, *a: {k: v.sum(0) * 0 for k, v in per_node.items()},
    )
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [0, 4]])
    other = np.array([[0, 2], [1, 3], [2, 4], [0, 3], [1, 4]])
    # the true edge count (4 of 10 pairs): a noisy count could clamp both graphs to empty or
    # complete, which would hide whether generation read them; a star and a path, which the
    # encoder embeds differently (the two 5-cycles above are isomorphic)
    edges = np.array([[0, 1], [0, 2], [0, 3], [0, 4]])
    other = np.array([[0, 1], [1, 2], [2, 3], [3, 4]])
    true_m = make_protocol("dpgvae", dpg_generation="encoder", dpg_edge_selection="topk_true",
                           dpg_steps=3, **_no_steps(FAST))  # fmt: skip
    plan = true_m.plan()
    outs = [dpggan.fit_and_generate(e, 5, plan, true_m.p, False, seed=0, k=0)[0]
            for e in (edges, other)]  # fmt: skip
    assert len(outs[0]) == len(outs[1]) == 4
    assert not np.array_equal(outs[0], outs[1])


def _no_steps(params: dict) -> dict:
    return {k: v for k, v in params.items() if k != "dpg_steps"}
