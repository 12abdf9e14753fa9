"""A node's privacy guard: its own settings, its persistent ledger, and the rounds it refuses.

The node, not the server, decides how much ε it spends, whether it uploads raw data and where
its randomness comes from. Nothing in a round message can set or raise any of them:

- :class:`NodeSettings` are read from the node's own configuration only (a SuperNode's
  ``--node-config``; in simulation, the settings the harness wrote beside each simulated node's
  data). A missing, non-numeric or non-finite budget means *refuse every LDP round* (fail
  closed); a missing consent means *no raw upload*.
- :class:`Ledger` keeps the ε each node has spent, per graph, in a JSON file beside the node's
  data, written atomically (and fsync'ed in deployment) *before* the report leaves the node, so
  a new run or a restarted SuperNode still sees what was spent.
- Randomness: unless the node's own configuration pins a ``seed`` (simulation and tests, where
  reproducibility is the point), every request draws a fresh 128-bit seed from the OS entropy
  pool, so the server can neither replay nor correlate a node's noise. A seeded node never
  answers the same round twice: a second request would reuse the same uniforms.

Pure Python and numpy-free: the ClientApp and the ``local`` backend both use it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import math
import os
import secrets
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger("ldpgraph.client")

#: Slack for floating-point sums of ε (e.g. 0.1 + 0.2 spent against a budget of 0.3).
TOLERANCE = 1e-9
LEDGER_FORMAT = "ldpgraph-ledger"
LEDGER_VERSION = 1
#: What a refusal tells the server: nothing about the node's budget, spending or consent.
REFUSED = "refused"
#: The smallest charge a node accepts. A round costing less is refused: its spend could vanish
#: in a floating-point sum, and mechanisms degenerate at vanishing ε.
MIN_CHARGE = 1e-6


class Refusal(Exception):
    """A round the node will not take part in; the message (kept on the node) says why."""


class NodeConfigError(ValueError):
    """The node's own configuration is unusable (the node then refuses every round)."""


def parse_budget(value: Any) -> float | None:
    """The node's budget, or None (refuse every LDP round) when unset, unparsable or not a
    finite number ≥ 0."""
    if value is None or isinstance(value, bool):
        return None
    try:
        budget = float(value)
    except (TypeError, ValueError):
        return None
    return budget if math.isfinite(budget) and budget >= 0 else None


def parse_consent(value: Any) -> bool:
    """Consent to raw upload: only an explicit yes counts."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return False


def parse_seed(value: Any) -> int | None:
    """A pinned seed (reproducible streams), or None (OS entropy). A value that is given but
    is not a non-negative integer is an error: a node must not silently switch modes."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise NodeConfigError(f"seed must be a non-negative integer, got {value!r}")
    try:
        seed = int(value)
    except (TypeError, ValueError):
        raise NodeConfigError(f"seed must be a non-negative integer, got {value!r}") from None
    if seed < 0 or (isinstance(value, float) and value != seed):
        raise NodeConfigError(f"seed must be a non-negative integer, got {value!r}")
    return seed


@dataclass(frozen=True)
class NodeSettings:
    """What a node decides for itself.

    Args:
        budget: total ε the node will ever spend on this graph (None: refuse every LDP round).
        trust_curator: whether the node consents to upload its raw data (central DP).
        seed: pin the node's random streams (simulation, tests); None draws OS entropy.
        ledger: the file that keeps the spent ε across runs and restarts (None: in memory,
            for one simulated collection).
        durable: fsync the ledger on every write (deployment).
    """

    budget: float | None
    trust_curator: bool = False
    seed: int | None = None
    ledger: Path | None = None
    durable: bool = False

    @classmethod
    def from_node_config(
        cls, values: Mapping[str, Any], default_ledger: Path | None, durable: bool
    ) -> NodeSettings:
        """Settings from the node's own configuration (keys ``budget``, ``trust-curator``,
        ``seed``, ``ledger``)."""
        ledger = values.get("ledger") or default_ledger
        return cls(
            budget=parse_budget(values.get("budget")),
            trust_curator=parse_consent(values.get("trust-curator", False)),
            seed=parse_seed(values.get("seed")),
            ledger=Path(ledger) if ledger else None,
            durable=durable,
        )

    @property
    def randomness(self) -> str:
        """Where the node's noise comes from: ``seeded`` or ``os-entropy``."""
        return "seeded" if self.seed is not None else "os-entropy"

    def stream_seed(self) -> int:
        """The seed of one request's streams: the pinned one, or 128 fresh bits of entropy."""
        return self.seed if self.seed is not None else secrets.randbits(128)

    def to_mapping(self) -> dict[str, Any]:
        """The settings as node-config keys (what the simulation writes for its nodes)."""
        out: dict[str, Any] = {"trust-curator": self.trust_curator}
        if self.budget is not None:
            out["budget"] = self.budget
        if self.seed is not None:
            out["seed"] = self.seed
        return out


