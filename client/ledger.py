"""A deployed node's ledger: where its operator keeps it, keyed by the node's own data,
hash-chained, witnessed in a second place, and closed on every failure.

Layout (both directories are the operator's, outside anything ``ldpgraph partition`` or the
server writes; the ClientApp refuses a ledger inside the partition's directory)::

    <ledger>/<fp[:2]>/<fp>.log      one line per charge, append-only, hash-chained
    <witness>/<fp[:2]>/<fp>.head    the chain's head: {seq, head} of the last entry

``fp`` is :func:`~ldpgraph.client.nodedata.fingerprint`, the SHA-256 of the node's id,
adjacency row and feature values: re-partitioning the same graph, re-writing it to another
directory or relabelling the dataset gives the same ``fp``, hence the same ledger. Each log
line is canonical JSON whose ``prev`` is the SHA-256 of the line before it (the first line's:
of the fingerprint), so an entry cannot be removed or changed without breaking the chain. The
witness pins the chain's head: a log that was deleted, truncated, or replaced by any other
valid chain (an empty one included) no longer reaches the witnessed head, and the node refuses.
A log that extends its witness (a crash between the two writes) is accepted: entries only add
spends.

What this protects against, and what not (``docs/privacy/node-budget.md``): deletion or
replacement of either file alone, a partition re-run, a moved or relabelled dataset, damaged
bytes. Not against an operator who rewrites both places consistently or restores both from an
old backup: on their own machine they hold every key; the witness makes such a reset a
deliberate act, and :func:`reset` (``--reset-ledger FP``) is the one way to do it on purpose.

Every read error is a :class:`LedgerError` with one reason (the node refuses); nothing raises
past :meth:`NodeLedger.open` but ``OSError`` on the directories, which the caller refuses on.
numpy and the standard library only: this is on the client's import path.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import math
import os
import stat
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .budget import Book, Refusal, as_charge
from .nodedata import NodeStore
from .units import UNITS, Charge

VERSION = 1
LOCK = ".lock"
#: A log larger than this is refused unread (a node answers a bounded number of rounds).
MAX_LOG_BYTES = 64 << 20
_ZERO = dict.fromkeys(UNITS, 0.0)


class LedgerError(Exception):
    """A ledger that cannot be found, read or verified (the node refuses; one reason)."""


def _is_fingerprint(fp: Any) -> bool:
    return isinstance(fp, str) and len(fp) == 64 and all(c in "0123456789abcdef" for c in fp)


def genesis(fp: str) -> str:
    """The ``prev`` of a chain's first entry: binds the chain to its fingerprint."""
    return hashlib.sha256(b"ldpgraph-ledger-genesis\0" + fp.encode()).hexdigest()


def _line(entry: Mapping[str, Any]) -> bytes:
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def _parse(line: bytes) -> dict[str, Any]:
    """A canonical JSON object, or ValueError (non-canonical bytes cannot be re-hashed)."""
    obj = json.loads(line, parse_constant=_no_constant)
    if not isinstance(obj, dict) or _line(obj) != line:
        raise ValueError("not a canonical entry")
    return obj


def _read_regular(path: Path) -> bytes | None:
    """A regular file's bytes (None: absent). A link, directory, device or an unreadable
    file is a :class:`LedgerError`."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LedgerError(f"cannot inspect it ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise LedgerError("it is not a regular file")
    if info.st_size > MAX_LOG_BYTES:
        raise LedgerError(f"it is larger than {MAX_LOG_BYTES} bytes")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise LedgerError(f"cannot read it ({exc.strerror})") from None


@dataclass
class Chain:
    """A verified log: its entries' hashes, the spends since its last reset (per unit) and
    the pinned-seed rounds it answered."""

    hashes: list[str] = field(default_factory=list)
    spent: dict[str, float] = field(default_factory=lambda: dict(_ZERO))
    seeded_rounds: list[int] = field(default_factory=list)

    @property
    def head(self) -> tuple[int, str] | None:
        return (len(self.hashes) - 1, self.hashes[-1]) if self.hashes else None


def _spends(value: Any) -> dict[str, float]:
    if not isinstance(value, dict) or set(value) != set(UNITS):
        raise ValueError("bad spend")
    out = {u: value[u] for u in UNITS}
    for v in out.values():
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ValueError("bad spend")
        if not (math.isfinite(v) and v >= 0):
            raise ValueError("a spend is negative or not finite")
    return {u: float(v) for u, v in out.items()}


def read_chain(data: bytes, fp: str) -> Chain:
    """Verify a log's bytes: every line canonical, linked to the one before, of ``fp``, its
    running spends the sums of its charges. Raises :class:`LedgerError` with one reason."""
    if not data:
        raise LedgerError("the log is empty")
    if not data.endswith(b"\n"):
        raise LedgerError("the log is truncated (no final newline)")
    chain = Chain()
    prev = genesis(fp)
    for seq, line in enumerate(data[:-1].split(b"\n")):
        try:
            entry = _parse(line)
            if (entry.get("v"), entry.get("seq"), entry.get("fp")) != (VERSION, seq, fp):
                raise ValueError("wrong version, sequence number or fingerprint")
            if entry.get("prev") != prev:
                raise ValueError("it does not link to the entry before it")
            spent = _spends(entry.get("spent"))
            if entry.get("kind") == "reset":
                # Only a chain's first entry: appended later, a reset would erase spends.
                if seq != 0 or spent != _ZERO:
                    raise ValueError("a reset that is not the chain's first entry")
                chain.seeded_rounds = []
            elif entry.get("kind") == "charge":
                charge = _spends(entry.get("charge"))
                if spent != {u: chain.spent[u] + charge[u] for u in UNITS}:
                    raise ValueError("its running spend is not the sum of its charges")
                round_, seeded = entry.get("round"), entry.get("seeded")
                if isinstance(round_, bool) or not isinstance(round_, int) or round_ < 0:
                    raise ValueError("bad round")
                if not isinstance(seeded, bool):
                    raise ValueError("bad seeded flag")
                if seeded:
                    chain.seeded_rounds.append(round_)
            else:
                raise ValueError("unknown kind")
        except (ValueError, TypeError, RecursionError) as exc:
            raise LedgerError(f"entry {seq} is invalid ({exc})") from None
        chain.spent = spent
        prev = hashlib.sha256(line).hexdigest()
        chain.hashes.append(prev)
    return chain


def _shard(root: Path, fp: str, suffix: str) -> Path:
    return root / fp[:2] / f"{fp}{suffix}"


def read_witness(witness: Path, fp: str) -> tuple[int, str] | None:
    """The witnessed head (seq, hash) of ``fp``'s chain, None if none was ever written."""
    data = _read_regular(_shard(witness, fp, ".head"))
    if data is None:
        return None
    try:
        obj = _parse(data)
        seq, head = obj["seq"], obj["head"]
        if obj.get("fp") != fp or isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
            raise ValueError("wrong fingerprint or sequence number")
        if not isinstance(head, str):
            raise ValueError("bad head")
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise LedgerError(f"its witness is invalid ({exc})") from None
    return seq, head


