"""A node's ledger log as a hash chain, and its witnessed head: reading and verifying them.

Each log line is canonical JSON whose ``prev`` is the SHA-256 of the line before it (the first
line's: of the node's fingerprint, :func:`genesis`), so an entry cannot be removed or changed
without breaking the chain; every line carries the running spends, which must be the sums of
its charges. The witness, kept in a second place, pins the chain's head: a log that was
deleted, truncated, or replaced by any other valid chain no longer reaches it
(:func:`verified`). Every failure is a :class:`LedgerError` with one reason (the node refuses).
The standard library only: this is on the client's import path.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .units import UNITS

VERSION = 1
#: A log larger than this is refused unread (a node answers a bounded number of rounds).
MAX_LOG_BYTES = 64 << 20
ZERO = dict.fromkeys(UNITS, 0.0)


class LedgerError(Exception):
    """A ledger that cannot be found, read or verified (the node refuses; one reason)."""


def is_fingerprint(fp: Any) -> bool:
    return isinstance(fp, str) and len(fp) == 64 and all(c in "0123456789abcdef" for c in fp)


def genesis(fp: str) -> str:
    """The ``prev`` of a chain's first entry: binds the chain to its fingerprint."""
    return hashlib.sha256(b"ldpgraph-ledger-genesis\0" + fp.encode()).hexdigest()


def canonical_line(entry: Mapping[str, Any]) -> bytes:
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def _parse(line: bytes) -> dict[str, Any]:
    """A canonical JSON object, or ValueError (non-canonical bytes cannot be re-hashed)."""
    obj = json.loads(line, parse_constant=_no_constant)
    if not isinstance(obj, dict) or canonical_line(obj) != line:
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
    spent: dict[str, float] = field(default_factory=lambda: dict(ZERO))
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
                if seq != 0 or spent != ZERO:
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


def shard(root: Path, fp: str, suffix: str) -> Path:
    return root / fp[:2] / f"{fp}{suffix}"


def read_witness(witness: Path, fp: str) -> tuple[int, str] | None:
    """The witnessed head (seq, hash) of ``fp``'s chain, None if none was ever written."""
    data = _read_regular(shard(witness, fp, ".head"))
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
        data = _read_regular(shard(ledger, fp, ".log"))
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
