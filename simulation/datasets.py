"""The dataset layer: every graph ldpgraph runs on, loaded offline from a mirror or downloaded.

Where the raw files come from
    ``data_root`` (``--data-root``), else the ``LDPGRAPH_DATA`` environment variable, else none
    (the ``ldpgraph`` command also falls back to the data root ``make`` recorded in its virtual
    environment: :func:`recorded_data_root`).
    With a data root the raw files are read from ``<data_root>/<Folder>/.../raw/`` exactly as PyG
    lays them out (see ``shared/datasets/MANIFEST.md``) and nothing is downloaded, except for the
    datasets the mirror cannot hold (``pubmed``, ``lastfm``), which fall back to a download. Without
    a data root every dataset is downloaded from its usual public URL into the cache.

Where the output goes
    Only into :func:`cache_dir` (``LDPGRAPH_CACHE``, else ``~/.cache/ldpgraph``), never into the
    data root: PyG (used for Planetoid) gets symlinks to the raw files under ``<cache>/pyg/`` and
    writes its ``processed/`` there, and every load leaves a compact ``.npz`` under
    ``<cache>/graphs/`` keyed by the dataset name and the raw files' sizes and mtimes, so later
    loads neither import torch nor touch PyG.

What every graph looks like
    A :class:`~ldpgraph.protocols.graph.Graph`: undirected, no self-loops, no duplicate edges
    (``canonical_edges``), ``x`` uint8 when every feature is 0/1 (else float32), ``y`` int64. The
    gnn-benchmark npz datasets (CitationFull, Coauthor, Amazon) are read as PyG's ``read_npz``
    reads them: features set to 1 where the stored value is positive (Coauthor stores counts,
    CitationFull TF-IDF weights), self-loops dropped, edges made undirected.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import urllib.request
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import scipy.sparse as sp

from ldpgraph.protocols.graph import Graph, canonical_edges
from ldpgraph.protocols.rng import stage_rng

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no cross-process lock, loads may repeat
    fcntl = None  # type: ignore[assignment]

ENV_DATA = "LDPGRAPH_DATA"
ENV_CACHE = "LDPGRAPH_CACHE"

#: Bump when a loader's output changes, so stale cache files are not reused.
LOADER_VERSION = 1

_DOWNLOAD_TIMEOUT_S = 60.0


class DatasetError(ValueError):
    """A user error about a dataset: unknown name, missing files, bad parameters."""


@dataclass(frozen=True)
class Stats:
    """Size of a graph; ``edges`` counts undirected edges without self-loops."""

    nodes: int
    edges: int
    features: int
    classes: int

    def as_dict(self) -> dict[str, int]:
        return {
            "nodes": self.nodes,
            "edges": self.edges,
            "features": self.features,
            "classes": self.classes,
        }


Loader = Callable[[Path, "DatasetInfo"], Graph]
Fetcher = Callable[[Path, "DatasetInfo"], None]


@dataclass(frozen=True)
class DatasetInfo:
    """One registry entry.

    ``raw_files`` are relative to the data root (the mirror's layout). ``loader`` reads them from a
    root and returns the graph; ``fetch`` downloads them into a root with the same layout.
    ``mirrored`` is False for datasets the shared mirror cannot hold: those fall back to a download
    even when a data root is configured. ``params`` maps each accepted parameter to its default.
    """

    name: str
    description: str
    expected: Stats | None
    raw_files: tuple[str, ...]
    loader: Loader | None
    fetch: Fetcher | None = None
    mirrored: bool = True
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


# --------------------------------------------------------------------------------------------
# Locations


def resolve_data_root(data_root: str | os.PathLike[str] | None) -> Path | None:
    """The argument, else ``$LDPGRAPH_DATA``, else None (download into the cache)."""
    if data_root is not None and str(data_root) != "":
        return Path(data_root).expanduser()
    env = os.environ.get(ENV_DATA, "")
    return Path(env).expanduser() if env else None


#: ``make`` writes the data root it resolved (``DATA``) to this file in the virtual
#: environment; the ``ldpgraph`` command of that environment falls back to it when neither
#: ``--data-root`` nor ``LDPGRAPH_DATA`` is given (see :func:`recorded_data_root`).
DATA_ROOT_FILE = "ldpgraph-data-root"


def recorded_data_root() -> Path | None:
    """The data root ``make`` recorded in this Python environment (``sys.prefix``), when the
    file exists and names an existing directory; else None."""
    try:
        text = (Path(sys.prefix) / DATA_ROOT_FILE).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return Path(text) if text and Path(text).is_dir() else None


def cache_dir() -> Path:
    """``$LDPGRAPH_CACHE``, else ``~/.cache/ldpgraph``: the only place loaders write to."""
    env = os.environ.get(ENV_CACHE, "")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "ldpgraph"


def _download_root() -> Path:
    return cache_dir() / "download"


#: How to point ldpgraph at the offline mirror; every "files not found" error ends with it.
DATA_HINT = (
    f"point ldpgraph at the dataset mirror with --data-root PATH or {ENV_DATA}=PATH "
    "(make run uses ../shared/datasets)"
)


def _missing(root: Path, info: DatasetInfo) -> list[str]:
    return [rel for rel in info.raw_files if not (root / rel).is_file()]


# --------------------------------------------------------------------------------------------
# Building graphs


def _as_features(x: np.ndarray) -> tuple[np.ndarray, tuple[float, float], bool]:
    """uint8 when all values are 0/1 (domain [0, 1]), else float32 with the observed range.

    The observed range is not a public bound; ``meta["feature_domain_public"]`` says so, and only
    the download fallbacks (PubMed, PyG's 128-dim Facebook) produce such features.
    """
    if x.dtype == np.uint8 or x.dtype == np.bool_:
        if x.size == 0 or int(x.max()) <= 1:
            return x.astype(np.uint8, copy=False), (0.0, 1.0), True
    elif x.size == 0 or bool(((x == 0) | (x == 1)).all()):
        return x.astype(np.uint8), (0.0, 1.0), True
    xf = np.ascontiguousarray(x, dtype=np.float32)
    return xf, (float(xf.min()), float(xf.max())), False


def _make_graph(name: str, pairs: np.ndarray, x: np.ndarray, y: np.ndarray) -> Graph:
    x, domain, binary = _as_features(np.asarray(x))
    y = np.asarray(y, dtype=np.int64).reshape(-1)
    if y.shape[0] != x.shape[0]:
        raise DatasetError(f"dataset {name!r}: {x.shape[0]} feature rows but {y.shape[0]} labels")
    edges = canonical_edges(pairs, x.shape[0])
    return Graph(
        name=name,
        edges=edges,
        x=x,
        y=y,
        feature_domain=domain,
        meta={"feature_domain_public": binary},
    )


# --------------------------------------------------------------------------------------------
# Loaders


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
    base = _pyg_workdir(root, info)
    dataset = Planetoid(root=str(base / "Planetoid"), name=folder)
    data = dataset[0]
    x = data.x.numpy()
    return _make_graph(info.name, data.edge_index.numpy().T, x, data.y.numpy())


def _load_facebook(root: Path, info: DatasetInfo) -> Graph:
    """Read ``facebook.npz`` directly: PyG's process() would make a 424 MB float copy of x.

    The mirror's file has the 4714 binary MUSAE feature ids; the download fallback gets PyG's
    hosted file instead, whose 128 features are floats (so ``x`` is float32 there).
    """
    path = root / info.raw_files[0]
    with np.load(path, allow_pickle=False) as f:
        missing = {"edges", "features", "target"} - set(f.files)
        if missing:
            raise DatasetError(f"{path}: lacks arrays {sorted(missing)}")
        x = f["features"]
        y = f["target"]
        pairs = f["edges"]
    return _make_graph(info.name, pairs, x, y)


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
    return _make_graph(info.name, pairs, x, y)


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
    graph = _make_graph(info.name, pairs, x, y)
    graph.meta["original_ids"] = kept_ids
    graph.meta["original_classes"] = kept_classes
    return graph


# --------------------------------------------------------------------------------------------
# Downloads (only where no data root is configured, or for datasets the mirror cannot hold)


def _download(url: str, dest: Path) -> None:
    """Fetch ``url`` into ``dest`` atomically (a failed download leaves nothing behind)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
    try:
        with (
            os.fdopen(fd, "wb") as out,
            urllib.request.urlopen(url, timeout=_DOWNLOAD_TIMEOUT_S) as resp,
        ):
            shutil.copyfileobj(resp, out)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _fetch_each(base_url: str) -> Fetcher:
    """Download every raw file by its base name from ``base_url`` (Planetoid, gnn-benchmark)."""

    def fetch(root: Path, info: DatasetInfo) -> None:
        for rel in _missing(root, info):
            _download(f"{base_url}/{Path(rel).name}", root / rel)

    return fetch


def _fetch_url(url: str) -> Fetcher:
    def fetch(root: Path, info: DatasetInfo) -> None:
        _download(url, root / info.raw_files[0])

    return fetch


LASTFM_URL = "https://snap.stanford.edu/data/lastfm_asia.zip"


def _fetch_lastfm(root: Path, info: DatasetInfo) -> None:
    """SNAP's zip holds the three MUSAE files (in a sub-folder); extract them into the layout."""
    zpath = root / "LastFM" / "lastfm_asia.zip"
    if not zpath.is_file():
        _download(LASTFM_URL, zpath)
    wanted = {Path(rel).name: root / rel for rel in info.raw_files}
    with zipfile.ZipFile(zpath) as zf:
        for member in zf.namelist():
            dest = wanted.get(Path(member).name)
            if dest is not None:
                dest.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(member) as src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out)


# --------------------------------------------------------------------------------------------
# Synthetic graphs


SYNTHETIC_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "n": 1000,
        "classes": 5,
        "avg_degree": 8.0,
        "homophily": 0.8,
        "d": 500,
        "feature_density": 0.05,
        "feature_signal": 0.7,
        "seed": 0,
    }
)

