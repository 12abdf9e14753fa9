"""Collection datasets (simulation/datasets/graph_collections.py): the DPGGAN pickles and TU
IMDB-MULTI as disjoint unions with public graph offsets, exact sizes, the split back into
graphs, and the one-line errors for a collection given to a node-level protocol and the other
way round."""

from __future__ import annotations

import numpy as np
import pytest

from ldpgraph.simulation.config import RunConfig
from ldpgraph.simulation.datasets import load_dataset
from ldpgraph.simulation.datasets.graph_collections import (
    NotACollectionError,
    is_collection,
    split_collection,
    union,
)
from ldpgraph.simulation.pipeline import check_collection, prepare

from ...conftest import needs_mirror


@needs_mirror
@pytest.mark.parametrize(
    ("name", "graphs", "nodes", "edges", "labels"),
    [
        # DPGGAN's DBLP (mirror): 69 graphs, 177.20 nodes and 222.87 edges per graph without loops
        ("dblp-collection", 69, 12227, 15378, [21, 24, 24]),
        # TU IMDB-MULTI: 1500 graphs, 19502 nodes, 197806 directed rows = 98903 edges
        ("imdb-collection", 1500, 19502, 98903, [500, 500, 500]),
        ("dblp-new-collection", 23, 7743, 11051, None),
        ("imdb-new-collection", 100, 3626, 25061, None),
    ],
)
def test_collection_sizes(name, graphs, nodes, edges, labels):
    g = load_dataset(name)
    assert is_collection(g)
    ptr = g.meta["graph_ptr"]
    assert len(ptr) == graphs + 1 and ptr[0] == 0 and ptr[-1] == nodes
    assert (g.num_nodes, g.num_edges, g.num_features, g.num_classes) == (nodes, edges, 0, 0)
    if labels is not None:
        assert np.bincount(g.meta["graph_labels"]).tolist() == labels
    parts = split_collection(g)
    assert len(parts) == graphs
    assert sum(e.shape[0] for e, _ in parts) == edges
    assert all(n == ptr[k + 1] - ptr[k] for k, (_, n) in enumerate(parts))
    assert all(e.size == 0 or (e.min() >= 0 and e.max() < n) for e, n in parts)


@needs_mirror
def test_dblp_first_graph_matches_the_pickle():
    import pickle

    import networkx as nx

    from ...conftest import MIRROR

    with open(MIRROR / "dpggan/data/orig/relabeled_dblp2.pkl", "rb") as fh:
        raw = pickle.load(fh)
    edges, n = split_collection(load_dataset("dblp-collection"))[5]
    g = raw[5].copy()
    g.remove_edges_from(nx.selfloop_edges(g))
    assert n == g.number_of_nodes()  # isolated nodes kept
    ours = nx.Graph()
    ours.add_nodes_from(range(n))
    ours.add_edges_from(edges.tolist())
    index = {v: i for i, v in enumerate(raw[5].nodes)}
    assert {tuple(sorted((index[u], index[v]))) for u, v in g.edges} == {
        tuple(e) for e in edges.tolist()
    }


def test_union_and_split_round_trip():
    parts = [
        (np.array([[0, 1], [1, 2]]), 4),
        (np.zeros((0, 2), np.int64), 2),
        (np.array([[1, 0]]), 3),
    ]
    g = union("toy", parts, np.array([0, 1, 0]))
    assert g.meta["graph_ptr"].tolist() == [0, 4, 6, 9]
    assert g.edges.tolist() == [[0, 1], [1, 2], [6, 7]]
    back = split_collection(g)
    assert [n for _, n in back] == [4, 2, 3]
    assert [e.tolist() for e, _ in back] == [[[0, 1], [1, 2]], [], [[0, 1]]]


def test_collection_to_a_node_level_protocol_is_one_line_error():
    config = RunConfig(protocol="hogs", dataset="dblp-collection", metrics="none")
    with pytest.raises(NotACollectionError, match="collection of graphs") as err:
        check_collection(config)
    assert "\n" not in str(err.value)
    with pytest.raises(NotACollectionError):
        prepare(config)
