"""PrivDPR (protocols/central/privdpr.py): the plan against worked numbers, the
accountant against the Gaussian's closed form, noise on V's gradient only, weight
normalisation and the per-pair bound, walks, transition counts and assembly against small
dense references, the learned V's independence of the graph with a control that
can see a dependence, one-line errors, seeded releases and the harness end to end."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from ldpgraph.protocols.base import RoundResult
from ldpgraph.protocols.central import privdpr as dpr
from ldpgraph.protocols.graph import Graph
from ldpgraph.protocols.params import ProtocolParameterError
from ldpgraph.protocols.registry import describe, make_protocol
from ldpgraph.protocols.types import NodeView
from ldpgraph.simulation.config import ConfigError, RunConfig
from ldpgraph.simulation.datasets import synthetic_graph
from ldpgraph.simulation.pipeline import run
from ldpgraph.simulation.splits import split_for

from ...support.central import curator_for, local_and_flower
from ...support.gaussian import gaussian_epsilon

SMALL = "synthetic:n=160,classes=3,d=8,avg_degree=6,seed=2"
#: Small and fast: T = 2·⌊160/16⌋ = 20 steps, r = d = 8.
FAST = dict(dpr_epochs=2, dpr_dim=8, dpr_hidden=8)
PAPER_GRID = (0.1, 0.2, 0.4, 0.8, 1.6, 3.2)


@pytest.fixture(scope="module")
def small():
    graph = synthetic_graph(n=160, classes=3, avg_degree=6, d=8, seed=2)
    return graph, split_for(graph.num_nodes, 0)


def _collect(strategy, graph: Graph, refusing=()) -> RoundResult:
    reports = {}
    for v in range(graph.num_nodes):
        if v in refusing:
            continue
        view = NodeView(v, graph.neighbors(v), graph.x[v], graph.num_nodes, graph.feature_domain)
        reports[v] = strategy.client_step(0, view, strategy.config(), 0)
    return RoundResult(reports, np.asarray(sorted(refusing), dtype=np.int64))


def _release(name, graph, split, seed=0, refusing=(), **params):
    strategy = make_protocol(name, **{**FAST, **params})
    result = _collect(strategy, graph, refusing)
    return strategy.server_step(0, result, curator_for(graph, split), seed)


# --- registration and the plan ---------------------------------------------------------------


def test_variants_build_and_describe():
    proto = make_protocol("privdpr")
    assert proto.kind == "graph" and proto.raw_upload and proto.privacy_model == "central"
    assert describe("privdpr")["privacy_unit"] == "node"
    nodp = make_protocol("dpr-nodp")
    assert nodp.privacy_model == "none" and nodp.privacy_report().epsilon == math.inf
    assert "delta" not in {p["name"] for p in describe("dpr-nodp")["params"]}


def test_plan_reproduces_the_specs_worked_numbers():
    """Cora at ε = 0.1, δ = 1e-5 (T = 845, M = 8517.2, K = 10 by the paper's
    rule, 11 strict, σ_eff = 303.9), K on the other data sets, M(3327) and Example 4.5."""
    assert make_protocol("privdpr").p["delta"] == 1e-5  # the paper's, below 1/N
    plan = make_protocol("privdpr", epsilon=0.1, delta=1e-5).plan(2708)
    assert (plan.steps, plan.pairs, plan.layers, plan.layers_paper) == (845, 512, 11, 10)
    assert plan.m == pytest.approx(8517.2, abs=0.05)
    assert plan.sigma == pytest.approx(303.94, abs=0.005)
    assert plan.epsilon_paper == pytest.approx(0.1, rel=1e-9)
    assert dpr.m_constant(3327, 0.85) == pytest.approx(10463.97, abs=0.01)
    for n, paper, strict in ((3327, 11, 11), (6301, 11, 11), (12982, 12, 12), (410236, 15, 15)):
        steps = 5 * (n // 16)
        assert dpr.layer_count(n, 0.85, 512, steps, 8.0, 5.0, False) == paper, n
        assert dpr.layer_count(n, 0.85, 512, steps, 8.0, 5.0, True) == strict, n
    # Example 4.5: B = 128, s = 5, S = 5 and no T: L ≥ 7, i.e. 8 weight matrices.
    assert dpr.layer_count(3327, 0.85, 128, 1, 5.0, 5.0, False) == 8
    # The chosen K keeps the step's sensitivity within S_∇/T; one layer fewer would not.
    assert plan.sensitivity <= plan.sensitivity_paper
    assert plan.sensitivity * 8.0 > plan.sensitivity_paper


def test_paper_calibration_is_the_papers_closed_form():
    """Found by a search through the paper's sequential composition, σ equals its closed form
    S_∇·√(2 ln(1.25T/δ))/ε (T cancels)."""
    for eps in PAPER_GRID:
        plan = make_protocol("privdpr", epsilon=eps, delta=1e-5).plan(3327)
        closed = 5.0 * math.sqrt(2 * math.log(1.25 * plan.steps / 1e-5)) / eps
        assert plan.sigma == pytest.approx(closed, rel=1e-9) and plan.sigma >= closed


def test_accountant_matches_the_gaussian_closed_form():
    """PLD's ε of the composed Gaussian is the exact one (within its discretisation, never
    below); RDP's is an upper bound; T compositions are one Gaussian of multiplier z/√T."""
    for mu in (1e-4, 0.02, 0.5, 2.0):
        exact = gaussian_epsilon(mu, 1e-5)
        pld = dpr.gaussian_epsilon(mu, 1e-5, "pld")
        assert exact <= pld <= exact * 1.002 + 1e-9, mu
        assert dpr.gaussian_epsilon(mu, 1e-5, "rdp") >= exact
    from dp_accounting import dp_event, rdp

    z, steps = 300.0, 845
    acc = rdp.RdpAccountant()
    acc.compose(dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), steps))
    composed = acc.get_epsilon(1e-5)
    single = dpr.gaussian_epsilon(dpr.composed_mu(z, steps), 1e-5, "rdp")
    assert composed == pytest.approx(single, rel=1e-9)


