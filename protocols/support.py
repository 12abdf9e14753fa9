"""Where a mechanism's outputs lie: the values the server accepts in a report.

Every report part a protocol asks for (the feature vector, each scalar extra) is declared with
its mechanism's support in the protocol's :class:`~ldpgraph.protocols.base.ReportSchema`; the
server's round loop (:func:`ldpgraph.server.rounds.validate_replies`, every backend) drops a
report with a value outside it, and counts and names the reason. A value outside the support
cannot come from the mechanism, so dropping it costs an honest node nothing, and a poisoning
node can no longer move an estimate by more than a value the mechanism could have produced
(Wu et al., "Poisoning attacks to local differential privacy protocols for graphs": the attack
that remains is a value inside the support).

- :data:`BITS`: the 1-bit mechanism and randomized response output 0 or 1.
- :data:`DOMAIN`: a raw (non-private) upload holds values in the public feature domain [α, β].
- :func:`noisy_count`: a count in [0, n−1] (a degree, a neighbour count in a group) plus
  discrete Laplace noise of rate ε: an integer in [−t, n−1+t], t = ⌈:data:`TAIL_NATS`/ε⌉. The
  noise's support is all the integers, so the cut is where its tail is negligible:
  P[|K| ≥ t] = 2e^{−εt}/(1+e^{−ε}) < 2e^{−50} ≈ 4·10⁻²², the chance an honest report is
  dropped, per entry.

numpy only (the client imports the protocols).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: The discrete Laplace tail cut, in nats: an honest entry falls past it with p < 2e^{−50}.
TAIL_NATS = 50.0


@dataclass(frozen=True)
class Support:
    """A set of values: ``kind`` ``bits`` ({0, 1}), ``domain`` (the public feature domain
    [α, β], real) or ``count`` (integers in [−tail, n−1+tail])."""

    kind: str
    tail: int = 0

    def __post_init__(self) -> None:
        if self.kind not in ("bits", "domain", "count"):
            raise ValueError(f"unknown support {self.kind!r}")

    def bounds(self, num_nodes: int, domain: tuple[float, float]) -> tuple[float, float, bool]:
        """(low, high, integer) of this support for an n-node graph with ``domain``."""
        if self.kind == "bits":
            return 0.0, 1.0, True
        if self.kind == "domain":
            return float(domain[0]), float(domain[1]), False
        return float(-self.tail), float(num_nodes - 1 + self.tail), True

    def describe(self, num_nodes: int, domain: tuple[float, float]) -> str:
        low, high, integer = self.bounds(num_nodes, domain)
        if self.kind == "bits":
            return "{0, 1}"
        what = "integers" if integer else "reals"
        return f"{what} in [{low:g}, {high:g}]"

    def outside(
        self, values: np.ndarray, num_nodes: int, domain: tuple[float, float]
    ) -> np.ndarray:
        """Per entry of ``values``, whether it lies outside (NaN and ±inf included)."""
        low, high, integer = self.bounds(num_nodes, domain)
        v = np.asarray(values)
        if v.dtype.kind in "iub":
            bad = (v < low) | (v > high)
        else:
            with np.errstate(invalid="ignore"):
                bad = ~((v >= low) & (v <= high))  # NaN fails both
                if integer:
                    bad |= np.where(bad, False, np.floor(v) != v)
        return bad


#: 0/1 outputs (the 1-bit mechanism, randomized response).
BITS = Support("bits")
#: A raw upload: values in the public feature domain.
DOMAIN = Support("domain")


def noisy_count(epsilon: float) -> Support:
    """A count in [0, n−1] plus discrete Laplace noise of rate ``epsilon`` (module doc)."""
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon}")
    return Support("count", tail=math.ceil(TAIL_NATS / epsilon))


__all__ = ["BITS", "DOMAIN", "TAIL_NATS", "Support", "noisy_count"]
