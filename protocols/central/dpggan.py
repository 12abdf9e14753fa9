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

from ..base import EPSILON, CuratorView
from ..graph import split_by_offsets
from ..laplace import MIN_EPSILON
from ..params import Param, ProtocolParameterError
from ..registry import register
from ..rng import stage_rng, stage_seed
from ..types import PrivacyReport, Release
from .base import EPSILON_CONVENTION, CentralStrategy, UploadedGraph
from .dpar import ACCOUNTANT_PARAM, DELTA
from .dpggan_model import (
    EPS_LOG,
    LATENT,
    Plan,
    _normalised,
    generator,
    init_params,
    select_edges,
    soft_adjacency,
)

DPG_EPSILON = EPSILON.but(
    help="edge-level ε of the whole release (training plus, with topk_dp, the noisy edge "
    "count); the target of the noise calibration"
)
DPG_DELTA = DELTA.but(default=1e-5, help="edge-level δ; 0 or unset: 1e-5 (the paper's)")
DPG_ACCOUNTANT = ACCOUNTANT_PARAM.but(
    help="dp-accounting accountant of the subsampled Gaussian: rdp or pld"
)
DPG_CALIBRATION = Param(
    "dpg_calibration", str, "sigma",
    "sigma: σ calibrated to ε over dpg_steps steps; steps: the paper's rule, σ = dpg_sigma "
    "fixed and T the most steps (≤ dpg_steps) within ε",
    choices=("sigma", "steps"),
)  # fmt: skip
DPG_SIGMA = Param(
    "dpg_sigma", float, 5.0, "σ of dpg_calibration steps (paper: 5)", low=0.0, low_open=True
)
DPG_STEPS = Param(
    "dpg_steps", int, 1000,
    "T: DP steps per graph (dpg_calibration steps: the cap; the paper trains until ε is spent)",
    low=1,
)  # fmt: skip
DPG_Q = Param(
    "dpg_q", float, 0.01, "q: Poisson sampling rate of the nodes (paper: 0.01; B = qN)",
    low=0.0, high=1.0, low_open=True,
)  # fmt: skip
DPG_CLIP = Param(
    "dpg_clip", float, 5.0, "C: initial per-node clip (paper: 5)", low=0.0, low_open=True
)
DPG_CLIP_DECAY = Param(
    "dpg_clip_decay", float, 0.99, "γ: C ← γ·C after each epoch of ⌈1/q⌉ steps (paper: 0.99)",
    low=0.0, high=1.0, low_open=True,
)  # fmt: skip
DPG_LR = Param("dpg_lr", float, 1e-3, "η: Adam learning rate (paper: 1e-3)", low=0.0, low_open=True)
DPG_LAMBDA1 = Param(
    "dpg_lambda1", float, 0.1, "λ1: weight of the KL prior loss (paper: 0.1)", low=0.0
)
DPG_LAMBDA2 = Param("dpg_lambda2", float, 0.1, "λ2: weight of the GAN loss (paper: 0.1)", low=0.0)
DPG_EDGE_SELECTION = Param(
    "dpg_edge_selection", str, "topk_dp",
    "generated edges: topk_dp (top-M̃, M̃ the edge count plus discrete Laplace noise), "
    "topk_true (the true M: leaks it, ε = ∞), bernoulli or threshold (P > 0.5)",
    choices=("topk_dp", "topk_true", "bernoulli", "threshold"),
)  # fmt: skip
DPG_EDGE_COUNT_SHARE = Param(
    "dpg_edge_count_share", float, 0.05, "share of ε spent on the edge count (topk_dp)",
    low=0.0, high=1.0, low_open=True, high_open=True,
)  # fmt: skip
DPG_SENSITIVITY_MULTIPLIER = Param(
    "dpg_sensitivity_multiplier", float, 1.0,
    "noise std σ·C·multiplier (1: the paper; the spec's conservative knob, §1.4)", low=1.0,
)  # fmt: skip

DPG_POS_WEIGHT = Param(
    "dpg_pos_weight", str, "none",
    "DPGVAE's BCE: none (the paper's plain sum) or batch_balanced (edges weighted #non-edges/"
    "#edges of the batch, Kipf's GAE; spec §2.4 option)",
    choices=("none", "batch_balanced"),
)  # fmt: skip

DPG_GENERATION = Param(
    "dpg_generation", str, "prior",
    "prior: Z ~ N(0, I) (the paper's text; the release is DP); encoder: Z = μ of the encoder "
    "on the real graph, as the official code evaluates (not private: ε = ∞; an ablation that "
    "shows where the published statistics come from)",
    choices=("prior", "encoder"),
)  # fmt: skip