def test_accountant_calibration_is_reproduced_by_the_closed_form():
    """noise_calibration=accountant: σ whose PLD ε is the target; the Gaussian's exact ε at
    the calibrated σ (with the reported sensitivity) is the target to 0.2 %, never above."""
    proto = make_protocol(
        "privdpr", epsilon=1.0, delta=1e-5, noise_calibration="accountant", accountant="pld"
    )
    plan = proto.plan(2708)
    mu = math.sqrt(plan.steps) * plan.sensitivity / plan.sigma
    assert 0.998 <= gaussian_epsilon(mu, 1e-5) <= 1.0
    assert plan.epsilon == pytest.approx(1.0, rel=1e-6) and plan.epsilon <= 1.0
    # far less noise than the paper's calibration of the same ε
    paper = make_protocol("privdpr", epsilon=1.0, delta=1e-5).plan(2708)
    assert plan.sigma < paper.sigma / 10


@pytest.mark.parametrize("eps", PAPER_GRID)
def test_report_states_the_sound_figure_beside_the_papers(eps):
    proto = make_protocol("privdpr", epsilon=eps, delta=1e-5)
    report = proto.privacy_report(n=2708)
    plan = proto.plan(2708)
    assert report.unit == "node" and report.paper_epsilon == pytest.approx(eps, rel=1e-9)
    assert report.epsilon == plan.epsilon_rdp < eps  # the accountant is far tighter
    assert plan.epsilon_pld <= plan.epsilon_rdp
    assert plan.epsilon_basic <= eps  # strict: the corrected sensitivity fits S_∇/T
    part = report.parts[0]
    assert part["noise_multiplier"] * part["sensitivity"] == pytest.approx(plan.sigma)
    assert any("Factor 2" in n for n in report.notes) and "paper" in report.headline
    # The paper's layer rule: its own composition with the corrected sensitivity exceeds ε.
    loose = make_protocol("privdpr", epsilon=eps, delta=1e-5, strict_sensitivity=False)
    lplan = loose.plan(2708)
    assert lplan.layers == plan.layers - 1
    assert eps < lplan.epsilon_basic <= 2 * eps


# --- the model ----------------------------------------------------------------------------


def test_weight_normalisation_bounds_every_layer_by_one_over_s():
    gen = torch.Generator().manual_seed(0)
    ws = [torch.randn(128, 64, generator=gen, dtype=torch.float64)]
    ws += [torch.randn(64, 64, generator=gen, dtype=torch.float64) for _ in range(3)]
    ws[1][:, 0] *= 1e4  # ill-conditioned
    ws += [torch.randn(64, 1, generator=gen, dtype=torch.float64)]
    for scale in (1.5, 8.0):
        for w in dpr.normalised(ws, scale):
            spectral = float(torch.linalg.matrix_norm(w, ord=2))
            assert 1 / scale * (1 - 1e-9) <= spectral <= 1 / scale, (scale, w.shape)


