"""BLink (Zhu, Tan, Xiao, CCS'23) and its HoGS-paper variants FP-BLink and "BLink + FR".

Client (Blink's official code, github.com/zhxchd/Blink_GNN): node i sends its adjacency row through
Warner RR with ε_a (diagonal never reported) and its degree plus discrete Laplace noise at ε_d (an
integer, P[k] ∝ e^{−ε_d|k|}; deviation: Blink adds real-valued Lap(0, 1/ε_d), which on a float is
not ε-DP as implemented, see :mod:`ldpgraph.protocols.laplace`), with ε_d = degree_share·ε_g and ε_a
= (1 − degree_share)·ε_g. ``degree_share`` is Blink's δ; ε_g is the budget of the graph: ε itself
when features are public (``blink-*``), (1 − feature_share)·ε when they are private (``fp-blink``,
``blink-fr``; then the node also sends its features through HoGS's 1-bit mechanism with ε_f =
feature_share·ε, ``feature_share`` being HoGS's δ).

Server (the same code):
  A. clamp every noisy degree d̃_i to [1, n − 2];
  B. fit the β-model π_ij = σ(β_i + β_j) by Blink's Jacobi fixed point
     β_i ← log d̃_i − log Σ_{j≠i} 1/(e^{β_i} + e^{−β_j}) from β = 0, stopping when
     max|Δβ| < 1e-6 or after 200 iterations (our early stop; Blink_GNN always runs 200, and on
     real graphs the iteration is still moving at 200, so the cap is what decides);
  C. posterior P_ij = σ(β_i + β_j + 2ε_a(x_ij − 1)) with x_ij = Ã_ij + Ã_ji, the logit form of
     the Bayes rule with the likelihoods of Warner RR;
  D. the graph: ``hard`` keeps {P_ij > 0.5} unweighted; ``hybrid`` keeps the entries of P that
     are ≥ t, the K-th largest of the n² entries with K = ⌊Σ_{i,j} P_ij⌋ (ordered pairs; ties at t
     kept; K = 0 gives no edge), weighted by P; ``soft`` is the dense P in the paper (every pair
     weighted): here it keeps every pair with P_ij ≥ ``min_weight`` (default 1e-3), weighted by
     P, and reports the weight it drops (see below).
  E. (private features only) HoGS's feature reconstruction (Algorithm 3) with Blink's posterior
     as link weights: V_i = {j : P_ij ≥ 0.5}, ``steps`` passes (FP-BLink as the HoGS paper
     defines it, Section V), reusing :func:`.hogs_features.reconstruct_features`.

Nodes that did not reply. Their pairs keep the likelihood of the bits that did arrive (each
observed bit multiplies the odds by e^{±ε_a}, as HoGS's generalised likelihood does), and their
degree, needed by the β-model, is imputed as the mean of the clamped degrees that did arrive.
Both reduce to Blink exactly when every node replies.

How it stays sparse: the β-model's row sums by series (:mod:`.blink_beta`), the posterior's
pairs by sorted per-node sums and blocks of reported pairs (:mod:`.blink_posterior`); cost grows
with the reports and the output, never with n².

Soft, precisely: the release holds every pair with P_ij ≥ ``min_weight``; dropped are the pairs
below it, which in the dense soft graph would each carry a weight < ``min_weight``. Their total
weight, per node and overall, comes from the row sums and is reported in
``Release.stats["soft"]``. On Cora (mean weighted degree Σ_j P_ij ≈ 4) it is 0.016 per node
at ε = 5, degree_share = 0.1, and 0.53 per node at ε = 2, degree_share = 0.5; every kept weight
is the dense P_ij (to 1e-12: only the β-fit's summation order differs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..accounting import ACCOUNTANT, bit_part, unit_summary
from ..base import (
    EPSILON,
    FEATURE_SHARE,
    STEPS,
    CuratorView,
    EpsilonParts,
    ReportSchema,
    RoundResult,
)
from ..batch import NodeBatch, ReportBatch
from ..laplace import MIN_EPSILON, composed_epsilon, discrete_laplace_part
from ..params import Param, Params
from ..registry import register
from ..support import noisy_count
from ..types import NodeView, PrivacyReport, Release, Report
from .assemble import adjacency_reports, extra_reports
from .blink_posterior import blink_graph
from .hogs_features import reconstruct_features
from .node_reports import noisy_degree, noisy_row, rr_onebit_batch
from .split_budget import RRSplitBudgetProtocol

VARIANTS = ("hard", "soft", "hybrid")

DEGREE_SHARE = Param(
    "degree_share",
    float,
    0.1,
    "Blink's δ: share of the graph budget spent on the noisy degree (1: the degree prior alone, "
    "no adjacency report)",
    low=0.0,
    high=1.0,
    low_open=True,
)
MIN_WEIGHT = Param(
    "min_weight",
    float,
    1e-3,
    "soft variant: keeps the pairs with posterior P_ij >= this weight",
    low=0.0,
    high=1.0,
    low_open=True,
    high_open=True,
    server_side=True,
)
VARIANT = Param(
    "variant",
    str,
    "hard",
    "how the posterior becomes edges: hard (P > 0.5), soft (weighted by P), hybrid",
    choices=VARIANTS,
    server_side=True,
    run_key=False,  # the registered names (blink-hard, blink-soft, blink-hybrid) fix it
)
SHARE1 = Param(
    "share1",
    float,
    0.0,
    "FP-BLink's δ1 (0: 1 − feature-share): ε_f = (1 − δ1)ε",
    low=0.0,
    high=1.0,
)
SHARE2 = Param(
    "share2",
    float,
    0.0,
    "FP-BLink's δ2 (0: 1 − degree-share): ε_a = δ1·δ2·ε, ε_d = δ1(1 − δ2)ε",
    low=0.0,
    high=1.0,
)
_PRIVATE_FEATURES = (EPSILON, FEATURE_SHARE, DEGREE_SHARE, STEPS, VARIANT, MIN_WEIGHT)
#: Name of the noisy degree in Report.extras.
DEGREE_FIELD = "degree"


# The three edge-only variants differ only in how the posterior becomes edges.
@register(
    "blink-hard",
    label="BLink",
    params=(EPSILON, DEGREE_SHARE),
    public_features=True,
    summary="Blink: RR row + discrete-Laplace degree, beta-model posterior, edges P > 0.5",
)
@register(
    "blink-soft",
    label="BLink (soft)",
    params=(EPSILON, DEGREE_SHARE, MIN_WEIGHT),
    public_features=True,
    summary="Blink soft: posterior-weighted edges (pairs with P >= min_weight)",
)
@register(
    "blink-hybrid",
    label="BLink (hybrid)",
    params=(EPSILON, DEGREE_SHARE),
    public_features=True,
    summary="Blink hybrid: the floor(sum P) largest posteriors, weighted",
)
@register(
    "fp-blink",
    label="FP-BLink",
    params=(*_PRIVATE_FEATURES, SHARE1, SHARE2),
    summary="FP-BLink: Blink + 1-bit features + HoGS feature reconstruction (share1, share2)",
)
@register(
    "blink-fr",
    label="BLink + FR",
    params=_PRIVATE_FEATURES,
    summary="ablation BLink + FR: Blink topology + HoGS feature reconstruction",
)
class BlinkProtocol(RRSplitBudgetProtocol):
    """``blink-hard|soft|hybrid`` (edge LDP, public features), ``fp-blink`` and ``blink-fr``
    (edge LDP + feature LDP, HoGS feature reconstruction on Blink's posterior).

    The graph budget ε_g is split again: ε_d = degree_share·ε_g on the noisy degree and
    ε_a = (1 − degree_share)·ε_g on the RR row (``degree_share`` is Blink's δ; 1 means the
    degree prior alone: no adjacency report). ``fp-blink`` and ``blink-fr`` are the same
    mechanism: FP-BLink's split (δ1, δ2) is blink-fr's (feature_share, degree_share) =
    (1 − δ1, 1 − δ2). They differ only in the parameters they are described by (the HoGS paper
    searches δ1, δ2 for FP-BLink and HoGS's δ for the ablation), so a config names them
    accordingly.
    """

    def __init__(self, name: str, params: Params) -> None:
        super().__init__(name, params)
        #: How the posterior becomes edges; an edge-only variant's name says it.
        self.variant = name.removeprefix("blink-") if self.public_features else params.variant
        self.min_weight = float(self.setting(MIN_WEIGHT))
        #: HoGS's l for the feature reconstruction (private features only).
        self.steps = int(self.setting(STEPS))
        self.degree_share = float(params.degree_share)
        #: FP-BLink's (δ1, δ2) as given, so that a rebuilt protocol has bit-identical budgets.
        self.shares: tuple[float, float] | None = None
        if name == "fp-blink":
            # FP-BLink (HoGS paper): ε_d = δ1(1−δ2)ε, ε_a = δ1δ2ε, ε_f = (1−δ1)ε, with
            # δ1 = share1 and δ2 = share2; at 0 the run's feature_share and degree_share decide.
            self.shares = (
                params.share1 or 1.0 - self.feature_share,
                params.share2 or 1.0 - self.degree_share,
            )
            self.feature_share, self.degree_share = 1.0 - self.shares[0], 1.0 - self.shares[1]
            if not 0.0 < self.feature_share < 1.0:
                raise ValueError(
                    f"feature share 1 − share1 must be in (0, 1), got {self.feature_share}"
                )
            if not 0.0 < self.degree_share <= 1.0:
                raise ValueError(
                    f"degree share 1 − share2 must be in (0, 1], got {self.degree_share} (0 would "
                    "send the true degree, which is not private)"
                )
        # Refused before a node is charged: the degree's discrete Laplace needs a meaningful ε
        # (a vanishing ε_d would be a server's way to read the true degree).
        if not self.eps_degree >= MIN_EPSILON:
            raise ValueError(
                f"ε_d = {self.eps_degree:g} is below the smallest ε {MIN_EPSILON:g} (raise "
                "degree-share or ε)"
            )

    @property
    def eps_degree(self) -> float:
        return self.degree_share * self.eps_graph

    @property
    def eps_adjacency(self) -> float:
        return (1.0 - self.degree_share) * self.eps_graph

    @property
    def sends_adjacency(self) -> bool:
        return self.degree_share < 1.0

    def config(self) -> dict[str, Any]:
        out: dict[str, Any] = {"protocol": self.name, "epsilon": self.params.epsilon}
        if self.shares is not None:
            out["share1"], out["share2"] = self.shares
        else:
            out["degree_share"] = self.degree_share
            if not self.public_features:
                out["feature_share"] = self.feature_share
        if not self.public_features:
            out["variant"] = self.variant
            out["steps"] = self.steps
        if self.variant == "soft":
            out["min_weight"] = self.min_weight
        return out

    def round_epsilon(self, round_: int) -> float:
        return self.eps_adjacency + self.eps_degree + self.eps_features

    def epsilon_parts(self, round_: int) -> EpsilonParts:
        """An adjacency bit is seen by its RR bit (ε_a) and moves the degree by 1 (ε_d)."""
        return EpsilonParts(self.eps_adjacency + self.eps_degree, self.eps_features)

    def schema(self, round_: int) -> ReportSchema:
        return ReportSchema(
            adjacency=self.sends_adjacency,
            features=not self.public_features,
            extras=(DEGREE_FIELD,),
            extra_support=noisy_count(self.eps_degree),
        )

    def client_step(
        self, round_: int, view: NodeView, server_msg: dict[str, Any], seed: int
    ) -> Report:
        adj = noisy_row(view, self.eps_adjacency, seed, round_) if self.sends_adjacency else None
        degree = noisy_degree(view, self.eps_degree, seed, round_)
        feats = self.noisy_features(view, seed, round_)
        # An integer; the wire's extras are float64, which holds it exactly.
        extras = {DEGREE_FIELD: float(degree)}
        return Report(view.node_id, round_, view.num_nodes, adj, feats, extras)

    def client_step_batch(
        self, round_: int, batch: NodeBatch, server_msg: dict[str, Any], seeds: int | Sequence[int]
    ) -> ReportBatch:
        eps_a = self.eps_adjacency if self.sends_adjacency else None
        eps_f = None if self.public_features else self.eps_features
        degree = (DEGREE_FIELD, self.eps_degree)
        return rr_onebit_batch(batch, round_, seeds, eps_a, eps_f, degree)

    def server_step(
        self, round_: int, result: RoundResult, curator: CuratorView, seed: int
    ) -> Release:
        n, d = curator.num_nodes, curator.num_features
        reported, observed = adjacency_reports(result.reports, n)
        noisy, has_degree = extra_reports(result.reports, DEGREE_FIELD, n)
        x0, feat_obs = self.server_features(result, curator)
        graph = blink_graph(noisy, has_degree, reported, observed, self)
        stats = graph.pop("stats")
        stats["adjacency_reports"] = int(observed.sum())
        stats["degree_reports"] = int(has_degree.sum())
        if feat_obs is None:
            x = x0
        else:
            fi, fj, fp = graph["fr_pairs"]
            both = feat_obs[fi] & feat_obs[fj]
            x = reconstruct_features(x0, fi[both], fj[both], fp[both], self.steps)
            stats["feature_reports"] = int(feat_obs.sum())
            stats["fr_pairs"] = int(both.sum())
        return Release(
            edges=graph["edges"],
            x=x,
            privacy=self.privacy_report(d),
            edge_weight=graph["weight"],
            stats=stats,
        )

    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        """RR at ε_a and the discrete-Laplace degree at ε_d per adjacency bit (sequential
        composition, as Blink states), plus the 1-bit features at ε_f when private."""
        eps_a = self.eps_adjacency if self.sends_adjacency else 0.0
        eps_d = self.eps_degree
        rr_eps = [eps_a] if eps_a > 0 else []
        parts = [bit_part("adjacency", "one adjacency bit (edge LDP)", eps_a)] if eps_a > 0 else []
        unit = "the degree, changed by 1 by one adjacency bit (edge LDP)"
        parts.append(discrete_laplace_part("degree", unit, eps_d))
        parts += self.feature_parts(num_features)
        if not self.public_features:
            rr_eps.append(self.eps_features)
        headline, unit_eps = unit_summary(
            adjacency_label="ε_a + ε_d" if eps_a > 0 else "ε_d",
            rr_adjacency=eps_a,
            counts=[eps_d],
            adjacency_detail="its RR bit and the degree it moves by 1"
            if eps_a > 0
            else "the degree it moves by 1",
            edge_detail="both endpoints report it, each in its row and its degree",
            feature_bit=None if self.public_features else self.eps_features,
            num_features=num_features,
        )
        return self.report(
            epsilon=composed_epsilon(rr_eps, [eps_d]),
            accountant=ACCOUNTANT + " + dp_accounting discrete Laplace PLD (sensitivity 1)",
            parts=parts,
            notes=self._notes(eps_a, num_features),
            headline=headline,
            unit_epsilons=unit_eps,
        )

    def _notes(self, eps_a: float, num_features: int | None) -> list[str]:
        eps_d = self.eps_degree
        notes = [
            f"One adjacency bit enters both the RR row (ε_a = {eps_a:g}) and the "
            f"discrete-Laplace degree (ε_d = {eps_d:g}); by sequential composition it is "
            f"protected at ε_a + ε_d = {eps_a + eps_d:g}, as Blink states.",
            "An edge {i, j} enters both endpoints' reports; the two reports together are "
            f"{2 * (eps_a + eps_d):g}-DP for that edge (edge LDP is per row, as in the papers).",
            "The β-model, the posterior, thresholding (variant, min_weight) and feature "
            "reconstruction (steps) are post-processing: tuning them on one collection spends "
            "nothing more.",
            "Tuning δ (degree_share), the feature split or ε is not post-processing: each "
            "configuration collects fresh reports, so a node spends the sum of the ε of every "
            "collection a sweep used (Blink_GNN and HoGS tune δ this way and do not count it).",
            self.feature_note(num_features),
        ]
        if self.shares is not None:
            notes.append(
                "FP-BLink's split: ε_d = δ1(1−δ2)ε, ε_a = δ1δ2ε, ε_f = (1−δ1)ε with "
                f"δ1 = {1 - self.feature_share:g}, δ2 = {1 - self.degree_share:g}."
            )
        return notes
