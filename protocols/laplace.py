"""The discrete Laplace (two-sided geometric) mechanism on a count, and its privacy accounting.

Why discrete. The counts we protect (a node's degree, LDPGen's per-group degrees) are integers
that change by exactly 1 when one bit of the node's adjacency row changes. Adding floating-point
Laplace noise to them is not ε-DP as implemented: the set of doubles reachable from degree 4 and
from degree 5 differ (Mironov, CCS'12), and an audit found 34.9 % of the outputs for degree 4
impossible for degree 5 (an empirical ε lower bound of 11.5 against a claimed 0.8). The discrete
Laplace mechanism adds integer noise K with P[K = k] = (1 − a)/(1 + a)·a^|k|, a = e^{−ε/Δ}, so
integer in, integer out: the likelihood ratio of any output under inputs that differ by at most
Δ is at most e^ε exactly, with no floating-point output to leak the input.

Sampling. K = G1 − G2 with G1, G2 i.i.d. geometric on {0, 1, …} with success probability
1 − a (P[G = g] = (1 − a)·a^g); the difference has exactly the pmf above. Both draws come from
the numpy generator the caller gives (a node's own stream from
:func:`ldpgraph.protocols.rng.node_rng`). The pmf is computed in closed form from ε, never from
the draws. The module is numpy only at import time (it is on the client's import path); the
accounting helpers import dp-accounting only when called.

Accounting note (dp-accounting 0.6.0): ``PLDAccountant`` accepts ``DiscreteLaplaceDpEvent`` only
under ADD_OR_REMOVE_ONE or REPLACE_SPECIAL, not under the REPLACE_ONE relation that randomized
response needs. We therefore build the privacy-loss distribution directly with
``from_discrete_laplace_mechanism(parameter=ε/Δ, sensitivity=Δ)`` (pessimistic, no
connect-the-dots): it is the pair of output laws DLap(μ) and DLap(μ ± Δ), which is exactly what
one replaced adjacency bit does to the count, and its privacy loss takes only the values ±ε, so
its ε at δ = 0 is ε to float precision (measured: 0.8 → 0.8000000000000002, 4 → 4.0). It is
composed with the randomized-response PLDs that :mod:`ldpgraph.protocols.accounting` uses,
without tail truncation: the default 1e-15 truncation of a composition can move mass to infinite
loss and make ε at δ = 0 infinite.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Any

import numpy as np

#: Must match ``accounting.PLD_DISCRETIZATION`` (the value is repeated to keep this module
#: free of dp-accounting at import time; a test holds the two equal).
PLD_DISCRETIZATION = 1e-4
MECHANISM = "discrete-laplace"
#: The smallest decay rate ε/Δ the mechanism accepts. Below it the noise is so wide that it
#: protects nothing more in practice, and a float sampler breaks (numpy's geometric saturates at
#: INT64_MAX, so G1 − G2 = 0 and the true value is sent). Protocols validate their parameters
#: against it before a node spends any budget.
MIN_EPSILON = 1e-3


def _is_int(value: Any) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool | np.bool_)


@dataclass(frozen=True)
class DiscreteLaplace:
    """The discrete Laplace mechanism: ``value + K``, P[K = k] ∝ exp(−ε|k|/Δ) on the integers.

    Pure ε-DP for integer inputs that differ by at most ``sensitivity`` = Δ (a degree under one
    changed adjacency bit: 1). Integer in, integer out, so no floating-point artefact can tell
    neighbouring inputs apart.
    """

    epsilon: float
    sensitivity: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.epsilon, bool) or not isinstance(self.epsilon, Real):
            raise ValueError(f"epsilon must be a finite number > 0, got {self.epsilon!r}")
        eps = float(self.epsilon)
        if not math.isfinite(eps) or eps <= 0:
            raise ValueError(f"epsilon must be a finite number > 0, got {self.epsilon}")
        if not _is_int(self.sensitivity) or self.sensitivity < 1:
            raise ValueError(f"sensitivity must be an integer >= 1, got {self.sensitivity!r}")
        if eps / int(self.sensitivity) < MIN_EPSILON:
            raise ValueError(
                f"epsilon/sensitivity must be >= MIN_EPSILON = {MIN_EPSILON:g}, got "
                f"{eps:g}/{int(self.sensitivity)}"
            )

    @property
    def decay(self) -> float:
        """a = e^{−ε/Δ}: P[K = k] = (1 − a)/(1 + a)·a^|k|."""
        return math.exp(-float(self.epsilon) / int(self.sensitivity))

    @property
    def success_probability(self) -> float:
        """1 − a, the success probability of the two geometric draws (exact for small ε)."""
        return -math.expm1(-float(self.epsilon) / int(self.sensitivity))

    @property
    def variance(self) -> float:
        """Var K = 2a/(1 − a)²."""
        a = self.decay
        return 2.0 * a / self.success_probability**2

    def pmf(self, k: np.ndarray | int) -> np.ndarray:
        """The exact P[K = k] (closed form), for tests and reports."""
        a = self.decay
        k = np.abs(np.asarray(k, dtype=np.float64))
        return (self.success_probability / (1.0 + a)) * np.power(a, k)

    def noise(self, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        """int64 noise of ``shape``: per entry G1 − G2, G1 and G2 geometric on {0, 1, …}, drawn
        in pairs so that a batch draws exactly what entry-by-entry calls would."""
        g = rng.geometric(self.success_probability, size=(*shape, 2)).astype(np.int64)
        return g[..., 0] - g[..., 1]

    def perturb(self, value: int, rng: np.random.Generator) -> int:
        """One noisy count: ``value`` + K (two geometric draws from ``rng``); an int."""
        if not _is_int(value):
            raise TypeError(f"the discrete Laplace mechanism takes an integer, got {value!r}")
        return int(value) + int(self.noise((), rng))

    def perturb_many(self, values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Independent noise on every entry of an integer array, from one generator (one
        party's vector of counts); an int64 array of the same shape."""
        arr = np.asarray(values)
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(
                f"the discrete Laplace mechanism takes integer arrays, got dtype {arr.dtype}"
            )
        return arr.astype(np.int64) + self.noise(arr.shape, rng)