#: Largest fraction of the possible intra- or inter-class pairs the sparse sampler will fill.
_MAX_FILL = 0.5
_FEATURE_CHUNK = 8192


def _sample_unique_keys(
    draw: Callable[[int], np.ndarray], target: int, rng: np.random.Generator
) -> np.ndarray:
    """Draw edge keys until ``target`` distinct ones exist, then keep a uniform subset."""
    keys = np.zeros(0, dtype=np.int64)
    while keys.size < target:
        need = target - keys.size
        keys = np.union1d(keys, draw(need + need // 8 + 16))
    if keys.size > target:
        keys = np.sort(rng.choice(keys, size=target, replace=False))
    return keys


def synthetic_graph(
    n: int = 1000,
    classes: int = 5,
    avg_degree: float = 8.0,
    homophily: float = 0.8,
    d: int = 500,
    feature_density: float = 0.05,
    feature_signal: float = 0.7,
    seed: int = 0,
) -> Graph:
    """A homophilous stochastic block model with class-correlated binary features.

    Sparse and near-linear (no n x n matrix): the number of intra-class edges is
    Binomial(round(n * avg_degree / 2), homophily), endpoints are uniform within a class (intra)
    or over pairs from different classes (inter), so the fraction of intra-class edges is exactly
    the drawn one. A node's expected number of 1-features is ``feature_density * d``; a fraction
    ``feature_signal`` of them fall in its class's block of columns and the rest uniformly.
    """
    params = _validate_synthetic(
        {
            "n": n,
            "classes": classes,
            "avg_degree": avg_degree,
            "homophily": homophily,
            "d": d,
            "feature_density": feature_density,
            "feature_signal": feature_signal,
            "seed": seed,
        }
    )
    n, classes, d, seed = params["n"], params["classes"], params["d"], params["seed"]
    rho, sig = params["feature_density"], params["feature_signal"]
    rng = stage_rng(seed, "synthetic")

    y = rng.permutation(np.arange(n, dtype=np.int64) % classes)
    order = np.argsort(y, kind="stable")  # nodes grouped by class
    sizes = np.bincount(y, minlength=classes).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    intra_pairs = sizes * (sizes - 1) // 2
    inter_w = sizes * (n - sizes)  # ordered (u in c, v not in c) pairs

    total = int(round(n * params["avg_degree"] / 2))
    m_in = int(rng.binomial(total, params["homophily"])) if total else 0
    m_in = min(m_in, int(_MAX_FILL * intra_pairs.sum()))
    m_out = min(total - m_in, int(_MAX_FILL * inter_w.sum() // 2))

    def keys(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        return np.minimum(u, v) * n + np.maximum(u, v)

    def draw_intra(k: int) -> np.ndarray:
        c = rng.choice(classes, size=k, p=intra_pairs / intra_pairs.sum())
        s = sizes[c]
        a = rng.integers(0, s)
        b = rng.integers(0, s - 1)
        b += b >= a
        return keys(order[offsets[c] + a], order[offsets[c] + b])

    def draw_inter(k: int) -> np.ndarray:
        c = rng.choice(classes, size=k, p=inter_w / inter_w.sum())
        u = order[offsets[c] + rng.integers(0, sizes[c])]
        r = rng.integers(0, n - sizes[c])
        v = order[r + sizes[c] * (r >= offsets[c])]
        return keys(u, v)

    parts = []
    if m_in:
        parts.append(_sample_unique_keys(draw_intra, m_in, rng))
    if m_out:
        parts.append(_sample_unique_keys(draw_inter, m_out, rng))
    key = np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
    edges = np.stack([key // n, key % n], axis=1).astype(np.int64)

    # Per-class Bernoulli rates: p_out everywhere plus extra mass on the class's own block, so
    # the expected density is rho and a fraction sig of the 1s come from the block.
    blocks = np.array_split(np.arange(d), classes)
    prob = np.full((classes, d), rho * (1.0 - sig), dtype=np.float32)
    for c, cols in enumerate(blocks):
        prob[c, cols] = rho * (sig * d / cols.size + 1.0 - sig)
    x = np.empty((n, d), dtype=np.uint8)
    for start in range(0, n, _FEATURE_CHUNK):
        stop = min(start + _FEATURE_CHUNK, n)
        u = rng.random((stop - start, d), dtype=np.float32)
        np.less(u, prob[y[start:stop]], out=x[start:stop], casting="unsafe")

    name = "synthetic"
    meta = {"params": dict(params), "feature_domain_public": True}
    return Graph(name=name, edges=edges, x=x, y=y, feature_domain=(0.0, 1.0), meta=meta)


#: Size bounds of synthetic graphs (10^5 nodes at d = 500 already take 3.7 GB here).
SYNTHETIC_MAX_NODES = 10_000_000
SYNTHETIC_MAX_ENTRIES = 1_000_000_000


def _validate_synthetic(params: Mapping[str, Any]) -> dict[str, Any]:
    p = {k: _coerce("synthetic", k, v, SYNTHETIC_DEFAULTS[k]) for k, v in params.items()}
    checks = [
        (p["n"] >= 2, "n must be >= 2"),
        (2 <= p["classes"] <= p["n"], "classes must be between 2 and n"),
        (p["avg_degree"] >= 0, "avg_degree must be >= 0"),
        (0.0 <= p["homophily"] <= 1.0, "homophily must be in [0, 1]"),
        (p["d"] >= p["classes"], "d must be >= classes (each class needs a block of columns)"),
        (0.0 <= p["feature_density"] <= 1.0, "feature_density must be in [0, 1]"),
        (0.0 <= p["feature_signal"] <= 1.0, "feature_signal must be in [0, 1]"),
        (p["seed"] >= 0, "seed must be >= 0"),
    ]
    for ok, msg in checks:
        if not ok:
            raise DatasetError(f"synthetic: {msg}")
    if p["n"] > SYNTHETIC_MAX_NODES:
        raise DatasetError(f"synthetic: n must be at most {SYNTHETIC_MAX_NODES:.0e}, got {p['n']}")
    if p["n"] * p["d"] > SYNTHETIC_MAX_ENTRIES:
        raise DatasetError(
            f"synthetic: n·d = {p['n'] * p['d']:.3g} feature entries is more than "
            f"{SYNTHETIC_MAX_ENTRIES:.0e} (the feature matrix and the nodes' reports would need "
            "tens of GB); lower n or d"
        )
    if p["n"] * p["avg_degree"] / 2 > SYNTHETIC_MAX_ENTRIES:
        raise DatasetError(
            f"synthetic: n·avg_degree/2 = {p['n'] * p['avg_degree'] / 2:.3g} edges is more than "
            f"{SYNTHETIC_MAX_ENTRIES:.0e}; lower n or avg_degree"
        )
    smallest_block = p["d"] // p["classes"]
    peak = p["feature_density"] * (
        p["feature_signal"] * p["d"] / smallest_block + 1.0 - p["feature_signal"]
    )
    if peak > 1.0:
        raise DatasetError(
            "synthetic: feature_density * (feature_signal * d / block + 1 - feature_signal) must "
            f"be <= 1 (the in-block 1-rate), got {peak:.3g}; lower feature_density or the signal"
        )
    n, k = p["n"], p["classes"]
    sizes = np.bincount(np.arange(n) % k, minlength=k)
    total = n * p["avg_degree"] / 2
    intra_cap = _MAX_FILL * float((sizes * (sizes - 1) // 2).sum())
    inter_cap = _MAX_FILL * float((sizes * (n - sizes)).sum()) / 2
    if total * p["homophily"] > intra_cap or total * (1 - p["homophily"]) > inter_cap:
        raise DatasetError(
            f"synthetic: avg_degree={p['avg_degree']} is too dense for n={n}, classes={k}, "
            f"homophily={p['homophily']} (the sparse sampler fills at most half the possible pairs)"
        )
    return p


# --------------------------------------------------------------------------------------------
# The registry


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
        fetch=_fetch_each("https://github.com/kimiyoung/planetoid/raw/master/data"),
        mirrored=mirrored,
    )


_GNN_BENCHMARK = "https://github.com/shchur/gnn-benchmark/raw/master/data/npz"


def _npz(name: str, rel: str, url: str, description: str, expected: Stats) -> DatasetInfo:
    return DatasetInfo(
        name=name,
        description=description,
        expected=expected,
        raw_files=(rel,),
        loader=_load_gnn_benchmark_npz,
        fetch=_fetch_url(url),
    )


DATASETS: dict[str, DatasetInfo] = {
    info.name: info
    for info in [
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
        DatasetInfo(
            name="facebook",
            description="FacebookPagePage (MUSAE), 4714 binary feature ids (mirror conversion)",
            expected=Stats(22470, 170823, 4714, 4),
            raw_files=("FacebookPagePage/raw/facebook.npz",),
            loader=_load_facebook,
            fetch=_fetch_url("https://graphmining.ai/datasets/ptg/facebook.npz"),
        ),
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
        DatasetInfo(
            name="synthetic",
            description="homophilous stochastic block model with class-correlated binary "
            "features (no files)",
            expected=None,
            raw_files=(),
            loader=None,
            params=SYNTHETIC_DEFAULTS,
        ),
    ]
}


def _known() -> str:
    return ", ".join(DATASETS)


def _normalise_name(name: str) -> str:
    key = name.strip().lower().replace("_", "-")
    if key not in DATASETS:
        raise DatasetError(f"unknown dataset {name!r}; known datasets: {_known()}")
    return key


# --------------------------------------------------------------------------------------------
# Parameters and specs


def _coerce(dataset: str, key: str, value: Any, default: Any) -> Any:
    """Convert a parameter to its default's type (int or float), refusing lossy conversions."""
    bad = DatasetError(
        f"{dataset}: parameter {key}={value!r} is not a valid {type(default).__name__}"
    )
    if isinstance(value, bool):
        raise bad
    if isinstance(value, str):
        text = value.strip()
        exact_int = isinstance(default, int) and text.lstrip("+-").isdigit()
        try:
            value = int(text) if exact_int else float(text)
        except ValueError:
            raise bad from None
    if isinstance(default, int):
        if isinstance(value, (int, np.integer)):
            return int(value)
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            return int(value)
        raise bad
    if isinstance(value, (int, float, np.integer, np.floating)) and np.isfinite(value):
        return float(value)
    raise bad


def parse_dataset_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Split ``"name:key=value,..."`` into the dataset name and typed parameters."""
    if not isinstance(spec, str) or not spec.strip():
        raise DatasetError(f"empty dataset spec {spec!r}; known datasets: {_known()}")
    head, sep, tail = spec.partition(":")
    name = _normalise_name(head)
    params: dict[str, Any] = {}
    if sep and tail.strip():
        for item in tail.split(","):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or not key or not value.strip():
                raise DatasetError(f"bad item {item!r} in dataset spec {spec!r}: want key=value")
            if key in params:
                raise DatasetError(f"parameter {key!r} given twice in dataset spec {spec!r}")
            params[key] = value.strip()
    return name, _check_params(DATASETS[name], params)


def _check_params(info: DatasetInfo, params: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(params) - set(info.params))
    if unknown:
        allowed = ", ".join(info.params) if info.params else "none"
        raise DatasetError(
            f"{info.name}: unknown parameter(s) {', '.join(unknown)}; allowed: {allowed}"
        )
    return {k: _coerce(info.name, k, v, info.params[k]) for k, v in params.items()}


# --------------------------------------------------------------------------------------------
# Cache


def _fingerprint(root: Path, info: DatasetInfo) -> str:
    h = hashlib.sha256(f"{info.name}|v{LOADER_VERSION}".encode())
    for rel in info.raw_files:
        st = (root / rel).stat()
        h.update(f"|{rel}|{st.st_size}|{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def _cache_paths(info: DatasetInfo, key: str) -> tuple[Path, Path]:
    base = cache_dir() / "graphs" / f"{info.name}-{key}"
    return base.with_suffix(".npz"), base.with_suffix(".json")


def _atomic_write(dest: Path, write: Callable[[Any], None]) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _graph_stats(graph: Graph) -> dict[str, Any]:
    return {
        "nodes": graph.num_nodes,
        "edges": graph.num_edges,
        "features": graph.num_features,
        "classes": graph.num_classes,
        "binary": graph.x.dtype == np.uint8,
    }


def _save_cached(graph: Graph, npz_path: Path, json_path: Path) -> None:
    arrays: dict[str, np.ndarray] = {"edges": graph.edges, "y": graph.y}
    if graph.x.dtype == np.uint8:
        arrays["x_bits"] = np.packbits(graph.x, axis=1)
        arrays["x_shape"] = np.asarray(graph.x.shape, dtype=np.int64)
    else:
        arrays["x"] = graph.x
    arrays["feature_domain"] = np.asarray(graph.feature_domain, dtype=np.float64)
    extra = {k: v for k, v in graph.meta.items() if isinstance(v, np.ndarray)}
    for k, v in extra.items():
        arrays[f"meta_{k}"] = v
    _atomic_write(npz_path, lambda fh: np.savez(fh, **arrays))
    stats = _graph_stats(graph) | {"feature_domain_public": graph.meta["feature_domain_public"]}
    _atomic_write(json_path, lambda fh: fh.write(json.dumps(stats, indent=1).encode()))


def _read_cached(name: str, npz_path: Path, json_path: Path) -> Graph | None:
    try:
        stats = json.loads(json_path.read_text())
        with np.load(npz_path, allow_pickle=False) as f:
            if "x_bits" in f.files:
                n, d = (int(v) for v in f["x_shape"])
                x = np.unpackbits(f["x_bits"], axis=1, count=d)
            else:
                x = f["x"]
            meta: dict[str, Any] = {k[5:]: f[k] for k in f.files if k.startswith("meta_")}
            lo, hi = (float(v) for v in f["feature_domain"])
            graph = Graph(name=name, edges=f["edges"], x=x, y=f["y"], feature_domain=(lo, hi))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None  # missing or damaged: rebuild it
    graph.meta.update(meta)
    graph.meta["feature_domain_public"] = bool(stats.get("feature_domain_public", True))
    return graph


# --------------------------------------------------------------------------------------------
# Loading


def _locate(info: DatasetInfo, data_root: Path | None, download: bool | None) -> Path:
    """The root holding ``info.raw_files``: the data root, else the download cache (fetching)."""
    dl_root = _download_root()
    if data_root is not None:
        missing = _missing(data_root, info)
        if not missing:
            return data_root
        allow = (not info.mirrored) if download is None else download
        if not allow and _missing(dl_root, info):
            raise DatasetError(
                f"dataset {info.name!r}: data root {data_root} lacks {len(missing)} raw file(s): "
                f"{', '.join(missing)} (expected at {data_root / missing[0]}"
                f"{' etc.' if len(missing) > 1 else ''}; see shared/datasets/MANIFEST.md); "
                f"{DATA_HINT}"
            )
    else:
        allow = True if download is None else download
    if not _missing(dl_root, info):
        return dl_root
    where = f"{data_root} or {dl_root}" if data_root is not None else str(dl_root)
    files = ", ".join(info.raw_files)
    if not allow or info.fetch is None:
        raise DatasetError(
            f"dataset {info.name!r}: raw files {files} not found under {where}; {DATA_HINT}"
        )
    try:
        info.fetch(dl_root, info)
    except Exception as err:  # any failure of a download means the same to the user
        target = data_root if data_root is not None else dl_root
        dirs = sorted({str((target / rel).parent) for rel in info.raw_files})
        raise DatasetError(
            f"dataset {info.name!r}: raw files {files} are not under {where} and the download "
            f"failed ({type(err).__name__}: {err}); put "
            f"{', '.join(sorted({Path(rel).name for rel in info.raw_files}))} "
            f"in {' / '.join(dirs)}, or {DATA_HINT}"
        ) from err
    still = _missing(dl_root, info)
    if still:
        raise DatasetError(
            f"dataset {info.name!r}: download did not provide {', '.join(still)} under {dl_root}"
        )
    return dl_root


@contextmanager
def _cache_lock(name: str) -> Iterator[None]:
    """Serialise cold loads of one dataset across processes (parallel sweep workers)."""
    path = cache_dir() / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        if fcntl is not None:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _load_real(info: DatasetInfo, root: Path) -> Graph:
    assert info.loader is not None
    key = _fingerprint(root, info)
    npz_path, json_path = _cache_paths(info, key)
    graph = _read_cached(info.name, npz_path, json_path) if npz_path.is_file() else None
    hit = graph is not None
    if graph is None:
        with _cache_lock(info.name):
            graph = _read_cached(info.name, npz_path, json_path)  # another process may be done
            hit = graph is not None
            if graph is None:
                graph = _run_loader(info, root)
                _save_cached(graph, npz_path, json_path)
    graph.meta.update(
        {
            "dataset": info.name,
            "source": str(root),
            "cache": "hit" if hit else "miss",
            "cache_file": str(npz_path),
        }
    )
    return graph


def check_dataset(name: str) -> None:
    """Raise DatasetError for a dataset name or spec :func:`load_dataset` would refuse (unknown
    name, bad or out-of-range parameters), without loading anything."""
    key, spec_params = parse_dataset_spec(name)
    merged = _check_params(DATASETS[key], spec_params)
    if key == "synthetic":
        _validate_synthetic(dict(SYNTHETIC_DEFAULTS) | merged)


def _run_loader(info: DatasetInfo, root: Path) -> Graph:
    """``info.loader``, with a damaged raw file (truncated, overwritten, of another format)
    reported as one DatasetError that names it."""
    assert info.loader is not None
    try:
        return info.loader(root, info)
    except DatasetError:
        raise
    except Exception as err:  # the parsers' errors are as varied as the damage
        culprit = _damaged_file(root, info)
        files = ", ".join(str(root / rel) for rel in info.raw_files)
        what = str(culprit) if culprit else f"one of {files}"
        raise DatasetError(
            f"dataset {info.name!r}: cannot read {what}: {type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else 'damaged'} (a damaged or truncated "
            "copy? restore it from the mirror)"
        ) from err


def _damaged_file(root: Path, info: DatasetInfo) -> Path | None:
    """The first raw file of ``info`` its own format's reader rejects (after a loader failed)."""
    import pickle

    for rel in info.raw_files:
        path = root / rel
        try:
            if path.suffix == ".npz":
                with np.load(path, allow_pickle=False) as f:
                    for key in f.files:
                        f[key]
            elif path.name.endswith(".index"):
                np.loadtxt(path, dtype=np.int64, ndmin=1)
            elif path.name.startswith("ind."):  # Planetoid's pickles, read as PyG reads them
                with open(path, "rb") as fh:
                    pickle.load(fh, encoding="latin1")
            elif path.suffix == ".json":
                json.loads(path.read_text(encoding="utf-8"))
            elif path.suffix == ".csv":
                np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
        except Exception:
            return path
    return None


def load_dataset(
    name: str,
    data_root: str | os.PathLike[str] | None = None,
    *,
    download: bool | None = None,
    **params: Any,
) -> Graph:
    """Load a dataset by name or spec (``"synthetic:n=2000,homophily=0.9"``) as a ``Graph``.

    ``download``: None (default) downloads only when no data root is configured or the dataset
    is not mirrorable (PubMed, LastFM); True also falls back to a download when the data root
    lacks the files; False never downloads.
    """
    key, spec_params = parse_dataset_spec(name)
    clash = sorted(set(spec_params) & set(params))
    if clash:
        raise DatasetError(
            f"parameter(s) {', '.join(clash)} given both in {name!r} and as keyword arguments"
        )
    info = DATASETS[key]
    merged = spec_params | _check_params(info, params)
    if key == "synthetic":
        graph = synthetic_graph(**(dict(SYNTHETIC_DEFAULTS) | merged))
        graph.meta.update({"dataset": "synthetic", "source": None, "cache": None})
        return graph
    root = _locate(info, resolve_data_root(data_root), download)
    return _load_real(info, root)


def dataset_catalog(
    data_root: str | os.PathLike[str] | None = None, compute: bool = True
) -> list[dict[str, Any]]:
    """One row per dataset: expected stats, whether it is available offline, measured stats.

    Offline means every raw file is present under the data root, or, failing that, already in
    the download cache. Measured stats come from the cache's sidecar when it has one, so
    repeated catalogs are fast.
    """
    root = resolve_data_root(data_root)
    dl_root = _download_root()
    rows = []
    for info in DATASETS.values():
        row: dict[str, Any] = {
            "name": info.name,
            "description": info.description,
            "expected": info.expected.as_dict() if info.expected else None,
            "raw_files": list(info.raw_files),
        }
        if info.name == "synthetic":
            row |= {"offline": True, "missing": [], "location": None}
        else:
            missing = _missing(root, info) if root is not None else list(info.raw_files)
            location = root if root is not None and not missing else None
            if location is None and not _missing(dl_root, info):
                location = dl_root
            row |= {
                "offline": location is not None,
                "missing": missing,
                "location": str(location) if location is not None else None,
            }
        if row["offline"] and compute:
            try:
                row["measured"] = _measure(info, Path(row["location"] or "."))
            except (DatasetError, OSError) as err:  # one bad dataset does not stop the list
                row["error"] = str(err)
        rows.append(row)
    return rows


def _measure(info: DatasetInfo, root: Path) -> dict[str, Any]:
    if info.name == "synthetic":
        return _graph_stats(synthetic_graph(**SYNTHETIC_DEFAULTS))
    _, json_path = _cache_paths(info, _fingerprint(root, info))
    try:
        stats = json.loads(json_path.read_text())
        return {k: stats[k] for k in ("nodes", "edges", "features", "classes", "binary")}
    except (OSError, ValueError, KeyError):
        return _graph_stats(_load_real(info, root))