#: No noise level proves an edge-level bound for the paper's training (docs/privacy/dpggan.md):
#: the paper's calibration is the only convention, and its headline is ∞.
DPG_EPSILON_CONVENTION = EPSILON_CONVENTION.but(default="paper")

#: Why the headline is ∞ (one line; the argument and the measurement in docs/privacy/dpggan.md).
NO_PROOF = (
    "no proven edge-level bound for the paper's training: one co-sampled edge changes every "
    "per-node record of its batch, and the encoder and discriminator, trained without noise, "
    "carry it into every later step's records"
)
#: Why ``epsilon_convention proven`` is refused (one line).
NO_PROVEN_CONVENTION = (
    "no proof is implemented for the paper's training (the only bound known charges every "
    "step 2·|batch|·C without sampling amplification: vacuous at any noise that learns; a "
    "sound variant is a later issue); use --epsilon-convention paper (headline ε = ∞, the "
    "paper's figure beside it)"
)

_PARAMS = (
    DPG_EPSILON, DPG_DELTA, DPG_EPSILON_CONVENTION, DPG_ACCOUNTANT, DPG_CALIBRATION, DPG_SIGMA,
    DPG_STEPS, DPG_Q,
    DPG_CLIP, DPG_CLIP_DECAY, DPG_LR, DPG_LAMBDA1, DPG_LAMBDA2, DPG_EDGE_SELECTION,
    DPG_EDGE_COUNT_SHARE, DPG_SENSITIVITY_MULTIPLIER, DPG_POS_WEIGHT, DPG_GENERATION,
)  # fmt: skip


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
        self.p = p
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
        eps, delta, q, acc = p["epsilon"], p["delta"], p["dpg_q"], p["accountant"]
        share = p["dpg_edge_count_share"] if p["dpg_edge_selection"] == "topk_dp" else 0.0
        eps_count = share * eps
        eps_train = eps - eps_count
        if p["dpg_calibration"] == "sigma":
            steps = p["dpg_steps"]
            sigma = calibrate_noise_multiplier(eps_train, delta, q, steps, acc)
        else:
            sigma = p["dpg_sigma"]

            def fits(t: int) -> bool:
                return sgd_epsilon(sigma, q, t, delta, acc) <= eps_train

            if not fits(1):
                raise ProtocolParameterError(
                    f"{self.name}: ε_train = {eps_train:.4g} is unreachable with σ = "
                    f"{sigma:g}: one step at q = {q:g} already costs ε = "
                    f"{sgd_epsilon(sigma, q, 1, delta, acc):.4g} (δ = {delta:.3g}); raise "
                    "dpg_sigma or epsilon, or use dpg_calibration sigma"
                )
            lo, hi = 1, p["dpg_steps"]
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
        acc = p["accountant"].upper()
        selection = p["dpg_edge_selection"]
        leaks = selection == "topk_true"
        through_encoder = p["dpg_generation"] == "encoder"
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
                "q": p["dpg_q"],
                "steps_T": plan.steps,
                "C0": p["dpg_clip"],
                "gamma": p["dpg_clip_decay"],
                "sensitivity_multiplier": p["dpg_sensitivity_multiplier"],
                "calibration": p["dpg_calibration"],
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
            f"(q = {p['dpg_q']:g}) Gaussian steps of noise multiplier σ = {plan.sigma:.4g} "
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
        from .dpggan_lanes import fit_and_generate_many
        from .privdpr import _one_cpu_thread

        generated, stats = [], []
        with _one_cpu_thread(curator.device if curator.device != "auto" else "cpu"):
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
            "edge_selection": self.p["dpg_edge_selection"],
            "edges_generated": int(sum(s["edges_generated"] for s in stats)),
            "empty_steps": int(sum(s["empty_steps"] for s in stats)),
            "clip_final": stats[0]["clip_final"] if stats else None,
        }
        return Release.of_graphs(generated, self.privacy_report(), summary)


# --- one graph ---------------------------------------------------------------------------


def _disc_features(norm: Any, w0_rows: Any, g: dict) -> Any:
    """g′: Σ_rows Â ReLU(Â X W′0) W′1 (X one-hot rows: X W′0 = the rows of W′0)."""
    import torch

    return (norm @ torch.relu(norm @ w0_rows) @ g["w1"]).sum(0)


def _disc_logit(r: Any, f: dict) -> Any:
    import torch

    return (torch.relu(r @ f["v1"].T + f["c1"]) @ f["v2"].T + f["c2"]).reshape(())


