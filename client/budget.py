"""A node's privacy guard: its own settings, its persistent ledger, and the rounds it refuses.

The node, not the server, decides how much ε it spends, whether it uploads raw data and where
its randomness comes from. Nothing in a round message can set or raise any of them:

- :class:`NodeSettings` are read from the node's own configuration only (a SuperNode's
  ``--node-config``; in simulation, the settings the harness wrote beside each simulated node's
  data). A missing, non-numeric or non-finite budget means *refuse every LDP round* (fail
  closed); a missing consent means *no raw upload* (:mod:`ldpgraph.client.settings`).
- A deployed node keeps what it spent in its operator's ledger (:mod:`ldpgraph.client.ledger`:
  keyed by a fingerprint of the node's own data, hash-chained, witnessed in a second place,
  fail closed), written *before* the report leaves the node. The simulation keeps one run's
  spends in a :class:`Ledger` (in memory, or a JSON file in the run directory).
- The unit a node counts in (per bit or per vector) and the caps it puts on a round's parts
  are its own settings too (:mod:`ldpgraph.client.units`).
- Randomness: unless the node's own configuration pins a ``seed`` (simulation and tests, where
  reproducibility is the point), every request draws a fresh 128-bit seed from the OS entropy
  pool, so the server can neither replay nor correlate a node's noise. A seeded node never
  answers the same round twice: a second request would reuse the same uniforms.

The ClientApp admits its few hosted nodes one by one (:func:`admit_nodes`, a :class:`Book` of
the JSON ledger). The ``local`` backend admits every node of a graph that share one
:class:`NodeSettings` at once (:func:`admit_many`): the same decisions, but an in-memory
ledger keeps the spends as one float64 array (an :class:`ArrayBook`), so 10^6 nodes cost a
few MB instead of a dict of 10^6 strings (:mod:`ldpgraph.client.books`). Why a node refuses,
as a code and as the text of its own log: :mod:`ldpgraph.client.refusals`. This module keeps
the simulation's ledger and the two ways of admitting nodes, and re-exports the names above
where the ClientApp, the backends and the tests import them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .books import ArrayBook, Book
from .files import write_atomic
from .refusals import (
    BAD_COST,
    CAPPED,
    MIN_CHARGE,
    NO_BUDGET,
    NO_TRUST,
    OVER_BUDGET,
    REFUSED,
    REPLAY,
    TOLERANCE,
    Admission,
    Refusal,
    as_charge,
    refusal_reason,
)
from .settings import NodeConfigError, NodeSettings, parse_budget, parse_consent, parse_seed
from .units import Charge

__all__ = [
    "BAD_COST",
    "CAPPED",
    "LEDGER_FORMAT",
    "LEDGER_VERSION",
    "MIN_CHARGE",
    "NO_BUDGET",
    "NO_TRUST",
    "OVER_BUDGET",
    "REFUSED",
    "REPLAY",
    "TOLERANCE",
    "Admission",
    "ArrayBook",
    "Book",
    "Ledger",
    "NodeConfigError",
    "NodeSettings",
    "Refusal",
    "admit_many",
    "admit_nodes",
    "as_charge",
    "parse_budget",
    "parse_consent",
    "parse_seed",
    "refusal_reason",
]

LEDGER_FORMAT = "ldpgraph-ledger"
LEDGER_VERSION = 1


class Ledger:
    """The ε spent by the nodes of one graph, in memory or in a JSON file.

    Args:
        path: the ledger file (None: in memory only).
        graph: the graph's identity (the node file's partition id); a file may hold several.
        durable: fsync every write (deployment: a crash must not forget a spend).
    """

    def __init__(self, path: Path | None, graph: str, durable: bool = False) -> None:
        self.path = Path(path) if path is not None else None
        self.graph = graph
        self.durable = durable
        self._memory = ArrayBook()

    @contextlib.contextmanager
    def open(self, nodes: list[int] | None = None) -> Iterator[Book | ArrayBook]:
        """The graph's book. A file's is locked and written back (atomically) when the block
        ends without an exception; the in-memory one is the ledger itself, so a charge made in
        a block that then raises stays spent (fail closed)."""
        if self.path is None:
            yield self._memory
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            doc = self._read()
            entry = doc["graphs"].setdefault(self.graph, {"spent": {}, "seeded_rounds": {}})
            book = self._book(entry)
            yield book
            entry["spent"], entry["seeded_rounds"] = book.spent, book.seeded_rounds
            self._write(doc)

    def spent(self, node: int) -> float:
        """What ``node`` has spent on this graph so far."""
        if self.path is None:
            return self._memory.spent_of(node)
        with self.open() as book:
            return book.spent_of(node)

    def _book(self, entry: Any) -> Book:
        """The stored entry, checked: a value that is not a finite spend ≥ 0 (NaN would admit
        every later round) or a broken structure refuses, never counts as nothing spent."""
        try:
            spent = {str(k): float(v) for k, v in entry["spent"].items()}
            rounds = {str(k): [int(r) for r in v] for k, v in entry["seeded_rounds"].items()}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise Refusal(f"the ledger {self.path} is damaged ({exc!r}); refusing") from None
        if not all(math.isfinite(v) and v >= 0 for v in spent.values()):
            raise Refusal(f"the ledger {self.path} holds an invalid spend; refusing")
        return Book(spent, rounds)

    def _read(self) -> dict[str, Any]:
        assert self.path is not None
        if not self.path.exists():
            return {"format": LEDGER_FORMAT, "version": LEDGER_VERSION, "graphs": {}}
        try:
            doc = json.loads(self.path.read_bytes())
        except (OSError, ValueError, RecursionError) as exc:
            # A ledger we cannot read (garbage bytes included) is never "nothing spent".
            raise Refusal(f"the ledger {self.path} is unreadable ({exc}); refusing") from None
        if (
            not isinstance(doc, dict)
            or doc.get("format") != LEDGER_FORMAT
            or not isinstance(doc.get("graphs"), dict)
        ):
            raise Refusal(f"{self.path} is not an ldpgraph ledger; refusing")
        return doc

    def _write(self, doc: dict[str, Any]) -> None:
        assert self.path is not None
        write_atomic(self.path, json.dumps(doc, sort_keys=True).encode(), self.durable)


def admit_nodes(
    ledger: Any,
    nodes: list[int],
    cost: float | Charge,
    round_: int,
    settings: NodeSettings,
    raw_upload: bool,
) -> tuple[list[int], dict[int, str]]:
    """Admit each of ``nodes`` to one round and persist the charges in one ledger write.

    ``ledger``: a :class:`Ledger` (simulation) or a deployed node's
    :class:`~ldpgraph.client.ledger.NodeLedger`; ``cost``: the round's charge (or its per-bit
    ε). Returns the admitted nodes and, for the others, the reason (for the node's own log;
    the server is told only :data:`REFUSED`). A node whose ledger cannot be verified refuses;
    a ledger that cannot be opened, read or written refuses all; nothing here raises on it.
    An in-memory ledger admits distinct nodes at once (:func:`admit_many`).
    """
    if (
        ledger.path is None
        and all(isinstance(n, int | np.integer) and n >= 0 for n in nodes)
        and len(set(nodes)) == len(nodes)
    ):
        admission = ledger._memory.admit_many(
            np.asarray(nodes, dtype=np.int64), cost, round_, settings, raw_upload
        )
        return admission.admitted.tolist(), admission.reasons()
    admitted: list[int] = []
    refused: dict[int, str] = {}
    try:
        with ledger.open(nodes) as book:
            broken = getattr(book, "broken", {})
            for node in nodes:
                if node in broken:
                    refused[node] = broken[node]
                    continue
                try:
                    book.admit(node, cost, round_, settings, raw_upload)
                    admitted.append(node)
                except Refusal as exc:
                    refused[node] = str(exc)
    except (Refusal, OSError, ValueError, KeyError) as exc:
        return [], {node: f"ledger: {exc}" for node in nodes}
    return admitted, refused


def admit_many(
    ledger: Ledger,
    nodes: np.ndarray,
    cost: float | Charge,
    round_: int,
    settings: NodeSettings,
    raw_upload: bool,
) -> Admission:
    """:func:`admit_nodes` for many nodes that share one ``settings`` (the ``local`` backend):
    the same decisions, at the cost of a few arrays on an in-memory ledger. A file ledger
    (deployment) is admitted node by node as before, its file unchanged.

    Args:
        ledger: what the nodes spent in earlier rounds.
        nodes: the nodes asked: distinct ids ≥ 0 (int array).
        cost: the round's charge (or its per-bit ε).
        round_: the round's index.
        settings: every asked node's own settings.
        raw_upload: whether the round uploads raw data.
    """
    if ledger.path is None:
        return ledger._memory.admit_many(np.asarray(nodes), cost, round_, settings, raw_upload)
    ids = np.asarray(nodes, dtype=np.int64)
    admitted, refused = admit_nodes(ledger, ids.tolist(), cost, round_, settings, raw_upload)
    order = np.asarray(list(refused), dtype=np.int64)
    return Admission(
        admitted=np.asarray(admitted, dtype=np.int64),
        refused=order,
        codes=np.zeros(order.size, dtype=np.uint8),
        used=np.zeros(order.size),
        cost=float(as_charge(cost).in_unit(settings.unit)),
        round_=int(round_),
        budget=settings.budget,
        texts=refused,
    )
