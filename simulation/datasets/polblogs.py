"""PolBlogs (Adamic & Glance 2005): 1490 political blogs, hyperlinks, liberal/conservative; the
mirror's ``PolBlogs/raw/{adjacency.tsv,labels.tsv}`` (MANIFEST note 3: a rebuild of Newman's
netdata release). The hyperlink graph is directed: it is symmetrised, deduplicated and stripped
of its self-loops (16,715 undirected edges; PPGSL's Table II counts 19,025 directed). There are
no features: the identity matrix (one-hot node ids) stands in, for every model."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ldpgraph.protocols.graph import Graph

from .build import make_graph
from .info import DatasetError, DatasetInfo, Stats

NODES = 1490


def _read_ints(path: Path, columns: int) -> np.ndarray:
    try:
        arr = np.loadtxt(path, delimiter="\t", dtype=np.int64, ndmin=2)
    except ValueError as err:
        raise DatasetError(f"{path}: not a {columns}-column integer TSV ({err})") from err
    if arr.size and arr.shape[1] != columns:
        raise DatasetError(f"{path}: expected {columns} columns, found {arr.shape[1]}")
    return arr.reshape(-1, columns)


def _load_polblogs(root: Path, info: DatasetInfo) -> Graph:
    adjacency, labels = (root / rel for rel in info.raw_files)
    y = _read_ints(labels, 1).ravel()
    pairs = _read_ints(adjacency, 2)
    n = len(y)
    if pairs.size and (pairs.min() < 0 or pairs.max() >= n):
        raise DatasetError(f"{adjacency}: a node id outside [0, {n}) (labels.tsv has {n} rows)")
    return make_graph(info.name, pairs, np.eye(n, dtype=np.uint8), y)


#: This family's registry entries.
ENTRIES = (
    DatasetInfo(
        name="polblogs",
        description="PolBlogs (political blogs, PyG's PolBlogs raw files), symmetrised; "
        "identity features (it has none)",
        expected=Stats(NODES, 16715, NODES, 2),
        raw_files=("PolBlogs/raw/adjacency.tsv", "PolBlogs/raw/labels.tsv"),
        loader=_load_polblogs,
    ),
)
