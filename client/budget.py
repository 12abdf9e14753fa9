"""A node's privacy guard: it keeps what it has spent and refuses what it must not do.

Pure Python, no Flower: the ClientApp keeps the spent amounts in its persistent
``context.state``; the ``local`` backend keeps them in a dict. Both refuse the same rounds.
"""

from __future__ import annotations

import math
from collections.abc import MutableMapping

#: Slack for floating-point sums of ε (e.g. 0.1 + 0.2 spent against a budget of 0.3).
TOLERANCE = 1e-9


class Refusal(Exception):
    """A round the node will not take part in; the message says why."""


def check_and_spend(
    spent: MutableMapping[str, float],
    node_id: int,
    cost: float,
    budget: float,
    raw_upload: bool,
    trusts_curator: bool,
) -> None:
    """Charge ``cost`` to ``node_id``'s budget, or raise :class:`Refusal` and charge nothing."""
    if raw_upload and not trusts_curator:
        raise Refusal(f"node {node_id} does not trust the curator and refuses raw upload")
    if raw_upload:
        return  # raw data to a trusted curator is outside the LDP budget, by the node's choice
    if not math.isfinite(cost) or cost < 0:
        raise Refusal(f"node {node_id} refuses a round with cost ε={cost}")
    key = str(node_id)
    used = float(spent.get(key, 0.0))
    if used + cost > budget + TOLERANCE:
        raise Refusal(
            f"node {node_id} refuses: ε {cost:g} on top of {used:g} spent exceeds its budget "
            f"{budget:g}"
        )
    spent[key] = used + cost
