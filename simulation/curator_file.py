"""The curator file: everything the server of a deployment may know about a partitioned graph,
and nothing else.

Written by ``ldpgraph partition`` (:mod:`.partition`) beside the node files; the ServerApp runs
from it (``curator`` in the run config) instead of loading the dataset. It holds node ids
(``0..n-1``, and which block of them each node file holds), labels and the seeded split, n, d,
the number of classes, the public feature domain, the manifest (which SuperNode's key may host
each node file, :mod:`ldpgraph.server.binding`) and — only for protocols whose server sees the
true features, and only the rows of the nodes that consented to that — the feature matrix. No
adjacency, no private features. Versioned and checksummed: a wrong or corrupt file is refused
on load.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ldpgraph.server.binding import BindingError, Manifest

from .splits import Split, make_split

FORMAT = "ldpgraph-curator"
VERSION = 1
FILE = "curator.json"
FEATURES = "curator-features.npy"


class CuratorFileError(ValueError):
    """A curator file that is missing, of another format or version, or inconsistent."""


@dataclass
class Curator:
    """The server's knowledge of a partitioned graph (duck-types the parts of ``Graph`` that
    training and the result record read: ``y``, sizes; ``num_edges`` is unknown)."""

    path: Path
    partition: str
    dataset: str
    num_nodes: int
    num_features: int
    num_classes: int
    feature_domain: tuple[float, float]
    y: np.ndarray
    split_seed: int
    split_fractions: tuple[float, float]
    split: Split
    blocks: list[dict[str, Any]] = field(default_factory=list)
    public_features: np.ndarray | None = None
    #: Which nodes consented to their true features going to the server (with
    #: ``public_features``; the rows of the others are zero).
    public_consent: np.ndarray | None = None

    @property
    def num_edges(self) -> None:
        return None

    @property
    def manifest(self) -> Manifest | None:
        """The node → SuperNode-key binding of the node files (None: the partition has none)."""
        try:
            return Manifest.from_blocks(self.num_nodes, self.blocks)
        except BindingError as exc:
            raise CuratorFileError(f"{self.path}: {exc}") from None

    def split_for(self, seed: int, train: float, val: float) -> Any:
        """The stored split when it is the run's; else the run's own (a public function of n
        and the seed, so the server may always draw it)."""
        split = make_split(self.num_nodes, seed, train, val)
        if (seed, train, val) == (self.split_seed, *self.split_fractions):
            for a, b in zip(
                (split.train, split.val, split.test),
                (self.split.train, self.split.val, self.split.test),
                strict=True,
            ):
                if not np.array_equal(a, b):
                    raise CuratorFileError(f"{self.path}: stored split differs from the seed's")
        return split


def write_curator(
    directory: str | Path,
    *,
    partition: str,
    dataset: str,
    y: np.ndarray,
    num_features: int,
    feature_domain: tuple[float, float],
    split_seed: int,
    split_fractions: tuple[float, float],
    split: Any,
    blocks: list[dict[str, Any]],
    public_features: np.ndarray | None = None,
    public_consent: np.ndarray | None = None,
) -> Path:
    """Write ``curator.json`` (and, with ``public_features``, the consented rows beside it,
    checksummed) into ``directory``; returns its path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    y = np.asarray(y, dtype=np.int64)
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "partition": partition,
        "dataset": dataset,
        "num_nodes": int(y.shape[0]),
        "num_features": int(num_features),
        "num_classes": int(y.max()) + 1 if y.size else 0,
        "feature_domain": [float(feature_domain[0]), float(feature_domain[1])],
        "labels": y.tolist(),
        "split": {
            "seed": int(split_seed),
            "train_split": float(split_fractions[0]),
            "val_split": float(split_fractions[1]),
            "train": split.train.tolist(),
            "val": split.val.tolist(),
            "test": split.test.tolist(),
        },
        "blocks": blocks,
    }
    if public_features is not None:
        np.save(directory / FEATURES, np.ascontiguousarray(public_features))
        if public_consent is None:
            public_consent = np.ones(int(y.shape[0]), dtype=bool)
        doc["public_features"] = {
            "file": FEATURES,
            "sha256": hashlib.sha256((directory / FEATURES).read_bytes()).hexdigest(),
            "consented": np.flatnonzero(public_consent).tolist(),
        }
    path = directory / FILE
    path.write_text(json.dumps(doc, separators=(",", ":")))
    return path


