"""The edge-perturbation baselines (protocols/central/baselines.py): counts of deletion and
addition, EdgeRand's flip rates and LapGraph's noisy top-T against a dense reference over many
draws, their ε against dp-accounting, the reports of the non-DP ones, and the harness."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols.base import RoundResult
from ldpgraph.protocols.central import baselines as bl
from ldpgraph.protocols.graph import Graph, canonical_edges
from ldpgraph.protocols.params import ProtocolParameterError
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.protocols.types import NodeView
from ldpgraph.simulation.datasets import synthetic_graph
from ldpgraph.simulation.splits import split_for

from ...support.central import curator_for


def _graph(n: int, m: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return canonical_edges(rng.integers(0, n, (m, 2)), n)


def _keys(edges: np.ndarray, n: int) -> np.ndarray:
    return bl.pair_keys(edges, n)


def _collect(strategy, graph: Graph, refusing=()) -> RoundResult:
    reports = {}
    for v in range(graph.num_nodes):
        if v in refusing:
            continue
        view = NodeView(v, graph.neighbors(v), graph.x[v], graph.num_nodes, graph.feature_domain)
        reports[v] = strategy.client_step(0, view, strategy.config(), 0)
    return RoundResult(reports, np.asarray(sorted(refusing), dtype=np.int64))


def test_sample_free_pairs_distinct_uniform_and_avoiding_taken():
    n = 12
    edges = _graph(n, 30)
    taken = np.sort(_keys(edges, n))
    rng = np.random.default_rng(1)
    counts = np.zeros(n * n)
    draws = 3000
    for _ in range(draws):
        pairs = bl.sample_free_pairs(n, 5, taken, rng)
        k = _keys(pairs, n)
        assert len(np.unique(k)) == 5 and (pairs[:, 0] < pairs[:, 1]).all()
        assert not np.isin(k, taken).any()
        counts[k] += 1
    free = np.setdiff1d(np.triu_indices(n, 1)[0] * n + np.triu_indices(n, 1)[1], taken)
    expected = draws * 5 / len(free)
    # every free pair equally likely: chi-square well inside its 99.9 % quantile
    chi2 = ((counts[free] - expected) ** 2 / expected).sum()
    from scipy.stats import chi2 as chi2_law

    assert chi2 < chi2_law.ppf(0.999, len(free) - 1)


def test_delete_add_random_counts():
    n, edges = 300, _graph(300, 900)
    m = len(edges)
    for name, deleted, added in (("edge-delete", 0.2, 0), ("edge-add", 0, 0.2),
                                 ("edge-random", 0.2, 0.2)):  # fmt: skip
        out = make_protocol(name, edge_ratio=0.2).perturb(edges, n, seed=3)
        kept = np.isin(_keys(out, n), _keys(edges, n)).sum()
        assert m - kept == round(deleted * m)
        assert len(out) - kept == round(added * m)
    with pytest.raises(ProtocolParameterError, match="edge_ratio must be in"):
        make_protocol("edge-delete", edge_ratio=1.5)


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_edgerand_flips_every_pair_with_probability_one_over_e_eps_plus_one(eps):
    """Over many draws the share of dropped edges and of added non-edges match
    q = 1/(e^ε+1) within 5 standard errors (s = 2/(e^ε+1) instead of s/2 fails by far)."""
    n, edges = 80, _graph(80, 300)
    m, free = len(edges), 80 * 79 // 2 - len(edges)
    q = 1.0 / (math.exp(eps) + 1.0)
    rng = np.random.default_rng(7)
    draws = 200
    dropped = added = 0
    for _ in range(draws):
        out = bl.edgerand(edges, n, eps, rng)
        kept = np.isin(_keys(out, n), _keys(edges, n)).sum()
        dropped += m - kept
        added += len(out) - kept
    for count, total in ((dropped, m * draws), (added, free * draws)):
        se = math.sqrt(q * (1 - q) / total)
        assert abs(count / total - q) < 5 * se, (count / total, q)


def test_edgerand_epsilon_is_the_accountants():
    for eps in (0.1, 1.0, 4.0):
        assert bl.edgerand_epsilon(eps) == pytest.approx(eps, abs=1e-3)
        report = make_protocol("edgerand", epsilon=eps).privacy_report()
        assert report.unit == "edge" and report.delta == 0.0
        assert report.epsilon == pytest.approx(eps, abs=1e-3)


def test_lapgraph_epsilon_closed_form_matches_the_accountant():
    for eps in (0.5, 1.0, 8.0):
        assert bl.lapgraph_epsilon(eps) == pytest.approx(eps, abs=1e-6)
        report = make_protocol("lapgraph", epsilon=eps).privacy_report()
        assert report.epsilon == eps and report.unit == "edge"
        assert report.parts[0]["epsilon_count"] == pytest.approx(0.01 * eps)


def _dense_top(edges, n, b, target, rng):
    iu, iv = np.triu_indices(n, 1)
    a = np.isin(iu * n + iv, _keys(edges, n)).astype(float)
    noisy = a + rng.laplace(0.0, b, size=a.size)
    top = np.argsort(-noisy)[:target]
    return iu[top] * n + iv[top]


@pytest.mark.parametrize("b,target", [(0.5, 40), (2.0, 120)])
def test_noisy_top_matches_a_dense_reference(b, target):
    """The sparse band sampler and the dense n² draw give the same law: the mean number of
    true edges among the top T, and the mean node-0 degree, agree within 5 standard errors
    of the difference (3000 draws each)."""
    n, edges = 20, _graph(20, 50, seed=4)
    truth = _keys(edges, n)
    r1, r2 = np.random.default_rng(11), np.random.default_rng(12)
    sparse, dense = [], []
    for _ in range(3000):
        out = bl.noisy_top(edges, n, b, target, r1)
        assert len(out) == target
        sparse.append(np.isin(_keys(out, n), truth).sum())
        dense.append(np.isin(_dense_top(edges, n, b, target, r2), truth).sum())
    sparse, dense = np.asarray(sparse, float), np.asarray(dense, float)
    se = math.sqrt(sparse.var() / len(sparse) + dense.var() / len(dense))
    assert abs(sparse.mean() - dense.mean()) < 5 * se + 1e-9
    # the laws are not degenerate: a wrong scale (b/4) is far off
    wrong = np.mean([np.isin(_keys(bl.noisy_top(edges, n, b / 4, target, r1), n), truth).sum()
                     for _ in range(300)])  # fmt: skip
    assert abs(wrong - dense.mean()) > 10 * se


def test_lapgraph_edge_count_is_m_plus_discrete_laplace():
    """T = |E| + K, K discrete Laplace of parameter ε₁ = 0.01ε (integer noise): mean 0,
    variance 2a/(1 − a)² and P[K = 0] = (1 − a)/(1 + a), a = e^{−ε₁}, over 4,000 releases;
    an ε₁ below the mechanism's minimum is a one-line error."""
    n, edges = 200, _graph(200, 600)
    m = len(edges)
    eps = 100.0  # ε₁ = 1
    a = math.exp(-1.0)
    var = 2 * a / (1 - a) ** 2
    rng = np.random.default_rng(5)
    diff = np.array([len(bl.lapgraph(edges, n, eps, rng)) - m for _ in range(4000)], float)
    assert abs(diff.mean()) < 5 * math.sqrt(var / len(diff))
    assert diff.var() == pytest.approx(var, rel=0.15)
    p0 = (1 - a) / (1 + a)
    assert abs((diff == 0).mean() - p0) < 5 * math.sqrt(p0 * (1 - p0) / len(diff))
    with pytest.raises(ProtocolParameterError, match="discrete"):
        make_protocol("lapgraph", epsilon=0.05)


