"""Collection datasets: a list of small graphs (DPGGAN/DPGVAE's DBLP and IMDB, that paper's §4),
served to the harness as **one** graph, their disjoint union.

A collection is held as a :class:`~ldpgraph.protocols.graph.Graph` whose nodes are the graphs'
nodes one graph after another, with ``meta["graph_ptr"]`` (int64, K + 1 offsets: graph k is
nodes ``ptr[k]:ptr[k+1]``) and ``meta["graph_labels"]`` (int64, K class labels). The union
has no features (N×0) and no node labels (every label −1, ``num_classes`` 0): the collections'
labels are per graph. Every graph is loaded undirected and simple (DBLP's self-loops, 35 per
graph on average, are dropped, our reading) and keeps its isolated nodes (they count in
N and in the Table-1 GINI and REDE).

Why one union rather than one run per graph: the harness then serves a collection unchanged:
every graph's nodes are clients of the one raw-upload round (every backend, the budget guard
and reply validation apply as to any graph), and the curator splits what it received back into
the graphs by the public offsets (the node sets are public under edge-DP, Definition 2). A
strategy that releases ``graphs`` trains one model per graph.

Entries: ``dblp-collection`` (``relabeled_dblp2.pkl``, the paper's DBLP: 69 graphs, its Table-1
"Original" row exactly), ``imdb-collection`` (TU IMDB-MULTI, 1500 ego-networks: the paper's
IMDB), and the later IJCAI version's resamples ``dblp-new-collection`` (``new_dblp2.pkl``) and
``imdb-new-collection`` (``new_IMDB_MULTI.pkl``), which are not the seed paper's data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ldpgraph.protocols.graph import Graph, split_by_offsets

from .build import make_graph
from .info import DatasetError, DatasetInfo, Stats
from .safe_pickle import load_pickle

#: Where the mirror holds the DPGGAN pickles (``haonan3/Secure-Network-Release-with-Link-Privacy``
#: ``data.zip``: ``data/orig/*.pkl``).
PICKLE_DIR = "dpggan/data/orig"
TU_DIR = "TUDataset/IMDB-MULTI/raw"


class NotACollectionError(ValueError):
    """A node-level dataset given where a collection is needed, or the other way round."""


def is_collection(graph: Any) -> bool:
    """Whether ``graph`` (a loaded Graph) is a collection (it carries ``graph_ptr``)."""
    meta = getattr(graph, "meta", None) or {}
    return meta.get("graph_ptr") is not None


def is_collection_name(name: str) -> bool:
    """Whether the dataset spec ``name`` names a collection (without loading it)."""
    key = str(name).partition(":")[0].strip().lower().replace("_", "-")
    return key in NAMES


def union(name: str, graphs: list[tuple[np.ndarray, int]], labels: np.ndarray) -> Graph:
    """The disjoint union of ``graphs`` (each (pairs [m, 2] of local ids, n)), as a
    structure-only collection with ``graph_ptr`` and ``graph_labels``."""
    if not graphs:
        raise DatasetError(f"{name}: the collection holds no graphs")
    sizes = np.asarray([n for _, n in graphs], dtype=np.int64)
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    pairs = [
        np.asarray(p, dtype=np.int64).reshape(-1, 2) + ptr[k] for k, (p, _) in enumerate(graphs)
    ]
    total = int(ptr[-1])
    graph = make_graph(name, np.concatenate(pairs), np.zeros((total, 0), np.uint8), np.zeros(total))
    graph.y[:] = -1
    graph.meta["graph_ptr"] = ptr
    graph.meta["graph_labels"] = np.asarray(labels, dtype=np.int64)
    return graph


def split_collection(graph: Any) -> list[tuple[np.ndarray, int]]:
    """The graphs of a collection as (edges [m, 2] in local ids, u < v, n), in order."""
    return split_by_offsets(graph.edges, graph.meta["graph_ptr"])


def _load_pickle(root: Path, info: DatasetInfo) -> Graph:
    path = root / info.raw_files[0]
    try:
        import networkx  # noqa: F401  (unpickling the list of networkx graphs needs it)
    except ImportError as err:  # pragma: no cover - networkx is a dependency
        raise DatasetError(f"{path}: reading it needs networkx") from err
    items = load_pickle(path)  # networkx graphs only: a poisoned file is refused
    if not isinstance(items, list):
        raise DatasetError(f"{path}: expected a list of networkx graphs, found {type(items)}")
    graphs, labels = [], []
    for g in items:
        index = {node: i for i, node in enumerate(g.nodes)}
        pairs = np.asarray([(index[u], index[v]) for u, v in g.edges], dtype=np.int64)
        graphs.append((pairs.reshape(-1, 2), len(index)))
        labels.append(int(g.graph.get("label", -1)))
    return union(info.name, graphs, np.asarray(labels))


def _load_tu(root: Path, info: DatasetInfo) -> Graph:
    a_path, ind_path, lab_path = (root / rel for rel in info.raw_files)
    pairs = np.loadtxt(a_path, delimiter=",", dtype=np.int64, ndmin=2) - 1
    indicator = np.loadtxt(ind_path, dtype=np.int64, ndmin=1) - 1
    labels = np.loadtxt(lab_path, dtype=np.int64, ndmin=1)
    k = int(labels.shape[0])
    if indicator.min() != 0 or indicator.max() != k - 1 or (np.diff(indicator) < 0).any():
        raise DatasetError(f"{ind_path}: graph ids must run 1..{k} in order")
    sizes = np.bincount(indicator, minlength=k)
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    which = indicator[pairs[:, 0]]
    if (which != indicator[pairs[:, 1]]).any():
        raise DatasetError(f"{a_path}: an edge joins two graphs")
    graphs = []
    for g in range(k):
        mine = pairs[which == g] - ptr[g]
        graphs.append((mine, int(sizes[g])))
    return union(info.name, graphs, labels - labels.min())


def _pickle_entry(name: str, stem: str, description: str, stats: Stats) -> DatasetInfo:
    return DatasetInfo(
        name=name,
        description=description,
        expected=stats,
        raw_files=(f"{PICKLE_DIR}/{stem}.pkl",),
        loader=_load_pickle,
    )


#: This family's registry entries.
ENTRIES = (
    _pickle_entry(
        "dblp-collection",
        "relabeled_dblp2",
        "DPGGAN's DBLP: 69 co-author graphs (relabeled_dblp2.pkl), self-loops dropped; a "
        "collection (graph releases: dpggan, dpgvae)",
        Stats(12227, 15378, 0, 0),
    ),
    DatasetInfo(
        name="imdb-collection",
        description="TU IMDB-MULTI: 1500 ego-networks (DPGGAN's IMDB); a collection",
        expected=Stats(19502, 98903, 0, 0),
        raw_files=(
            f"{TU_DIR}/IMDB-MULTI_A.txt",
            f"{TU_DIR}/IMDB-MULTI_graph_indicator.txt",
            f"{TU_DIR}/IMDB-MULTI_graph_labels.txt",
        ),
        loader=_load_tu,
    ),
    _pickle_entry(
        "dblp-new-collection",
        "new_dblp2",
        "DPGGAN's later (IJCAI) DBLP resample, 23 graphs (new_dblp2.pkl); a collection",
        Stats(7743, 11051, 0, 0),
    ),
    _pickle_entry(
        "imdb-new-collection",
        "new_IMDB_MULTI",
        "DPGGAN's later (IJCAI) IMDB resample, 100 graphs (new_IMDB_MULTI.pkl); a collection",
        Stats(3626, 25061, 0, 0),
    ),
)

NAMES = frozenset(info.name for info in ENTRIES)
