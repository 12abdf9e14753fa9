"""A node's privacy guard: its own settings, its persistent ledger, and the rounds it refuses.

The node, not the server, decides how much ε it spends, whether it uploads raw data and where
its randomness comes from. Nothing in a round message can set or raise any of them:

- :class:`NodeSettings` are read from the node's own configuration only (a SuperNode's
  ``--node-config``; in simulation, the settings the harness wrote beside each simulated node's
  data). A missing, non-numeric or non-finite budget means *refuse every LDP round* (fail
  closed); a missing consent means *no raw upload*.
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
few MB instead of a dict of 10^6 strings.
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

import numpy as np

from .units import PER_BIT, Charge, cap_reason, parse_cap, parse_unit

log = logging.getLogger("ldpgraph.client")

#: Slack for floating-point sums of ε (e.g. 0.1 + 0.2 spent against a budget of 0.3).
TOLERANCE = 1e-9
LEDGER_FORMAT = "ldpgraph-ledger"
LEDGER_VERSION = 1
#: What a refusal tells the server: nothing about the node's budget, spending or consent.
REFUSED = "refused"
#: Nodes decided per block when many are admitted at once (bounds the temporaries).
_BLOCK = 1 << 16
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
        ledger: where the spent ε is kept across runs and restarts (None: in memory, for one
            simulated collection): a deployed node's ledger directory, or a simulated
            SuperNode's JSON file in the run directory.
        durable: fsync the ledger on every write (deployment).
        unit: how the node counts a round (:data:`~ldpgraph.client.units.UNITS`).
        max_feature_share: the largest share of a round's per-bit ε on features it accepts.
        max_epsilon_adjacency: the largest ε per adjacency bit one round may use.
        max_epsilon_features: the largest ε per feature coordinate one round may use.
        witness: where a deployed node keeps its ledger's chain heads (a second place).
    """

    budget: float | None
    trust_curator: bool = False
    seed: int | None = None
    ledger: Path | None = None
    durable: bool = False
    unit: str = PER_BIT
    max_feature_share: float | None = None
    max_epsilon_adjacency: float | None = None
    max_epsilon_features: float | None = None
    witness: Path | None = None

    @classmethod
    def from_node_config(
        cls,
        values: Mapping[str, Any],
        default_ledger: Path | None,
        durable: bool,
        *,
        default_unit: str = PER_BIT,
        default_witness: Path | None = None,
    ) -> NodeSettings:
        """Settings from the node's own configuration (keys ``budget``, ``trust-curator``,
        ``seed``, ``ledger``, ``ledger-witness``, ``unit``, ``max-feature-share``,
        ``max-epsilon-adjacency``, ``max-epsilon-features``). A unit or cap that is given
        but unusable is a :class:`NodeConfigError` (a node must not silently count otherwise)."""
        ledger = values.get("ledger") or default_ledger
        witness = values.get("ledger-witness") or default_witness
        try:
            unit = parse_unit(values.get("unit"), default_unit)
            share = parse_cap(values.get("max-feature-share"), "max-feature-share", 1.0)
            cap_a = parse_cap(values.get("max-epsilon-adjacency"), "max-epsilon-adjacency")
            cap_f = parse_cap(values.get("max-epsilon-features"), "max-epsilon-features")
        except ValueError as exc:
            raise NodeConfigError(str(exc)) from None
        return cls(
            budget=parse_budget(values.get("budget")),
            trust_curator=parse_consent(values.get("trust-curator", False)),
            seed=parse_seed(values.get("seed")),
            ledger=Path(ledger) if ledger else None,
            durable=durable,
            unit=unit,
            max_feature_share=share,
            max_epsilon_adjacency=cap_a,
            max_epsilon_features=cap_f,
            witness=Path(witness) if witness else None,
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
        if self.unit != PER_BIT:
            out["unit"] = self.unit
        for key, value in (
            ("max-feature-share", self.max_feature_share),
            ("max-epsilon-adjacency", self.max_epsilon_adjacency),
            ("max-epsilon-features", self.max_epsilon_features),
        ):
            if value is not None:
                out[key] = value
        return out


# Why a node refused, as a code (so that many refusals need no string each until logged).
NO_TRUST, NO_BUDGET, BAD_COST, REPLAY, OVER_BUDGET, CAPPED = range(1, 7)


def refusal_reason(
    code: int, node: int, cost: float, round_: int, used: float, budget: float | None
) -> str:
    """The text a node logs for a refusal (the server only ever sees :data:`REFUSED`).

    Args:
        code: one of the refusal codes (``NO_TRUST`` … ``OVER_BUDGET``).
        node: the refusing node.
        cost: the round's ε.
        round_: the round's index.
        used: what the node had spent before the round (read for ``OVER_BUDGET`` only).
        budget: the node's budget (read for ``OVER_BUDGET`` only).
    """
    if code == NO_TRUST:
        return f"node {node} does not trust the curator and refuses raw upload"
    if code == NO_BUDGET:
        return f"node {node} has no finite budget in its own configuration"
    if code == BAD_COST:
        return f"node {node} refuses a round with cost ε={cost}"
    if code == REPLAY:
        return (
            f"node {node} already answered round {round_} from its pinned seed; the same "
            "uniforms would be reused"
        )
    if code == OVER_BUDGET:
        return (
            f"node {node} refuses: ε {cost:g} on top of {used:g} spent exceeds its budget "
            f"{budget:g}"
        )
    if code == CAPPED:
        return f"node {node} refuses a round beyond its caps"
    raise ValueError(f"unknown refusal code {code}")


def as_charge(cost: float | Charge) -> Charge:
    """A round's :class:`~ldpgraph.client.units.Charge`; a bare number is its per-bit ε, with
    its per-vector charge and its parts unknown (∞: a per-vector or capped node refuses)."""
    if isinstance(cost, Charge):
        return cost
    return Charge(float(cost), math.inf, math.inf, math.inf)


def _round_refusal(charge: Charge, settings: NodeSettings, raw_upload: bool) -> int | None:
    """The refusal every node with ``settings`` gives this round whatever it spent (a code),
    or None when it depends on the node's ledger. Raw upload to a trusted curator is outside
    the LDP budget, by the node's choice: it is never refused here nor charged. A round beyond
    the node's caps is refused before its budget is read."""
    if raw_upload:
        return None if settings.trust_curator else NO_TRUST
    if settings.budget is None:
        return NO_BUDGET
    cost = charge.in_unit(settings.unit)
    if not math.isfinite(cost) or cost < MIN_CHARGE:
        return BAD_COST
    if cap_reason(charge, settings) is not None:
        return CAPPED
    return None


@dataclass
class Book:
    """The ledger's content for one graph while a request is being admitted (the JSON file's
    form: node ids as strings)."""

    spent: dict[str, float] = field(default_factory=dict)
    seeded_rounds: dict[str, list[int]] = field(default_factory=dict)

    def admit(
        self,
        node: int,
        cost: float | Charge,
        round_: int,
        settings: NodeSettings,
        raw_upload: bool,
    ) -> None:
        """Charge this round to ``node`` (``cost``: the round's charge, or its per-bit ε), or
        raise :class:`Refusal` and charge nothing."""
        charge = as_charge(cost)
        cost = charge.in_unit(settings.unit)
        code = _round_refusal(charge, settings, raw_upload)
        if code is not None:
            text = refusal_reason(code, node, cost, round_, 0.0, settings.budget)
            detail = cap_reason(charge, settings) if code == CAPPED else None
            raise Refusal(f"{text} ({detail})" if detail else text)
        if raw_upload:
            return
        assert settings.budget is not None  # _round_refusal refused an unset budget
        key = str(node)
        if settings.seed is not None and round_ in self.seeded_rounds.get(key, ()):
            raise Refusal(refusal_reason(REPLAY, node, cost, round_, 0.0, settings.budget))
        used = float(self.spent.get(key, 0.0))
        if used + cost > settings.budget + TOLERANCE:
            raise Refusal(refusal_reason(OVER_BUDGET, node, cost, round_, used, settings.budget))
        self.spent[key] = used + cost
        if settings.seed is not None:
            self.seeded_rounds.setdefault(key, []).append(int(round_))
        self.charged(node, charge, int(round_), settings.seed is not None)

    def charged(self, node: int, charge: Charge, round_: int, seeded: bool) -> None:
        """Called for every charge made (a deployed ledger records it); nothing here."""

    def spent_of(self, node: int) -> float:
        """What ``node`` has spent on this graph."""
        return float(self.spent.get(str(node), 0.0))


class ArrayBook:
    """An in-memory ledger's content: the spends as one float64 array indexed by node id, and
    per pinned-seed round the nodes that answered it as one bool mask. A node beyond the
    arrays has spent nothing. 9 bytes a node (+1 a seeded round), not a dict entry of strings.
    """

    def __init__(self) -> None:
        self.spent = np.zeros(0, dtype=np.float64)
        self.seeded_rounds: dict[int, np.ndarray] = {}

    def _grow(self, size: int) -> None:
        """Make room for node ids below ``size`` (new nodes: nothing spent, no round)."""
        if size <= self.spent.size:
            return
        size = max(size, 2 * self.spent.size)

        def grown(old: np.ndarray) -> np.ndarray:
            new = np.zeros(size, dtype=old.dtype)
            new[: old.size] = old
            return new

        self.spent = grown(self.spent)
        self.seeded_rounds = {r: grown(m) for r, m in self.seeded_rounds.items()}

    def spent_of(self, node: int) -> float:
        """What ``node`` has spent on this graph."""
        node = int(node)
        return float(self.spent[node]) if 0 <= node < self.spent.size else 0.0

    def admit(
        self,
        node: int,
        cost: float | Charge,
        round_: int,
        settings: NodeSettings,
        raw_upload: bool,
    ) -> None:
        """:meth:`Book.admit` on this form: charge ``node`` or raise :class:`Refusal`."""
        admission = self.admit_many(np.asarray([node]), cost, round_, settings, raw_upload)
        if admission.refused.size:
            raise Refusal(admission.reason(0))

    def admit_many(
        self,
        nodes: np.ndarray,
        cost: float | Charge,
        round_: int,
        settings: NodeSettings,
        raw_upload: bool,
    ) -> Admission:
        """:meth:`Book.admit` for each of ``nodes`` (distinct ids ≥ 0) at once: the same
        decisions with the same tolerance; every node is decided before any is charged.

        Args:
            nodes: the nodes asked, distinct non-negative ids (int array).
            cost: the round's charge (or its per-bit ε), charged to every admitted node in
                the nodes' unit.
            round_: the round's index (a pinned-seed node answers a round once).
            settings: the nodes' own settings, shared by all of them.
            raw_upload: whether the round uploads raw data (then only trust counts).
        """
        nodes = np.asarray(nodes)
        if nodes.ndim != 1 or (nodes.size and nodes.dtype.kind not in "iu"):
            raise ValueError("nodes must be a 1-d array of integer ids")
        nodes = nodes.astype(np.int64, copy=False)
        charge = as_charge(cost)
        cost = float(charge.in_unit(settings.unit))
        round_ = int(round_)
        code = _round_refusal(charge, settings, raw_upload)
        empty = np.zeros(0, dtype=np.int64)
        if code is not None or raw_upload or nodes.size == 0:
            refused = nodes if code is not None else empty
            return Admission(
                admitted=empty if code is not None else nodes,
                refused=refused,
                codes=np.full(refused.size, code or 0, dtype=np.uint8),
                used=np.zeros(refused.size),
                cost=cost,
                round_=round_,
                budget=settings.budget,
                detail=cap_reason(charge, settings) if code == CAPPED else None,
            )
        assert settings.budget is not None  # _round_refusal refused an unset budget
        if int(nodes.min()) < 0:
            raise ValueError("node ids must be >= 0")
        self._grow(int(nodes.max()) + 1)
        asked = np.zeros(self.spent.size, dtype=bool)
        asked[nodes] = True
        if np.count_nonzero(asked) != nodes.size:
            raise ValueError("a node is asked twice in one admission")  # its charges would merge
        del asked
        limit = settings.budget + TOLERANCE
        seeded = self.seeded_rounds.get(round_) if settings.seed is not None else None
        # Decide first (block by block: no temporary of n floats), then charge in one pass.
        ok = np.empty(nodes.size, dtype=bool)
        for lo in range(0, nodes.size, _BLOCK):
            ids = nodes[lo : lo + _BLOCK]
            fits = ~(self.spent[ids] + cost > limit)  # the float64 sum Book.admit compares
            if seeded is not None:
                fits &= ~seeded[ids]  # a pinned seed never answers a round twice
            ok[lo : lo + ids.size] = fits
        if ok.all():
            admitted, refused = nodes, nodes[:0]
        else:
            admitted, refused = nodes[ok], nodes[~ok]
        del ok
        for lo in range(0, admitted.size, _BLOCK):
            self.spent[admitted[lo : lo + _BLOCK]] += cost  # distinct ids: used + cost each
        if settings.seed is not None:
            if seeded is None:
                self.seeded_rounds[round_] = np.zeros(self.spent.size, dtype=bool)
            self.seeded_rounds[round_][admitted] = True
        # A refused node's spend and rounds are untouched; a replay is named before the budget,
        # as Book.admit checks it first.
        used = self.spent[refused]
        codes = np.full(refused.size, OVER_BUDGET, dtype=np.uint8)
        if seeded is not None:
            codes[seeded[refused]] = REPLAY
        return Admission(admitted, refused, codes, used, cost, round_, settings.budget)


@dataclass(frozen=True)
class Admission:
    """Who of many nodes is admitted to a round, and why each other one refused: a code per
    refused node, turned into the node's log text only when asked (admitting 10^6 nodes
    builds no string).

    Args:
        admitted: the admitted nodes, in the order asked.
        refused: the refusing nodes, in the order asked.
        codes: each refused node's refusal code.
        used: each refused node's spend before the round (for its reason).
        cost: the round's ε.
        round_: the round's index.
        budget: the nodes' budget.
        texts: the reasons already written (a ledger admitted node by node), by node.
        detail: what a round-wide refusal adds (the cap a round exceeds), for the log.
    """

    admitted: np.ndarray
    refused: np.ndarray
    codes: np.ndarray
    used: np.ndarray
    cost: float
    round_: int
    budget: float | None
    texts: Mapping[int, str] | None = None
    detail: str | None = None

    def reason(self, i: int) -> str:
        """Why ``refused[i]`` refused (for that node's own log, never for the server)."""
        node = int(self.refused[i])
        if self.texts is not None:
            return self.texts[node]
        used = float(self.used[i])
        text = refusal_reason(int(self.codes[i]), node, self.cost, self.round_, used, self.budget)
        return f"{text} ({self.detail})" if self.detail else text

    def reasons(self) -> dict[int, str]:
        """Every refused node's reason, by node (what :func:`admit_nodes` returns)."""
        return {int(node): self.reason(i) for i, node in enumerate(self.refused)}

    def counts(self) -> dict[int, int]:
        """How many nodes refused for each code (the reasons grouped, without a string)."""
        values, counts = np.unique(self.codes, return_counts=True)
        return {int(v): int(c) for v, c in zip(values, counts, strict=True)}


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