def verified(ledger: Path, witness: Path, fp: str) -> Chain:
    """``fp``'s chain, checked against its witness; a fresh one when neither exists."""
    try:
        data = _read_regular(_shard(ledger, fp, ".log"))
    except LedgerError as exc:
        raise LedgerError(f"its ledger log: {exc}") from None
    try:
        pinned = read_witness(witness, fp)
    except LedgerError as exc:
        raise LedgerError(f"its witness: {exc}") from None
    if data is None:
        if pinned is not None:
            raise LedgerError(
                f"it has answered before (witnessed entry {pinned[0]}) but its ledger log is "
                "missing"
            )
        return Chain()
    chain = read_chain(data, fp)
    if pinned is None:
        raise LedgerError("its ledger log has no witness (the witness was removed or moved)")
    seq, head = pinned
    if seq >= len(chain.hashes) or chain.hashes[seq] != head:
        raise LedgerError(
            f"its ledger log does not reach the witnessed entry {seq} (replaced or truncated)"
        )
    return chain


class ChainBook(Book):
    """A :class:`~ldpgraph.client.budget.Book` of the hosted nodes' chains, in the nodes'
    unit, that remembers each charge (both units) to append it; ``broken``: the nodes whose
    ledger cannot be verified, with the reason (they refuse)."""

    def __init__(self) -> None:
        super().__init__()
        self.broken: dict[int, str] = {}
        self.records: list[tuple[int, Charge, int, bool]] = []
        #: Each verified node's chain head (seq, hash; None: fresh) and its spends per unit.
        self.heads: dict[int, tuple[tuple[int, str] | None, dict[str, float]]] = {}

    def admit(
        self, node: int, cost: float | Charge, round_: int, settings: Any, raw_upload: bool
    ) -> None:
        """:meth:`Book.admit`, for a round whose charge is known in both units only (the
        chain records both, so that a change of unit never forgets a spend)."""
        charge = as_charge(cost)
        if not raw_upload and not (
            math.isfinite(charge.per_bit) and math.isfinite(charge.per_vector)
        ):
            raise Refusal(f"node {node} refuses a round whose charge per vector is unknown")
        super().admit(node, charge, round_, settings, raw_upload)

    def charged(self, node: int, charge: Charge, round_: int, seeded: bool) -> None:
        self.records.append((node, charge, round_, seeded))


