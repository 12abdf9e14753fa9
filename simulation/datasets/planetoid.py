"""Planetoid citation graphs (Cora, CiteSeer, PubMed), read through PyG's parser."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ldpgraph.protocols.graph import Graph

from .build import make_graph
from .download import fetch_each
from .info import DatasetInfo, Stats
from .locations import cache_dir
from .safe_pickle import load_pickle


def _pyg_workdir(root: Path, info: DatasetInfo) -> Path:
    """Symlink the raw files into ``<cache>/pyg/`` so PyG's ``processed/`` lands in the cache."""
    base = cache_dir() / "pyg"
    for rel in info.raw_files:
        src = (root / rel).resolve()
        dst = base / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.is_symlink() and Path(os.readlink(dst)) == src:
            continue
        stale = dst.is_symlink() or dst.exists()
        tmp = dst.with_name(f".{dst.name}.{os.getpid()}")
        tmp.unlink(missing_ok=True)
        try:
            tmp.symlink_to(src)
        except OSError:  # no symlinks on this filesystem
            shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
        if stale:  # other raw files than before: PyG would not notice, so drop its output
            shutil.rmtree(dst.parent.parent / "processed", ignore_errors=True)
    return base


def _load_planetoid(root: Path, info: DatasetInfo) -> Graph:
    """Cora / CiteSeer / PubMed through PyG's Planetoid parser (its index juggling is subtle)."""
    from torch_geometric.datasets import Planetoid

    folder = Path(info.raw_files[0]).parts[1]  # Planetoid/<Folder>/raw/...
    # PyG unpickles the ind.* files with no restriction: read each with ours first, so a
    # file naming anything but numpy/scipy data is refused before PyG runs it.
    for rel in info.raw_files:
        if not rel.endswith(".index"):
            load_pickle(root / rel, encoding="latin1")
    base = _pyg_workdir(root, info)
    dataset = Planetoid(root=str(base / "Planetoid"), name=folder)
    data = dataset[0]
    x = data.x.numpy()
    return make_graph(info.name, data.edge_index.numpy().T, x, data.y.numpy())


def _planetoid(
    name: str, folder: str, description: str, expected: Stats, mirrored: bool
) -> DatasetInfo:
    stem = folder.lower()
    exts = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
    return DatasetInfo(
        name=name,
        description=description,
        expected=expected,
        raw_files=tuple(f"Planetoid/{folder}/raw/ind.{stem}.{e}" for e in exts),
        loader=_load_planetoid,
        fetch=fetch_each("https://github.com/kimiyoung/planetoid/raw/master/data"),
        mirrored=mirrored,
    )


#: This family's registry entries, in the order ``ldpgraph datasets`` lists them.
ENTRIES = (
    _planetoid(
        "cora",
        "Cora",
        "Planetoid Cora citation graph, binary bag-of-words",
        Stats(2708, 5278, 1433, 7),
        True,
    ),
    _planetoid(
        "citeseer",
        "CiteSeer",
        "Planetoid CiteSeer citation graph, binary bag-of-words",
        Stats(3327, 4552, 3703, 6),
        True,
    ),
    _planetoid(
        "pubmed",
        "PubMed",
        "Planetoid PubMed citation graph, TF-IDF features (not in the mirror: download only)",
        Stats(19717, 44324, 500, 3),
        False,
    ),
)