def dp_generator_gradient(
    per_node: dict[str, Any], clip: float, std: float, divisor: float, gen: Any
) -> dict[str, Any]:
    """Eq. 5 with Algorithm 1's batch normaliser: (Σ_i clip_C(g_i) + N(0, std²·I)) / divisor,
    the clipping and noise of :mod:`.dpsgd` (whole-vector ℓ2 clip over all of f's
    parameters; one Gaussian draw per coordinate, all of f's coordinates in one call)."""
    from .dpsgd import add_noise_flat, clip_per_example

    clipped, _ = clip_per_example(per_node, clip)
    summed = add_noise_flat({k: g.sum(0) for k, g in clipped.items()}, std, gen)
    return {k: v / divisor for k, v in summed.items()}


def per_node_generator_grads(
    loss_of: Any, z: Any, theta: dict[str, Any]
) -> tuple[dict[str, Any], Any]:
    """The per-node gradients g_i = ∂L/∂θ_i of ``loss_of(F)`` (F_i = f(z_i; θ_i), every θ_i a
    copy of θ): returns them (leading dim = nodes) and the loss."""
    import torch

    b = z.shape[0]
    copies = {
        k: v.detach().expand(b, *v.shape).clone().requires_grad_(True) for k, v in theta.items()
    }
    loss = loss_of(generator(z, copies))
    grads = torch.autograd.grad(loss, list(copies.values()), allow_unused=True)
    out = {
        k: (g if g is not None else torch.zeros_like(copies[k]))
        for k, g in zip(copies, grads, strict=True)
    }
    return out, loss