def load_curator(path: str | Path) -> Curator:
    """Read and check a curator file (or the directory holding ``curator.json``)."""
    path = Path(path)
    if path.is_dir():
        path = path / FILE
    if not path.is_file():
        raise CuratorFileError(f"no curator file at {path}")
    try:
        doc = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CuratorFileError(f"corrupt curator file {path}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CuratorFileError(f"{path} is not an ldpgraph curator file")
    if doc.get("version") != VERSION:
        raise CuratorFileError(
            f"{path} has curator-file version {doc.get('version')}, expected {VERSION}"
        )
    try:
        n = int(doc["num_nodes"])
        y = np.asarray(doc["labels"], dtype=np.int64)
        sp = doc["split"]
        split = Split(*(np.asarray(sp[k], dtype=np.int64) for k in ("train", "val", "test")))
        curator = Curator(
            path=path,
            partition=str(doc["partition"]),
            dataset=str(doc["dataset"]),
            num_nodes=n,
            num_features=int(doc["num_features"]),
            num_classes=int(doc["num_classes"]),
            feature_domain=(float(doc["feature_domain"][0]), float(doc["feature_domain"][1])),
            y=y,
            split_seed=int(sp["seed"]),
            split_fractions=(float(sp["train_split"]), float(sp["val_split"])),
            split=split,
            blocks=list(doc["blocks"]),
        )
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise CuratorFileError(f"corrupt curator file {path}: bad or missing field {exc}") from None
    _check(curator)
    if "public_features" in doc:
        entry = doc["public_features"]
        curator.public_features = _load_features(path.parent, entry, curator)
        curator.public_consent = _load_consent(path, entry, curator)
    curator.manifest  # noqa: B018 (a half-bound manifest is refused on load)
    return curator


def _load_consent(path: Path, entry: dict[str, Any], c: Curator) -> np.ndarray:
    """The consent mask; a curator file of before per-node consent (no ``consented``) is
    read as: every node's features were shipped."""
    mask = np.zeros(c.num_nodes, dtype=bool)
    ids = entry.get("consented")
    if ids is None:
        mask[:] = True
        return mask
    try:
        ids = np.asarray(ids, dtype=np.int64)
    except (TypeError, ValueError):
        raise CuratorFileError(f"{path}: bad public-features consent list") from None
    if ids.ndim != 1 or (ids.size and (ids.min() < 0 or ids.max() >= c.num_nodes)):
        raise CuratorFileError(f"{path}: bad public-features consent list")
    mask[ids] = True
    return mask


def _check(c: Curator) -> None:
    where = c.path
    if c.y.shape != (c.num_nodes,) or (c.y.size and (c.y.min() < 0 or c.y.max() >= c.num_classes)):
        raise CuratorFileError(f"{where}: labels do not match {c.num_nodes} nodes")
    ids = np.concatenate([c.split.train, c.split.val, c.split.test])
    if ids.size != c.num_nodes or not np.array_equal(np.sort(ids), np.arange(c.num_nodes)):
        raise CuratorFileError(f"{where}: the split is not a partition of the {c.num_nodes} nodes")
    covered = 0
    for block in sorted(c.blocks, key=lambda b: int(b["first"])):
        if int(block["first"]) != covered or int(block["count"]) < 1:
            raise CuratorFileError(f"{where}: node blocks do not tile 0..{c.num_nodes - 1}")
        covered += int(block["count"])
    if covered != c.num_nodes:
        raise CuratorFileError(f"{where}: node blocks do not tile 0..{c.num_nodes - 1}")


def _load_features(directory: Path, entry: dict[str, Any], c: Curator) -> np.ndarray:
    file = directory / str(entry["file"])
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise CuratorFileError(f"cannot read {file}: {exc.strerror}") from None
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        raise CuratorFileError(f"{file} is corrupt or was changed (checksum mismatch)")
    x = np.load(file)
    if x.shape != (c.num_nodes, c.num_features):
        raise CuratorFileError(f"{file}: features have shape {x.shape}")
    return x
