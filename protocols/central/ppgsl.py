"""PPGSL: a learned graph that hides known sensitive links from link-inference attacks
(central, trusted curator, **empirical protection, no DP guarantee**; Wu et al. 2025). Tags:
[P] paper, [R] a recommended reading where the paper is silent.

The curator holds the uploaded graph E₀ and the features X. A seeded share (``sensitive_share``,
10 % [P §4.2]) of the uploaded edges is the set E_s of **sensitive links** the defender knows and
protects; the public graph is E = E₀ \\ E_s (E_s ∩ E = ∅, Definition 1). Then (Algorithm 1):

1. **Learnable adjacency (Eq. 6).** One parameter θ per parameterised unordered pair, A′ =
   clamp(θ, 0, 1) (symmetric by construction, the diagonal never parameterised [R]),
   initialised at A (1 on E, 0 elsewhere [R]). *Sparse* (default): the pairs are E plus
   k·|E| non-edges drawn once, uniformly, outside E ∪ E_s [P §2.5, R]; k = 0 can only delete.
   *FGP* (``ppgsl_fgp``): every pair outside E_s is parameterised (one per unordered pair: the
   (θ+θᵀ)/2 form's symmetric part, which under Adam's sign-like steps moves the same way);
   O(N²), refused above :data:`FGP_MAX_NODES` nodes. Deviation: E_s itself is never
   parameterised, in FGP either, so the release can never contain a sensitive link.
2. **Surrogate attacker (Eq. 5)** re-initialised from scratch every μ learner steps, including
   step 0 (SITP [P §2.4, R]), with a fresh Adam (lr η₁ [R]) and trained N₁ epochs on the
   *current* A′ (detached): a 2-layer edge-weighted GCN [128, 64] (ReLU between, self-loops of
   weight 1, symmetric normalisation recomputed from A′ [P, R]) and the head σ(cos(z_i, z_j)) [P]
   (literal τ = 1 [R]). Positives: every pair with w′ > 0, soft targets w′ [R];
   negatives: as many uniform pairs outside A′'s support, fresh each epoch (they may include
   E_s: the attacker does not know it [R]). Mean + mean cross-entropy [R]. It never sees
   E_s labels.
3. **Learner step (Eq. 9)** through the frozen surrogate on the current A′ (the gradient reaches
   θ through the GCN's edge weights and degree normalisation [R]): L = L_priv + α·L_util,
   L_priv = Σ_{E_s} −log(1 − p) (Eq. 7's cross-entropy, summed as Eq. 39 writes it;
   ``ppgsl_priv_reduction = mean``: Eq. 7's expectation), L_util = ‖A − A′‖²_F
   summed over the full symmetric matrix = 2·Σ_{i<j} [R]. One persistent Adam(lr η₂ = 0.5
   [P]) over N₂ steps. No projection of θ: entries pushed out of [0, 1] freeze there, as Eq. 6
   implies [R] (on Cora at α = 0, 251 of 7,602 entries are still inside after 5 steps).

   **Why the sum (a deviation from Eq. 7's mean, issue 17).** Adam's first step moves every entry
   with a privacy gradient by 0.5; there the utility term pulls back with α·4·|A − A′| = 2α, so an
   entry stays moved only where |∂L_priv/∂θ| > 2α. With the mean over E_s, Cora's largest per-entry
   gradient at θ = A is 1.7e-3 (median 9.6e-6): no α ≥ 1e-3 moves an entry past 0.5 (α = 0.005
   released the uploaded graph unchanged), so the paper's α ∈ [0, 0.01] (App. B: "typically [0.001,
   0.01]", for graphs of 1.5k to 28k nodes) cannot be the mean's scale. Summed, the gradient is
   |E_s| times larger (Cora: 422, max 0.72, median 4.1e-3) and that range spans the trade-off. α_sum
   = |E_s|·α_mean.
4. **Release (line 20).** One Bernoulli(A′_ij) draw per parameterised pair [P, R]; pairs
   never parameterised stay 0. The features are released unchanged [P fn. 3].

**Privacy.** None in the DP sense: no ε, no δ. The report's unit is "empirical":
protection against link inference on E_s is measured, not proved, by the ``attack`` metric,
which scores the release's declared ``protected`` pairs (E_s) against true non-links beside
the links hidden before collection.

**Kernels.** The propagation and the feature product run as sparse row sums with hand-written
gradients (:mod:`.ppgsl_sparse`, issue 35), and the surrogate's epochs with their whole backward
written out (:mod:`.ppgsl_surrogate`): the same model as the gather/scatter form up to float
rounding, about 7× less CPU than that form on Cora-ML. On a CPU with two cores the surrogate's
epochs run split over two lanes (:mod:`.ppgsl_lanes`: row ranges of each product on two
threads, the epoch one TorchScript call that holds no GIL, :mod:`.ppgsl_script`), with the same
result bit for bit as on one.

torch is imported inside functions (the registry lists this module without importing torch).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import CuratorView
from ..graph import canonical_edges
from ..params import Param, Params, ProtocolParameterError
from ..registry import register
from ..rng import stage_rng
from ..torch_env import auto_device
from ..types import PrivacyReport, Release
from .base import CentralStrategy, UploadedGraph
from .baselines import pair_keys, uploaded_edges
from .ppgsl_model import *  # noqa: F403  (re-exported: the learner's old home)
from .ppgsl_model import (
    STREAM,
    _mm,  # noqa: F401  (re-exported)
    learn,
    split_sensitive,
)

PPGSL_ALPHA = Param(
    "ppgsl_alpha", float, 0.005,
    "α: weight of the utility loss ‖A − A′‖²_F against L_priv summed over the sensitive links "
    "(paper: swept in [0, 0.01]; smaller: more privacy, less utility)",
    low=0.0,
)  # fmt: skip
PPGSL_K = Param(
    "ppgsl_k", int, 1,
    "k: non-edge candidates k·|E| (PPGSL-sparse; 0: deletion only; paper default 1)", low=0,
)  # fmt: skip
PPGSL_MU = Param(
    "ppgsl_mu", int, 50,
    "μ: re-initialise and retrain the surrogate attacker every μ learner steps (paper: 50)",
    low=1,
)  # fmt: skip
PPGSL_FGP = Param(
    "ppgsl_fgp", bool, False,
    "full graph parameterisation (every pair learnable, O(N²); small graphs only) instead of "
    "PPGSL-sparse",
)  # fmt: skip
PPGSL_ATTACK_EPOCHS = Param(
    "ppgsl_attack_epochs", int, 500, "N₁: surrogate training epochs per retrain (paper: 500)",
    low=1,
)  # fmt: skip
PPGSL_EPOCHS = Param("ppgsl_epochs", int, 500, "N₂: learner steps (paper: 500)", low=1)
PPGSL_LR = Param(
    "ppgsl_lr", float, 0.5, "η₂: Adam learning rate of θ (paper: 0.5)", low=0.0, low_open=True
)
PPGSL_ATTACK_LR = Param(
    "ppgsl_attack_lr", float, 0.01, "η₁: Adam learning rate of the surrogate (default 0.01)",
    low=0.0, low_open=True,
)  # fmt: skip
PPGSL_PRIV_REDUCTION = Param(
    "ppgsl_priv_reduction", str, "sum",
    "L_priv over the sensitive links: sum (Eq. 39's Σ; the paper's α ∈ [0, 0.01] then spans "
    "the trade-off) or mean (Eq. 7's expectation: α acts |E_s| times more strongly, "
    "α = 0.005 leaves Cora untouched)",
    choices=("sum", "mean"),
)  # fmt: skip
SENSITIVE_SHARE = Param(
    "sensitive_share", float, 0.1,
    "share of the uploaded edges the defender marks sensitive and protects (seeded; paper: 0.1)",
    low=0.0, high=1.0, low_open=True, high_open=True,
)  # fmt: skip

PARAMS = (
    PPGSL_ALPHA, PPGSL_K, PPGSL_MU, PPGSL_FGP, PPGSL_ATTACK_EPOCHS, PPGSL_EPOCHS, PPGSL_LR,
    PPGSL_ATTACK_LR, PPGSL_PRIV_REDUCTION, SENSITIVE_SHARE,
)  # fmt: skip

#: FGP parameterises n(n−1)/2 pairs: refused above this many nodes (8 M pairs).
FGP_MAX_NODES = 4000


@register(
    "ppgsl",
    label="PPGSL",
    params=PARAMS,
    summary="PPGSL (central, empirical, no DP): a learned graph that hides the defender's "
    "sensitive links from a re-initialised surrogate link-inference attacker",
)
class Ppgsl(CentralStrategy):
    """PPGSL-sparse / PPGSL-FGP with SITP."""

    kind = "graph"
    name = "ppgsl"
    privacy_model = "empirical"

    def __init__(self, **params: Any) -> None:
        p = {param.name: param.default for param in PARAMS}
        p.update(params)
        self.p = Params(p)

    @classmethod
    def from_params(cls, name: str, **params: Any) -> Ppgsl:
        return cls(**params)

    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        report = PrivacyReport.no_privacy(
            self.name,
            "empirical: raw graph to a trusted curator",
            "empirical protection against link inference, no DP guarantee: no ε is claimed; "
            "the attack AUC on the protected links measures it",
            ("edge",),
            "PPGSL: the defender learns a graph on which a surrogate link-inference attacker "
            "fails on the sensitive links it knows. The paper's Theorem 3 (Fano) is "
            "not a certificate. Protection is empirical only: read the `attack` metric's "
            "`protected` section, never an ε axis.",
        )
        report.unit = "empirical (no DP; raw graph to a trusted curator)"
        report.accountant = "none (empirical attack AUC)"
        return report

    def release(self, graph: UploadedGraph, curator: CuratorView, seed: int) -> Release:
        n = graph.num_nodes
        p = self.p
        if p.ppgsl_fgp and n > FGP_MAX_NODES:
            raise ProtocolParameterError(
                f"ppgsl: ppgsl_fgp parameterises all n(n-1)/2 pairs; refused for n = {n} > "
                f"{FGP_MAX_NODES} nodes (use the sparse variant, ppgsl_k)"
            )
        edges0 = uploaded_edges(graph, self.name)
        public, sensitive = split_sensitive(edges0, p.sensitive_share, seed)
        x = np.asarray(graph.x)
        learned = learn(public, sensitive, x, n, p, seed, device=auto_device(curator.device))
        draw = stage_rng(seed, f"{STREAM}/bernoulli").random(len(learned.weights))
        out = canonical_edges(learned.pairs[draw < learned.weights], n)
        before = pair_keys(public, n)
        kept = int(np.isin(pair_keys(out, n), before).sum())
        stats = {
            "uploaded_edges": len(edges0),
            "sensitive_links": len(sensitive),
            "public_edges": len(public),
            "parameterised_pairs": len(learned.pairs),
            "variant": "fgp" if p.ppgsl_fgp else f"sparse k={p.ppgsl_k}",
            "released_edges": len(out),
            "kept_edges": kept,
            "deleted_edges": len(public) - kept,
            "added_edges": len(out) - kept,
            "expected_edges": float(learned.weights.sum()),
            **learned.log,
        }
        return Release(
            edges=out, x=x, privacy=self.privacy_report(), stats=stats, protected=sensitive
        )