def test_per_pair_gradient_is_within_the_theorem_bound():
    """Theorem 4.2: ‖∂𝓛(v_i, v_j)/∂V‖₂ ≤ M·s^{−K} for random V, W and biases, worst-case
    degrees included (d^in = N−1, d^out = 1), and a walk back to its start (i = j)."""
    n, r, d, gamma = 40, 6, 5, 0.85
    rng = np.random.default_rng(0)
    for scale, layers in ((1.5, 2), (2.0, 3), (8.0, 4)):
        bound = dpr.m_constant(n, gamma) * scale ** (-layers)
        worst = 0.0
        for trial in range(60):
            gen = torch.Generator().manual_seed(trial)
            v, ws, bs = dpr.init_params(n, r, d, layers, gen)
            v = (v * 40).requires_grad_(True)
            bs = [torch.randn(b.shape, generator=gen, dtype=torch.float64) * 3 for b in bs]
            weights = dpr.normalised(ws, scale)
            i, j = (3, 3) if trial % 5 == 0 else tuple(rng.integers(0, n, 2))
            d_out = 1.0 if trial % 2 else float(rng.integers(1, n))
            d_in = float(n - 1) if trial % 3 else float(rng.integers(1, n))
            f = dpr.pagerank_net(v[[i, j]], weights, bs)
            degs = torch.tensor([d_out, d_in], dtype=torch.float64)
            loss = dpr.pair_loss(f[0], f[1], degs[0], degs[1], gamma, n)
            (grad,) = torch.autograd.grad(loss, v)
            worst = max(worst, float(torch.linalg.vector_norm(grad)))
        assert worst <= bound, (scale, layers, worst, bound)
        assert worst > 0


def test_per_pair_gradient_reaches_a_quarter_of_the_sigmoid_bound():
    """The bound is tight enough to catch a wrong normalisation: with aligned rank-1 weights
    and every pre-activation at 0 (σ' = 1/4 on each layer), d^out = 1 and d^in = N − 1, the
    gradient is over a fifth of M·(4s)^{−K} (the theorem's bound with sigmoid's slope) and
    never above it; weights normalised to 2/s instead of 1/s break the bound."""
    n, r, d, gamma = 40, 6, 5, 0.85
    for scale, layers in ((2.0, 3), (8.0, 4), (8.0, 6)):
        tight = dpr.m_constant(n, gamma) * (4 * scale) ** (-layers)
        shapes = [(r, d)] + [(d, d)] * (layers - 2) + [(d, 1)]
        ws = [torch.zeros(shape, dtype=torch.float64) for shape in shapes]
        for w in ws:
            w[0, 0] = 1.0
        for wrong, limit in ((1.0, tight), (2.0, None)):
            weights = [w * wrong for w in dpr.normalised(ws, scale)]
            bs, x = [], torch.zeros(1, r, dtype=torch.float64)
            for w in weights:  # the bias that puts this layer's pre-activation at 0
                bs.append(-(x @ w)[0])
                x = torch.sigmoid(x @ w + bs[-1])
            v = torch.zeros(2, r, dtype=torch.float64, requires_grad=True)
            f = dpr.pagerank_net(v, weights, bs)
            assert torch.allclose(f, torch.full_like(f, 0.5))
            loss = dpr.pair_loss(f[0], f[1], 1.0, float(n - 1), gamma, n)
            (grad,) = torch.autograd.grad(loss, v)
            norm = float(torch.linalg.vector_norm(grad))
            if limit is not None:
                assert 0.2 * tight < norm <= tight, (scale, layers, norm / tight)
            else:
                assert norm > tight, (scale, layers, norm / tight)


def _step_plan(proto, n: int, steps: int) -> dpr.Plan:
    return replace(proto.plan(n), steps=steps)


