"""PrivDPR: a synthetic graph from deep PageRank under node-level DP (central DP; Zhang et al.,
"PrivDPR: Synthetic Graph Publishing with Deep PageRank under Differential Privacy", KDD 2025).
Provenance tags: [P] paper, [C] official code (evidence of intent only), [A] our analysis, [I]
an implementer's choice where the paper is silent.

The curator trains the deep PageRank model on the uploaded graph and releases a graph:

1. **Model (Eq. 4).** A free embedding table V ∈ R^{N×r} (Xavier normal [I]) and an MLP of
   K = L+1 weight matrices W_1 (r×d), W_2..W_{K−1} (d×d), W_K (d×1) with zero biases, each
   weight-normalised to W/(s·‖W‖₂) with the **exact** spectral norm [I] and a sigmoid on
   every layer, output included [P]. f(v) ∈ (0, 1).
2. **Pairs [C].** Step t takes the start nodes of block t mod ⌊N/♭⌋ in node-id order [C]
   (the last N mod ♭ nodes never start); each runs R_wn walks of up to R_wl uniform steps to a
   neighbour (stopping at a node without one); every visited node t gives the pair (start, t).
3. **Loss (Eq. 5)** on every pair with γ, N, d^out(head) and d^in(tail); the graphs here are
   undirected, so both degrees are the node's degree [I].
4. **Noise only on V (Eq. 7).** One backward pass of the summed loss; W and the biases take
   their clean gradient (Adam, η), V takes (Σ∇_V + N(0, σ²·I_{N×r}))/B with B = ♭·R_wn·R_wl
   [I]: every one of the N·r entries at every one of the T = n_epochs·⌊N/♭⌋ steps, a
   step without pairs included [I].
5. **Transition counts (Alg. 2 line 13) [C].** After every step each node i draws one
   j ~ softmax_j(V_i·V_j) (the law of a hard Gumbel sample), S[i, j] += 1. Drawn by
   rejection from the uniform proposal under the bound V_i·V_j ≤ ‖V_i‖·max‖V‖ (exact; rows
   still pending after a few rounds take the Gumbel-max over their full row), so a step costs
   O(N·r) instead of the dense O(N²·r).
6. **Assembly (App. A) [P].** S† = max(S, Sᵀ) (``symmetrize=sum``: S + Sᵀ, the
   code's), zero diagonal; each node in id order gets one new edge j ∝ s†_ij among its
   non-neighbours (``first_stage=code``: the code's draw over the whole row, a repeat adds
   nothing); then edges without replacement ∝ s†_ij up to the edge budget
   round(#{i<j : s†_ij > 0} / divisor) [C], post-processing like the rest (the true |E| is
   never used).

**Privacy.** Node-level, bounded (replace one node with its edges; N public). No
clipping: with ‖W_WN‖₂ = 1/s and 1-Lipschitz activations a pair's ‖∇_V𝓛‖ ≤ M·s^{−K} with
M = (2(N−1)γ² + 2γ + 2γ(1−γ)/N)(1 + 1/γ) (Thm 4.2), so one step's sum over ≤ B pairs is within
B·M·s^{−K} of 0 whatever W and the walks are. The paper requires B·M·s^{−K} ≤ S_∇/T (Eq. 13)
and calibrates σ = S_∇·√(2 ln(1.25T/δ))/ε: T classical (ε/T, δ/T) Gaussian steps composed
sequentially (Thm 5.1). Replacing a node moves *both* sums, so the sensitivity that holds is
2·B·M·s^{−K} [A]; ``strict_sensitivity`` (default, [I]) takes K with that factor (at
most one more layer). The report's ε is dp-accounting's (RDP or PLD) for the T Gaussian steps
with that sensitivity; the paper's sequential-composition figure is beside it.
``noise_calibration``: ``paper`` finds σ through the paper's accounting (its ε is the target: the
published mechanism, far more noise than the accountant needs), ``accountant`` through
dp-accounting (its ε is the target). Either way the noise swamps the V-gradient: the learned V
does not depend on the graph; ``release.stats["diagnostics"]`` shows it with a
control (the same initialisation and noise on the empty graph).

The release is a ``graph``: the synthetic edges on the same N node ids and, as features, the
final V (``dpr_features=embedding``: DP by the same argument, Thm 5.1's proof) or nothing
(``none``, N×0). The original features are never read. W is never released.

torch is imported inside functions (the registry lists this module without importing torch).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..base import CuratorView
from ..params import Params
from ..registry import register
from ..rng import stage_rng
from ..torch_env import auto_device
from ..types import PrivacyReport, Release
from .base import CentralStrategy, UploadedGraph
from .privdpr_model import *  # noqa: F403  (re-exported: the model's old home)
from .privdpr_model import (
    STREAM,
    assemble,
    consenting_adjacency,
    edge_budget,
    symmetrised_scores,
    train,
    transition_counts,
)
from .privdpr_params import *  # noqa: F403  (every Param re-exported: config)
from .privdpr_params import _DP, _MODEL
from .privdpr_privacy import *  # noqa: F403  (re-exported: the accounting's old home)
from .privdpr_privacy import Plan, make_plan, pending_report, privacy_report

#: The registered names and whether each adds noise.
VARIANTS = {"privdpr": True, "dpr-nodp": False}


# --- the strategy ----------------------------------------------------------------------------


# One class under two names; the name chooses whether noise is added (PrivDpr.from_params).
@register(
    "privdpr",
    label="PrivDPR",
    params=_DP + _MODEL,
    summary="PrivDPR (central, node DP): deep PageRank with Gaussian noise on V's "
    "gradient, NetGAN-style graph assembly from V's transition counts",
)
@register(
    "dpr-nodp",
    label="DPR (No DP)",
    params=_MODEL,
    summary="PrivDPR without noise (same model, layers and steps): the non-private "
    "reference, no guarantee",
)
class PrivDpr(CentralStrategy):
    """PrivDPR (one class; the registered name says whether the V-gradient is noised)."""

    kind = "graph"

    def __init__(self, private: bool = True, **params: Any) -> None:
        self.private = private
        self.name = "privdpr" if private else "dpr-nodp"
        self.privacy_model = self.privacy_model_of(self.name)
        p = {param.name: param.default for param in _DP + _MODEL}
        p.update(params)
        self.p = Params(p)
        self._plans: dict[int, Plan] = {}

    @classmethod
    def privacy_model_of(cls, name: str) -> str:
        return "none" if VARIANTS.get(name) is False else "central"

    @classmethod
    def from_params(cls, name: str, **params: Any) -> PrivDpr:
        return cls(VARIANTS[name], **params)

    # --- privacy ------------------------------------------------------------------------

    def plan(self, n: int) -> Plan:
        """The run's steps, layers, sensitivities and σ for a graph of ``n`` nodes; an ε the
        calibration cannot reach is a one-line error. Computed once per ``n``."""
        if n not in self._plans:
            self._plans[n] = self._plan(n)
        return self._plans[n]

    def _plan(self, n: int) -> Plan:
        return make_plan(self.name, self.p, n, self.private)

    def privacy_report(
        self, num_features: int | None = None, n: int | None = None
    ) -> PrivacyReport:
        """Node-level (ε, δ): dp-accounting's figure with the replace-one sensitivity (the
        headline) and the paper's sequential composition beside it
        (:func:`.privdpr_privacy.privacy_report`). Without ``n`` (before a release) the
        configured ε stands in: the accountant's figure needs N."""
        if not self.private:
            return PrivacyReport.no_privacy(
                self.name,
                "non-private PrivDPR: raw data to a trusted curator",
                "no privacy: DPR without noise (ε = ∞ per node)",
                ("node",),
                "DPR (No DP): PrivDPR's model, layers and steps without noise; no guarantee.",
            )
        if n is None:
            return pending_report(self.name, self.p)
        return privacy_report(self.name, self.p, self.plan(n))

    # --- the mechanism ------------------------------------------------------------------

    def release(self, graph: UploadedGraph, curator: CuratorView, seed: int) -> Release:
        n = graph.num_nodes
        if not graph.uploaded.any():
            raise ValueError(
                f"{self.name}: no node uploaded its graph (a node uploads only if it trusts "
                "the curator: --trust-curator)"
            )
        plan = self.plan(n)
        adj = consenting_adjacency(graph.edges, graph.uploaded, n)
        device = auto_device(curator.device)
        trained = train(adj, plan, self.p, seed, self.private, device=device)
        p = self.p
        scores = symmetrised_scores(transition_counts(trained.samples, n), p.symmetrize)
        budget = edge_budget(scores, p.edge_budget_divisor)
        edges, first = assemble(
            scores, budget, stage_rng(seed, f"{STREAM}/assemble"), p.first_stage
        )
        if p.dpr_features == "embedding":
            x = trained.v.astype(np.float32)
        else:
            x = np.zeros((n, 0), dtype=np.float32)
        stats = {
            "steps_T": plan.steps,
            "pair_batch_B": plan.pairs,
            "layers_K": plan.layers,
            "M": plan.m,
            "sigma": plan.sigma,
            "noise_multiplier": plan.noise_multiplier,
            "sensitivity": plan.sensitivity,
            "score_pairs": int(sp.triu(scores, k=1).nnz),
            "edge_budget": budget,
            "first_stage_edges": first,
            "exact_sampling_rows": trained.fallback_rows,
            "start_schedule": "consecutive node-id blocks of ♭ (paper Alg. 2 line 4)",
            "features": p.dpr_features,
        }
        if p.dpr_diagnostics:  # computed from the graph and W: opt-in, never by default
            stats["diagnostics"] = {
                "non_private": True,
                "walk_pairs": trained.pairs,
                "empty_steps": trained.empty_steps,
                **trained.diagnostics,
            }
        report = self.privacy_report(n=n)
        return Release(edges=edges, x=x, privacy=report, stats=stats)