@dataclass
class Book:
    """The ledger's content for one graph while a request is being admitted."""

    spent: dict[str, float] = field(default_factory=dict)
    seeded_rounds: dict[str, list[int]] = field(default_factory=dict)

    def admit(
        self,
        node: int,
        cost: float,
        round_: int,
        settings: NodeSettings,
        raw_upload: bool,
    ) -> None:
        """Charge this round to ``node``, or raise :class:`Refusal` and charge nothing."""
        if raw_upload:
            if not settings.trust_curator:
                raise Refusal(f"node {node} does not trust the curator and refuses raw upload")
            return  # raw data to a trusted curator is outside the LDP budget, by its choice
        if settings.budget is None:
            raise Refusal(f"node {node} has no finite budget in its own configuration")
        if not math.isfinite(cost) or cost < MIN_CHARGE:
            raise Refusal(f"node {node} refuses a round with cost ε={cost}")
        key = str(node)
        if settings.seed is not None and round_ in self.seeded_rounds.get(key, ()):
            raise Refusal(
                f"node {node} already answered round {round_} from its pinned seed; the same "
                "uniforms would be reused"
            )
        used = float(self.spent.get(key, 0.0))
        if used + cost > settings.budget + TOLERANCE:
            raise Refusal(
                f"node {node} refuses: ε {cost:g} on top of {used:g} spent exceeds its budget "
                f"{settings.budget:g}"
            )
        self.spent[key] = used + cost
        if settings.seed is not None:
            self.seeded_rounds.setdefault(key, []).append(int(round_))


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
        self._memory = Book()

    @contextlib.contextmanager
    def open(self) -> Iterator[Book]:
        """The graph's book, locked; written back (atomically) when the block ends without an
        exception."""
        if self.path is None:
            book = Book(dict(self._memory.spent), dict(self._memory.seeded_rounds))
            yield book
            self._memory = book
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
        with self.open() as book:
            return float(book.spent.get(str(node), 0.0))

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
            doc = json.loads(self.path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            # A ledger we cannot read must not be taken as "nothing spent".
            raise Refusal(f"the ledger {self.path} is unreadable ({exc}); refusing") from None
        if doc.get("format") != LEDGER_FORMAT or not isinstance(doc.get("graphs"), dict):
            raise Refusal(f"{self.path} is not an ldpgraph ledger; refusing")
        return doc

    def _write(self, doc: dict[str, Any]) -> None:
        assert self.path is not None
        fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(doc, fh, sort_keys=True)
                if self.durable:
                    fh.flush()
                    os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        if self.durable:
            dirfd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dirfd)
            finally:
                os.close(dirfd)


def admit_nodes(
    ledger: Ledger,
    nodes: list[int],
    cost: float,
    round_: int,
    settings: NodeSettings,
    raw_upload: bool,
) -> tuple[list[int], dict[int, str]]:
    """Admit each of ``nodes`` to one round and persist the charges in one ledger write.

    Returns the admitted nodes and, for the others, the reason (for the node's own log; the
    server is told only :data:`REFUSED`). A ledger that cannot be read or written refuses all.
    """
    admitted: list[int] = []
    refused: dict[int, str] = {}
    try:
        with ledger.open() as book:
            for node in nodes:
                try:
                    book.admit(node, cost, round_, settings, raw_upload)
                    admitted.append(node)
                except Refusal as exc:
                    refused[node] = str(exc)
    except (Refusal, OSError) as exc:
        return [], {node: f"ledger: {exc}" for node in nodes}
    return admitted, refused