def test_only_v_receives_noise(small):
    """One step from the same start: W and the biases come out bit-identical with and
    without noise (their update is the clean gradient), V does not."""
    graph, _ = small
    proto = make_protocol("privdpr", epsilon=1.0, **FAST)
    adj = dpr.consenting_adjacency(graph.edges, np.ones(graph.num_nodes, bool), graph.num_nodes)
    plan = _step_plan(proto, graph.num_nodes, 1)
    noisy = dpr.train(adj, plan, proto.p, seed=3, noise=True, sample=False)
    clean = dpr.train(adj, plan, proto.p, seed=3, noise=False, sample=False)
    assert noisy.pairs == clean.pairs > 0
    for a, b in zip(noisy.weights, clean.weights, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(noisy.v, clean.v)


def test_noise_has_std_sigma_over_b_on_every_entry_of_v():
    """(Σ∇ + N(0, σ²))/B: per-entry mean Σ∇/B and std σ/B (99.9 % bands over 400k entries; a
    std off by 1 % fails), every row noised, also rows with a zero gradient."""
    gen = torch.Generator().manual_seed(1)
    sigma, pairs = 303.94, 512
    clean = torch.zeros(4000, 100, dtype=torch.float64)
    clean[:10] = 5.0
    noisy, noise = dpr.noisy_v_gradient(clean, sigma, pairs, gen)
    resid = (noisy - clean / pairs).numpy().ravel()
    np.testing.assert_allclose(noisy - noise, clean / pairs, atol=1e-12)
    k = resid.size
    sd = sigma / pairs
    assert abs(resid.mean()) < 3.3 * sd / math.sqrt(k)
    assert abs(resid.std() / sd - 1) < 3.3 / math.sqrt(2 * k)  # ≈ 0.0037
    assert bool((noise != 0).all())
    quiet, none = dpr.noisy_v_gradient(clean, 0.0, pairs, gen)
    assert torch.equal(quiet, clean / pairs) and not none.any()


def test_walk_pairs_follow_the_dense_transition_matrix():
    """Tails after k steps from a start are distributed as row `start` of P^k (P = D⁻¹A):
    every step's frequencies within 4.5 standard errors; heads are the start; a node without
    neighbours starts no walk."""
    edges = np.array([[0, 1], [1, 2], [2, 0], [2, 3], [3, 4]])
    n = 6  # node 5 is isolated
    adj = dpr.consenting_adjacency(edges, np.ones(n, bool), n)
    steps, batch, walks, length = 400, 6, 100, 4
    starts = np.tile(np.arange(batch), (steps, 1))
    heads, tails, taken = dpr.walk_pairs(
        adj.indptr, adj.indices, starts, walks, length, np.random.default_rng(0)
    )
    assert heads.shape == tails.shape == taken.shape == (steps, batch * walks, length)
    is5 = heads == 5
    assert not taken[is5].any() and taken[~is5].all()
    dense = adj.toarray()
    p = dense / np.maximum(dense.sum(1, keepdims=True), 1)
    for start in range(5):
        sel = heads[..., 0] == start
        count = int(sel.sum())
        for k in range(length):
            got = np.bincount(tails[..., k][sel], minlength=n) / count
            want = np.linalg.matrix_power(p, k + 1)[start]
            se = np.sqrt(want * (1 - want) / count) + 1e-12
            assert (np.abs(got - want) <= 4.5 * se + 1e-12).all(), (start, k, got, want)
        assert (dense[start, tails[..., 0][sel]] == 1).all()


def test_transition_counts_match_a_dense_reference():
    rng = np.random.default_rng(2)
    samples = rng.integers(0, 7, size=(30, 7)).astype(np.int32)
    dense = np.zeros((7, 7))
    for t in range(30):
        np.add.at(dense, (np.arange(7), samples[t]), 1)
    s = dpr.transition_counts(samples, 7)
    np.testing.assert_array_equal(s.toarray(), dense)
    assert (dense.sum(1) == 30).all()
    mx = dpr.symmetrised_scores(s, "max").toarray()
    sm = dpr.symmetrised_scores(s, "sum").toarray()
    off = ~np.eye(7, dtype=bool)
    np.testing.assert_array_equal(mx[off], np.maximum(dense, dense.T)[off])
    np.testing.assert_array_equal(sm[off], (dense + dense.T)[off])
    assert not mx.diagonal().any() and not sm.diagonal().any()
    pairs = int((np.triu(np.maximum(dense, dense.T), 1) > 0).sum())
    assert dpr.edge_budget(dpr.symmetrised_scores(s, "max"), 2.0) == round(pairs / 2)


@pytest.mark.parametrize("rounds", [dpr.REJECTION_ROUNDS, 0])
def test_transition_sampler_draws_from_the_softmax(rounds):
    """j ~ softmax_j(V_i·V_j) (diagonal included), by rejection with the exact fallback
    (rounds > 0; the peaked rows here need both) or by the fallback alone (rounds = 0):
    per-group frequencies within 4.5 standard errors of the dense softmax."""
    base = torch.tensor([[2.0, 0.0], [0.0, 1.5], [-1.0, -1.0], [0.3, 0.2]], dtype=torch.float64)
    copies = 250
    v = base.repeat_interleave(copies, dim=0)  # 4 groups of identical rows
    group = np.repeat(np.arange(4), copies)
    logits = (base @ base.T).numpy()
    want = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)  # per group (equal sizes)
    gen = torch.Generator().manual_seed(5)
    counts = np.zeros((4, 4))
    fallback = 0
    calls = 60
    for _ in range(calls):
        j, rows = dpr.sample_transitions(v, gen, rounds=rounds)
        fallback += rows
        np.add.at(counts, (group, group[j.numpy()]), 1)
    total = copies * calls
    got = counts / total
    se = np.sqrt(want * (1 - want) / total)
    assert (np.abs(got - want) <= 4.5 * se).all(), (got, want)
    if rounds:
        assert 0 < fallback < calls * 4 * copies  # both paths taken
    else:
        assert fallback == calls * 4 * copies


