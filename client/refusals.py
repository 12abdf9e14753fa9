"""Why a node refuses a round, and who of many nodes is admitted to one.

A refusal is a code (so that refusing 10^6 nodes builds no string until a node's log asks for
it) and, on the node, a text; the server is only ever told :data:`REFUSED`. The refusals that
do not depend on what a node spent (no consent to raw upload, no budget, a bad cost, a round
beyond the node's caps) are decided once per round (:func:`round_refusal`); the books decide
the rest (:mod:`.books`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .settings import NodeSettings
from .units import Charge, cap_reason

#: Slack for floating-point sums of ε (e.g. 0.1 + 0.2 spent against a budget of 0.3).
TOLERANCE = 1e-9
#: What a refusal tells the server: nothing about the node's budget, spending or consent.
REFUSED = "refused"
#: The smallest charge a node accepts. A round costing less is refused: its spend could vanish
#: in a floating-point sum, and mechanisms degenerate at vanishing ε.
MIN_CHARGE = 1e-6


class Refusal(Exception):
    """A round the node will not take part in; the message (kept on the node) says why."""


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


def round_refusal(charge: Charge, settings: NodeSettings, raw_upload: bool) -> int | None:
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
