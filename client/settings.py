"""What a node decides for itself: its budget, its consent to raw upload, its randomness, its
unit and caps, and where it keeps its ledger.

Read from the node's own configuration only (a SuperNode's ``--node-config``; in simulation,
the settings the harness wrote beside each simulated node's data): nothing in a round message
can set or raise any of them. A missing, non-numeric or non-finite budget means *refuse every
LDP round* (fail closed); a missing consent means *no raw upload*. Unless the node pins a
``seed`` (simulation and tests, where reproducibility is the point), every request draws a
fresh 128-bit seed from the OS entropy pool, so the server can neither replay nor correlate a
node's noise. The standard library only: this is on the client's import path.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .units import PER_BIT, parse_cap, parse_unit


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
