"""``ldpgraph partition``: node files for the SuperNodes and a curator file for the server.

Each node file (a node store, :mod:`ldpgraph.client.nodedata`) holds a block of k consecutive
nodes' adjacency rows and features, tagged with the partition's id and checksummed. The curator
file holds everything the server of a deployment may know, and nothing else; the ServerApp runs
from it (``curator`` in the run config) instead of loading the dataset: node ids
(``0..n-1``, and which block of them each node file holds), labels and the seeded split, n, d,
the number of classes, the public feature domain, the manifest (with ``--supernode-keys``: which
SuperNode's authentication key may host each node file, :mod:`ldpgraph.server.binding`) and —
only for protocols whose server sees the true features (edge-LDP settings), and only the rows of
the nodes that consented to that — the feature matrix. No adjacency, no private features.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ldpgraph.client.nodedata import write_store
from ldpgraph.protocols.graph import Graph
from ldpgraph.server.binding import BindingError, Manifest, key_fingerprint

from .splits import Split, make_split

FORMAT = "ldpgraph-curator"
VERSION = 1
FILE = "curator.json"
FEATURES = "curator-features.npy"
BLOCK = "nodes-{:05d}"
#: `ldpgraph partition` without --nodes-per-file writes at most this many node files.
AUTO_FILES = 16


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


def write_partition(
    graph: Graph,
    out: str | Path,
    nodes_per_file: int = 1,
    *,
    dataset: str,
    seed: int = 0,
    train_split: float = 0.5,
    val_split: float = 0.25,
    public_features: bool | np.ndarray = False,
    supernode_keys: list[str | Path] | None = None,
) -> dict[str, Any]:
    """Write one node file per block of ``nodes_per_file`` nodes and the curator file into
    ``out`` (which must be empty or absent); returns a summary.

    ``public_features``: True (every node consents) or a boolean mask of the nodes that
    consent to their true features going to the server; the other rows are not written.
    ``supernode_keys``: one OpenSSH public key file per node file, in order: the SuperNode
    that alone may host that file's nodes (the manifest).

    Everything is checked before anything is written, and the files are written into a
    hidden sibling directory that is renamed to ``out`` at the end: a failed or interrupted
    partition leaves no half-written ``out`` behind (nor anybody's rows)."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CuratorFileError(f"{out} exists and is not an empty directory")
    if nodes_per_file < 1:
        raise CuratorFileError("nodes-per-file must be >= 1")
    n = graph.num_nodes
    consent = _consent_mask(public_features, n)
    files = -(-n // nodes_per_file)
    keys = None
    if supernode_keys is not None:
        if len(supernode_keys) != files:
            raise CuratorFileError(
                f"{len(supernode_keys)} SuperNode key(s) for {files} node files: give one per file"
            )
        keys = [_fingerprint_file(Path(k)) for k in supernode_keys]
    try:
        split = make_split(n, seed, train_split, val_split)
    except ValueError as exc:
        raise CuratorFileError(f"bad split: {exc}") from None
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        info = _write_files(
            graph, work, nodes_per_file, split, dataset, seed, train_split, val_split,
            consent, keys,
        )  # fmt: skip
        if out.exists():
            out.rmdir()
        work.rename(out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return {**info, "curator": str(out / FILE)}


def _write_files(
    graph: Graph,
    out: Path,
    nodes_per_file: int,
    split: Any,
    dataset: str,
    seed: int,
    train_split: float,
    val_split: float,
    consent: np.ndarray | None,
    keys: list[str] | None,
) -> dict[str, Any]:
    n = graph.num_nodes
    edges = np.ascontiguousarray(graph.edges).tobytes()
    x = np.ascontiguousarray(graph.x).tobytes()
    ident = hashlib.sha256()
    for part in (dataset, n, graph.num_features, nodes_per_file):
        ident.update(f"{part}\0".encode())
    ident.update(edges)
    ident.update(x)
    partition = ident.hexdigest()[:16]
    content = hashlib.sha256(f"{dataset}\0{n}\0{graph.num_features}\0".encode())
    content.update(edges)
    content.update(x)
    # The graph's own id (not the block size): the key of every node's ledger, so that
    # re-partitioning the same graph does not hand its nodes a fresh budget.
    graph_id = content.hexdigest()[:16]
    adj = graph.adjacency()
    blocks = []
    for i, first in enumerate(range(0, n, nodes_per_file)):
        last = min(n, first + nodes_per_file)
        lo, hi = int(adj.indptr[first]), int(adj.indptr[last])
        name = BLOCK.format(i)
        write_store(
            out / name,
            adj.indptr[first : last + 1],
            adj.indices[lo:hi],
            graph.x[first:last],
            first=first,
            num_nodes=n,
            feature_domain=graph.feature_domain,
            partition=partition,
            checksums=True,
            extra={"graph": graph_id},
        )
        block = {"file": name, "first": first, "count": last - first}
        if keys is not None:
            block["supernode"] = keys[i]
        blocks.append(block)
    write_curator(
        out,
        partition=partition,
        dataset=dataset,
        y=graph.y,
        num_features=graph.num_features,
        feature_domain=graph.feature_domain,
        split_seed=seed,
        split_fractions=(train_split, val_split),
        split=split,
        blocks=blocks,
        public_features=None if consent is None else _consented_rows(graph.x, consent),
        public_consent=consent,
    )
    return {
        "partition": partition,
        "nodes": n,
        "files": len(blocks),
        "bound": keys is not None,
        "public_consent": None if consent is None else int(consent.sum()),
    }


def _consent_mask(public_features: bool | np.ndarray, n: int) -> np.ndarray | None:
    """The nodes whose true features may go to the server (None: no public features)."""
    if isinstance(public_features, bool | np.bool_):
        return np.ones(n, dtype=bool) if public_features else None
    mask = np.asarray(public_features)
    if mask.dtype != bool or mask.shape != (n,):
        raise CuratorFileError(f"public-features consent must be a boolean mask of {n} nodes")
    return mask


def _consented_rows(x: np.ndarray, consent: np.ndarray) -> np.ndarray:
    """The feature matrix with the rows of the nodes that did not consent zeroed (never
    written)."""
    out = np.zeros_like(np.asarray(x))
    out[consent] = np.asarray(x)[consent]
    return out


def _fingerprint_file(path: Path) -> str:
    try:
        return key_fingerprint(path.read_bytes())
    except OSError as exc:
        raise CuratorFileError(f"cannot read SuperNode key {path}: {exc.strerror}") from None
    except BindingError as exc:
        raise CuratorFileError(f"{path}: {exc}") from None


def read_consent(spec: str, n: int) -> np.ndarray:
    """``--public-features`` CONSENT: ``all``, or a file listing the ids of the nodes that
    consent (whitespace- or comma-separated); a boolean mask of the n nodes."""
    if spec == "all":
        return np.ones(n, dtype=bool)
    try:
        text = Path(spec).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise CuratorFileError(f"cannot read the consent file {spec}: {exc}") from None
    tokens = text.replace(",", " ").split()
    try:
        ids = np.asarray([int(t) for t in tokens], dtype=np.int64)
    except ValueError:
        raise CuratorFileError(f"{spec}: node ids must be integers") from None
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        raise CuratorFileError(f"{spec}: node ids must be in [0, {n})")
    mask = np.zeros(n, dtype=bool)
    mask[ids] = True
    return mask


def automatic_nodes_per_file(num_nodes: int) -> int:
    """The default block size: at most :data:`AUTO_FILES` node files (one per SuperNode)."""
    return max(1, -(-num_nodes // AUTO_FILES))


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
