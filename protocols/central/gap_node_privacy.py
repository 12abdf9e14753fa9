"""gap-node's accounting (Sajadmanesh et al., USENIX Security 2023, its node-level variant
GAP-NDP; the proof as run is docs/privacy/gap.md, section "gap-node"): one dp-accounting event
for the whole release, calibrated to the requested ε by a search over one noise multiplier z.

The release composes, adaptively, three mechanisms on the same data:

1. the encoder's DP-SGD: T₁ steps of the Poisson-subsampled (rate q = B/N over the N public
   training slots) Gaussian of multiplier z (noise std z·C on the sum of clipped per-node
   gradients);
2. K perturbed aggregations, each a Gaussian of std σ = z·√D on the sum of unit rows over a
   neighbourhood bounded by D: one node's upload moves at most D rows other than its own, each
   by a unit vector, so the ℓ2 sensitivity is √D and the multiplier σ/√D = z;
3. the classifier's DP-SGD: T₂ steps, the same rate and multiplier.

Calibrating σ at the edge-level sensitivity √2 instead of √D would under-state ε for D > 2
(:func:`epsilon_at_edge_calibration`, a test holds it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..params import ProtocolParameterError
from ..types import PrivacyReport
from .report_parts import ReportPart

#: The edge-level per-hop sensitivity (gap-edge's), for the under-statement check.
EDGE_SENSITIVITY = math.sqrt(2.0)
Z_MIN, Z_MAX = 1e-2, 1e4


def node_sensitivity(max_degree: int) -> float:
    """ℓ2 sensitivity of one hop to one node's upload, its own row aside: √D."""
    return math.sqrt(max_degree)


@dataclass(frozen=True)
class NodePlan:
    """The public sizes of one gap-node run: N training slots, Poisson rate q, the steps of
    each DP-SGD stage, the hops K and the degree bound D."""

    slots: int
    q: float
    steps: int
    hops: int
    max_degree: int

    @classmethod
    def of(cls, slots: int, p: Any) -> NodePlan:
        if slots < 1:
            raise ValueError("gap-node needs at least one training slot")
        q = min(1.0, p.gap_batch_size / slots)
        steps = p.gap_sgd_epochs * math.ceil(slots / min(p.gap_batch_size, slots))
        return cls(slots, q, steps, p.gap_hops, p.gap_max_degree)


def node_event(z: float, plan: NodePlan, agg_multiplier: float | None = None):
    """The release as one dp-accounting event: encoder DP-SGD, K aggregations (multiplier
    ``agg_multiplier``, default z), classifier DP-SGD."""
    from dp_accounting import dp_event

    from . import dpsgd

    agg = z if agg_multiplier is None else agg_multiplier
    return dp_event.ComposedDpEvent([
        dpsgd.sgd_event(z, plan.q, plan.steps),
        dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(agg), plan.hops),
        dpsgd.sgd_event(z, plan.q, plan.steps),
    ])  # fmt: skip


def event_epsilon(event: Any, delta: float, accountant: str) -> float:
    """ε at ``delta`` of ``event`` (add/remove one node) by the dp-accounting accountant."""
    from . import dpsgd
    from .dpar_privacy import quiet_absl

    with quiet_absl():
        acc = dpsgd._accountant(accountant)
        acc.compose(event)
        return float(acc.get_epsilon(delta))


def node_epsilon(z: float, plan: NodePlan, delta: float, accountant: str) -> float:
    return event_epsilon(node_event(z, plan), delta, accountant)


@lru_cache(maxsize=64)
def calibrate(epsilon: float, delta: float, plan: NodePlan, accountant: str) -> float:
    """The smallest z (to 1e-4 relative) whose whole release costs at most (ε, δ): a bracket
    a factor 2 wide by doubling, then dp-accounting's ``calibrate_dp_mechanism`` inside it."""
    from dp_accounting import mechanism_calibration

    from .dpar_privacy import quiet_absl

    if not 0.0 < delta < 1.0:
        raise ProtocolParameterError(f"gap-node needs δ in (0, 1), got {delta!r}")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ProtocolParameterError(f"gap-node needs ε > 0, got {epsilon!r}")
    lo = hi = 1.0
    if node_epsilon(hi, plan, delta, accountant) > epsilon:
        while node_epsilon(hi, plan, delta, accountant) > epsilon:
            if hi >= Z_MAX:
                raise ProtocolParameterError(
                    f"gap-node: ε = {epsilon:g} is unreachable even at noise multiplier {Z_MAX:g}"
                )
            lo, hi = hi, hi * 2
    else:
        while node_epsilon(lo, plan, delta, accountant) <= epsilon:
            if lo <= Z_MIN:
                return Z_MIN
            lo, hi = lo / 2, lo
    with quiet_absl():
        return float(
            mechanism_calibration.calibrate_dp_mechanism(
                lambda: _acc(accountant),
                lambda z: node_event(z, plan),
                epsilon,
                delta,
                mechanism_calibration.ExplicitBracketInterval(lo, hi),
                tol=1e-4 * lo,
            )
        )