def _scores(n: int, density: float, seed: int) -> sp.csr_matrix:
    m = sp.random(n, n, density=density, random_state=seed, format="csr")
    m.data = np.ceil(m.data * 20)
    return dpr.symmetrised_scores(m, "max")


@pytest.mark.parametrize("first_stage", ["paper", "code"])
def test_assembly_gives_the_requested_edges(first_stage):
    scores = _scores(60, 0.2, 1)
    rows_with_scores = np.diff(scores.indptr) > 0
    for budget in (0, 100, 250):
        edges, first = dpr.assemble(scores, budget, np.random.default_rng(4), first_stage)
        assert (edges[:, 0] < edges[:, 1]).all() and len(np.unique(edges, axis=0)) == len(edges)
        assert (scores[edges[:, 0], edges[:, 1]] > 0).all()  # only scored pairs
        assert len(edges) == max(budget, first)
        deg = np.bincount(edges.ravel(), minlength=60)
        assert (deg[rows_with_scores] >= 1).all()  # no isolated node with scores
        assert first <= rows_with_scores.sum()
        again, _ = dpr.assemble(scores, budget, np.random.default_rng(4), first_stage)
        np.testing.assert_array_equal(edges, again)
    everything = sp.triu(scores, k=1).nnz
    edges, _ = dpr.assemble(scores, 10 * everything, np.random.default_rng(0), first_stage)
    assert len(edges) == everything


def test_paper_first_stage_gives_every_node_a_new_edge():
    """Paper: node i draws among its non-neighbours, so each node with one adds an edge;
    on a complete score matrix the first stage has exactly N edges."""
    n = 12
    full = sp.csr_matrix(np.ones((n, n)) - np.eye(n))
    edges, first = dpr.assemble(full, 0, np.random.default_rng(0), "paper")
    assert first == n == len(edges)


def test_second_stage_draws_in_proportion_to_the_scores():
    """One draw is index i with probability w_i/Σw (4.5 standard errors over 20000 seeds);
    asking for all (or more) gives every index once."""
    w = np.array([1.0, 2.0, 5.0, 0.5, 1.5])
    runs = 20000
    hits = np.zeros(w.size)
    for seed in range(runs):
        (i,) = dpr.weighted_without_replacement(w, 1, np.random.default_rng(seed))
        hits[i] += 1
    want = w / w.sum()
    assert (np.abs(hits / runs - want) <= 4.5 * np.sqrt(want * (1 - want) / runs)).all()
    two = dpr.weighted_without_replacement(w, 2, np.random.default_rng(0))
    assert len(set(two.tolist())) == 2
    assert sorted(dpr.weighted_without_replacement(w, 9, np.random.default_rng(0))) == list(
        range(w.size)
    )


# --- the learned V ignores the graph --------------------------------------------------------


