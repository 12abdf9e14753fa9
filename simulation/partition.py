"""``ldpgraph partition``: node files for the SuperNodes and a curator file for the server.

Each node file (a node store, :mod:`ldpgraph.client.nodedata`) holds a block of k consecutive
nodes' adjacency rows and features, tagged with the partition's id and checksummed. The curator
file (:mod:`.curator_file`, whose names are importable from here) holds everything the server
of a deployment may know, and nothing else: node ids and blocks, labels and the seeded split,
n, d, the public feature domain, the manifest (with ``--supernode-keys``) and, only for the
nodes that consented, their true features.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ldpgraph.client.nodedata import write_store
from ldpgraph.protocols.graph import Graph
from ldpgraph.server.binding import BindingError, key_fingerprint

from .curator_file import (
    FEATURES,
    FILE,
    FORMAT,
    VERSION,
    Curator,
    CuratorFileError,
    load_curator,
    write_curator,
)
from .splits import make_split

__all__ = [
    "AUTO_FILES",
    "BLOCK",
    "FEATURES",
    "FILE",
    "FORMAT",
    "VERSION",
    "Curator",
    "CuratorFileError",
    "automatic_nodes_per_file",
    "load_curator",
    "read_consent",
    "write_curator",
    "write_partition",
]

BLOCK = "nodes-{:05d}"
#: `ldpgraph partition` without --nodes-per-file writes at most this many node files.
AUTO_FILES = 16


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
    partition, graph_id = _partition_ids(graph, dataset, nodes_per_file)
    blocks = _write_blocks(graph, out, nodes_per_file, partition, graph_id, keys)
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


def _partition_ids(graph: Graph, dataset: str, nodes_per_file: int) -> tuple[str, str]:
    """(the partition's id, the graph's id): both hash the dataset's name, sizes, edges and
    features; the partition's id also the block size."""
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
    return partition, graph_id


def _write_blocks(
    graph: Graph,
    out: Path,
    nodes_per_file: int,
    partition: str,
    graph_id: str,
    keys: list[str] | None,
) -> list[dict[str, Any]]:
    """One node store per block of ``nodes_per_file`` nodes; the blocks as the curator file
    lists them (with the SuperNode key of each, when bound)."""
    n = graph.num_nodes
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
    return blocks


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