def fit_and_generate(
    edges: np.ndarray,
    n: int,
    plan: Plan,
    p: dict[str, Any],
    gan: bool,
    seed: int,
    k: int,
    trained: dict[str, Any] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Train one model on graph ``k`` (``edges`` local, u < v; ``n`` nodes) and generate one
    graph from the prior; returns its edges and training figures. The graph-by-graph
    reference of :func:`.dpggan_lanes.fit_and_generate_many` (which releases use); ``trained``,
    when given, receives the final parameters (``enc``, ``theta``, ``disc_g``, ``disc_f``)."""
    import torch

    stream = f"dpggan/graph{k}"
    g_init = torch.Generator().manual_seed(stage_seed(seed, f"{stream}/init"))
    g_sample = torch.Generator().manual_seed(stage_seed(seed, f"{stream}/sample"))
    g_noise = torch.Generator().manual_seed(stage_seed(seed, f"{stream}/noise"))
    g_gen = torch.Generator().manual_seed(stage_seed(seed, f"{stream}/generate"))
    dtype = torch.float64
    enc, theta, disc_g, disc_f = (
        {k_: v.to(dtype).requires_grad_(True) for k_, v in d.items()}
        for d in init_params(n, g_init)
    )
    adj = torch.zeros(n, n, dtype=dtype)
    if edges.size:
        e = torch.as_tensor(edges, dtype=torch.long)
        adj[e[:, 0], e[:, 1]] = 1.0
        adj[e[:, 1], e[:, 0]] = 1.0
    q, lr = p["dpg_q"], p["dpg_lr"]
    lam1, lam2 = p["dpg_lambda1"], p["dpg_lambda2"]
    opt_f = torch.optim.Adam(theta.values(), lr=lr)
    opt_e = torch.optim.Adam(enc.values(), lr=lr)
    opt_d = torch.optim.Adam([*disc_g.values(), *disc_f.values()], lr=lr)
    divisor = q * n
    clip = p["dpg_clip"]
    per_epoch = math.ceil(1.0 / q)
    empty = 0
    from .dpsgd import poisson_sample

    for step in range(plan.steps):
        std = plan.sigma * clip * p["dpg_sensitivity_multiplier"]
        idx = poisson_sample(n, q, g_sample, "cpu")
        if idx.numel() == 0:  # an empty sample is still a DP step: it releases its noise
            empty += 1
            zero = {k_: torch.zeros((1, *v.shape), dtype=dtype) for k_, v in theta.items()}
            noisy = dp_generator_gradient(zero, clip, std, divisor, g_noise)
            for k_, v in theta.items():
                v.grad = noisy[k_]
            opt_f.step()
        else:
            _train_step(idx, adj, enc, theta, disc_g, disc_f, gan, lam1, lam2, clip, std,
                        divisor, g_sample, g_noise, (opt_f, opt_e, opt_d),
                        p["dpg_pos_weight"] == "batch_balanced")  # fmt: skip
        if (step + 1) % per_epoch == 0:
            clip *= p["dpg_clip_decay"]
    if trained is not None:
        trained.update(enc=enc, theta=theta, disc_g=disc_g, disc_f=disc_f)
    with torch.no_grad():
        if p["dpg_generation"] == "encoder":  # the official code's evaluation: not private
            norm = _normalised(adj)
            z = norm @ torch.relu(norm @ enc["w0"]) @ enc["w_mu"]
        else:
            z = torch.randn(n, LATENT, generator=g_gen, dtype=dtype)
        probs = soft_adjacency(generator(z, theta))
    out = select_edges(
        probs.numpy(), int(edges.shape[0]), plan, p, stage_rng(seed, f"{stream}/edges")
    )
    return out, {
        "edges_generated": int(out.shape[0]),
        "empty_steps": empty,
        "clip_final": clip,
    }


def _train_step(
    idx: Any, adj: Any, enc: dict, theta: dict, disc_g: dict, disc_f: dict, gan: bool,
    lam1: float, lam2: float, clip: float, std: float, divisor: float, g_sample: Any,
    g_noise: Any, opts: tuple, balanced: bool = False,
) -> None:  # fmt: skip
    """One step of spec §2.9: one forward pass; f by the DP aggregate of the per-node
    gradients, the discriminator and the encoder by their clean gradients, all together."""
    import torch
    import torch.nn.functional as fn

    a_s = adj[idx][:, idx]
    norm = _normalised(a_s)
    h = torch.relu(norm @ enc["w0"][idx])
    mu = norm @ h @ enc["w_mu"]
    log_sigma = norm @ h @ enc["w_ls"]
    eps = torch.randn(mu.shape, generator=g_sample, dtype=mu.dtype)
    z = mu + torch.exp(log_sigma) * eps
    kl = 0.5 * (mu.pow(2) + torch.exp(2 * log_sigma) - 1 - 2 * log_sigma).sum()
    off = 1.0 - torch.eye(a_s.shape[0], dtype=a_s.dtype)
    frozen_g = {k: v.detach() for k, v in disc_g.items()}
    frozen_f = {k: v.detach() for k, v in disc_f.items()}
    w0_rows = frozen_g["w0"][idx]
    real_r = _disc_features(norm, w0_rows, frozen_g)

    def rec_and_gan(f_rows: Any) -> tuple[Any, Any]:
        p_soft = soft_adjacency(f_rows)
        if not gan:
            bce = fn.binary_cross_entropy(p_soft.clamp(EPS_LOG, 1 - EPS_LOG), a_s, reduction="none")
            if balanced:  # Kipf's pos_weight on the batch: #non-edges / #edges (data of S)
                pos = a_s.sum()
                weight = ((off.sum() - pos) / pos) if pos > 0 else torch.ones((), dtype=a_s.dtype)
                bce = bce * torch.where(a_s > 0, weight, torch.ones_like(a_s))
            return (bce * off).sum(), torch.zeros((), dtype=a_s.dtype)
        fake_r = _disc_features(_normalised(p_soft), w0_rows, frozen_g)
        rec = (real_r - fake_r).pow(2).sum()
        g_loss = -fn.logsigmoid(_disc_logit(fake_r, frozen_f))  # −log D(A′), non-saturating
        return rec, g_loss

    def generator_loss(f_rows: Any) -> Any:
        rec, g_loss = rec_and_gan(f_rows)
        return rec + lam2 * g_loss

    per_node, _ = per_node_generator_grads(generator_loss, z.detach(), theta)
    noisy = dp_generator_gradient(per_node, clip, std, divisor, g_noise)
    # the encoder: L_rec + λ1·KL through f (θ before the update) and the frozen g′
    rec, _ = rec_and_gan(generator(z, {k: v.detach() for k, v in theta.items()}))
    enc_grads = torch.autograd.grad(rec + lam1 * kl, list(enc.values()), allow_unused=True)
    disc_grads = None
    d_params = [*disc_g.values(), *disc_f.values()]
    if gan:
        with torch.no_grad():
            p_fake = soft_adjacency(generator(z, theta))
        real = _disc_logit(_disc_features(norm, disc_g["w0"][idx], disc_g), disc_f)
        fake = _disc_logit(_disc_features(_normalised(p_fake), disc_g["w0"][idx], disc_g), disc_f)
        one = torch.ones((), dtype=real.dtype)
        d_loss = lam2 * (fn.binary_cross_entropy_with_logits(real, one)
                         + fn.binary_cross_entropy_with_logits(fake, 0 * one))  # fmt: skip
        disc_grads = torch.autograd.grad(d_loss, d_params, allow_unused=True)
    opt_f, opt_e, opt_d = opts
    for k, v in theta.items():
        v.grad = noisy[k]
    for v, g in zip(enc.values(), enc_grads, strict=True):
        v.grad = g if g is not None else torch.zeros_like(v)
    opt_f.step()
    opt_e.step()
    if disc_grads is not None:
        for v, g in zip(d_params, disc_grads, strict=True):
            v.grad = g if g is not None else torch.zeros_like(v)
        opt_d.step()