def _acc(accountant: str) -> Any:
    from . import dpsgd

    return dpsgd._accountant(accountant)


def epsilon_at_edge_calibration(epsilon: float, delta: float, plan: NodePlan, acc: str) -> float:
    """The true node-level ε of a run whose aggregation σ was calibrated at the edge-level
    sensitivity √2 (σ = z·√2 where the node level needs z·√D): larger than ``epsilon`` for
    D > 2."""
    z = calibrate(epsilon, delta, plan, acc)
    agg = z * EDGE_SENSITIVITY / node_sensitivity(plan.max_degree)
    return event_epsilon(node_event(z, plan, agg), delta, acc)


@dataclass(frozen=True, kw_only=True)
class NodePart(ReportPart):
    """The whole gap-node release (one composed event)."""

    part: str = "gap-node"
    mechanism: str = (
        "encoder DP-SGD + K Gaussian sum aggregations over a D-bounded neighbourhood + "
        "classifier DP-SGD, one noise multiplier"
    )
    unit: str = "node"
    epsilon: float
    delta: float
    noise_multiplier: float
    sigma: float
    sensitivity: float
    max_degree: int
    hops: int
    slots: int
    q: float
    steps_per_stage: int
    clip: float
    accountant: str


def privacy_report(name: str, p: Any, slots: int | None = None) -> PrivacyReport:
    """Node-level (ε, δ) of ``gap-node``. Without ``slots`` (before a release: N is not known)
    the calibration target, which every release meets; with it, the composed figure."""
    notes = [
        "Node-level DP under add/remove of one training node's upload: its features, its label "
        "and its neighbour report (docs/privacy/gap.md, gap-node). The other nodes' reports, "
        "the split and the test graph used at inference are not protected.",
        "Every ε is dp-accounting's for one composed event (encoder DP-SGD, K aggregations "
        "at sensitivity √D, classifier DP-SGD), calibrated so it equals the request.",
        "Hyper-parameters were not chosen privately; the class count is public.",
    ]
    head = f"node-level (ε = {{eps:.4g}}, δ = {p.delta:.3g}), proven (add/remove one training "
    head += "node's upload; D = " + f"{p.gap_max_degree})"
    if slots is None:
        eps = float(p.epsilon)
        return PrivacyReport(
            protocol=name, unit="node", epsilon=eps, delta=p.delta,
            accountant=f"dp_accounting {p.accountant.upper()} (docs/privacy/gap.md)",
            notes=notes, headline=head.format(eps=eps), unit_epsilons={"node": eps},
        )  # fmt: skip
    plan = NodePlan.of(slots, p)
    z = calibrate(float(p.epsilon), float(p.delta), plan, p.accountant)
    eps = node_epsilon(z, plan, p.delta, p.accountant)
    sens = node_sensitivity(p.gap_max_degree)
    part = NodePart(
        epsilon=eps, delta=p.delta, noise_multiplier=z, sigma=z * sens, sensitivity=sens,
        max_degree=p.gap_max_degree, hops=p.gap_hops, slots=slots, q=plan.q,
        steps_per_stage=plan.steps, clip=p.gap_clip,
        accountant=f"dp_accounting {p.accountant.upper()}, one composed event",
    )  # fmt: skip
    return PrivacyReport(
        protocol=name, unit="node", epsilon=eps, delta=p.delta,
        accountant=f"dp_accounting {p.accountant.upper()} (docs/privacy/gap.md)",
        parts=[part.as_dict()], notes=notes, headline=head.format(eps=eps),
        unit_epsilons={"node": eps},
    )  # fmt: skip
