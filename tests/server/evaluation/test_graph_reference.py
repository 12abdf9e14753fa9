"""With links hidden before collection, ``graph`` scores the release against the graph the
nodes held (a release of exactly that graph has zero error) and keeps the full original as a
second reference; without the holdout nothing changes."""

from __future__ import annotations

import numpy as np

from ldpgraph.protocols.types import Release
from ldpgraph.server import evaluation
from ldpgraph.simulation.datasets import synthetic_graph
from ldpgraph.simulation.splits import split_for

from .conftest import CPU, no_privacy


def _evaluate(graph, release_edges, held_out):
    release = Release(release_edges, graph.x, no_privacy())
    ctx = evaluation.EvaluationContext(
        graph, split_for(graph.num_nodes, 0), release, None, 0, device=CPU
    )
    return evaluation.evaluate(["graph"], ctx, held_out)["graph_stats"]


def test_statistics_compare_against_what_the_nodes_held():
    graph = synthetic_graph(n=200, classes=4, avg_degree=8, homophily=0.9, d=10, seed=2)
    prepared = evaluation.prepare(["graph", "lp"], graph, 0)
    hidden = prepared.held_out["lp"].count
    assert hidden > 0
    held = _evaluate(graph, prepared.graph.edges, prepared.held_out)
    assert held["edges"]["original"] == graph.num_edges - hidden and held["edges"]["re"] == 0.0
    assert held["triangles"]["re"] == 0.0 and held["degree_ks"] == 0.0
    assert held["pgb"]["degree_wasserstein"] == 0.0 and held["pgb"]["community_ari"] == 1.0
    assert f"{hidden} links hidden" in held["reference"]
    full = held["full_original"]
    assert full["edges"]["original"] == graph.num_edges and full["edges"]["re"] > 0.1
    alone = _evaluate(graph, prepared.graph.edges, None)
    assert "reference" not in alone and "full_original" not in alone
    assert alone["edges"] == full["edges"] and alone["triangles"] == full["triangles"]
    assert np.isclose(alone["edges"]["re"], hidden / graph.num_edges)
