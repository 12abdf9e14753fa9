"""DP-SAGE (protocols/central/dp_sage.py): one node removes at most K + 2 examples and changes
no other (the group the accounting charges), the accounting against dp-accounting, the noise's
law, a run through the harness, and the audit row (slow)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols.central import dp_sage as ds
from ldpgraph.protocols.params import Params
from ldpgraph.simulation.config import RunConfig
from ldpgraph.simulation.pipeline import run

SMALL = "synthetic:n=300,classes=3,d=16,avg_degree=6,seed=2"


def _params(**kw) -> Params:
    p = {param.name: param.default for param in ds.PARAMS}
    p.update(kw)
    return Params(p)


def _random_graph(n: int, m: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pairs = {tuple(sorted(rng.choice(n, 2, replace=False))) for _ in range(m)}
    return np.array(sorted(pairs), dtype=np.int64)


def _examples(edges, x, up, slots, k, key=7, complete_only=True):
    """{example slot: its input row (x_u ‖ aggregate)} of one world, as dp_sage builds them
    (``complete_only=False``: the naive rule, every present node's kept neighbourhood)."""
    n = len(up)
    both = np.concatenate([edges, edges[:, ::-1]])  # each node's report: its neighbours
    complete, kept = ds.complete_nodes(both, up, k, key)
    if not complete_only:
        complete = up.copy()
    xs = x * up[:, None]
    agg = ds.neighbour_mean(xs, kept, n)
    present = up[slots]
    nodes, holds = ds.example_rows(slots, present, complete)
    out = {}
    for i in np.flatnonzero(holds):
        a = agg[nodes[i]] if i >= len(slots) else np.zeros(x.shape[1], np.float32)
        out[int(i)] = np.concatenate([xs[nodes[i]], a])
    return out


@pytest.mark.parametrize("k", [1, 2, 4])
def test_one_node_removes_at_most_k_plus_2_examples_and_changes_no_other(k):
    """For every present node v of a random graph (80 % upload, 70 % training slots): the
    world without v holds a subset of the examples of the world with v, each identical, and
    at most K + 2 fewer (docs/privacy/sage.md, Lemma). The naive rule (every present node's
    kept neighbourhood, complete or not) changes an example in place: the check of the check."""
    n = 60
    edges = _random_graph(n, 80, k)
    rng = np.random.default_rng(10 + k)
    x = rng.random((n, 4)).astype(np.float32)
    up = rng.random(n) < 0.8
    slots = np.flatnonzero(rng.random(n) < 0.7)
    most, naive_changed = 0, 0
    for v in np.flatnonzero(up):
        without = up.copy()
        without[v] = False
        a = _examples(edges, x, up, slots, k)
        b = _examples(edges, x, without, slots, k)
        assert set(b) <= set(a)
        assert all(np.array_equal(a[i], b[i]) for i in b)
        lost = len(a) - len(b)
        assert lost <= ds.group_size(k)
        most = max(most, lost)
        na = _examples(edges, x, up, slots, k, complete_only=False)
        nb = _examples(edges, x, without, slots, k, complete_only=False)
        naive_changed += sum(not np.array_equal(na[i], nb[i]) for i in nb if i in na)
    assert most >= 3  # the bound is met by more than a node's own two examples
    assert naive_changed > 0


def test_kept_degree_is_bounded_and_complete_nodes_read_only_mutual_proposals():
    edges = _random_graph(50, 200, 3)
    up = np.ones(50, dtype=bool)
    pairs = np.concatenate([edges, edges[:, ::-1]])
    complete, kept = ds.complete_nodes(pairs, up, 3, 5)
    deg = np.bincount(kept[:, 0], minlength=50)
    assert deg.max() <= 3 and 0 < complete.sum() < 50
    prop = ds.proposals(pairs, 3, 5)
    proposed = np.bincount(pairs[prop, 0], minlength=50)
    assert (deg[complete] == proposed[complete]).all()  # complete: every proposal kept


@pytest.mark.parametrize("k, q_batch", [(1, 64), (3, 32)])
def test_accounting_is_dp_accountings_group_subsampled_gaussian(k, q_batch):
    """The headline ε recomputed with dp-accounting's RdpAccountant directly: T steps of the
    Poisson-subsampled Gaussian at rate 1 − (1 − q)^D, multiplier z/D, D = K + 2; it equals
    the request; and charging one example (D = 1) for the same noise would claim less."""
    from dp_accounting import dp_event, rdp

    p = _params(epsilon=4.0, delta=1e-5, sage_max_degree=k, sage_batch_size=q_batch)
    plan = ds.plan_of(150, p)
    d = k + 2
    assert plan.rows == d and plan.q == pytest.approx(q_batch / 300)
    assert plan.steps == p.sage_epochs * math.ceil(300 / q_batch)
    rate = 1 - (1 - plan.q) ** d
    acc = rdp.RdpAccountant()
    step = dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(plan.noise / d))
    acc.compose(dp_event.SelfComposedDpEvent(step, plan.steps))
    assert acc.get_epsilon(1e-5) == pytest.approx(4.0, rel=1e-3)
    assert ds.plan_epsilon(plan, 1e-5, "rdp") == pytest.approx(4.0, rel=1e-3)
    one = rdp.RdpAccountant()
    one.compose(
        dp_event.SelfComposedDpEvent(
            dp_event.PoissonSampledDpEvent(plan.q, dp_event.GaussianDpEvent(plan.noise)),
            plan.steps,
        )
    )
    assert one.get_epsilon(1e-5) < 4.0 / 2


