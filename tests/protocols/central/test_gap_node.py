"""GAP at node level (protocols/central/gap_node*.py): the degree bound's stability, the
per-hop node sensitivity √D, the composed accounting against dp-accounting, the edge-level
calibration's under-statement, and a run through the harness."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols.central import gap_node_privacy as gnp
from ldpgraph.protocols.central.gap import adjacency, normalise_rows
from ldpgraph.protocols.central.gap_node import bounded_edges
from ldpgraph.protocols.params import Params
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.simulation.config import RunConfig
from ldpgraph.simulation.pipeline import run

SMALL = "synthetic:n=300,classes=3,d=16,avg_degree=6,seed=2"


def _random_graph(n: int, m: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pairs = {tuple(sorted(rng.choice(n, 2, replace=False))) for _ in range(m)}
    return np.array(sorted(pairs), dtype=np.int64)


def _both(edges: np.ndarray) -> np.ndarray:
    """Every node's report when each lists its neighbours in ``edges``: both directions."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return np.concatenate([edges, edges[:, ::-1]])


def _kept(edges, up, d, seed=7):
    return {tuple(e) for e in bounded_edges(_both(edges), up, d, seed)}


@pytest.mark.parametrize("d", [1, 3])
def test_proposals_rank_each_nodes_own_report_not_the_confirmed_edges(d):
    """The server holds each uploaded node's own report (``UploadedGraph.reported``) and keeps
    as edges only the pairs both ends reported. Proposals ranked over the node's own report
    make one node's absence move only edges at that node. Ranked over the confirmed edges (the
    former code), a neighbour u of an absent v loses v from its list and proposes to its next
    neighbour: edges away from v appear (the check of the check)."""
    n = 40
    edges = _random_graph(n, 150, 10 + d)
    rng = np.random.default_rng(d)
    up = rng.random(n) < 0.9

    def server_world(up: np.ndarray, naive: bool) -> set:
        reported = _both(edges)
        reported = reported[up[reported[:, 0]]]  # only uploaded nodes' reports reach the server
        if naive:
            confirmed = edges[up[edges[:, 0]] & up[edges[:, 1]]]
            reported = _both(confirmed)
        return {tuple(e) for e in bounded_edges(reported, up, d, 7)}

    moved_away = 0
    for naive in (False, True):
        base = server_world(up, naive)
        for v in np.flatnonzero(up):
            without = up.copy()
            without[v] = False
            diff = base ^ server_world(without, naive)
            away = sum(v not in e for e in diff)
            if naive:
                moved_away += away
            else:
                assert away == 0 and len(diff) <= d
    assert moved_away > 0


@pytest.mark.parametrize("d", [1, 3, 5])
def test_degree_bound_holds_and_one_upload_moves_only_its_own_edges(d):
    """Every kept degree ≤ D; toggling any one node's upload (same reports, same priorities)
    adds or removes only edges at that node, at most D of them: no other neighbourhood is
    re-drawn (brute force over every node of a random graph (average degree 7.5))."""
    n = 40
    edges = _random_graph(n, 150, d)
    rng = np.random.default_rng(d)
    up = rng.random(n) < 0.8
    base = _kept(edges, up, d)
    deg = np.bincount(np.array(sorted(base), dtype=np.int64).ravel(), minlength=n)
    assert deg.max() <= d and (d == 1 or len(base) > 0)
    for v in range(n):
        flip = up.copy()
        flip[v] = not flip[v]
        diff = base ^ _kept(edges, flip, d)
        assert all(v in e for e in diff)
        assert len(diff) <= d


def test_priorities_are_per_pair_not_per_list_position():
    """A pair's priority is the same whatever else is in the edge list, so an edge between two
    absent nodes (in the list or not, first or not) changes no kept edge."""
    from ldpgraph.protocols.central.gap_node import pair_priorities

    src, dst = np.array([3, 5, 7]), np.array([4, 6, 8])
    full = pair_priorities(src, dst, 9)
    assert (pair_priorities(src[1:], dst[1:], 9) == full[1:]).all()
    assert (pair_priorities(src, dst, 10) != full).all()
    edges = _random_graph(30, 90, 4)
    up = np.ones(30, dtype=bool)
    extra = np.vstack([[[0, 29]], edges])  # an edge between absent nodes, first in the list
    up0 = up.copy()
    up0[[0, 29]] = False
    assert _kept(extra, up0, 3) == _kept(edges, up0, 3)


