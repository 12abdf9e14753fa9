"""LastFM-Asia from the raw MUSAE release, filtered to its 10 largest classes as HoGS does."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import numpy as np

from ldpgraph.protocols.graph import Graph

from . import download
from .build import make_graph
from .info import DatasetError, DatasetInfo, Stats


def _read_int_csv(path: Path, columns: int) -> np.ndarray:
    """An integer CSV with a header line (MUSAE style) as an int64 ``[rows, columns]`` array."""
    try:
        arr = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    except ValueError as err:
        raise DatasetError(
            f"{path}: not a {columns}-column integer CSV with a header ({err})"
        ) from err
    if arr.size == 0:
        return np.zeros((0, columns), dtype=np.int64)
    if arr.shape[1] != columns:
        raise DatasetError(f"{path}: expected {columns} columns, found {arr.shape[1]}")
    return arr


def _load_lastfm(root: Path, info: DatasetInfo) -> Graph:
    """The raw MUSAE LastFM-Asia release, filtered to its 10 largest classes as HoGS does.

    Features: one binary column per distinct artist id in the whole release (7842), in increasing
    id order. Classes: the 10 largest (ties to the smaller id), renumbered 0..9 by original id.
    Nodes: those in a kept class, renumbered by increasing original id; edges: the induced ones.
    """
    edges_path, features_path, target_path = (root / rel for rel in info.raw_files)
    target = _read_int_csv(target_path, 2)
    ids, labels = target[:, 0], target[:, 1]
    order = np.argsort(ids, kind="stable")
    ids, labels = ids[order], labels[order]
    if np.any(ids[1:] == ids[:-1]):
        raise DatasetError(f"{target_path}: duplicate node ids")

    with open(features_path, encoding="utf-8") as fh:
        feats: dict[str, list[int]] = json.load(fh)
    try:
        feat_lists = {int(k): np.asarray(v, dtype=np.int64).reshape(-1) for k, v in feats.items()}
    except (TypeError, ValueError) as err:
        raise DatasetError(f"{features_path}: expected {{node id: [artist ids]}} ({err})") from err
    all_artists = [v for v in feat_lists.values() if v.size]
    artists = np.unique(np.concatenate(all_artists)) if all_artists else np.zeros(0, np.int64)

    classes, counts = np.unique(labels, return_counts=True)
    top = np.lexsort((classes, -counts))[:10]  # largest first, ties to the smaller class id
    kept_classes = np.sort(classes[top])
    keep = np.isin(labels, kept_classes)
    kept_ids = ids[keep]
    y = np.searchsorted(kept_classes, labels[keep])

    x = np.zeros((kept_ids.size, artists.size), dtype=np.uint8)
    for new_id, orig in enumerate(kept_ids.tolist()):
        row = feat_lists.get(orig)
        if row is not None and row.size:
            x[new_id, np.searchsorted(artists, row)] = 1

    raw_edges = _read_int_csv(edges_path, 2)
    unknown = ~np.isin(raw_edges, ids)
    if unknown.any():
        bad = int(raw_edges[unknown][0])
        raise DatasetError(f"{edges_path}: node {bad} is not in {target_path.name}")
    inside = np.isin(raw_edges, kept_ids).all(axis=1)
    pairs = np.searchsorted(kept_ids, raw_edges[inside])
    graph = make_graph(info.name, pairs, x, y)
    graph.meta["original_ids"] = kept_ids
    graph.meta["original_classes"] = kept_classes
    return graph


LASTFM_URL = "https://snap.stanford.edu/data/lastfm_asia.zip"


def _fetch_lastfm(root: Path, info: DatasetInfo) -> None:
    """SNAP's zip holds the three MUSAE files (in a sub-folder); extract them into the layout."""
    zpath = root / "LastFM" / "lastfm_asia.zip"
    if not zpath.is_file():
        download.download_file(LASTFM_URL, zpath)
    wanted = {Path(rel).name: root / rel for rel in info.raw_files}
    with zipfile.ZipFile(zpath) as zf:
        for member in zf.namelist():
            dest = wanted.get(Path(member).name)
            if dest is not None:
                dest.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(member) as src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out)


#: This family's registry entries, in the order ``ldpgraph datasets`` lists them.
ENTRIES = (
    DatasetInfo(
        name="lastfm",
        description="LastFM-Asia (raw MUSAE release), 10 largest classes as in HoGS; put "
        "the three SNAP files in <data_root>/LastFM/raw/ (not in the mirror)",
        expected=Stats(7083, 25814, 7842, 10),
        raw_files=(
            "LastFM/raw/lastfm_asia_edges.csv",
            "LastFM/raw/lastfm_asia_features.json",
            "LastFM/raw/lastfm_asia_target.csv",
        ),
        loader=_load_lastfm,
        fetch=_fetch_lastfm,
        mirrored=False,
    ),
)
