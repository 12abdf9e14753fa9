"""The PrivDPR paper's edge lists (``sunnerzs/PrivDPR`` ``ProcessedData/``): Cora, CiteSeer,
p2p-Gnutella08 and Chicago as **structure-only** graphs: no features (N×0) and no labels
(every label −1, ``num_classes`` 0), so ``--metrics accuracy`` is refused on them.

Each file has lines ``u v 1.000000`` with 0-based ids; N = largest id + 1. Like every ldpgraph
graph these are loaded undirected and simple: CiteSeer's 124 self-loops are dropped (the
paper says it removed them; the file keeps them) and p2p's directions are dropped (it is the
only directed one; a literal reading would keep it directed, which ldpgraph's graphs cannot).

Why Cora and CiteSeer carry no labels: their edge lists are Planetoid's graphs (the same
5,278 / 4,552 edges, an isomorphism exists, tests/simulation/datasets/test_privdpr.py) under
another node order (node 0 is Cora's most-cited paper, degree 168), and the files hold no ids
that map onto Planetoid's. Structure alone cannot recover the labels: some nodes with different
labels are interchangeable by an automorphism (twins, e.g. two leaves of one hub: at least 39
Cora and 240 CiteSeer nodes). For the node-classification task run the strategy on ``cora`` /
``citeseer`` (Planetoid): the same graph with its labels.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ldpgraph.protocols.graph import Graph

from .build import make_graph
from .download import fetch_url
from .info import DatasetError, DatasetInfo, Stats

#: The commit of ``sunnerzs/PrivDPR`` that added ``ProcessedData/`` (unchanged since).
COMMIT = "6a2e5a55a5eb5c7e7b7f5dac9d0989c7da1335e3"
BASE_URL = f"https://raw.githubusercontent.com/sunnerzs/PrivDPR/{COMMIT}/ProcessedData"


def read_edge_list(path: Path) -> tuple[np.ndarray, int]:
    """The ``u v [weight]`` lines of ``path`` as int64 pairs ``[m, 2]`` and N = max id + 1."""
    try:
        raw = np.loadtxt(path, dtype=np.float64, ndmin=2)
    except ValueError as err:
        raise DatasetError(f"{path}: not a whitespace edge list 'u v [w]' ({err})") from err
    if raw.size == 0:
        raise DatasetError(f"{path}: no edges")
    if raw.shape[1] < 2:
        raise DatasetError(f"{path}: expected at least 2 columns, found {raw.shape[1]}")
    ids = raw[:, :2]
    if (ids < 0).any() or (ids != np.floor(ids)).any():
        raise DatasetError(f"{path}: node ids must be non-negative integers")
    pairs = ids.astype(np.int64)
    return pairs, int(pairs.max()) + 1


def structure_only(name: str, pairs: np.ndarray, n: int) -> Graph:
    """A graph with edges only: N×0 features, every label −1 (no classes)."""
    graph = make_graph(name, pairs, np.zeros((n, 0), dtype=np.uint8), np.zeros(n))
    graph.y[:] = -1
    return graph


def _load(root: Path, info: DatasetInfo) -> Graph:
    pairs, n = read_edge_list(root / info.raw_files[0])
    return structure_only(info.name, pairs, n)


def _entry(name: str, stem: str, description: str, stats: Stats) -> DatasetInfo:
    return DatasetInfo(
        name=name,
        description=description,
        expected=stats,
        raw_files=(f"privdpr/ProcessedData/Processed_{stem}.txt",),
        loader=_load,
        fetch=fetch_url(f"{BASE_URL}/Processed_{stem}.txt"),
    )


#: This family's registry entries, in the order ``ldpgraph datasets`` lists them.
ENTRIES = (
    _entry(
        "privdpr-cora",
        "cora",
        "PrivDPR's Cora edge list: structure only (Planetoid Cora's graph, other node order)",
        Stats(2708, 5278, 0, 0),
    ),
    _entry(
        "privdpr-citeseer",
        "citeseer",
        "PrivDPR's CiteSeer edge list: structure only (Planetoid CiteSeer's graph, other node "
        "order; its 124 self-loops dropped)",
        Stats(3327, 4552, 0, 0),
    ),
    _entry(
        "privdpr-p2p",
        "p2p",
        "PrivDPR's p2p-Gnutella08 edge list: structure only, directions dropped",
        Stats(6301, 20777, 0, 0),
    ),
    _entry(
        "privdpr-chicago",
        "chicago",
        "PrivDPR's Chicago road network (tntp-ChicagoRegional) edge list: structure only",
        Stats(12979, 20627, 0, 0),
    ),
)