def discrete_laplace_pld(epsilon: float, sensitivity: int = 1):
    """The privacy-loss distribution of :class:`DiscreteLaplace` at ``epsilon`` for inputs that
    differ by at most ``sensitivity`` (pessimistic, no connect-the-dots: ε at δ = 0 is ε)."""
    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    mech = DiscreteLaplace(epsilon, sensitivity)
    return pld_lib.from_discrete_laplace_mechanism(
        parameter=float(mech.epsilon) / mech.sensitivity,
        sensitivity=mech.sensitivity,
        value_discretization_interval=PLD_DISCRETIZATION,
        use_connect_dots=False,
    )


def discrete_laplace_event(epsilon: float, sensitivity: int = 1):
    """dp-accounting's event for :class:`DiscreteLaplace` (its ``noise_parameter`` is the
    decay rate ε/Δ of the pmf exp(−(ε/Δ)|k|))."""
    from dp_accounting import dp_event

    mech = DiscreteLaplace(epsilon, sensitivity)
    return dp_event.DiscreteLaplaceDpEvent(
        noise_parameter=float(mech.epsilon) / mech.sensitivity, sensitivity=mech.sensitivity
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


def composed_epsilon(rr_epsilons: list[float], count_epsilons: list[float]) -> float:
    """ε at δ = 0 of one unit seen by RR bits with ``rr_epsilons`` and discrete-Laplace counts
    (sensitivity 1) with ``count_epsilons`` (basic composition through the PLD; pessimistic by
    at most one discretisation step per part)."""
    plds = [rr_pld(e) for e in rr_epsilons] + [discrete_laplace_pld(e) for e in count_epsilons]
    if not plds:
        return 0.0
    total = plds[0]
    for other in plds[1:]:
        # No tail truncation: it could move mass to infinite loss (ε = ∞ at δ = 0).
        total = total.compose(other, tail_mass_truncation=0.0)
    return float(total.get_epsilon_for_delta(0.0))


def discrete_laplace_part(name: str, unit: str, epsilon: float) -> dict[str, Any]:
    """A privacy-report line for a discrete-Laplace count (sensitivity 1), in the shape of
    ``accounting.bit_part``."""
    mech = DiscreteLaplace(epsilon)
    return {
        "part": name,
        "unit": unit,
        "mechanism": MECHANISM,
        "epsilon": composed_epsilon([], [epsilon]),
        "epsilon_closed_form": float(epsilon),
        "delta": 0.0,
        "noise_decay": mech.decay,
        "noise_std": math.sqrt(mech.variance),
        "sensitivity": 1,
    }


#: The names the float mechanism's helpers had: they now account for the discrete mechanism
#: (the only one left), so callers written against them keep working.
laplace_pld = discrete_laplace_pld
laplace_part = discrete_laplace_part
