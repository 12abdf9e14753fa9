"""What the nodes of one graph have spent, while a round is admitted: a :class:`Book` (node
ids as strings, the JSON ledger's form, node by node) or an :class:`ArrayBook` (an in-memory
ledger's spends as one float64 array, many nodes at once, with the same decisions).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .refusals import (
    CAPPED,
    OVER_BUDGET,
    REPLAY,
    TOLERANCE,
    Admission,
    Refusal,
    as_charge,
    refusal_reason,
    round_refusal,
)
from .settings import NodeSettings
from .units import Charge, cap_reason

#: Nodes decided per block when many are admitted at once (bounds the temporaries).
_BLOCK = 1 << 16


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
        code = round_refusal(charge, settings, raw_upload)
        if code is not None:
            text = refusal_reason(code, node, cost, round_, 0.0, settings.budget)
            detail = cap_reason(charge, settings) if code == CAPPED else None
            raise Refusal(f"{text} ({detail})" if detail else text)
        if raw_upload:
            return
        assert settings.budget is not None  # round_refusal refused an unset budget
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
        nodes = _int_ids(nodes)
        charge = as_charge(cost)
        cost = float(charge.in_unit(settings.unit))
        round_ = int(round_)
        code = round_refusal(charge, settings, raw_upload)
        if code is not None or raw_upload or nodes.size == 0:
            empty = np.zeros(0, dtype=np.int64)
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
        assert settings.budget is not None  # round_refusal refused an unset budget
        self._make_room(nodes)
        seeded = self.seeded_rounds.get(round_) if settings.seed is not None else None
        # Decide first (block by block), then charge in one pass.
        ok = self._fits(nodes, cost, settings.budget + TOLERANCE, seeded)
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

    def _make_room(self, nodes: np.ndarray) -> None:
        """Grow the arrays to hold ``nodes`` (ids ≥ 0, none asked twice: its charges would
        merge)."""
        if int(nodes.min()) < 0:
            raise ValueError("node ids must be >= 0")
        self._grow(int(nodes.max()) + 1)
        asked = np.zeros(self.spent.size, dtype=bool)
        asked[nodes] = True
        if np.count_nonzero(asked) != nodes.size:
            raise ValueError("a node is asked twice in one admission")

    def _fits(
        self, nodes: np.ndarray, cost: float, limit: float, seeded: np.ndarray | None
    ) -> np.ndarray:
        """Whether each node can take ``cost`` within ``limit`` (and, with ``seeded``, has not
        answered this round from its pinned seed), decided block by block: no temporary of n
        floats."""
        ok = np.empty(nodes.size, dtype=bool)
        for lo in range(0, nodes.size, _BLOCK):
            ids = nodes[lo : lo + _BLOCK]
            fits = ~(self.spent[ids] + cost > limit)  # the float64 sum Book.admit compares
            if seeded is not None:
                fits &= ~seeded[ids]  # a pinned seed never answers a round twice
            ok[lo : lo + ids.size] = fits
        return ok


def _int_ids(nodes: np.ndarray) -> np.ndarray:
    """``nodes`` as an int64 array, or ValueError when they are not 1-d integer ids."""
    nodes = np.asarray(nodes)
    if nodes.ndim != 1 or (nodes.size and nodes.dtype.kind not in "iu"):
        raise ValueError("nodes must be a 1-d array of integer ids")
    return nodes.astype(np.int64, copy=False)
