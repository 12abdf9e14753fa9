"""DPGGAN / DPGVAE's bounded training (protocols/central/dpggan_bounded*.py, the default): the
degree bound and the group size one edge can reach (exhaustively, every edge of random graphs
removed and every absent pair added), records that do not couple, the accounting against
dp-accounting, the clipped noisy sum's noise (statistical), and a release's proven headline."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ldpgraph.protocols.base import CuratorView
from ldpgraph.protocols.central import dpggan_bounded as db
from ldpgraph.protocols.central import dpggan_bounded_train as dbt
from ldpgraph.protocols.central.base import UploadedGraph
from ldpgraph.protocols.central.dpsgd import sgd_epsilon
from ldpgraph.protocols.graph import canonical_edges
from ldpgraph.protocols.registry import make_protocol


def _random_graph(n: int, rate: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < rate]
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def _records(edges: np.ndarray, n: int, d: int, salt: int) -> list[tuple]:
    """Each node's record as a comparable value: its slots and the edges among them."""
    slots, adj = db.ego_records(edges, n, d, salt)
    return [(tuple(slots[i]), adj[i].tobytes()) for i in range(n)]


@pytest.mark.parametrize(("n", "rate", "d", "seed"), [(14, 0.5, 2, 0), (16, 0.35, 3, 1),
                                                      (12, 0.8, 4, 2)])  # fmt: skip
def test_one_edge_changes_at_most_2d_plus_2_records(n, rate, d, seed):
    """Every edge removed and every absent pair added: G̃ keeps degrees ≤ D, changes in ≤ 3
    edges, and at most k = 2D + 2 ego records differ — and the bound is reached or nearly
    (so a wrong, larger reach would show)."""
    edges = _random_graph(n, rate, seed)
    salt = 12345 + seed
    base = _records(edges, n, d, salt)
    tilde = {tuple(e) for e in db.bounded_graph(edges, n, d, salt)}
    present = {tuple(e) for e in edges}
    worst = 0
    for u in range(n):
        for v in range(u + 1, n):
            other = [e for e in present if e != (u, v)] if (u, v) in present else [*present, (u, v)]
            other_e = canonical_edges(np.array(other, dtype=np.int64).reshape(-1, 2), n)
            other_tilde = db.bounded_graph(other_e, n, d, salt)
            assert np.bincount(other_tilde.ravel(), minlength=n).max() <= d
            assert len(tilde ^ {tuple(e) for e in other_tilde}) <= 3
            changed = sum(a != b for a, b in zip(base, _records(other_e, n, d, salt),
                                                 strict=True))  # fmt: skip
            assert changed <= db.group_size(d)
            worst = max(worst, changed)
    assert worst >= 3  # beyond the endpoints: the neighbours' records are reached too


def test_records_hold_the_bounded_ego_graph():
    edges = np.array([[0, 1], [0, 2], [1, 2], [2, 3]])
    slots, adj = db.ego_records(edges, 4, 3, salt=7)
    assert slots[0, 0] == 0 and set(slots[0, 1:3]) == {1, 2} and slots[0, 3] == -1
    pos = {int(v): i for i, v in enumerate(slots[0]) if v >= 0}
    assert adj[0, pos[1], pos[2]] == 1 and adj[0, pos[0], pos[1]] == 1  # the triangle's edge
    assert adj[0].sum() == 6  # three undirected edges in 0's ego graph
    assert adj[3].sum() == 2  # node 3: the star 3–2 only


def test_priorities_do_not_depend_on_the_graph():
    a, b = np.array([3, 5, 7]), np.array([1, 2, 9])
    assert np.array_equal(db.priorities(a, b, 1), db.priorities(a, b, 1))
    assert not np.array_equal(db.priorities(a, b, 1), db.priorities(a, b, 2))
    assert np.array_equal(db.priorities(a, b, 1), db.priorities(b, a, 1))  # symmetric
    assert db.priorities(a[:1], b[:1], 1)[0] == db.priorities(a, b, 1)[0]


def test_per_record_gradients_do_not_couple():
    """A record's gradient is the same in a batch as alone: nothing crosses records."""
    from torch.func import grad, vmap

    edges = _random_graph(10, 0.5, 3)
    slots, adj = db.ego_records(edges, 10, 3, salt=1)
    g = torch.Generator().manual_seed(0)
    params = dbt.init_bounded(4, g)
    mask = torch.as_tensor(slots >= 0, dtype=torch.float32)
    a = torch.as_tensor(adj)
    eps = torch.randn(10, 4, 16, generator=g)

    def loss(p, x, m, e):
        return dbt.record_loss(p, x, m, e, True, 0.1, 0.1, False)

    batch = vmap(grad(loss), in_dims=(None, 0, 0, 0))(params, a, mask, eps)
    i = int(np.argmax((slots >= 0).sum(1)))  # a record with neighbours: every part learns
    assert (slots[i] >= 0).sum() >= 3
    alone = grad(loss)(params, a[i], mask[i], eps[i])
    for k in params:
        torch.testing.assert_close(batch[k][i], alone[k], rtol=1e-5, atol=1e-6)
    assert all(v.abs().sum() > 0 for k, v in alone.items() if k != "enc_ls")


