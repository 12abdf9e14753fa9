"""The PrivDPR edge lists (simulation/datasets/privdpr.py): exact statistics, structure only
(N×0 features, no labels), why Cora and CiteSeer carry no labels (Planetoid's graphs under
another node order, with interchangeable nodes of different labels), one-line errors, and a
structure-only dataset through the harness (accuracy refused, --metrics none runs)."""

from __future__ import annotations

import collections
from pathlib import Path

import numpy as np
import pytest

from ldpgraph.protocols.graph import canonical_edges
from ldpgraph.simulation.config import RunConfig
from ldpgraph.simulation.datasets import DATASETS, DatasetError, load_dataset
from ldpgraph.simulation.datasets.privdpr import read_edge_list
from ldpgraph.simulation.pipeline import run

from ...conftest import MIRROR, needs_mirror

NAMES = ("privdpr-cora", "privdpr-citeseer", "privdpr-p2p", "privdpr-chicago")


@pytest.fixture(scope="module", autouse=True)
def env(tmp_path_factory: pytest.TempPathFactory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LDPGRAPH_DATA", str(MIRROR))
        mp.setenv("LDPGRAPH_CACHE", str(tmp_path_factory.mktemp("ldpgraph-cache")))
        yield


@needs_mirror
@pytest.mark.parametrize(
    ("name", "stats", "rows"),
    [
        ("privdpr-cora", (2708, 5278), 5278),
        ("privdpr-citeseer", (3327, 4552), 4676),  # 124 self-loops dropped
        ("privdpr-p2p", (6301, 20777), 20777),  # directed, no reciprocal pair
        ("privdpr-chicago", (12979, 20627), 20627),
    ],
)
def test_exact_stats_structure_only(name: str, stats: tuple[int, int], rows: int) -> None:
    g = load_dataset(name)
    assert (g.num_nodes, g.num_edges) == stats
    assert DATASETS[name].expected.as_dict() == {
        "nodes": stats[0], "edges": stats[1], "features": 0, "classes": 0,
    }  # fmt: skip
    assert g.x.shape == (g.num_nodes, 0) and g.num_features == 0
    assert (g.y == -1).all() and g.num_classes == 0
    np.testing.assert_array_equal(g.edges, canonical_edges(g.edges, g.num_nodes))
    pairs, n = read_edge_list(MIRROR / DATASETS[name].raw_files[0])
    assert len(pairs) == rows and n == g.num_nodes
    again = load_dataset(name)  # from the processed cache
    assert again.meta["cache"] == "hit"
    np.testing.assert_array_equal(again.edges, g.edges)
    assert again.x.shape == g.x.shape and (again.y == -1).all()


def _twins_with_different_labels(edges: np.ndarray, y: np.ndarray) -> int:
    """Nodes that share their whole neighbourhood with a node of another label: swapping two
    twins is an automorphism, so no structural mapping can tell their labels apart."""
    n = y.size
    nbrs: list[set[int]] = [set() for _ in range(n)]
    for u, v in edges.tolist():
        nbrs[u].add(v)
        nbrs[v].add(u)
    groups = collections.defaultdict(list)
    for i in range(n):
        groups[frozenset(nbrs[i])].append(i)
    return sum(len(g) for g in groups.values() if len(g) > 1 and len(set(y[g].tolist())) > 1)


@needs_mirror
@pytest.mark.parametrize(
    ("name", "planetoid", "twins"), [("cora", "cora", 39), ("citeseer", "citeseer", 240)]
)
def test_cora_and_citeseer_are_planetoids_graphs_without_a_label_map(
    name: str, planetoid: str, twins: int
) -> None:
    """The edge lists are Planetoid's graphs under another node order (same size, degree
    sequence and triangles per degree; the orders differ; an isomorphism search is too slow for
    a test), and structure cannot carry the labels over: nodes of different labels are
    interchangeable twins (why privdpr-cora/citeseer have no labels)."""
    nx = pytest.importorskip("networkx")
    ours, theirs = load_dataset(f"privdpr-{name}"), load_dataset(planetoid)
    assert ours.num_nodes == theirs.num_nodes and ours.num_edges == theirs.num_edges
    assert not np.array_equal(ours.edges, theirs.edges)
    assert np.array_equal(np.sort(ours.degrees()), np.sort(theirs.degrees()))
    invariants = []
    for g in (ours, theirs):
        graph = nx.Graph(g.edges.tolist())
        tri = nx.triangles(graph)
        invariants.append(sorted((graph.degree(v), tri[v]) for v in graph))
    assert invariants[0] == invariants[1]
    assert _twins_with_different_labels(theirs.edges, theirs.y) == twins
    if name == "cora":  # node 0 is Cora's most-cited paper
        assert ours.degrees()[0] == theirs.degrees().max() == 168


def test_bad_edge_lists_are_one_line_errors(tmp_path: Path) -> None:
    bad = tmp_path / "privdpr" / "ProcessedData"
    bad.mkdir(parents=True)
    (bad / "Processed_cora.txt").write_text("0 1 1.0\n2 x 1.0\n")
    with pytest.raises(DatasetError, match="Processed_cora.txt: not a whitespace edge") as err:
        load_dataset("privdpr-cora", data_root=tmp_path, download=False)
    assert "\n" not in str(err.value)
    (bad / "Processed_cora.txt").write_text("0 -1 1.0\n")
    with pytest.raises(DatasetError, match="non-negative integers"):
        read_edge_list(bad / "Processed_cora.txt")
    (bad / "Processed_cora.txt").write_text("")
    with pytest.raises(DatasetError, match="no edges"):
        read_edge_list(bad / "Processed_cora.txt")


@needs_mirror
def test_structure_only_data_refuse_accuracy_and_run_without_metrics() -> None:
    base = dict(
        protocol="privdpr", dataset="privdpr-cora", backend="local", trust_curator=True,
        epsilon=1.0, dpr_node_batch=1000, dpr_epochs=1, dpr_dim=8, dpr_hidden=8,
    )  # fmt: skip
    with pytest.raises(ValueError, match="structure-only .* accuracy metric") as err:
        run(RunConfig(**base).validate())
    assert "\n" not in str(err.value)
    record = run(RunConfig(**base, metrics="none").validate())
    assert "accuracy" not in record and record["release_kind"] == "graph"
    assert record["graph"]["original"]["features"] == 0
    assert record["graph"]["synthetic"]["nodes"] == 2708
    assert record["release"]["steps_T"] == 2 and record["privacy"]["unit"] == "node"
