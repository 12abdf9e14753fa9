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

Reading and verifying a chain and its witness: :mod:`ldpgraph.client.chain`. Every read error
is a :class:`LedgerError` with one reason (the node refuses); nothing raises past
:meth:`NodeLedger.open` but ``OSError`` on the directories, which the caller refuses on.
numpy and the standard library only: this is on the client's import path.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import math
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .books import Book
from .chain import (
    MAX_LOG_BYTES,
    VERSION,
    ZERO,
    Chain,
    LedgerError,
    canonical_line,
    genesis,
    is_fingerprint,
    read_chain,
    read_witness,
    shard,
    verified,
)
from .files import write_atomic
from .nodedata import NodeStore
from .refusals import Refusal, as_charge
from .units import UNITS, Charge

__all__ = [
    "LOCK",
    "MAX_LOG_BYTES",
    "VERSION",
    "Chain",
    "ChainBook",
    "LedgerError",
    "NodeLedger",
    "genesis",
    "main",
    "read_chain",
    "read_witness",
    "reset",
    "verified",
]

LOCK = ".lock"


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
        line = canonical_line(entry)
        log_path = shard(self.path, fp, ".log")
        log_path.parent.mkdir(exist_ok=True)
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, line + b"\n")
            if self.durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        head = (int(entry["seq"]), hashlib.sha256(line).hexdigest())
        write_atomic(
            shard(self.witness, fp, ".head"),
            canonical_line({"fp": fp, "seq": head[0], "head": head[1]}),
            self.durable,
        )
        return head


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    with open(directory / LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def reset(ledger: Path, witness: Path, fp: str, durable: bool = True) -> str:
    """Start ``fp``'s ledger afresh, on the operator's explicit word (``--reset-ledger FP``):
    the old log is kept aside (``<fp>.log.reset-<k>``), and the new chain's first entry
    records the reset and the head it replaced. Returns what was done, for the operator."""
    if not is_fingerprint(fp):
        raise LedgerError(f"{fp!r} is not a node fingerprint (64 hex digits)")
    for root in (ledger, witness):
        root.mkdir(parents=True, exist_ok=True)
    with _locked(ledger):
        try:
            pinned = read_witness(witness, fp)
        except LedgerError:
            pinned = None
        log_path = shard(ledger, fp, ".log")
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
            "spent": dict(ZERO),
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