def test_a_node_moves_at_most_D_other_rows_by_a_unit_vector_sqrt_D_per_hop():
    """The node-level sensitivity of one hop, its own row aside: brute force over every node's
    upload on a graph where some node reaches its bound, worst case exactly √D."""
    n, d = 30, 4
    # Node 0 has exactly D leaves (all kept: the worst case); node 5 is far over the bound.
    star = [(0, j) for j in range(1, d + 1)] + [(5, j) for j in range(6, 20)]
    rand = [tuple(e) for e in _random_graph(n, 60, 3) if min(e) > d]
    edges = np.unique(np.sort(np.array(star + rand), axis=1), axis=0)
    h = normalise_rows(np.random.default_rng(0).normal(size=(n, 6)))
    worst = 0.0
    for v in range(n):
        up1 = np.ones(n, dtype=bool)
        up0 = up1.copy()
        up0[v] = False
        a1 = adjacency(bounded_edges(_both(edges), up1, d, 11), n, up1)
        a0 = adjacency(bounded_edges(_both(edges), up0, d, 11), n, up0)
        moved = a1 @ h - a0 @ h
        moved[v] = 0.0  # the node's own row: its own DP-SGD example (docs/privacy/gap.md)
        rows = np.linalg.norm(moved, axis=1)
        assert rows.max() <= 1.0 + 1e-12
        assert np.count_nonzero(rows > 1e-12) <= d
        worst = max(worst, float(np.linalg.norm(moved)))
    assert worst == pytest.approx(gnp.node_sensitivity(d))


def _params(**kw) -> Params:
    from ldpgraph.protocols.central.gap_params import NODE_PARAMS

    p = {param.name: param.default for param in NODE_PARAMS}
    p.update(kw)
    return Params(p)


def test_composed_epsilon_is_dp_accounting_on_the_three_stages():
    """The calibrated z gives the request, recomputed directly with dp-accounting's RDP (full
    batches, q = 1, keep the accounting fast; the Poisson path is dpsgd's, tested there)."""
    from dp_accounting import dp_event, rdp

    p = _params(epsilon=8.0, gap_hops=2, gap_max_degree=10, gap_sgd_epochs=5)
    plan = gnp.NodePlan.of(200, p)
    assert plan.q == 1.0 and plan.steps == 5
    z = gnp.calibrate(8.0, 1e-5, plan, "rdp")
    sgd = dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), plan.steps)
    agg = dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(z), 2)
    acc = rdp.RdpAccountant()
    acc.compose(dp_event.ComposedDpEvent([sgd, agg, sgd]))
    assert acc.get_epsilon(1e-5) == pytest.approx(8.0, rel=1e-3)
    report = gnp.privacy_report("gap-node", p, slots=200)
    part = report.parts[0]
    assert report.epsilon == pytest.approx(8.0, rel=1e-3) and report.unit == "node"
    assert part["sigma"] == pytest.approx(z * math.sqrt(10))
    assert gnp.node_epsilon(z * 0.9, plan, 1e-5, "rdp") > 8.0  # less noise costs more
    big = gnp.NodePlan.of(1000, p)
    assert big.q == pytest.approx(0.256) and big.steps == 5 * 4


def test_calibrating_at_the_edge_sensitivity_understates_epsilon():
    """σ at gap-edge's √2 where one node moves √D: the true node-level ε is far above the
    request for D = 10, and equal to it at D = 2."""
    for d, factor in ((10, 1.3), (2, None)):
        p = _params(epsilon=4.0, gap_max_degree=d, gap_sgd_epochs=3)
        plan = gnp.NodePlan.of(100, p)
        true = gnp.epsilon_at_edge_calibration(4.0, 1e-5, plan, "rdp")
        if factor is None:
            assert true == pytest.approx(4.0, rel=1e-3)
        else:
            assert true > factor * 4.0


def test_release_is_seeded_node_level_and_silent_at_training_nodes():
    cfg = dict(protocol="gap-node", dataset=SMALL, backend="local", trust_curator=True)
    cfg.update(gap_sgd_epochs=3, seeded=True)
    a = run(RunConfig(**cfg).validate())
    b = run(RunConfig(**cfg).validate())
    assert a["fingerprint"] == b["fingerprint"]
    assert a["accuracy"]["test"] == b["accuracy"]["test"]
    privacy = a["privacy"]
    assert privacy["unit"] == "node" and privacy["epsilon"] == pytest.approx(8.0, rel=1e-3)
    assert privacy["parts"][0]["max_degree"] == 10


