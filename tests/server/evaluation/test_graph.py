"""The ``graph`` metric: every statistic against networkx or a brute-force count on small
graphs, sampled path statistics close to the exact ones, an identical release scores RE 0 and
KS 0, weighted releases are thresholded, and a graph above the exact limit with sampling off
is a one-line error."""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import networkx as nx
import numpy as np
import pytest
from scipy.stats import ks_2samp

from ldpgraph.protocols.graph import Graph, canonical_edges
from ldpgraph.protocols.types import PrivacyReport, Release
from ldpgraph.server import evaluation
from ldpgraph.server.evaluation import EvaluationContext, graph_paths
from ldpgraph.server.evaluation import graph as gm

from ...support.toy_central import MajorityModel


def _privacy() -> PrivacyReport:
    return PrivacyReport("t", "none", float("inf"), 1.0, "none")


def as_graph(g: nx.Graph) -> Graph:
    n = g.number_of_nodes()
    edges = canonical_edges(np.array(list(g.edges()), dtype=np.int64).reshape(-1, 2), n)
    return Graph("t", edges, np.zeros((n, 1), dtype=np.float32), np.zeros(n, dtype=np.int64))


def reference(g: nx.Graph) -> dict:
    """Every statistic by networkx or by brute force (each pair, each neighbour subset)."""
    n = g.number_of_nodes()
    deg = np.array([g.degree(v) for v in range(n)])
    m = g.number_of_edges()
    neighbours = [sorted(g[v]) for v in range(n)]
    dist = dict(nx.all_pairs_shortest_path_length(g))
    lengths = [d for s in dist for t, d in dist[s].items() if t != s]
    pairs = [abs(a - b) for a in deg for b in deg]
    return {
        "edges": m,
        "triangles": sum(nx.triangles(g).values()) // 3,
        "wedges": sum(len(list(itertools.combinations(nb, 2))) for nb in neighbours),
        "claws": sum(len(list(itertools.combinations(nb, 3))) for nb in neighbours),
        # NetGAN's edge-distribution entropy, term by term
        "rede": sum(-(d / (2 * m)) * math.log((d + 1e-4) / (2 * m)) for d in deg) / math.log(n),
        "cpl": sum(lengths) / len(lengths),
        "diameter": max(lengths),
        "lcc": max(len(c) for c in nx.connected_components(g)),
        "assortativity": nx.degree_assortativity_coefficient(g),
        "clustering": nx.average_clustering(g),
        "gini": sum(pairs) / (2 * n * n * deg.mean()),
    }


GRAPHS = {
    "karate": nx.karate_club_graph(),
    # several components and isolated nodes
    "sparse-gnp": nx.gnp_random_graph(150, 0.012, seed=3),
    "powerlaw-cluster": nx.powerlaw_cluster_graph(300, 3, 0.4, seed=5),
}


@pytest.mark.parametrize("name", GRAPHS)
def test_every_statistic_matches_networkx_or_a_brute_force_count(name):
    g = GRAPHS[name]
    ours, degrees = gm.graph_statistics(np.array(list(g.edges())), g.number_of_nodes())
    ref = reference(g)
    assert ours["paths"] == {"method": "exact", "sources": sum(d > 0 for _, d in g.degree())}
    for stat in gm.STATISTICS:
        if isinstance(ref[stat], int):
            assert ours[stat] == ref[stat], stat
        else:
            assert ours[stat] == pytest.approx(ref[stat], rel=1e-9, abs=1e-12), stat
    assert degrees.tolist() == [g.degree(v) for v in range(g.number_of_nodes())]
    if name == "karate":  # the published values
        assert (ours["triangles"], ours["diameter"], ours["lcc"]) == (45, 5, 34)


def test_degree_ks_is_the_largest_gap_between_the_degree_cdfs():
    a, b = GRAPHS["karate"], GRAPHS["powerlaw-cluster"]
    da = np.array([d for _, d in a.degree()])
    db = np.array([d for _, d in b.degree()])
    section = gm.compare(
        (np.array(list(a.edges())), a.number_of_nodes()),
        (np.array(list(b.edges())), b.number_of_nodes()),
    )
    grid = np.union1d(da, db)
    gap = np.abs(
        np.searchsorted(np.sort(da), grid, side="right") / da.size
        - np.searchsorted(np.sort(db), grid, side="right") / db.size
    ).max()
    assert section["degree_ks"] == pytest.approx(gap) == pytest.approx(ks_2samp(da, db).statistic)
    assert 0 < section["degree_ks"] < 1


