"""DPAR's privacy report (Zhang et al., WWW 2024; the proof is docs/privacy/dpar.md): the
DP-APPR and DP-SGD parts as typed parts, the proven headline and the paper's figure beside it
(§4, Theorems 1–3). The numbers come from :mod:`.dpar_privacy`; the strategy is :mod:`.dpar`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

from ..types import PrivacyReport
from . import dpar_privacy as dp
from .appr import ApprNoise
from .dpar_model import Budgets, SgdPlan
from .report_parts import OMIT, ReportPart


class Dpar(Protocol):
    """What the report reads of the strategy (:class:`.dpar.Dpar`; named here, not imported,
    so the strategy's module and this one do not import each other)."""

    name: str
    p: Any

    @property
    def proven(self) -> bool: ...

    @property
    def capped(self) -> bool: ...

    @property
    def uses_appr(self) -> bool: ...

    @property
    def amplify(self) -> bool: ...

    def budgets(self) -> Budgets | None: ...

    def appr_noise(self) -> ApprNoise | None: ...

    def sgd_epsilon(self, plan: SgdPlan) -> tuple[float, float]: ...

    def sgd_accountant(self, plan: SgdPlan) -> str: ...


@dataclass(frozen=True, kw_only=True)
class ApprPart(ReportPart):
    """DP-APPR: M noisy APPR vectors, top-K each (Gumbel peels, Laplace values or Gaussian)."""

    part: str = "dp-appr"
    mechanism: str
    unit: str = "node"
    epsilon: float
    epsilon_paper: float
    delta: float
    accountant: str
    eps_gumbel: float
    gumbel_beta: float
    eps_value: float
    laplace_b: float
    value_levels: int
    gm_sigma: float
    gm_sigma_rule: str
    M: int
    K: int
    C1: float
    C2: float


@dataclass(frozen=True, kw_only=True)
class SgdPart(ReportPart):
    """DP-SGD of the MLP: the figures after ``mechanism`` that need the release's Π (its rows
    and D) are :data:`OMIT` before it."""

    part: str = "dp-sgd"
    unit: str = "node"
    delta: float
    C: float
    target_epsilon: float
    sensitivity: str
    D_max: int | None
    mechanism: str = (
        "Poisson-subsampled Gaussian, per-target clipping; one node moves its own row and "
        "every row that reads its features (≤ D rows)"
    )
    epsilon: float
    epsilon_paper: float
    q: Any = OMIT
    steps: Any = OMIT
    D: int | None
    noise_multiplier: Any = OMIT
    calibration: Any = OMIT
    accountant: Any = OMIT


def appr_part(s: Dpar, b: Budgets, noise: ApprNoise) -> ApprPart:
    """DP-APPR's proven ε (exact composition or one Gaussian) and the paper's figure."""
    p = s.p
    m, k = p.appr_nodes, p.top_k
    eps = noise.proven_epsilon(m, k, p.clip_gm, b.delta_pr)
    paper = b.eps_pr if not s.proven else noise.paper_epsilon(m, k, p.clip_gm, b.delta_pr)
    how = (
        f"one Gaussian mechanism of sensitivity √(2M)·C1 (M = {m}), exact (Balle–Wang)"
        if noise.variant == "gm"
        else f"exact composition of {k * m} Gumbel peels (2ε_g each)"
        + (f" and {k * m} discrete Laplace values" if noise.variant == "em1" else "")
    )
    return ApprPart(
        mechanism=f"DP-APPR-{noise.variant.upper()}", epsilon=eps, epsilon_paper=paper,
        delta=b.delta_pr, accountant=how, eps_gumbel=noise.eps_gumbel, gumbel_beta=noise.beta,
        eps_value=noise.eps_value, laplace_b=noise.laplace_b,
        value_levels=noise.levels if noise.eps_value else 0, gm_sigma=noise.sigma,
        gm_sigma_rule=noise.sigma_rule, M=m, K=k, C1=p.clip_gm, C2=p.clip_em,
    )  # fmt: skip


def sgd_part(s: Dpar, b: Budgets, plan: SgdPlan | None) -> SgdPart:
    """DP-SGD's proven ε and the paper's τ-scaled one for ``plan``'s noise; before a release
    (no plan) a proven run states its calibration target and a paper run ∞."""
    p = s.p
    common: dict[str, Any] = {
        "delta": b.delta_sgd, "C": p.sgd_clip, "target_epsilon": b.eps_sgd,
        "sensitivity": p.sgd_sensitivity, "D_max": p.column_rows_cap if s.capped else None,
    }  # fmt: skip
    if plan is None:
        eps = b.eps_sgd if s.proven else math.inf
        paper = b.eps_sgd if not s.proven else math.nan
        return SgdPart(**common, epsilon=eps, epsilon_paper=paper, D=None)
    eps, paper = s.sgd_epsilon(plan)
    accountant = s.sgd_accountant(plan)
    return SgdPart(
        **common, epsilon=eps, epsilon_paper=paper, q=plan.q, steps=plan.steps, D=plan.rows,
        noise_multiplier=plan.noise, calibration=plan.calibration, accountant=accountant,
    )  # fmt: skip


def notes(s: Dpar, eps: float, raw: float, pending: bool) -> list[str]:
    """What the figures mean; ``pending``: a paper run before its release (ε = ∞ until then)."""
    qp = s.p.q_prime
    conv = "proven" if s.proven else "paper"
    out = [
        f"epsilon_convention={conv}: "
        + (
            "the noise is calibrated so this proven bound equals the requested ε."
            if s.proven
            else "the paper's calibration (§4, Theorems 1–3); the headline is the proven ε of "
            "that noise, paper_epsilon the paper's q′·(ε_pr + ε_sgd)."
        ),
        "Node-level DP under add/remove of one training node (features, label, edges) "
        "over the public training slots (docs/privacy/dpar.md).",
        f"ε = {eps:.4g}: proven raw ε_pr + ε_sgd = {raw:.4g} on the subsampled graph, "
        + (f"amplified by Poisson slot sampling q′ = {qp:g} as ln(1 + q′(e^ε − 1))."
           if s.amplify else "not amplified (fixed-size slot sampling)."),
        "The paper's DP-SGD accounting (τ-scaled sensitivity, Theorem 2) assumes a loss "
        "linear in Π; per-target clipping breaks it (a node moves up to D rows): the "
        "proven figure uses D.",
        "The test graph (non-training nodes) is used without protection at inference; "
        "hyper-parameters were not chosen privately.",
    ]  # fmt: skip
    if pending:
        out.insert(0, "ε = ∞ until the release: the proven ε of the paper's noise needs "
                   "the rows N and the D of the released Π.")  # fmt: skip
    return out


def privacy_report(s: Dpar, noise: ApprNoise | None, plan: SgdPlan | None) -> PrivacyReport:
    """Node-level (ε, δ) under add/remove: the proven headline (ε_pr + ε_sgd, no
    amplification claimed: :attr:`Dpar.amplify`) and the paper's q′·(ε_pr + ε_sgd) beside it."""
    b = s.budgets()
    if b is None:
        return PrivacyReport.no_privacy(
            s.name,
            "non-private DPAR: raw data to a trusted curator",
            "no privacy: DPAR without DP (ε = ∞ per node)",
            ("node",),
            "DPARNoDP: the same model without clipping or noise (upper reference).",
        )
    qp = s.p.q_prime
    parts: list[ReportPart] = []
    eps_pr = eps_pr_paper = 0.0
    if s.uses_appr:
        noise = noise or s.appr_noise()
        assert noise is not None
        appr = appr_part(s, b, noise)
        eps_pr, eps_pr_paper = appr.epsilon, appr.epsilon_paper
        parts.append(appr)
    sgd = sgd_part(s, b, plan)
    parts.append(sgd)
    raw = eps_pr + sgd.epsilon
    eps = dp.amplified(raw, qp) if s.amplify else raw
    delta = qp * b.delta_raw if s.amplify else b.delta_raw
    # under paper the paper's figure is its own calibration target
    eps_sgd_paper = sgd.epsilon_paper if s.proven else b.eps_sgd
    raw_paper = eps_pr_paper + eps_sgd_paper
    paper_eps = qp * raw_paper if math.isfinite(raw_paper) else None
    conv = "proven" if s.proven else "paper"
    paper_text = f"{paper_eps:.4g}" if paper_eps is not None else "n/a"
    return PrivacyReport(
        protocol=s.name,
        unit="node",
        epsilon=eps,
        delta=delta,
        accountant="dp_accounting RDP/PLD and exact bounds (docs/privacy/dpar.md); "
        "Poisson amplification by q′",
        parts=[part.as_dict() for part in parts],
        paper_epsilon=paper_eps,
        notes=notes(s, eps, raw, pending=plan is None and not s.proven),
        headline=(
            f"node-level (ε = {eps:.4g}, δ = {delta:.3g}), proven (add/remove one node; "
            f"epsilon_convention={conv}); the paper's convention states ε = {paper_text}"
        ),
        unit_epsilons={"node": eps},
    )