def test_noise_has_the_calibrated_std_and_zero_mean():
    """An empty batch's release is the noise alone: over 40 000 coordinates its sample
    variance lies in the 99.9 % chi-square interval of (z·C)² and its mean within 4 standard
    errors of 0; the group-blind std (z/D·C, one example's calibration) falls outside."""
    import torch
    from scipy import stats

    from ldpgraph.protocols.central.gap_node import _mlp, noisy_step

    p = _params(epsilon=2.0, delta=1e-5, sage_max_degree=2, sage_clip=0.5)
    plan = ds.plan_of(400, p)
    std = plan.noise * p.sage_clip
    gen = torch.Generator().manual_seed(3)
    params = _mlp([100, 200, 3], gen, "cpu")
    batch = (torch.zeros(0, 100), torch.zeros(0, dtype=torch.int64))
    noise = torch.cat([v.flatten() for v in noisy_step(params, batch, 0.5, std, gen).values()])
    noise = noise.double().numpy()
    m = len(noise)
    assert m > 20_000
    lo, hi = (stats.chi2.ppf(a, m - 1) / (m - 1) for a in (5e-4, 1 - 5e-4))
    var = noise.var(ddof=1)
    assert lo * std**2 <= var <= hi * std**2
    assert abs(noise.mean()) <= 4 * std / math.sqrt(m)
    blind = std / plan.rows
    assert not lo * blind**2 <= var <= hi * blind**2


def test_release_is_seeded_node_level_and_silent_at_training_nodes():
    cfg = dict(protocol="dp-sage", dataset=SMALL, backend="local", trust_curator=True)
    cfg.update(sage_epochs=3, seeded=True)
    a = run(RunConfig(**cfg).validate())
    b = run(RunConfig(**cfg).validate())
    assert a["fingerprint"] == b["fingerprint"]
    assert a["accuracy"]["test"] == b["accuracy"]["test"]
    privacy = a["privacy"]
    assert privacy["unit"] == "node" and privacy["epsilon"] == pytest.approx(8.0, rel=1e-3)
    assert privacy["parts"][0]["group"] == ds.group_size(3)
    assert 0 < a["release"]["subgraph_examples"] <= a["release"]["training_nodes"]


def test_training_nodes_carry_no_prediction_and_progress_is_said():
    from ldpgraph.protocols import progress
    from ldpgraph.protocols.base import RoundResult
    from ldpgraph.protocols.registry import make_protocol
    from ldpgraph.protocols.types import NodeView
    from ldpgraph.simulation.datasets import synthetic_graph
    from ldpgraph.simulation.splits import split_for

    from ...support.central import curator_for

    graph = synthetic_graph(n=120, classes=3, avg_degree=6, d=8, seed=3)
    split = split_for(graph.num_nodes, 0)
    strategy = make_protocol("dp-sage", sage_epochs=2, sage_max_degree=2)
    reports = {
        v: strategy.client_step(
            0,
            NodeView(v, graph.neighbors(v), graph.x[v], graph.num_nodes, graph.feature_domain),
            strategy.config(),
            0,
        )
        for v in range(graph.num_nodes)
    }
    said: list[str] = []
    with progress.listening(said.append):
        rel = strategy.server_step(0, RoundResult(reports), curator_for(graph, split), 0)
    assert "dp-sage epoch 2/2" in said
    assert (rel.model.predict(split.train) == -1).all()
    assert (rel.model.predict(split.test) >= 0).all()
    assert rel.privacy.epsilon == pytest.approx(8.0, rel=1e-3)


def test_bad_input_is_one_line_error():
    with pytest.raises(ValueError, match="at least one training slot"):
        ds.plan_of(0, _params())


@pytest.mark.slow
def test_audit_row_passes_and_a_planted_understatement_fails():
    """`ldpgraph audit --central dp-sage`: the honest claim passes, which the audit grants only
    when its planted twin (a run at ε = 100 claiming the honest headline) fails."""
    from ldpgraph.simulation import audit_central as ac
    from ldpgraph.simulation.audit_central_cases import CASES

    honest = ac.audit_case(CASES["dp-sage"], 1e-2, 150)
    assert honest.verdict == "PASS" and honest.unit == "node", honest.reason
    assert honest.claimed_epsilon == pytest.approx(0.5, rel=1e-3)
    assert honest.planted_verdict == "FAIL" and honest.planted_lower_bound > 0.5