def test_many_small_components_are_batched_and_stay_exact(monkeypatch):
    """Components are grouped into blocks of whole components (here of 64 nodes): the
    distances are those of networkx, and no pair across components counts."""
    monkeypatch.setattr(graph_paths, "_BLOCK_NODES", 64)
    monkeypatch.setattr(graph_paths, "_BATCH_ENTRIES", 500)  # and several BFS batches per block
    monkeypatch.setattr(gm, "_BATCH_ENTRIES", 500)  # (and triangle batches)
    parts = [nx.path_graph(k) for k in (2, 3, 5, 9)] * 20 + [nx.karate_club_graph()]
    g = nx.convert_node_labels_to_integers(nx.disjoint_union_all(parts))
    ours, _ = gm.graph_statistics(np.array(list(g.edges())), g.number_of_nodes())
    ref = reference(g)
    assert ours["cpl"] == pytest.approx(ref["cpl"]) and ours["diameter"] == ref["diameter"] == 8
    assert ours["lcc"] == 34


@pytest.fixture(scope="module")
def medium():
    g = nx.connected_watts_strogatz_graph(3000, 6, 0.05, seed=7)
    edges = np.array(list(g.edges()))
    return edges, gm.graph_statistics(edges, 3000)[0]


def test_sampled_path_statistics_are_close_to_the_exact_ones(medium):
    edges, exact = medium
    assert exact["paths"]["method"] == "exact"
    rng = np.random.default_rng(0)
    sampled, _ = gm.graph_statistics(edges, 3000, exact_limit=1000, sample_sources=200, rng=rng)
    assert sampled["paths"]["method"] == "sampled" and sampled["paths"]["sources"] == 200
    assert "lower bound" in sampled["paths"]["diameter"]
    assert sampled["cpl"] == pytest.approx(exact["cpl"], rel=0.01)
    assert exact["diameter"] - 1 <= sampled["diameter"] <= exact["diameter"]
    # everything else is exact either way
    for stat in set(gm.STATISTICS) - {"cpl", "diameter"}:
        assert sampled[stat] == exact[stat], stat
    # seeded: the same stream draws the same sources
    again, _ = gm.graph_statistics(
        edges, 3000, exact_limit=1000, sample_sources=200, rng=np.random.default_rng(0)
    )
    assert again["cpl"] == sampled["cpl"]


def test_a_sampled_diameter_finds_a_grids_corners():
    """A grid's diameter runs corner to corner; the sweeps from the farthest node found reach
    it from any sample."""
    g = nx.convert_node_labels_to_integers(nx.grid_2d_graph(40, 30))
    stats, _ = gm.graph_statistics(
        np.array(list(g.edges())), 1200, exact_limit=100, sample_sources=5
    )
    assert stats["diameter"] == 40 + 30 - 2
    assert stats["paths"]["sweeps"] >= 1


def evaluate(graph: Graph, release: Release, seed: int = 0, **config):
    ctx = EvaluationContext(graph, None, release, None, seed, config=config or None)
    return evaluation.evaluate(["graph"], ctx)


@pytest.mark.parametrize("config", [{}, {"graph_exact_limit": 10, "graph_sample_sources": 8}])
def test_the_identical_release_has_re_0_and_ks_0(config):
    graph = as_graph(GRAPHS["powerlaw-cluster"])
    release = Release(graph.edges.copy(), graph.x, _privacy())
    section = evaluate(graph, release, seed=3, **config)["graph_stats"]
    for stat in gm.STATISTICS:
        assert section[stat]["re"] == 0.0, stat
        assert section[stat]["original"] == section[stat]["release"]
    assert section["degree_ks"] == 0.0
    method = "sampled" if config else "exact"
    assert section["paths"]["original"]["method"] == section["paths"]["release"]["method"] == method
    assert section["weights"].startswith("unweighted") and section["seconds"] >= 0


def test_a_different_release_has_the_relative_errors():
    graph = as_graph(GRAPHS["karate"])
    half = Release(graph.edges[::2], graph.x, _privacy())
    section = evaluate(graph, half)["graph_stats"]
    ours, _ = gm.graph_statistics(graph.edges[::2], graph.num_nodes)
    assert section["edges"] == {"original": 78, "release": 39, "re": 0.5}
    for stat in ("triangles", "cpl", "clustering", "gini"):
        assert section[stat]["release"] == ours[stat]
        assert section[stat]["re"] == pytest.approx(
            abs(ours[stat] - section[stat]["original"]) / section[stat]["original"]
        )
    assert section["degree_ks"] > 0


