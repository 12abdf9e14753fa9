"""The gnn-benchmark / graph2gauss npz datasets (CitationFull Cora_ML, Coauthor, Amazon)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ldpgraph.protocols.graph import Graph

from .build import make_graph
from .download import fetch_url
from .info import DatasetError, DatasetInfo, Stats


def _load_gnn_benchmark_npz(root: Path, info: DatasetInfo) -> Graph:
    """gnn-benchmark / graph2gauss npz, read as PyG's ``read_npz`` does but without dense floats.

    Like PyG: a feature is 1 where the stored value is positive, self-loops are dropped and the
    adjacency is symmetrised.
    """
    path = root / info.raw_files[0]
    with np.load(path, allow_pickle=False) as f:
        need = {
            "adj_indices",
            "adj_indptr",
            "adj_shape",
            "attr_data",
            "attr_indices",
            "attr_indptr",
            "attr_shape",
            "labels",
        }
        missing = need - set(f.files)
        if missing:
            raise DatasetError(f"{path}: lacks arrays {sorted(missing)}")
        n, d = (int(v) for v in f["attr_shape"])
        attr = sp.csr_matrix(
            (f["attr_data"], f["attr_indices"], f["attr_indptr"]), shape=(n, d)
        ).tocoo()
        adj = sp.csr_matrix(
            (np.ones_like(f["adj_indices"], dtype=np.int8), f["adj_indices"], f["adj_indptr"]),
            shape=tuple(int(v) for v in f["adj_shape"]),
        ).tocoo()
        y = f["labels"]
    x = np.zeros((n, d), dtype=np.uint8)
    pos = attr.data > 0
    x[attr.row[pos], attr.col[pos]] = 1
    pairs = np.stack([adj.row, adj.col], axis=1)
    return make_graph(info.name, pairs, x, y)


_GNN_BENCHMARK = "https://github.com/shchur/gnn-benchmark/raw/master/data/npz"


def _npz(name: str, rel: str, url: str, description: str, expected: Stats) -> DatasetInfo:
    return DatasetInfo(
        name=name,
        description=description,
        expected=expected,
        raw_files=(rel,),
        loader=_load_gnn_benchmark_npz,
        fetch=fetch_url(url),
    )


#: This family's registry entries, in the order ``ldpgraph datasets`` lists them.
ENTRIES = (
    _npz(
        "cora-ml",
        "CitationFull/cora_ml/raw/cora_ml.npz",
        "https://github.com/abojchevski/graph2gauss/raw/master/data/cora_ml.npz",
        "CitationFull Cora_ML, features binarised as in PyG",
        Stats(2995, 8158, 2879, 7),
    ),
    _npz(
        "coauthor-cs",
        "Coauthor/CS/raw/ms_academic_cs.npz",
        f"{_GNN_BENCHMARK}/ms_academic_cs.npz",
        "Coauthor CS co-authorship graph, keyword counts binarised as in PyG",
        Stats(18333, 81894, 6805, 15),
    ),
    _npz(
        "coauthor-physics",
        "Coauthor/Physics/raw/ms_academic_phy.npz",
        f"{_GNN_BENCHMARK}/ms_academic_phy.npz",
        "Coauthor Physics co-authorship graph, keyword counts binarised as in PyG",
        Stats(34493, 247962, 8415, 5),
    ),
    _npz(
        "amazon-photo",
        "Amazon/Photo/raw/amazon_electronics_photo.npz",
        f"{_GNN_BENCHMARK}/amazon_electronics_photo.npz",
        "Amazon Photo co-purchase graph, binary bag-of-words",
        Stats(7650, 119081, 745, 8),
    ),
    _npz(
        "amazon-computers",
        "Amazon/Computers/raw/amazon_electronics_computers.npz",
        f"{_GNN_BENCHMARK}/amazon_electronics_computers.npz",
        "Amazon Computers co-purchase graph, binary bag-of-words",
        Stats(13752, 245861, 767, 10),
    ),
)
