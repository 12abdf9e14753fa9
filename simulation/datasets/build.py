"""From raw files to a canonical ``Graph``, built once per dataset and kept in the processed
cache (``<cache>/graphs/``) keyed by the raw files' sizes and mtimes."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ldpgraph.protocols.graph import Graph, canonical_edges

from .info import DatasetError, DatasetInfo
from .locations import cache_dir

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no cross-process lock, loads may repeat
    fcntl = None  # type: ignore[assignment]

#: Bump when a loader's output changes, so stale cache files are not reused.
LOADER_VERSION = 1


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


def make_graph(name: str, pairs: np.ndarray, x: np.ndarray, y: np.ndarray) -> Graph:
    """The canonical graph every loader returns (see the package docstring)."""
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


def raw_fingerprint(root: Path, info: DatasetInfo) -> str:
    """The processed cache's key: the dataset, the loader version and its raw files' sizes and
    mtimes."""
    h = hashlib.sha256(f"{info.name}|v{LOADER_VERSION}".encode())
    for rel in info.raw_files:
        st = (root / rel).stat()
        h.update(f"|{rel}|{st.st_size}|{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def cache_paths(info: DatasetInfo, key: str) -> tuple[Path, Path]:
    """The processed graph (``.npz``) and its stats sidecar (``.json``) for one cache key."""
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


def graph_stats(graph: Graph) -> dict[str, Any]:
    """What ``ldpgraph datasets`` shows of a graph."""
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
    stats = graph_stats(graph) | {"feature_domain_public": graph.meta["feature_domain_public"]}
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


def load_processed(info: DatasetInfo, root: Path) -> Graph:
    """The graph of ``info`` from the raw files under ``root``: from the processed cache, else
    built (once across processes) and cached."""
    assert info.loader is not None
    key = raw_fingerprint(root, info)
    npz_path, json_path = cache_paths(info, key)
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
    from .safe_pickle import load_pickle

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
                load_pickle(path, encoding="latin1")
            elif path.suffix == ".json":
                json.loads(path.read_text(encoding="utf-8"))
            elif path.suffix == ".csv":
                np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
        except Exception:
            return path
    return None