def test_relative_error_where_it_is_undefined():
    assert gm.relative_error(4, 3) == 0.25
    assert gm.relative_error(-0.5, 0.5) == 2.0  # |original| in the denominator
    assert gm.relative_error(0, 0) == 0.0
    assert gm.relative_error(0, 2) is None
    assert gm.relative_error(None, 1.0) is None and gm.relative_error(1.0, None) is None


def test_an_empty_release_has_no_paths():
    graph = as_graph(GRAPHS["karate"])
    empty = Release(np.zeros((0, 2), dtype=np.int64), graph.x, _privacy())
    section = evaluate(graph, empty)["graph_stats"]
    assert section["edges"] == {"original": 78, "release": 0, "re": 1.0}
    assert section["triangles"]["re"] == 1.0
    assert section["cpl"]["release"] is None and section["cpl"]["re"] is None
    assert section["rede"]["release"] is None and section["assortativity"]["release"] is None
    assert section["lcc"]["release"] == 1 and section["paths"]["release"]["sources"] == 0


def test_a_weighted_release_is_scored_as_its_pairs_of_weight_at_least_one_half():
    graph = as_graph(nx.complete_graph(4))
    edges = np.array([[0, 1], [0, 2], [1, 2], [2, 3]])
    weighted = Release(edges, graph.x, _privacy(), edge_weight=np.array([0.9, 0.5, 0.49, 0.1]))
    section = evaluate(graph, weighted)["graph_stats"]
    assert section["edges"]["release"] == 2  # (0, 1) and (0, 2)
    assert section["triangles"] == {"original": 4, "release": 0, "re": 1.0}
    assert section["wedges"]["release"] == 1 and section["lcc"]["release"] == 3
    assert section["weights"] == (
        "weighted: the 2 of 4 released pairs with weight >= 0.5 are the edges"
    )
    listed = evaluate(graph, Release(edges, graph.x, _privacy()))["graph_stats"]
    assert listed["edges"]["release"] == 4 and listed["triangles"]["release"] == 1


def test_too_large_for_exact_statistics_with_sampling_off_is_one_line():
    graph = as_graph(GRAPHS["karate"])
    release = Release(graph.edges, graph.x, _privacy())
    with pytest.raises(gm.GraphTooLargeError) as err:
        evaluate(graph, release, graph_exact_limit=20, graph_sample_sources=0)
    message = str(err.value)
    assert "\n" not in message and isinstance(err.value, ValueError)
    assert "34 nodes, above graph-exact-limit 20" in message and "graph-sample-sources" in message
    # at the limit it is exact, with or without sampling
    section = evaluate(graph, release, graph_exact_limit=34, graph_sample_sources=0)
    assert section["graph_stats"]["paths"]["original"]["method"] == "exact"
    with pytest.raises(ValueError, match="must be >= 0"):
        evaluate(graph, release, graph_exact_limit=-1)


def test_a_model_release_is_skipped():
    graph = as_graph(GRAPHS["karate"])
    model = Release.of_model(MajorityModel(0), graph.num_nodes, _privacy())
    out = evaluate(graph, model)
    assert out == {"skipped_metrics": {"graph": "does not score a model release"}}


def test_without_the_original_edges_it_says_so():
    """A deployment's server holds a curator file, not the original graph."""
    graph = as_graph(GRAPHS["karate"])
    curator = SimpleNamespace(num_nodes=graph.num_nodes, y=graph.y)
    release = Release(graph.edges, graph.x, _privacy())
    with pytest.raises(ValueError, match="curator file has no edges"):
        evaluation.evaluate(["graph"], EvaluationContext(curator, None, release, None, 0))


def test_importing_this_module_first_leaves_the_registry_order_alone():
    """A run's ``metrics`` value (part of its identity) lists metrics in registry order, which
    must not depend on which module something imported first (the configuration schema
    imports this one for its defaults)."""
    import subprocess
    import sys

    code = (
        "from ldpgraph.server.evaluation import graph\n"
        "from ldpgraph.simulation.config import RunConfig\n"
        "print(RunConfig(metrics='graph,accuracy', backend='local').validate().metrics)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "accuracy,graph"
