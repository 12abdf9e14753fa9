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
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: dp-accounting (with SciPy) takes seconds to import,
    # and a command line refused before any work should not wait for it
    from dp_accounting import dp_event

ACCOUNTANT = "dp_accounting.pld.PLDAccountant(REPLACE_ONE)"
#: Our PLD accountant rounds privacy losses up to this interval: its ε can exceed the exact
#: closed form by at most about this much per composed event (never less: it is pessimistic).
PLD_DISCRETIZATION = 1e-4


def rr_event(epsilon: float) -> dp_event.DpEvent:
    """The dp-accounting event of one bit released by Warner RR / the 1-bit mechanism."""
    from dp_accounting import dp_event

    return dp_event.RandomizedResponseDpEvent(
        noise_parameter=2.0 / (math.exp(epsilon) + 1.0), num_buckets=2
    )


def pure_epsilon(events: list[dp_event.DpEvent]) -> float:
    """ε at δ = 0 of the composition of ``events`` by the PLD accountant."""
    from dp_accounting import NeighboringRelation, dp_event, pld

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


def _g(value: float) -> str:
    return f"{value:.4g}"


def unit_summary(
    *,
    adjacency_label: str | None,
    rr_adjacency: float = 0.0,
    counts: Sequence[float] = (),
    adjacency_detail: str = "",
    edge_detail: str = "both endpoints report it",
    feature_bit: float | None = None,
    num_features: int | None = None,
) -> tuple[str, dict[str, float]]:
    """The headline and the accountant's ε per unit of a report (see ``PrivacyReport``).

    One adjacency bit of a node is seen by its RR bit (``rr_adjacency``, 0: not sent) and by
    every discrete-Laplace count it moves by 1 (``counts``: a degree, an entry of a degree
    vector). An edge {i, j} is one bit of i's row and one of j's, so it is seen twice over:
    its ε is the composition of both endpoints' parts, computed, not doubled by hand. A
    feature vector of d bits composes d per-bit events; its ε is d times the accountant's
    per-bit ε (basic composition, tight at δ = 0 for pure mechanisms): the PLD's own δ = 0
    figure for d ≳ 100 composed events is unusable (∞ from truncation, or too small once the
    probability of the worst output, ~(e^ε/(e^ε+1))^d, underflows).

    ``adjacency_label`` names the adjacency budget in the text ("ε_a", "ε_a + ε_d"); None
    means no adjacency is sent (edges then spend nothing). ``feature_bit`` is ε_f, None when
    the features are public (not perturbed, not protected).
    """
    from .laplace import composed_epsilon

    eps: dict[str, float] = {}
    text: list[str] = []
    if adjacency_label is None:
        eps["edge"] = 0.0
        text.append("no adjacency bits are sent (an edge: ε = 0)")
    else:
        rr = [float(rr_adjacency)] if rr_adjacency > 0 else []
        eps["adjacency_bit"] = composed_epsilon(rr, list(counts))
        eps["edge"] = composed_epsilon(rr * 2, list(counts) * 2)
        label = adjacency_label if "+" not in adjacency_label else f"({adjacency_label})"
        detail = f": {adjacency_detail}" if adjacency_detail else ""
        text.append(
            f"{adjacency_label} = {_g(eps['adjacency_bit'])} per adjacency bit of a node's "
            f"report (edge LDP{detail})"
        )
        text.append(f"one edge ({edge_detail}): 2{label} = {_g(eps['edge'])}")
    if feature_bit is None:
        text.append("features are public: not perturbed, not protected")
    else:
        eps["feature_bit"] = pure_epsilon([rr_event(feature_bit)])
        text.append(f"ε_f = {_g(eps['feature_bit'])} per feature bit")
        if num_features:
            eps["feature_vector"] = int(num_features) * eps["feature_bit"]
            text.append(
                f"a whole feature vector of d = {int(num_features)} bits: "
                f"d·ε_f = {_g(eps['feature_vector'])}"
            )
        else:
            text.append("a whole feature vector of d bits: d·ε_f")
    return "; ".join(text), eps
