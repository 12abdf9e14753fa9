"""The Laplace mechanism on a count (a node's degree), and its privacy accounting.

A node's degree changes by exactly 1 when one bit of its adjacency row changes, so adding
Lap(0, 1/ε) noise is ε-edge-LDP under the same neighbouring relation as randomized response
on that row (replace one bit). The mechanism is numpy only and draws from the generator it is
given (a node's own stream from :func:`ldpgraph.protocols.rng.node_rng`), so it is safe on the
client's import path. The accounting helpers import dp-accounting only when called.

Accounting note (dp-accounting 0.6.0): ``PLDAccountant`` accepts ``LaplaceDpEvent`` only under
ADD_OR_REMOVE_ONE or REPLACE_SPECIAL, not under the REPLACE_ONE relation that randomized
response needs, and its default (connect-the-dots) Laplace PLD leaves a floating-point residue
of ~5.6e-17 at infinite privacy loss, so ε at δ = 0 comes out as ∞ although the mechanism is
pure ε-DP. We therefore build the Laplace privacy-loss distribution directly with
``from_laplace_mechanism(parameter=1/ε, sensitivity=1, use_connect_dots=False)``: it is the pair
of output laws Lap(μ, 1/ε) and Lap(μ ± 1, 1/ε), which is exactly what one replaced adjacency bit
does to the degree, and its pessimistic ε at δ = 0 is ε + one discretisation step. It is then
composed with the randomized-response PLDs that :mod:`ldpgraph.protocols.accounting` uses,
without tail truncation (the default 1e-15 truncation of an FFT composition also leaves mass at
infinite loss, hence ε = ∞ at δ = 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Must match ``accounting.PLD_DISCRETIZATION`` (the value is repeated to keep this module
#: free of dp-accounting at import time; a test holds the two equal).
PLD_DISCRETIZATION = 1e-4


@dataclass(frozen=True)
class Laplace:
    """The Laplace mechanism: ``value + Lap(0, sensitivity/ε)``. Pure ε-DP for inputs that
    differ by at most ``sensitivity`` (a degree under one changed adjacency bit: 1)."""

    epsilon: float
    sensitivity: float = 1.0

    def __post_init__(self) -> None:
        eps = float(self.epsilon)
        if not math.isfinite(eps) or eps <= 0:
            raise ValueError(f"epsilon must be a finite number > 0, got {self.epsilon}")
        if not (math.isfinite(self.sensitivity) and self.sensitivity > 0):
            raise ValueError(f"sensitivity must be a finite number > 0, got {self.sensitivity}")

    @property
    def scale(self) -> float:
        """The noise scale b = sensitivity / ε (variance 2b²)."""
        return float(self.sensitivity) / float(self.epsilon)

    def perturb(self, value: float, rng: np.random.Generator) -> float:
        """One noisy value: a single draw from ``rng``; real-valued, not rounded or clipped."""
        return float(value) + float(rng.laplace(0.0, self.scale))

    def perturb_many(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Independent noise on every entry, from one generator (for tests and batches of
        values that belong to one party)."""
        values = np.asarray(values, dtype=np.float64)
        return values + rng.laplace(0.0, self.scale, size=values.shape)


def laplace_pld(epsilon: float):
    """The privacy-loss distribution of :class:`Laplace` with sensitivity 1 at ``epsilon``
    (pessimistic, no connect-the-dots: ε at δ = 0 is finite)."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    return pld_lib.from_laplace_mechanism(
        parameter=1.0 / float(epsilon),
        sensitivity=1.0,
        value_discretization_interval=PLD_DISCRETIZATION,
        use_connect_dots=False,
    )


def rr_pld(epsilon: float):
    """The PLD of one bit under Warner RR / the 1-bit mechanism (REPLACE_ONE), built as
    ``PLDAccountant`` builds it for ``accounting.rr_event(epsilon)``."""
    from dp_accounting import NeighboringRelation
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    return pld_lib.from_randomized_response(
        noise_parameter=2.0 / (math.exp(float(epsilon)) + 1.0),
        num_buckets=2,
        value_discretization_interval=PLD_DISCRETIZATION,
        neighboring_relation=NeighboringRelation.REPLACE_ONE,
    )


def composed_epsilon(rr_epsilons: list[float], laplace_epsilons: list[float]) -> float:
    """ε at δ = 0 of one unit seen by RR bits with ``rr_epsilons`` and Laplace counts with
    ``laplace_epsilons`` (basic composition through the PLD; pessimistic by at most one
    discretisation step per part)."""
    plds = [rr_pld(e) for e in rr_epsilons] + [laplace_pld(e) for e in laplace_epsilons]
    if not plds:
        return 0.0
    total = plds[0]
    for other in plds[1:]:
        # No tail truncation: the FFT composition with a dense (Laplace) PMF would otherwise
        # move ~1e-19 of mass to infinite loss and make ε at δ = 0 infinite.
        total = total.compose(other, tail_mass_truncation=0.0)
    return float(total.get_epsilon_for_delta(0.0))


def laplace_part(name: str, unit: str, epsilon: float) -> dict[str, Any]:
    """A privacy-report line for a Laplace count, in the shape of ``accounting.bit_part``."""
    return {
        "part": name,
        "unit": unit,
        "mechanism": "laplace",
        "epsilon": composed_epsilon([], [epsilon]),
        "epsilon_closed_form": float(epsilon),
        "delta": 0.0,
        "noise_scale": 1.0 / float(epsilon),
        "sensitivity": 1.0,
    }
