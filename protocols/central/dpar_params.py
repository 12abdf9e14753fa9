"""DPAR's parameters, declared once (the mechanism: :mod:`.dpar`). Provenance tags: [P] the
paper, [R] the authors' reference code, [I] an implementer's choice."""

from __future__ import annotations

from ..base import EPSILON
from ..params import Param
from . import base
from .base import EPSILON_CONVENTION

#: Weight decay of the non-private branch only [R].
NODP_WEIGHT_DECAY = 1e-4

DP_EPSILON = EPSILON.but(
    help="total node-level ε: the proven bound (epsilon_convention=proven) or the DPAR paper's "
    "q′·(ε_pr + ε_sgd) (paper; the headline is then the proven ε of that noise)"
)
DELTA = base.DELTA.but(
    help="node-level δ = q′·(δ_pr + δ_sgd) (Bernoulli q′; fixed: δ_pr + δ_sgd); 0 or unset: "
    "2e-3 (Table 1's Cora-ML value)"
)

PR_SHARE = Param(
    "pr_share", float, 0.5, "share of ε spent on DP-APPR (the rest on DP-SGD)",
    low=0.0, high=1.0, low_open=True, high_open=True,
)  # fmt: skip
DELTA_PR_SHARE = Param(
    "delta_pr_share", float, 0.5, "share of δ spent on DP-APPR (the rest on DP-SGD)",
    low=0.0, high=1.0, low_open=True, high_open=True,
)  # fmt: skip
EM1_VALUE_SHARE = Param(
    "em1_value_share", float, 0.5,
    "EM1: share ε2/ε_vec of the per-vector ε spent on the Laplace values (ε1 = ε2 [R])",
    low=0.0, high=1.0, low_open=True, high_open=True,
)  # fmt: skip
Q_PRIME = Param(
    "q_prime", float, 0.09, "node subsample rate q′ of the training graph (paper: 0.09)",
    low=0.0, high=1.0, low_open=True,
)  # fmt: skip
NODE_SAMPLING = Param(
    "node_sampling", str, "bernoulli",
    "bernoulli: each training slot kept with rate q′ (what amplification assumes); fixed: "
    "⌈q′·slots⌉ slots as the reference code (no amplification is claimed for it)",
    choices=("bernoulli", "fixed"),
)  # fmt: skip
APPR_NODES = Param("appr_nodes", int, 70, "M: nodes whose APPR vector is released", low=1)
TOP_K = Param("top_k", int, 2, "K: entries kept per DP-APPR vector (Table 1: 2)", low=1)
PPR_ALPHA = Param(
    "ppr_alpha", float, 0.25, "PageRank teleport α (ISTA and inference)",
    low=0.0, high=1.0, low_open=True, high_open=True,
)  # fmt: skip
ISTA_RHO = Param("ista_rho", float, 1e-4, "ISTA ℓ1 regularisation ρ", low=0.0, low_open=True)
ISTA_GAMMA = Param("ista_gamma", float, 1e-4, "ISTA stopping tolerance γ", low=0.0, low_open=True)
CLIP_GM = Param("clip_gm", float, 0.01, "GM: ℓ2 clip C1 of an APPR vector", low=0.0, low_open=True)
CLIP_EM = Param(
    "clip_em", float, 0.001, "EM: element-wise clip C2 of an APPR vector", low=0.0, low_open=True
)
COLUMN_TAU = Param(
    "column_tau", float, 1.0, "τ: column ℓ1 bound of Π (the DP-SGD sensitivity scale)",
    low=0.0, low_open=True,
)  # fmt: skip
COLUMN_MODE = Param(
    "column_mode", str, "normalize",
    "normalize: every nonzero column of Π scaled to ℓ1 = τ [reference]; clip: divided by "
    "max(1, ℓ1/τ) [paper Alg. 2]",
    choices=("normalize", "clip"),
)  # fmt: skip
NON_APPR_ROWS = Param(
    "non_appr_rows", str, "identity",
    "identity: nodes outside V_M train on their own features (N rows, q = B/N) [reference]; "
    "exclude: train on the M APPR rows only (q = B/M) [paper Alg. 2 line 6]",
    choices=("identity", "exclude"),
)  # fmt: skip
SGD_CLIP = Param("sgd_clip", float, 1.0, "C: per-target-node gradient clip", low=0.0, low_open=True)
SGD_LR = Param("sgd_lr", float, 0.005, "Adam learning rate of the MLP", low=0.0, low_open=True)
SGD_EPOCHS = Param("sgd_epochs", int, 200, "epochs: T = epochs·⌈rows/B⌉ steps", low=1)
BATCH_SIZE = Param("batch_size", int, 60, "B: expected batch size (Poisson q = B/rows)", low=1)
MLP_HIDDEN = Param("mlp_hidden", int, 32, "hidden units of the MLP f_θ", low=1)
MLP_DROPOUT = Param(
    "mlp_dropout", float, 0.1, "dropout on the MLP's input and hidden layer",
    low=0.0, high=1.0, high_open=True,
)  # fmt: skip
INFERENCE_STEPS = Param(
    "inference_steps", int, 2, "P: power-iteration steps on the test graph (Eq. 4)", low=0
)
SGD_SENSITIVITY = Param(
    "sgd_sensitivity", str, "faithful",
    "epsilon_convention=paper only: DP-SGD calibrated at the paper's τ·C (faithful) or at "
    "C·(2D − 1), rate 1 − (1 − q)^D with the column cap (strict); proven ignores it",
    choices=("faithful", "strict"),
    added_with="faithful",  # stored DPAR runs before the key existed used τ·C
)  # fmt: skip
COLUMN_ROWS_CAP = Param(
    "column_rows_cap", int, 4,
    "D_max: rows a node's features may reach (its own row counted; the smallest DP-APPR "
    "entries of a longer Π column are dropped); applies under proven and paper+strict",
    low=1,
    added_with=4,
)  # fmt: skip
ACCOUNTANT_PARAM = base.ACCOUNTANT_PARAM.but(help="dp-accounting accountant of DP-SGD: rdp or pld")
FEATURES_INFERENCE = Param(
    "features_inference", str, "power_iteration",
    "Features baseline at test time: power_iteration (Eq. 4, as the reference) or mlp",
    choices=("power_iteration", "mlp"),
)  # fmt: skip

_COMMON = (
    Q_PRIME, NODE_SAMPLING, PPR_ALPHA, SGD_LR, SGD_EPOCHS, BATCH_SIZE, MLP_HIDDEN, MLP_DROPOUT,
    INFERENCE_STEPS,
)  # fmt: skip
_APPR = (APPR_NODES, TOP_K, ISTA_RHO, ISTA_GAMMA, COLUMN_TAU, COLUMN_MODE, NON_APPR_ROWS)
_DP = (
    DP_EPSILON, DELTA, EPSILON_CONVENTION, SGD_CLIP, ACCOUNTANT_PARAM, SGD_SENSITIVITY,
    COLUMN_ROWS_CAP,
)  # fmt: skip
_DP_APPR = (PR_SHARE, DELTA_PR_SHARE)