def test_training_nodes_carry_no_prediction_degree_is_bounded_and_progress_is_said():
    from ldpgraph.protocols.base import RoundResult
    from ldpgraph.protocols.types import NodeView
    from ldpgraph.simulation.datasets import synthetic_graph
    from ldpgraph.simulation.splits import split_for

    from ...support.central import curator_for

    graph = synthetic_graph(n=120, classes=3, avg_degree=6, d=8, seed=3)
    split = split_for(graph.num_nodes, 0)
    strategy = make_protocol("gap-node", gap_sgd_epochs=2, gap_max_degree=2)
    reports = {
        v: strategy.client_step(
            0,
            NodeView(v, graph.neighbors(v), graph.x[v], graph.num_nodes, graph.feature_domain),
            strategy.config(),
            0,
        )
        for v in range(graph.num_nodes)
    }
    from ldpgraph.protocols import progress

    said: list[str] = []
    with progress.listening(said.append):
        rel = strategy.server_step(0, RoundResult(reports), curator_for(graph, split), 0)
    assert {"encoder epoch 2/2", "aggregation hop 2/2", "classifier epoch 2/2"} <= set(said)
    assert (rel.model.predict(split.train) == -1).all()
    assert (rel.model.predict(split.test) >= 0).all()
    assert 0 < rel.stats["aggregated_edges"] <= graph.num_nodes  # ≤ n·D/2
    assert rel.privacy.epsilon == pytest.approx(8.0, rel=1e-3)


@pytest.mark.slow
def test_audit_row_passes_and_a_planted_understatement_fails():
    """`ldpgraph audit --central gap-node`: the honest claim passes, which the audit grants
    only when its planted twin (a run at ε = 100 claiming the honest headline) fails."""
    from ldpgraph.simulation import audit_central as ac
    from ldpgraph.simulation.audit_central_cases import CASES

    honest = ac.audit_case(CASES["gap-node"], 1e-2, 80)
    assert honest.verdict == "PASS" and honest.unit == "node", honest.reason
    assert honest.claimed_epsilon == pytest.approx(0.5, rel=1e-3)
    assert honest.planted_verdict == "FAIL" and honest.planted_lower_bound > 0.5


def test_closed_form_clipped_sum_equals_per_example_gradients():
    """The MLP's closed-form clipped sum (no B×d×h tensor) against vmap-of-grad clipping,
    with some examples clipped and some not."""
    import torch

    from ldpgraph.protocols.central import dpsgd
    from ldpgraph.protocols.central.gap_node import _mlp, clipped_sum, example_loss

    gen = torch.Generator().manual_seed(0)
    params = {k: v * 3 for k, v in _mlp([7, 5, 4, 3], gen, "cpu").items()}
    x = torch.randn(9, 7, generator=gen) * torch.linspace(0.01, 3, 9)[:, None]
    y = torch.randint(0, 3, (9,), generator=gen)
    ref, ref_norms = dpsgd.generic_clipped_sum(example_loss, params, (x, y), 0.5)
    leaves = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    got, norms = clipped_sum(leaves, (x, y), 0.5)
    assert (ref_norms > 0.5).any() and (ref_norms < 0.5).any()
    assert torch.allclose(norms, ref_norms, rtol=1e-4, atol=1e-6)
    for k in ref:
        assert torch.allclose(got[k], ref[k], rtol=1e-4, atol=1e-6), k
    empty, _ = clipped_sum(leaves, (x[:0], y[:0]), 0.5)
    assert all(float(v.abs().sum()) == 0.0 for v in empty.values())


def test_the_class_count_is_the_tasks_not_read_from_the_labels():
    """gap-node and dp-sage size their output layer by the task's public class count
    (``CuratorView.num_classes``, set by the pipeline from the data set), so a node holding
    the only label of the top class cannot change it; a view without it falls back to the
    labels the curator holds."""
    from ldpgraph.protocols.base import CuratorView

    labels = np.array([0, 1, -1, 1])
    train = np.array([0, 1, 3])
    assert CuratorView(4, 2, labels=labels, train_nodes=train, num_classes=5).classes() == 5
    assert CuratorView(4, 2, labels=labels, train_nodes=train).classes() == 2
