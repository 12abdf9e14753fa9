"""Privacy accounting through dp-accounting.

Randomized response and the 1-bit mechanism are pure ε-LDP per bit; their privacy event is
``RandomizedResponseDpEvent(noise_parameter=2/(e^ε+1), num_buckets=2)`` under the replace-one
relation (one bit changes its value). The accountant's figure is what a report states; the
closed forms are kept beside it and a test holds the two together.

Note: in dp-accounting 0.6.0, ``PLDAccountant.compose(rr_event, count)`` ignores ``count`` for
randomized-response events (k compositions report the ε of one), so we always compose with an
explicit ``ComposedDpEvent``.
"""

from __future__ import annotations

import math
from typing import Any

from dp_accounting import NeighboringRelation, dp_event, pld

ACCOUNTANT = "dp_accounting.pld.PLDAccountant(REPLACE_ONE)"
#: Our PLD accountant rounds privacy losses up to this interval: its ε can exceed the exact
#: closed form by at most about this much per composed event (never less: it is pessimistic).
PLD_DISCRETIZATION = 1e-4


def rr_event(epsilon: float) -> dp_event.DpEvent:
    """The dp-accounting event of one bit released by Warner RR / the 1-bit mechanism."""
    return dp_event.RandomizedResponseDpEvent(
        noise_parameter=2.0 / (math.exp(epsilon) + 1.0), num_buckets=2
    )


def pure_epsilon(events: list[dp_event.DpEvent]) -> float:
    """ε at δ = 0 of the composition of ``events`` by the PLD accountant."""
    acc = pld.PLDAccountant(
        neighboring_relation=NeighboringRelation.REPLACE_ONE,
        value_discretization_interval=PLD_DISCRETIZATION,
    )
    acc.compose(events[0] if len(events) == 1 else dp_event.ComposedDpEvent(events))
    return float(acc.get_epsilon(0.0))


def bit_part(name: str, unit: str, epsilon: float, count: int | None = None) -> dict[str, Any]:
    """One mechanism's line in a privacy report: per-unit ε from the accountant."""
    part: dict[str, Any] = {
        "part": name,
        "unit": unit,
        "mechanism": "randomized-response" if name == "adjacency" else "1-bit",
        "epsilon": pure_epsilon([rr_event(epsilon)]),
        "epsilon_closed_form": float(epsilon),
        "delta": 0.0,
    }
    if count is not None:
        part["bits_per_node"] = int(count)
    return part
