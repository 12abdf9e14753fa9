"""Graphs whose link structure is known: a clustered SBM (links predictable from common
neighbours) and an Erdős–Rényi graph of the same density (links unpredictable), each evaluated
once with ``lp`` and ``attack`` on the release "the graph the nodes hold"."""

from __future__ import annotations

import numpy as np
import pytest

from ldpgraph.protocols.graph import Graph, canonical_edges
from ldpgraph.protocols.types import PrivacyReport, Release
from ldpgraph.server import evaluation
from ldpgraph.simulation.datasets import synthetic_graph
from ldpgraph.simulation.splits import split_for

N, DEGREE = 600, 8
#: The GAE behind ``lp`` and the embedding attack trains on the CPU here: the tests compare
#: its results run against run, and only the CPU promises the same bits for the same seed.
CPU = "cpu"


def no_privacy() -> PrivacyReport:
    return PrivacyReport("t", "none", float("inf"), 1.0, "none")


def erdos_renyi(n: int, m: int, d: int, seed: int) -> Graph:
    rng = np.random.default_rng(seed)
    edges = canonical_edges(rng.integers(0, n, size=(2 * m, 2)), n)
    edges = canonical_edges(edges[rng.permutation(len(edges))[:m]], n)
    x = (rng.random((n, d)) < 0.1).astype(np.uint8)
    return Graph("er", edges, x, rng.integers(0, 3, size=n))


def held_release(graph: Graph, seed: int = 0):
    """Hide the links, release exactly what the nodes hold, and evaluate lp and attack."""
    prepared = evaluation.prepare(["lp", "attack"], graph, seed)
    release = Release(prepared.graph.edges, prepared.graph.x, no_privacy())
    split = split_for(graph.num_nodes, seed)
    ctx = evaluation.EvaluationContext(graph, split, release, None, seed, device=CPU)
    return prepared, ctx, evaluation.evaluate(["lp", "attack"], ctx, prepared.held_out)


@pytest.fixture(scope="package")
def sbm():
    graph = synthetic_graph(n=N, classes=20, avg_degree=DEGREE, homophily=1.0, d=50, seed=1)
    return graph, *held_release(graph)


@pytest.fixture(scope="package")
def er(sbm):
    graph = erdos_renyi(N, sbm[0].num_edges, 50, seed=5)
    return graph, *held_release(graph)


@pytest.fixture
def quick_seal(monkeypatch):
    """SEAL-lite on 300 training links, 2 epochs: for tests that evaluate ``attack`` again
    only to check something else (the package fixtures above run the real settings)."""
    from ldpgraph.server.evaluation import seal

    monkeypatch.setattr(seal, "TRAIN_PAIRS", 300)
    monkeypatch.setattr(seal, "EPOCHS", 2)