class NodeLedger:
    """The ledgers of a SuperNode's hosted nodes (``fingerprints``: node id → fingerprint)
    in the operator's ``directory``, witnessed in ``witness``; spends read in ``unit``;
    ``durable``: fsync every write (deployment)."""

    def __init__(
        self,
        directory: Path,
        witness: Path,
        fingerprints: Mapping[int, str],
        unit: str,
        durable: bool = True,
    ) -> None:
        self.path = Path(directory)
        self.witness = Path(witness)
        self.fingerprints = fingerprints
        self.unit = unit
        self.durable = durable

    @contextlib.contextmanager
    def open(self, nodes: list[int] | None = None) -> Iterator[ChainBook]:
        """The verified chains of ``nodes`` as a book, under the directory's lock; the charges
        made in the block are appended (and witnessed) when it ends without an exception."""
        nodes = list(self.fingerprints) if nodes is None else nodes
        for root in (self.path, self.witness):
            root.mkdir(parents=True, exist_ok=True)
        with _locked(self.path):
            book = ChainBook()
            for node in nodes:
                fp = self.fingerprints[node]
                try:
                    chain = verified(self.path, self.witness, fp)
                except LedgerError as exc:
                    book.broken[node] = f"node {node} (ledger {fp[:16]}): {exc}; refusing"
                    continue
                book.spent[str(node)] = chain.spent[self.unit]
                book.seeded_rounds[str(node)] = list(chain.seeded_rounds)
                book.heads[node] = (chain.head, dict(chain.spent))
            yield book
            for node, charge, round_, seeded in book.records:
                head, spent = book.heads[node]
                entry = {
                    "v": VERSION,
                    "kind": "charge",
                    "fp": self.fingerprints[node],
                    "seq": 0 if head is None else head[0] + 1,
                    "prev": genesis(self.fingerprints[node]) if head is None else head[1],
                    "node": int(node),
                    "round": int(round_),
                    "seeded": bool(seeded),
                    "charge": charge.as_mapping(),
                    "spent": {u: spent[u] + charge.as_mapping()[u] for u in UNITS},
                }
                book.heads[node] = (self._append(entry), entry["spent"])

    def _append(self, entry: dict[str, Any]) -> tuple[int, str]:
        """Append one entry to its log, then witness it (log first: a crash between leaves a
        log that extends its witness, which verifies)."""
        fp = entry["fp"]
        line = _line(entry)
        log_path = _shard(self.path, fp, ".log")
        log_path.parent.mkdir(exist_ok=True)
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line + b"\n")
            if self.durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        head = (int(entry["seq"]), hashlib.sha256(line).hexdigest())
        _write_atomic(
            _shard(self.witness, fp, ".head"),
            _line({"fp": fp, "seq": head[0], "head": head[1]}),
            self.durable,
        )
        return head


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    with open(directory / LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _write_atomic(path: Path, data: bytes, durable: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if durable:
        dirfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dirfd)
        finally:
            os.close(dirfd)


def reset(ledger: Path, witness: Path, fp: str, durable: bool = True) -> str:
    """Start ``fp``'s ledger afresh, on the operator's explicit word (``--reset-ledger FP``):
    the old log is kept aside (``<fp>.log.reset-<k>``), and the new chain's first entry
    records the reset and the head it replaced. Returns what was done, for the operator."""
    if not _is_fingerprint(fp):
        raise LedgerError(f"{fp!r} is not a node fingerprint (64 hex digits)")
    for root in (ledger, witness):
        root.mkdir(parents=True, exist_ok=True)
    with _locked(ledger):
        try:
            pinned = read_witness(witness, fp)
        except LedgerError:
            pinned = None
        log_path = _shard(ledger, fp, ".log")
        kept = ""
        if os.path.lexists(log_path):
            k = 0
            while os.path.lexists(log_path.with_name(f"{log_path.name}.reset-{k}")):
                k += 1
            aside = log_path.with_name(f"{log_path.name}.reset-{k}")
            os.replace(log_path, aside)
            kept = f"; the old log is kept as {aside}"
        entry = {
            "v": VERSION,
            "kind": "reset",
            "fp": fp,
            "seq": 0,
            "prev": genesis(fp),
            "replaced": None if pinned is None else {"seq": pinned[0], "head": pinned[1]},
            "spent": dict(_ZERO),
        }
        NodeLedger(ledger, witness, {}, UNITS[0], durable)._append(entry)
    return f"reset the ledger of node fingerprint {fp}{kept}"


def main(argv: list[str] | None = None) -> int:
    """``python -m ldpgraph.client.ledger``: show a node file's fingerprints and ledger
    state, or reset named ledgers (the operator's explicit ``--reset-ledger``)."""
    parser = argparse.ArgumentParser(prog="python -m ldpgraph.client.ledger")
    parser.add_argument("--ledger", required=True, type=Path, help="the ledger directory")
    parser.add_argument("--witness", required=True, type=Path, help="the witness directory")
    parser.add_argument("--data-file", help="show the ledgers of this node file's nodes")
    parser.add_argument(
        "--reset-ledger", action="append", default=[], metavar="FP",
        help="reset the ledger of this node fingerprint (repeat for several)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if not args.data_file and not args.reset_ledger:
        parser.error("name --data-file (show) or --reset-ledger FP")
    try:
        for fp in args.reset_ledger:
            print(reset(args.ledger, args.witness, fp))
        if args.data_file:
            store = NodeStore(args.data_file)
            for node in store.node_ids:
                fp = store.fingerprint(node)
                try:
                    chain = verified(args.ledger, args.witness, fp)
                    state = ", ".join(f"{u} {chain.spent[u]:g}" for u in UNITS)
                except LedgerError as exc:
                    state = f"REFUSES: {exc}"
                print(f"node {node}\t{fp}\t{state}")
    except (LedgerError, OSError, ValueError) as exc:
        print(f"ledger: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