def test_learned_v_does_not_depend_on_the_graph(small):
    """PrivDPR's V after training on the graph equals, to 1e-12 of its size, the V trained with
    the same initialisation and noise on the empty graph (the diagnostic; on Cora it is equal
    bit for bit), and so does a run on an independent random graph; V moves (the noise's
    random walk) but not because of the graph. DPR (No DP) leaves V at its initialisation."""
    graph, split = small
    rel = _release("privdpr", graph, split, seed=0, epsilon=1.0, dpr_diagnostics=True)
    diag = rel.stats["diagnostics"]
    assert diag["non_private"] and diag["walk_pairs"] > 0 and diag["empty_steps"] == 0
    assert diag["v_graph_effect"] < 1e-12 and diag["v_moved"] > 0.01
    assert diag["signal_to_noise"] < 1e-12 and diag["f_spread"] < 1e-12
    n = graph.num_nodes
    proto = make_protocol("privdpr", epsilon=1.0, **FAST)
    plan = proto.plan(n)
    er = synthetic_graph(n=n, classes=3, avg_degree=6, d=8, seed=9)
    trained = [
        dpr.train(dpr.consenting_adjacency(g.edges, np.ones(n, bool), n), plan, proto.p, 0)
        for g in (graph, er)
    ]
    np.testing.assert_allclose(trained[0].v, trained[1].v, rtol=0, atol=1e-12)
    np.testing.assert_allclose(rel.x, trained[0].v.astype(np.float32))
    nodp = _release("dpr-nodp", graph, split, seed=0, dpr_diagnostics=True)
    nodp = nodp.stats["diagnostics"]
    assert nodp["v_moved"] < 1e-6 and nodp["v_graph_effect"] < 1e-6


def test_one_seed_gives_one_graph_whatever_s_d_and_epsilon(small):
    """Why Tables 2-3 cannot show an effect of s or d, nor Figs. 2-5 one of ε: V's update is
    Adam on noise (Adam is invariant to the noise's scale), the paper's σ does not depend on s
    or d, and W never reaches V. For one seed the synthetic graph is the same edge set at every
    s, d and ε (V itself at s and d too, bit for bit); another seed gives another graph."""
    graph, split = small
    base = _release("privdpr", graph, split, seed=5, epsilon=3.2)
    for params in ({"wn_scale": 2.0}, {"dpr_hidden": 32}, {"wn_scale": 4.0, "dpr_hidden": 16}):
        other = _release("privdpr", graph, split, seed=5, epsilon=3.2, **params)
        assert other.fingerprint() == base.fingerprint(), params
    for eps in (0.1, 1.0):
        other = _release("privdpr", graph, split, seed=5, epsilon=eps)
        np.testing.assert_array_equal(other.edges, base.edges)
    assert not np.array_equal(_release("privdpr", graph, split, seed=6).edges, base.edges)


def test_the_control_sees_a_graph_when_there_is_one(small):
    """The same diagnostic on a model whose gradient is not swamped (one weight matrix, no
    noise, a large learning rate: not PrivDPR's calibration) reports a graph effect: the
    control can fail."""
    graph, split = small
    rel = _release(
        "dpr-nodp", graph, split, preset_sensitivity=1e12, dpr_lr=0.05, dpr_diagnostics=True
    )
    assert rel.stats["layers_K"] == 1
    assert rel.stats["diagnostics"]["v_graph_effect"] > 1e-3


# --- errors, releases, the harness ---------------------------------------------------------


@pytest.mark.parametrize(
    "params,needle",
    [
        ({"delta": 1.0}, "delta must be in (0, 1)"),
        ({"delta": 0.0}, "delta must be in (0, 1)"),
        ({"wn_scale": 1.0}, "wn_scale must be in > 1"),
        ({"symmetrize": "min"}, "unknown symmetrize"),
    ],
)
def test_bad_parameters_are_one_line_errors(params, needle):
    with pytest.raises(ProtocolParameterError) as exc:
        make_protocol("privdpr", **params)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


