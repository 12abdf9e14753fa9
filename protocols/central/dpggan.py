"""DPGGAN and DPGVAE: link-private graph generation (central DP, edge level; spec
shared/specs/002-dpggan.md, "Secure Network Release with Link Privacy"). Tags as in the spec:
[P] paper, [R] the spec's recommendation where the paper is silent, [C] official code.

The curator holds a **collection** (a collection dataset: the union of K graphs with public
offsets, :attr:`CuratorView.graph_ptr`) and trains **one model per graph** [P, §8 #25]:

* **Encoder** (not released, no noise [P]): a 2-layer GCN on one-hot features, 32 → 16 with
  the first layer shared by μ and log σ [P App. C; log σ: R], normalised with A + I [R §2.2],
  no biases; z = μ + σ ⊙ ε.
* **Generator f** (the only released module): a 2-layer MLP 16 → 16 (ReLU) → 32 [R §2.3],
  edge probability sigmoid(f(z_i)ᵀ f(z_j)).
* **Discriminator** (DPGGAN only; not released, no noise): g′ a 2-layer GCN 32 → 16 with a
  sum readout, f′ 16 → 32 (ReLU) → 1, sigmoid [R §2.7]; the fake graph is the soft
  A′ = sigmoid(FFᵀ) (diagonal 0) of the posterior samples [P Alg. 1].
* **Losses** [R §2.4, §2.7]: DPGVAE's reconstruction is the summed BCE over the batch's pairs
  i ≠ j; DPGGAN's is ‖g′(A_S) − g′(A′)‖² (g′ held fixed) plus λ2·(−log D(A′)) for f
  (non-saturating); the discriminator minimises λ2·[BCE(D(A_S), 1) + BCE(D(A′), 0)]; the
  encoder L_rec + λ1·KL. All three gradients come from one forward pass and are applied
  together (spec §2.9).
* **DP-SGD on f only** [P Eq. 5, Alg. 1]: each step a Poisson sample S of the graph's nodes
  (rate q); node i's gradient is the gradient of the batch loss with respect to node i's own
  copy θ_i of f's parameters (the parameter-copy trick of spec §2.5: F_i = f(z_i; θ_i), so
  Σ_i g_i is exactly ∇_θ L and the cross-row coupling of sigmoid(F_iᵀF_j) is kept; a vmap of
  a per-row loss would miss it, spec §9.2). Each g_i is clipped to ‖·‖ ≤ C over all of f's
  parameters, one Gaussian draw of std σ·C is added to the sum (:mod:`.dpsgd`'s
  ``clip_per_example`` and ``add_noise_flat``), and the total is divided by the expected batch
  q·N; an empty sample still releases its noise. C decays by γ after every epoch of ⌈1/q⌉
  steps [P line 21].
* **Generation** [P §2.10]: Z ~ N(0, I) for the N_k nodes, P = sigmoid(f(Z)f(Z)ᵀ), then the
  edges by ``dpg_edge_selection``: ``topk_dp`` (default) the top-M̃ pairs with
  M̃ = M + K, K discrete Laplace of parameter ε_M (integer noise: float Laplace on an integer
  count is not DP as implemented, see :mod:`..laplace`), clamped to [0, N(N−1)/2]
  (ε_M = dpg_edge_count_share·ε,
  composed with training: ε = ε_train + ε_M); ``topk_true`` the true M (the paper's
  reproduction mode: it releases M exactly, so the report's ε is ∞); ``bernoulli`` and
  ``threshold`` (P > 0.5) are post-processing. The encoder is never used to generate.

**Privacy** (docs/privacy/dpggan.md). The headline ε is ∞: the paper's training has no
proven edge-level bound (:data:`NO_PROOF`; ``epsilon_convention proven`` is refused). What
follows is how the paper's claim, ``paper_epsilon``, is computed beside it.
Edge-level (add/remove one edge), N_k public. The accountant is
dp-accounting's (RDP by default, PLD on request) for T compositions of the Poisson-subsampled
Gaussian of multiplier σ at rate q, with the paper's sensitivity C of the clipped sum. σ comes
from the accountant: ``dpg_calibration=sigma`` (default) calibrates σ to ε_train over
``dpg_steps`` steps; ``steps`` is the paper's rule: σ = ``dpg_sigma`` (5) fixed and T the most
steps (≤ ``dpg_steps``) whose ε stays within ε_train. An unreachable ε is a one-line error.
The graphs are disjoint and one edge lives in one graph, so the collection is (ε, δ) by
parallel composition. Beside it the report gives the paper's closed form
ε = 2q·√(T ln(1/δ))/σ (App. B), which is not a bound at small ε (spec §3.5), and the spec's
caveat: the per-node clipped sum has sensitivity C only under the paper's "one edge, one
record" argument; an edge enters two rows of the BCE and, through the 2-hop GCN encoder and the
sum-pooled discriminator, many nodes' gradients (a rigorous bound would be up to 2·B·C), and
the encoder and discriminator see the raw graph unnoised. ``dpg_sensitivity_multiplier`` scales
the noise std to σ·C·multiplier for a more conservative run (the accounting is unchanged: it
is per unit of the assumed sensitivity).

The model's pieces shared with the lanes (layer sizes, plan, generator, initialisation, edge
selection) are in :mod:`.dpggan_model`; this module keeps the strategy, its privacy report and
the graph-by-graph training (the reference the lanes are tested against).

torch is imported inside functions (the registry lists this module without importing torch).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..base import CuratorView
from ..graph import split_by_offsets
from ..laplace import MIN_EPSILON
from ..params import Params, ProtocolParameterError
from ..registry import register
from ..types import PrivacyReport, Release
from .base import CentralStrategy, UploadedGraph
from .dpggan_model import (  # noqa: F401  (re-exported: the model's old home)
    LATENT,
    Plan,
    _normalised,
    generator,
    init_params,
    select_edges,
    soft_adjacency,
)
from .dpggan_params import *  # noqa: F403  (every Param re-exported: config)
from .dpggan_params import _PARAMS, NO_PROOF, NO_PROVEN_CONVENTION
from .dpggan_train import (  # noqa: F401  (re-exported: the reference's old home)
    _disc_features,
    _disc_logit,
    _train_step,
    dp_generator_gradient,
    fit_and_generate,
    per_node_generator_grads,
)


def paper_epsilon(sigma: float, q: float, steps: int, delta: float) -> float:
    """The paper's stopping rule solved for ε: σ = 2q·√(T ln(1/δ))/ε (App. B; c0 = ½)."""
    return 2.0 * q * math.sqrt(steps * math.log(1.0 / delta)) / sigma


