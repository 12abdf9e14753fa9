"""Node data files: what a node-client may read about the graph — its own rows only.

A node store is a directory holding a block of consecutive nodes: ``meta.json`` (format
version, the block's first node id and size, n, d, feature dtype and public domain) and three
``.npy`` arrays (``indptr``, ``indices`` of the block's adjacency rows, ``features``). Arrays are
memory-mapped, so a client touches only the pages of the rows it reads. The simulation writes
one store with every node; a deployment writes one store per SuperNode (``ldpgraph partition``),
tagged with the partition's id and with the sha256 of each array, so that a file of another
partition, a truncated copy or a flipped byte is refused on load with a clear error.
numpy only: this is on the client's import path.
"""

from __future__ import annotations

import hashlib
import json
import struct
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ldpgraph.protocols.types import NodeView

FORMAT = "ldpgraph-nodes"
VERSION = 2
ARRAYS = ("indptr", "indices", "features")


class NodeDataError(ValueError):
    """A node file that is missing, of another format or version, or inconsistent."""


class NodeStore:
    """Read-only access to a block of nodes' adjacency rows and features."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        meta_file = self.path / "meta.json"
        if not meta_file.is_file():
            raise NodeDataError(f"no node data at {self.path} (missing meta.json)")
        try:
            meta = json.loads(meta_file.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError, OSError) as exc:
            raise NodeDataError(f"unreadable {meta_file}: {exc}") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise NodeDataError(f"{self.path} is not an ldpgraph node store")
        if meta.get("version") != VERSION:
            raise NodeDataError(
                f"{self.path} has node-store version {meta.get('version')}, expected {VERSION}"
            )
        self.meta = meta
        try:
            self.first = int(meta["first"])
            self.count = int(meta["count"])
            self.num_nodes = int(meta["num_nodes"])
            self.num_features = int(meta["num_features"])
            self.feature_domain = (float(meta["domain"][0]), float(meta["domain"][1]))
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise NodeDataError(f"corrupt {meta_file}: bad or missing field {exc}") from None
        self.partition = str(meta.get("partition") or "")
        for name, digest in (meta.get("sha256") or {}).items():
            if name not in ARRAYS or _sha256(self.path / f"{name}.npy") != digest:
                raise NodeDataError(
                    f"{self.path}/{name}.npy is corrupt or was changed (checksum mismatch)"
                )
        try:
            self.indptr = np.load(self.path / "indptr.npy", mmap_mode="r")
            self.indices = np.load(self.path / "indices.npy", mmap_mode="r")
            self.features = np.load(self.path / "features.npy", mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise NodeDataError(f"cannot read node arrays in {self.path}: {exc}") from None
        if self.indptr.shape != (self.count + 1,) or int(self.indptr[-1]) != self.indices.shape[0]:
            raise NodeDataError(f"{self.path}: adjacency arrays do not match {self.count} nodes")
        if self.features.shape != (self.count, self.num_features):
            raise NodeDataError(
                f"{self.path}: features have shape {self.features.shape}, expected "
                f"({self.count}, {self.num_features})"
            )
        if not (0 <= self.first and self.first + self.count <= self.num_nodes):
            raise NodeDataError(f"{self.path}: node ids outside [0, {self.num_nodes})")

    def check_against(self, num_nodes: int, partition: str = "") -> None:
        """Refuse to serve a server that runs another graph or another partition of it."""
        if partition and self.partition and partition != self.partition:
            raise NodeDataError(
                f"{self.path} belongs to partition {self.partition}, but the server runs "
                f"partition {partition}: start this SuperNode with a file of that partition"
            )
        if num_nodes != self.num_nodes:
            raise NodeDataError(
                f"{self.path} holds nodes of a {self.num_nodes}-node graph, but the server runs "
                f"a {num_nodes}-node graph"
            )

    def fingerprint(self, node_id: int) -> str:
        """The node's data fingerprint (:func:`fingerprint`: its id, row and feature values;
        no path or label), the key of its deployed ledger; cached."""
        cache = self.__dict__.setdefault("_fingerprints", {})
        if node_id not in cache:
            view = self.view(node_id)
            cache[node_id] = fingerprint(node_id, view.neighbors, view.features)
        return cache[node_id]

    @property
    def node_ids(self) -> range:
        return range(self.first, self.first + self.count)

    def view(self, node_id: int) -> NodeView:
        """The view of one node of this block (its row and features, nothing else)."""
        k = node_id - self.first
        if not 0 <= k < self.count:
            raise NodeDataError(f"node {node_id} is not in {self.path}")
        row = np.array(self.indices[self.indptr[k] : self.indptr[k + 1]], dtype=np.int64)
        if row.size and (row.min() < 0 or row.max() >= self.num_nodes or (row == node_id).any()):
            raise NodeDataError(f"{self.path}: adjacency row of node {node_id} is invalid")
        return NodeView(
            node_id, row, np.array(self.features[k]), self.num_nodes, self.feature_domain
        )


def fingerprint(node_id: int, neighbors: Any, features: Any) -> str:
    """SHA-256 of a canonical encoding of a node's own data: its id, its sorted distinct
    neighbour ids (int64) and its feature values (float64, −0 as 0), little-endian. No path,
    dataset label, partition or dtype enters it. The id is part of the row's identity (two
    isolated nodes with equal features stay two nodes)."""
    row = np.unique(np.asarray(neighbors, dtype=np.int64))
    feats = np.ascontiguousarray(np.asarray(features, dtype="<f8").ravel() + 0.0)
    digest = hashlib.sha256(b"ldpgraph-node-fingerprint-v1\0")
    digest.update(struct.pack("<qqq", int(node_id), row.size, feats.size))
    digest.update(row.astype("<i8").tobytes())
    digest.update(feats.tobytes())
    return digest.hexdigest()


@lru_cache(maxsize=8)
def open_store(path: str) -> NodeStore:
    """A process-wide cache: a Ray actor serving many SuperNodes opens each store once."""
    return NodeStore(path)


def write_store(
    path: str | Path,
    indptr: np.ndarray,
    indices: np.ndarray,
    features: np.ndarray,
    *,
    first: int,
    num_nodes: int,
    feature_domain: tuple[float, float],
    partition: str = "",
    checksums: bool = False,
    extra: dict | None = None,
) -> Path:
    """Write a block of rows as a node store (used by the simulation and `ldpgraph partition`,
    which tags it with its ``partition`` id and adds ``checksums`` of the arrays)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    indptr = np.asarray(indptr, dtype=np.int64)
    indptr = indptr - indptr[0]
    np.save(path / "indptr.npy", indptr)
    np.save(path / "indices.npy", np.asarray(indices, dtype=np.int32))
    np.save(path / "features.npy", np.ascontiguousarray(features))
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "first": int(first),
        "count": len(indptr) - 1,
        "num_nodes": int(num_nodes),
        "num_features": int(features.shape[1]),
        "feature_dtype": str(features.dtype),
        "domain": list(feature_domain),
    }
    if partition:
        meta["partition"] = partition
    if checksums:
        meta["sha256"] = {name: _sha256(path / f"{name}.npy") for name in ARRAYS}
    meta.update(extra or {})
    (path / "meta.json").write_text(json.dumps(meta, indent=1))
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise NodeDataError(f"cannot read {path}: {exc.strerror}") from None
    return digest.hexdigest()