def test_unreachable_epsilon_and_tiny_graphs_are_one_line_errors():
    with pytest.raises(ProtocolParameterError, match="needs ε/T < 1") as exc:
        make_protocol("privdpr", epsilon=50.0).plan(100)  # T = 30
    assert "\n" not in str(exc.value)
    # RDP's conversion floors ε (≈ 0.015 at δ = 1e-10 with its largest order, 1024); PLD not.
    tiny = dict(epsilon=1e-3, delta=1e-10, noise_calibration="accountant")
    with pytest.raises(ProtocolParameterError, match="unreachable by the RDP.*--accountant pld"):
        make_protocol("privdpr", **tiny).plan(2708)
    assert make_protocol("privdpr", accountant="pld", **tiny).plan(2708).epsilon <= 1e-3
    with pytest.raises(ProtocolParameterError, match="fewer than dpr_node_batch"):
        make_protocol("privdpr").plan(10)


def test_nodes_must_trust_the_curator(small):
    graph, split = small
    with pytest.raises(ConfigError, match="uploads raw data"):
        RunConfig(protocol="privdpr", dataset=SMALL).validate()
    strategy = make_protocol("privdpr", **FAST)
    nobody = _collect(strategy, graph, refusing=range(graph.num_nodes))
    with pytest.raises(ValueError, match="no node uploaded") as exc:
        strategy.server_step(0, nobody, curator_for(graph, split), 0)
    assert "\n" not in str(exc.value)


def test_refusing_nodes_links_are_not_used(small):
    """The mechanism sees the subgraph induced by the consenting nodes: refusing nodes'
    links (reported by their neighbours) change nothing compared with a graph without them."""
    graph, split = small
    refusing = {0, 7, 33}
    a = _release("privdpr", graph, split, seed=2, refusing=refusing)
    keep = ~np.isin(graph.edges, list(refusing)).any(axis=1)
    cut = Graph(graph.name, graph.edges[keep], graph.x, graph.y, graph.feature_domain)
    b = _release("privdpr", cut, split, seed=2, refusing=refusing)
    assert a.fingerprint() == b.fingerprint()
    assert a.stats["uploaded_nodes"] == graph.num_nodes - 3


def test_release_is_seeded_and_reports_its_mechanism(small):
    graph, split = small
    a = _release("privdpr", graph, split, seed=3, epsilon=2.0)
    b = _release("privdpr", graph, split, seed=3, epsilon=2.0)
    c = _release("privdpr", graph, split, seed=4, epsilon=2.0)
    assert a.kind == "graph" and a.fingerprint() == b.fingerprint() != c.fingerprint()
    assert a.num_nodes == graph.num_nodes and a.x.shape == (graph.num_nodes, 8)
    assert a.x.dtype == np.float32
    st = a.stats
    assert st["steps_T"] == 20 and st["pair_batch_B"] == 16 * 2 * 16
    assert a.num_edges == max(st["edge_budget"], st["first_stage_edges"])
    # nothing computed from the graph or W outside the mechanism, unless asked for
    assert not {"diagnostics", "walk_pairs", "empty_steps"} & set(st)
    part = a.privacy.parts[0]
    assert part["T"] == 20 and part["epsilon_paper"] == pytest.approx(2.0, rel=1e-9)
    bare = _release("privdpr", graph, split, seed=3, epsilon=2.0, dpr_features="none")
    assert bare.x.shape == (graph.num_nodes, 0)
    np.testing.assert_array_equal(bare.edges, a.edges)


def _config(protocol: str, **kw) -> RunConfig:
    base = dict(
        protocol=protocol, dataset=SMALL, backend="local", trust_curator=True, epochs=5, **FAST
    )
    return RunConfig(**{**base, **kw}).validate()


def test_pipeline_runs_privdpr_end_to_end():
    record = run(_config("privdpr", epsilon=1.0, delta=1e-5))
    assert record["release_kind"] == "graph" and 0.0 <= record["accuracy"]["test"] <= 1.0
    privacy = record["privacy"]
    assert privacy["unit"] == "node" and privacy["paper_epsilon"] == pytest.approx(1.0)
    assert privacy["epsilon"] < 1.0 and record["release"]["uploaded_nodes"] == 160
    assert record["graph"]["synthetic"]["features"] == 8
    bare = run(_config("dpr-nodp", metrics="none"))
    assert "accuracy" not in bare and bare["privacy"]["epsilon"] == math.inf
    with pytest.raises(ConfigError, match="delta must be in"):
        _config("privdpr", delta=2.0)


@pytest.mark.slow
@pytest.mark.engine
def test_flower_backend_releases_what_the_local_backend_releases():
    _, flower = local_and_flower(_config("privdpr", seed=4))
    assert flower["release_kind"] == "graph"
