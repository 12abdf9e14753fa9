"""The unit a node counts its ε in, and the caps it puts on what a round may ask.

A round's parameters are the server's choice; the unit they are charged in, and how much of
them a node accepts, are the node's (its own configuration, never a round message):

- ``per-bit`` (the simulation's default, and every run before this setting existed): a round
  costs its ε, the sum of what one adjacency bit and one feature coordinate cost in it
  (``LdpProtocol.round_epsilon``). This protects any one bit (edge-LDP, per-bit feature LDP);
  a whole feature vector at ε_f per coordinate is d·ε_f-LDP, which a server that asks for a
  large ``feature_share`` can make useless as protection.
- ``per-vector`` (a deployed SuperNode's default): a round costs what it costs for the node's
  whole data, row and feature vector at once: every coordinate that can change composed,
  ``(n − 1)·ε_adjacency-bit + d·ε_feature`` (``docs/privacy/node-budget.md`` gives the proof and
  why nothing tighter holds at δ = 0 for these mechanisms).

Caps (None: no cap): ``max-feature-share``, the largest share of a round's per-bit ε spent on
features; ``max-epsilon-adjacency`` and ``max-epsilon-features``, the largest ε per adjacency
bit and per feature coordinate one round may use. A round beyond a cap is refused uncharged.

Standard library only: this is on the client's import path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

PER_BIT, PER_VECTOR = "per-bit", "per-vector"
UNITS = (PER_BIT, PER_VECTOR)


@dataclass(frozen=True)
class Charge:
    """What one round costs a node, in both units (the deployed ledger records both, so that
    a node that changes its unit is still charged everything it spent), and the per-bit parts
    the caps read."""

    per_bit: float
    per_vector: float
    adjacency_bit: float
    feature_bit: float

    def in_unit(self, unit: str) -> float:
        """The charge in ``unit``."""
        return self.per_bit if unit == PER_BIT else self.per_vector

    def as_mapping(self) -> dict[str, float]:
        return {PER_BIT: self.per_bit, PER_VECTOR: self.per_vector}


def parse_unit(value: Any, default: str) -> str:
    """The node's unit (``default`` when unset); anything else is a configuration error."""
    if value is None or value == "":
        return default
    if value not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {value!r}")
    return str(value)


def parse_cap(value: Any, name: str, high: float = math.inf) -> float | None:
    """A cap (None when unset): a finite number ≥ 0 (and ≤ ``high``)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        cap = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not (math.isfinite(cap) and 0 <= cap <= high):
        raise ValueError(f"{name} must be a finite number in [0, {high:g}], got {value!r}")
    return cap


def round_charge(protocol: Any, round_: int, num_nodes: int, num_features: int) -> Charge:
    """What ``round_`` of ``protocol`` costs a node of an ``num_nodes``-node graph with
    ``num_features`` features. A protocol that does not state its parts costs ∞ per vector
    (a per-vector node refuses it); its per-bit charge stays its round ε."""
    per_bit = float(protocol.round_epsilon(round_))
    parts = protocol.epsilon_parts(round_)
    if parts is None:
        return Charge(per_bit, math.inf, math.inf, math.inf)
    adjacency, feature = float(parts.adjacency_bit), float(parts.feature_bit)
    # The row has n − 1 coordinates (a node is never its own neighbour); each is one bit.
    per_vector = max(num_nodes - 1, 0) * adjacency + int(num_features) * feature
    return Charge(per_bit, per_vector, adjacency, feature)


def cap_reason(charge: Charge, settings: Any) -> str | None:
    """Why a round is beyond the node's caps (None: within them)."""
    share = getattr(settings, "max_feature_share", None)
    caps = (share, settings.max_epsilon_adjacency, settings.max_epsilon_features)
    if any(c is not None for c in caps) and not (
        math.isfinite(charge.adjacency_bit) and math.isfinite(charge.feature_bit)
    ):
        return "the round does not state its ε per adjacency bit and per feature"
    total = charge.adjacency_bit + charge.feature_bit
    if share is not None and total > 0 and charge.feature_bit > share * total * (1 + 1e-12):
        return f"feature share {charge.feature_bit / total:.4g} exceeds its cap {share:g}"
    for part, cap in (
        ("adjacency bit", settings.max_epsilon_adjacency),
        ("feature", settings.max_epsilon_features),
    ):
        value = charge.adjacency_bit if part == "adjacency bit" else charge.feature_bit
        if cap is not None and not value <= cap * (1 + 1e-12):
            return f"ε {value:g} per {part} exceeds its cap {cap:g}"
    return None
