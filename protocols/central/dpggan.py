"""DPGGAN and DPGVAE: link-private graph generation (central DP, edge level; Yang et al.,
"Secure Deep Graph Generation with Link Differential Privacy", IJCAI 2021). Tags: [P] paper,
[R] a recommended reading where the paper is silent, [C] official code.

The curator holds a **collection** (a collection dataset: the union of K graphs with public
offsets, :attr:`CuratorView.graph_ptr`) and trains **one model per graph** [P, §8 #25]:

* **Encoder** (not released, no noise [P]): a 2-layer GCN on one-hot features, 32 → 16 with
  the first layer shared by μ and log σ [P App. C; log σ: R], normalised with A + I [R],
  no biases; z = μ + σ ⊙ ε.
* **Generator f** (the only released module): a 2-layer MLP 16 → 16 (ReLU) → 32 [R],
  edge probability sigmoid(f(z_i)ᵀ f(z_j)).
* **Discriminator** (DPGGAN only; not released, no noise): g′ a 2-layer GCN 32 → 16 with a
  sum readout, f′ 16 → 32 (ReLU) → 1, sigmoid [R]; the fake graph is the soft
  A′ = sigmoid(FFᵀ) (diagonal 0) of the posterior samples [P Alg. 1].
* **Losses** [R §2.4, §2.7]: DPGVAE's reconstruction is the summed BCE over the batch's pairs
  i ≠ j; DPGGAN's is ‖g′(A_S) − g′(A′)‖² (g′ held fixed) plus λ2·(−log D(A′)) for f
  (non-saturating); the discriminator minimises λ2·[BCE(D(A_S), 1) + BCE(D(A′), 0)]; the
  encoder L_rec + λ1·KL. All three gradients come from one forward pass and are applied
  together.
* **DP-SGD on f only** [P Eq. 5, Alg. 1]: each step a Poisson sample S of the graph's nodes
  (rate q); node i's gradient is the gradient of the batch loss with respect to node i's own
  copy θ_i of f's parameters (the parameter-copy trick: F_i = f(z_i; θ_i), so
  Σ_i g_i is exactly ∇_θ L and the cross-row coupling of sigmoid(F_iᵀF_j) is kept; a vmap of
  a per-row loss would miss it). Each g_i is clipped to ‖·‖ ≤ C over all of f's
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

**Two trainings** (``dpg_training``). ``bounded``, the default: every part trained by one
DP-SGD over degree-bounded ego records, one model for the collection, a proven edge-level ε
(:mod:`.dpggan_bounded`, :mod:`.dpggan_bounded_train`). ``paper``: the training above, graph
by graph, described in the rest of this docstring.

**Privacy** (docs/privacy/dpggan.md). Of ``paper``: the headline ε is ∞: the paper's training
has no proven edge-level bound (:data:`NO_PROOF`; ``epsilon_convention proven`` is refused).
What follows is how the paper's claim, ``paper_epsilon``, is computed beside it.
Edge-level (add/remove one edge), N_k public. The accountant is
dp-accounting's (RDP by default, PLD on request) for T compositions of the Poisson-subsampled
Gaussian of multiplier σ at rate q, with the paper's sensitivity C of the clipped sum. σ comes
from the accountant: ``dpg_calibration=sigma`` (default) calibrates σ to ε_train over
``dpg_steps`` steps; ``steps`` is the paper's rule: σ = ``dpg_sigma`` (5) fixed and T the most
steps (≤ ``dpg_steps``) whose ε stays within ε_train. An unreachable ε is a one-line error.
The graphs are disjoint and one edge lives in one graph, so the collection is (ε, δ) by
parallel composition. Beside it the report gives the paper's closed form
ε = 2q·√(T ln(1/δ))/σ (App. B), which is not a bound at small ε, and a
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
from .dpggan_params import _PARAMS, NO_PROVEN_CONVENTION
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
        bounded = params.get("dpg_training", "bounded") == "bounded"
        if not bounded and params.get("epsilon_convention", "paper") != "paper":
            raise ProtocolParameterError(
                f"{name}: epsilon-convention proven: {NO_PROVEN_CONVENTION}"
            )
        strategy = cls(name == "dpggan", **params)
        strategy.plan()  # an unreachable ε is refused when the run is configured, not later
        return strategy

    # --- privacy ------------------------------------------------------------------------

    @property
    def bounded(self) -> bool:
        """Whether this run trains the proven way (``dpg_training bounded``)."""
        return self.p.dpg_training == "bounded"

    def plan(self) -> Any:
        """σ and T through the accountant (one-line error if ε is unreachable): the bounded
        training's :class:`.dpggan_bounded.BoundedPlan`, or the paper's :class:`Plan`."""
        if self._plan is None:
            if self.bounded:
                from .dpggan_bounded import bounded_plan

                if self.p.dpg_generation == "encoder":
                    raise ProtocolParameterError(
                        f"{self.name}: dpg_generation encoder generates from the real graph "
                        "(not private); it is an ablation of dpg_training paper"
                    )
                self._plan = bounded_plan(self.p, self.name)
            else:
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
        """Bounded: the proven edge-level ε (:func:`.dpggan_privacy.bounded_report`); paper:
        ε = ∞ (:data:`NO_PROOF`) with the paper's claim beside it
        (:func:`.dpggan_privacy.privacy_report`)."""
        from .dpggan_privacy import bounded_report, privacy_report

        if self.bounded:
            return bounded_report(self.name, self.p, self.plan())
        return privacy_report(self.name, self.p, self.plan())

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

        if self.bounded:
            return self._release_bounded(parts, plan, seed, curator)
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

    def _release_bounded(
        self, parts: list[tuple[np.ndarray, int]], plan: Any, seed: int, curator: CuratorView
    ) -> Release:
        """One shared model trained on every graph's ego records (:mod:`.dpggan_bounded_train`),
        one generated graph per graph."""
        from ..torch_env import one_cpu_thread
        from .dpggan_bounded_train import fit_and_generate_bounded

        with one_cpu_thread(curator.device if curator.device != "auto" else "cpu"):
            results, info = fit_and_generate_bounded(parts, plan, self.p, self.gan, seed)
        report = self.privacy_report()
        generated = [
            Release(edges=gen, x=np.zeros((n, 0), np.float32), privacy=report)
            for (gen, _), (_, n) in zip(results, parts, strict=True)
        ]
        summary = {
            "graphs": len(parts),
            "training": "bounded",
            "steps_T": plan.steps,
            "sigma": plan.sigma,
            "group_k": plan.group,
            "edge_selection": self.p.dpg_edge_selection,
            "edges_generated": int(sum(r[1]["edges_generated"] for r in results)),
            **info,
        }
        return Release.of_graphs(generated, report, summary)