@register(
    "dpggan",
    label="DPGGAN",
    params=_PARAMS,
    summary="DPGGAN (central, edge DP): per-graph GVAE + GCN discriminator, the generator "
    "trained by DP-SGD with per-node clipping; releases one generated graph per graph",
)
@register(
    "dpgvae",
    label="DPGVAE",
    params=_PARAMS,
    summary="DPGVAE (central, edge DP): per-graph GVAE, the decoder trained by DP-SGD with "
    "per-node clipping; releases one generated graph per graph",
)
class DpgGan(CentralStrategy):
    """DPGGAN / DPGVAE (one class; the registered name says whether there is a
    discriminator)."""

    kind = "graphs"

    def __init__(self, gan: bool = True, **params: Any) -> None:
        self.gan = gan
        self.name = "dpggan" if gan else "dpgvae"
        p = {param.name: param.default for param in _PARAMS}
        p.update(params)
        self.p = Params(p)
        self._plan: Plan | None = None

    @classmethod
    def from_params(cls, name: str, **params: Any) -> DpgGan:
        if params.get("epsilon_convention", "paper") != "paper":
            raise ProtocolParameterError(
                f"{name}: epsilon-convention proven: {NO_PROVEN_CONVENTION}"
            )
        strategy = cls(name == "dpggan", **params)
        strategy.plan()  # an unreachable ε is refused when the run is configured, not later
        return strategy

    # --- privacy ------------------------------------------------------------------------

    def plan(self) -> Plan:
        """σ and T through the accountant (one-line error if ε is unreachable)."""
        if self._plan is None:
            self._plan = self._make_plan()
        return self._plan

    def _make_plan(self) -> Plan:
        from .dpsgd import calibrate_noise_multiplier, sgd_epsilon

        p = self.p
        eps, delta, q, acc = p.epsilon, p.delta, p.dpg_q, p.accountant
        share = p.dpg_edge_count_share if p.dpg_edge_selection == "topk_dp" else 0.0
        eps_count = share * eps
        eps_train = eps - eps_count
        if p.dpg_calibration == "sigma":
            steps = p.dpg_steps
            sigma = calibrate_noise_multiplier(eps_train, delta, q, steps, acc)
        else:
            sigma = p.dpg_sigma

            def fits(t: int) -> bool:
                return sgd_epsilon(sigma, q, t, delta, acc) <= eps_train

            if not fits(1):
                raise ProtocolParameterError(
                    f"{self.name}: ε_train = {eps_train:.4g} is unreachable with σ = "
                    f"{sigma:g}: one step at q = {q:g} already costs ε = "
                    f"{sgd_epsilon(sigma, q, 1, delta, acc):.4g} (δ = {delta:.3g}); raise "
                    "dpg_sigma or epsilon, or use dpg_calibration sigma"
                )
            lo, hi = 1, p.dpg_steps
            if fits(hi):
                lo = hi
            while lo < hi:  # the largest T ≤ dpg_steps within ε_train
                mid = (lo + hi + 1) // 2
                lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
            steps = lo
        if share and eps_count < MIN_EPSILON:
            raise ProtocolParameterError(
                f"{self.name}: the edge count's ε_M = {eps_count:.3g} (dpg_edge_count_share × ε) "
                f"is below the discrete Laplace mechanism's minimum {MIN_EPSILON:g}: raise "
                "epsilon or dpg_edge_count_share"
            )
        return Plan(
            sigma=float(sigma),
            steps=int(steps),
            epsilon_train=float(sgd_epsilon(sigma, q, steps, delta, acc)),
            epsilon_count=float(eps_count),
            epsilon_paper=paper_epsilon(sigma, q, steps, delta),
            delta=float(delta),
        )

    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        p = self.p
        plan = self.plan()
        acc = p.accountant.upper()
        selection = p.dpg_edge_selection
        leaks = selection == "topk_true"
        through_encoder = p.dpg_generation == "encoder"
        # The paper's claim (its "one edge, one record" sensitivity C, accounted exactly): what
        # the paper would print, beside the headline, which has no proof (NO_PROOF).
        claimed = plan.epsilon_train + plan.epsilon_count
        total = math.inf
        parts = [
            {
                "part": "generator DP-SGD",
                "unit": "edge",
                "epsilon": math.inf,
                "paper_epsilon": plan.epsilon_train,
                "delta": plan.delta,
                "mechanism": "Poisson-subsampled Gaussian on the sum of per-node clipped "
                "generator gradients, accounted as add/remove of one record of sensitivity "
                "C × sensitivity_multiplier (the paper's one-edge-one-record argument gives C; "
                "an edge changes, not adds, its endpoints' records: a replaced record is 2C, "
                "multiplier 2 at least for the paper's claim)",
                "accountant": f"dp_accounting {acc}",
                "sigma": plan.sigma,
                "q": p.dpg_q,
                "steps_T": plan.steps,
                "C0": p.dpg_clip,
                "gamma": p.dpg_clip_decay,
                "sensitivity_multiplier": p.dpg_sensitivity_multiplier,
                "calibration": p.dpg_calibration,
                "epsilon_paper_closed_form": plan.epsilon_paper,
            }
        ]
        if selection == "topk_dp":
            parts.append(
                {
                    "part": "edge count",
                    "unit": "edge",
                    "epsilon": plan.epsilon_count,
                    "delta": 0.0,
                    "mechanism": "discrete Laplace (two-sided geometric) of parameter ε_M on "
                    "each graph's edge count (sensitivity 1), sampled exactly; proven, and "
                    "covers the released count M̃ alone (which M̃ pairs are released is the "
                    "generator's, ε = ∞)",
                    "accountant": "exact (pure ε)",
                }
            )
        notes = [
            f"ε = ∞: {NO_PROOF} (docs/privacy/dpggan.md).",
            f"paper_epsilon = {claimed:.4g}: the paper's claim, accounted exactly: "
            f"dp-accounting {acc} of T = {plan.steps} Poisson-subsampled "
            f"(q = {p.dpg_q:g}) Gaussian steps of noise multiplier σ = {plan.sigma:.4g} "
            f"(ε_train = {plan.epsilon_train:.4g})"
            + (f" plus ε_M = {plan.epsilon_count:.4g} for the discrete Laplace edge count" if
               selection == "topk_dp" else "")
            + ", under the paper's sensitivity C; per graph, and for the whole collection by "
            "parallel composition (one edge lives in one graph).",
            f"the paper's closed form gives ε = {plan.epsilon_paper:.4g}: σ = 2q·√(T ln(1/δ))/ε "
            "(App. B, Theorem 1 with c0 = 1/2) at the same σ, q, T; not a bound where "
            "Theorem 1's condition ε < 2 ln(1/(qσ))·q²·T fails (e.g. the paper's ε = 0.1).",
            "Where the paper's argument breaks: it assumes the sensitivity C of the sum of "
            "per-node clipped gradients ('adding or removing an edge results in at most 1 "
            "record difference'). An edge enters the BCE rows of both endpoints and, through "
            "the 2-hop GCN encoder and the sum-pooled discriminator, every record of its batch "
            "(a bound for one step would be 2·B·C), and the encoder and discriminator are "
            "trained on the raw graph without noise, so the edge changes every later step's "
            "records too, sampled or not: no per-step bound composes. paper_epsilon is the "
            "paper-claimed guarantee, not a proven one (dpg_sensitivity_multiplier scales the "
            "noise; it does not make a proof).",
            "Released: the generated graphs (and f); the encoder and discriminator are "
            + ("used once more to embed the real graph (dpg_generation encoder, not private). "
               if through_encoder else
               "discarded; generation samples Z ~ N(0, I) and never uses the encoder. ")
            + "Node sets and sizes N_k are public.",
        ]  # fmt: skip
        if leaks:
            notes.append(
                "dpg_edge_selection topk_true releases each graph's true edge count M "
                "(edge-sensitivity 1, no noise): the release is not edge-DP (ε = ∞); the "
                "training ε above is what the generator alone spends (paper-reproduction mode)."
            )
        if through_encoder:
            notes.append(
                "dpg_generation encoder: the graphs are generated from Z = μ of the encoder "
                "run on the real graph, which was trained without noise; the release is not "
                "edge-DP (ε = ∞). The official code evaluates this way (spec §2.10 step 5); "
                "this is an ablation, not a private release."
            )
        return PrivacyReport(
            protocol=self.name,
            unit="edge",
            epsilon=total,
            delta=plan.delta,
            accountant=f"dp_accounting {acc} (Poisson-subsampled Gaussian, composed over T)",
            parts=parts,
            paper_epsilon=claimed,
            notes=notes,
            headline=(
                f"edge-level ε = ∞: {NO_PROOF}; the paper's accounting states "
                f"(ε = {claimed:.4g}, δ = {plan.delta:.3g}) (dp-accounting {acc} under its "
                f"sensitivity C; its closed form {plan.epsilon_paper:.4g})"
                + ("; the true edge counts are released (topk_true)" if leaks else "")
                + (
                    "; generated through the non-private encoder (ablation)"
                    if through_encoder
                    else ""
                )
            ),
            unit_epsilons={"edge": total},
        )

    # --- the mechanism ------------------------------------------------------------------

    def release(self, graph: UploadedGraph, curator: CuratorView, seed: int) -> Release:
        if curator.graph_ptr is None:
            raise ProtocolParameterError(
                f"{self.name} learns from a collection of graphs; this dataset is one graph: "
                "use a collection (dblp-collection, imdb-collection, …)"
            )
        if not graph.uploaded.any():
            raise ValueError(
                f"{self.name}: no node uploaded its graph (a node uploads only if it trusts "
                "the curator: --trust-curator)"
            )
        plan = self.plan()
        ptr = np.asarray(curator.graph_ptr, dtype=np.int64)
        keep = graph.uploaded[graph.edges[:, 0]] & graph.uploaded[graph.edges[:, 1]]
        # An uploaded edge between two graphs (the offsets are public) is dropped, never an
        # error: an error one edge can trigger would be an output of the data.
        which = np.searchsorted(ptr, graph.edges, side="right") - 1
        keep &= which[:, 0] == which[:, 1]
        parts = split_by_offsets(graph.edges[keep], ptr)
        from ..torch_env import one_cpu_thread
        from .dpggan_lanes import fit_and_generate_many

        generated, stats = [], []
        with one_cpu_thread(curator.device if curator.device != "auto" else "cpu"):
            # every graph's own model, trained in lanes (the same draws and updates as
            # fit_and_generate graph by graph, which a test holds them to)
            results = fit_and_generate_many(parts, plan, self.p, self.gan, seed)
        for (gen, info), (_, n) in zip(results, parts, strict=True):
            generated.append(
                Release(edges=gen, x=np.zeros((n, 0), np.float32), privacy=self.privacy_report())
            )
            stats.append(info)
        summary = {
            "graphs": len(parts),
            "steps_T": plan.steps,
            "sigma": plan.sigma,
            "edge_selection": self.p.dpg_edge_selection,
            "edges_generated": int(sum(s["edges_generated"] for s in stats)),
            "empty_steps": int(sum(s["empty_steps"] for s in stats)),
            "clip_final": stats[0]["clip_final"] if stats else None,
        }
        return Release.of_graphs(generated, self.privacy_report(), summary)
