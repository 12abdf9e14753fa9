"""DPGGAN's and DPGVAE's parameters, declared once (the mechanism: :mod:`.dpggan`; Yang et al.,
"Secure Deep Graph Generation with Link Differential Privacy", IJCAI 2021), and the one-line
reasons their headline ε is ∞."""

from __future__ import annotations

from ..base import EPSILON
from ..params import Param
from .base import ACCOUNTANT_PARAM, DELTA, EPSILON_CONVENTION

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
    "noise std σ·C·multiplier (1: the paper; above 1: a conservative knob)", low=1.0,
)  # fmt: skip

DPG_POS_WEIGHT = Param(
    "dpg_pos_weight", str, "none",
    "DPGVAE's BCE: none (the paper's plain sum) or batch_balanced (edges weighted #non-edges/"
    "#edges of the batch, Kipf's GAE)",
    choices=("none", "batch_balanced"),
)  # fmt: skip

DPG_GENERATION = Param(
    "dpg_generation", str, "prior",
    "prior: Z ~ N(0, I) (the paper's text; the release is DP); encoder: Z = μ of the encoder "
    "on the real graph, as the official code evaluates (not private: ε = ∞; an ablation that "
    "shows where the published statistics come from)",
    choices=("prior", "encoder"),
)  # fmt: skip

DPG_TRAINING = Param(
    "dpg_training", str, "bounded",
    "bounded: every part (encoder, generator, discriminator) trained by one DP-SGD on "
    "degree-bounded ego records of one shared model, proven edge-level ε "
    "(docs/privacy/dpggan.md); paper: the paper's per-graph training (noise on the generator "
    "only, headline ε = ∞, the paper's figure beside it)",
    choices=("bounded", "paper"),
    # runs stored before the key existed trained the paper's way
    added_with="paper",
)  # fmt: skip
DPG_DEGREE_BOUND = Param(
    "dpg_degree_bound", int, 3,
    "D of dpg_training bounded: each node keeps at most D sampled neighbours (fixed before "
    "training); one edge then changes at most 2D + 2 ego records",
    low=1, added_with=3,
)  # fmt: skip

#: No noise level proves an edge-level bound for the paper's training (docs/privacy/dpggan.md):
#: there the paper's calibration is the only convention, and its headline is ∞. The bounded
#: training calibrates to its proven bound under either convention.
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
    "step 2·|batch|·C without sampling amplification: vacuous at any noise that learns); use "
    "dpg_training bounded (the default: a proven edge-level ε) or --epsilon-convention paper "
    "(headline ε = ∞, the paper's figure beside it)"
)

_PARAMS = (
    DPG_TRAINING, DPG_DEGREE_BOUND, DPG_EPSILON, DPG_DELTA, DPG_EPSILON_CONVENTION,
    DPG_ACCOUNTANT, DPG_CALIBRATION, DPG_SIGMA, DPG_STEPS, DPG_Q,
    DPG_CLIP, DPG_CLIP_DECAY, DPG_LR, DPG_LAMBDA1, DPG_LAMBDA2, DPG_EDGE_SELECTION,
    DPG_EDGE_COUNT_SHARE, DPG_SENSITIVITY_MULTIPLIER, DPG_POS_WEIGHT, DPG_GENERATION,
)  # fmt: skip