def test_non_dp_reports_say_no_guarantee():
    for name in ("edge-delete", "edge-add", "edge-random"):
        report = make_protocol(name).privacy_report()
        assert math.isinf(report.epsilon)
        assert "no privacy guarantee" in report.headline


def test_release_through_the_strategy_is_seeded_and_keeps_features():
    graph = synthetic_graph(n=120, classes=3, avg_degree=6, d=8, seed=2)
    split = split_for(graph.num_nodes, 0)
    for name in ("edgerand", "lapgraph", "edge-random"):
        strategy = make_protocol(name, **({"epsilon": 2.0} if "edge-" not in name else {}))
        result = _collect(strategy, graph)
        seeded = curator_for(graph, split, replayable=True)
        a = strategy.server_step(0, result, seeded, 4)
        b = strategy.server_step(0, result, seeded, 4)
        c = strategy.server_step(0, result, seeded, 5)
        assert a.fingerprint() == b.fingerprint() != c.fingerprint()
        # unseeded (the default): the same run seed twice gives two releases
        unseeded = curator_for(graph, split, replayable=False)
        d = strategy.server_step(0, result, unseeded, 4)
        e = strategy.server_step(0, result, unseeded, 4)
        assert d.fingerprint() != e.fingerprint() and not d.stats["replayable"]
        np.testing.assert_array_equal(a.x, graph.x)
        assert a.stats["uploaded_edges"] == graph.num_edges