def test_noisy_sum_clips_each_record_and_adds_noise_of_std_sigma_c():
    """Clipping: a huge record contributes exactly C. Noise (statistical): 200,000 noise
    coordinates of zero records have variance std² inside a 5-sigma band of the sample
    variance's spread (a 2 % error in std fails)."""
    g = torch.Generator().manual_seed(0)
    big = torch.full((1, 50), 100.0)
    out = dbt.noisy_clipped_sum(big, 2.0, 0.0, g)
    assert float(out.norm()) == pytest.approx(2.0)
    std, width, draws = 3.0, 1000, 200
    samples = torch.stack([dbt.noisy_clipped_sum(torch.zeros(5, width), 1.0, std, g)
                           for _ in range(draws)]).double()  # fmt: skip
    m = width * draws
    var = float(samples.pow(2).mean())
    band = 5 * std**2 * math.sqrt(2.0 / m)
    assert abs(var - std**2) < band
    assert abs(float(samples.mean())) < 5 * std / math.sqrt(m)


def test_plan_accounts_two_hops_of_the_group_with_dp_accounting():
    s = make_protocol("dpggan", epsilon=2.0, dpg_steps=300, dpg_q=0.02, dpg_degree_bound=2)
    plan = s.plan()
    k = 6
    assert plan.group == k and plan.q_group == pytest.approx(1 - 0.98**k)
    hop = sgd_epsilon(plan.sigma / k, plan.q_group, 300, plan.delta_hop, "rdp")
    assert plan.epsilon_hop == pytest.approx(hop)
    assert plan.epsilon_train == pytest.approx(2 * hop) and plan.epsilon_train <= 1.9 + 1e-6
    assert plan.delta_hop * (1 + math.exp(plan.epsilon_hop)) <= plan.delta
    report = s.privacy_report()
    assert report.unit == "edge" and report.epsilon == pytest.approx(plan.epsilon_train + 0.1)
    assert report.epsilon <= 2.0 + 1e-6 and report.paper_epsilon is None
    # more noise per unit of sensitivity than the group's 1/k share would be too little
    assert sgd_epsilon(plan.sigma, 0.02, 300, plan.delta_hop, "rdp") < plan.epsilon_hop


def test_steps_rule_and_refusals():
    s = make_protocol("dpgvae", epsilon=1.0, dpg_calibration="steps", dpg_sigma=200.0,
                      dpg_steps=50_000)  # fmt: skip
    plan = s.plan()
    assert 1 <= plan.steps < 50_000 and plan.epsilon_train <= 0.95 + 1e-9
    with pytest.raises(Exception, match="unreachable"):
        make_protocol("dpgvae", epsilon=0.1, dpg_calibration="steps", dpg_sigma=0.5, dpg_q=1.0)
    with pytest.raises(Exception, match="ablation"):
        make_protocol("dpgvae", dpg_generation="encoder")
    true_m = make_protocol("dpggan", dpg_edge_selection="topk_true").privacy_report()
    assert math.isinf(true_m.epsilon)


def _collection():
    parts = [_random_graph(9, 0.4, 5), _random_graph(12, 0.3, 6), _random_graph(7, 0.5, 7)]
    sizes = [9, 12, 7]
    ptr = np.cumsum([0, *sizes])
    edges = np.concatenate([e + ptr[i] for i, e in enumerate(parts)])
    n = int(ptr[-1])
    graph = UploadedGraph("t", edges, np.zeros((n, 1), np.float32), np.full(n, -1),
                          (0.0, 1.0), uploaded=np.ones(n, bool))  # fmt: skip
    return graph, CuratorView(n, 1, (0.0, 1.0), graph_ptr=ptr), sizes


@pytest.mark.parametrize("name", ["dpggan", "dpgvae"])
def test_release_is_the_default_with_a_finite_proven_headline(name):
    graph, curator, sizes = _collection()
    s = make_protocol(name, epsilon=4.0, dpg_steps=20, dpg_q=0.3)
    assert s.p.dpg_training == "bounded"
    one = s.release(graph, curator, seed=3)
    assert [g.x.shape[0] for g in one.graphs] == sizes
    assert one.privacy.epsilon == pytest.approx(4.0, rel=1e-3) and one.privacy.unit == "edge"
    two = s.release(graph, curator, seed=3)
    assert all(np.array_equal(a.edges, b.edges) for a, b in zip(one.graphs, two.graphs,
                                                                strict=True))  # fmt: skip


def test_old_runs_keep_their_identity():
    from ldpgraph.simulation.results.identity import ADDED_KEY_DEFAULTS

    assert ADDED_KEY_DEFAULTS["dpg_training"] == "paper"


def test_long_phases_say_where_they_are():
    """Issue 33: the training's steps and the generation speak to a listener (phase names and
    counts only), and stay silent without one."""
    from ldpgraph.protocols import progress

    graph, curator, _ = _collection()
    lines: list[str] = []
    with progress.listening(lines.append):
        make_protocol("dpgvae", epsilon=4.0, dpg_steps=5, dpg_q=0.3).release(graph, curator, 1)
    assert any(line.startswith("ego records of 28 nodes") for line in lines)
    assert "DP-SGD step (all parts) 5/5" in lines and "generated graph 3/3" in lines
    lines.clear()
    with progress.listening(lines.append):
        make_protocol("dpgvae", epsilon=4.0, dpg_steps=5, dpg_q=0.3,
                      dpg_training="paper").release(graph, curator, 1)  # fmt: skip
    assert "lane chunk 1/1: 3 graphs" in lines and "DP step (chunk 1/1) 5/5" in lines
