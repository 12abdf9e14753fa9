"""PrivDPR's parameters, declared once (the mechanism: :mod:`.privdpr`; Zhang et al.,
"PrivDPR: Synthetic Graph Publishing with Deep PageRank under Differential Privacy", KDD 2025)."""

from __future__ import annotations

from ..base import EPSILON
from ..params import Param
from .base import ACCOUNTANT_PARAM, DELTA

DPR_EPSILON = EPSILON.but(
    help="total node-level ε: the target of the noise calibration (noise-calibration paper: "
    "the paper's sequential composition; accountant: dp-accounting's figure)"
)
DPR_DELTA = DELTA.but(
    default=1e-5, help="node-level δ; 0 or unset: 1e-5 (the paper's; below 1/N on its graphs)"
)
DPR_ACCOUNTANT = ACCOUNTANT_PARAM.but(
    help="dp-accounting accountant of the reported ε (and of noise-calibration accountant): "
    "rdp or pld"
)
NOISE_CALIBRATION = Param(
    "noise_calibration", str, "paper",
    "paper: σ whose ε under the paper's sequential composition is the target (the published "
    "mechanism); accountant: σ whose dp-accounting ε (sound sensitivity) is the target",
    choices=("paper", "accountant"),
)  # fmt: skip
STRICT_SENSITIVITY = Param(
    "strict_sensitivity", bool, True,
    "choose the layer count K for the replace-one sensitivity 2·B·M·s^-K (true) or the "
    "paper's B·M·s^-K (false; the report's ε always uses the factor 2)",
)  # fmt: skip
DPR_EPOCHS = Param("dpr_epochs", int, 5, "n_epochs: T = n_epochs·⌊N/♭⌋ steps (paper: 5)", low=1)
DPR_NODE_BATCH = Param("dpr_node_batch", int, 16, "♭: start nodes per step (paper: 16)", low=1)
DPR_WALKS = Param("dpr_walks", int, 2, "R_wn: random walks per start node (paper: 2)", low=1)
DPR_WALK_LENGTH = Param(
    "dpr_walk_length", int, 16, "R_wl: steps per random walk (paper: 16)", low=1
)
DPR_DIM = Param("dpr_dim", int, 128, "r: embedding dimension of V (paper: 128)", low=1)
DPR_HIDDEN = Param("dpr_hidden", int, 64, "d: hidden width of the MLP (paper: 64)", low=1)
WN_SCALE = Param(
    "wn_scale", float, 8.0, "s: weight normalisation W/(s·‖W‖₂) (paper: 8)",
    low=1.0, low_open=True,
)  # fmt: skip
PRESET_SENSITIVITY = Param(
    "preset_sensitivity", float, 5.0, "S_∇: the preset sensitivity of Eq. 13 (paper: 5)",
    low=0.0, low_open=True,
)  # fmt: skip
DAMPING = Param(
    "damping", float, 0.85, "γ: PageRank damping factor (paper: 0.85)",
    low=0.0, high=1.0, low_open=True, high_open=True,
)  # fmt: skip
DPR_LR = Param(
    "dpr_lr", float, 1e-3, "η: Adam learning rate of V and W (paper: 1e-3)",
    low=0.0, low_open=True,
)  # fmt: skip
SYMMETRIZE = Param(
    "symmetrize", str, "max",
    "transition counts to scores: max(S, Sᵀ) (paper) or S + Sᵀ (official code)",
    choices=("max", "sum"),
)  # fmt: skip
FIRST_STAGE = Param(
    "first_stage", str, "paper",
    "one edge per node: paper (a new neighbour ∝ its scores) or code (a draw over the whole "
    "row; a repeat adds nothing)",
    choices=("paper", "code"),
)  # fmt: skip
EDGE_BUDGET_DIVISOR = Param(
    "edge_budget_divisor", float, 250.0,
    "edges = round(#{i<j: score > 0} / divisor) (official code: 250; post-processing)",
    low=0.0, low_open=True,
)  # fmt: skip
DPR_FEATURES = Param(
    "dpr_features", str, "embedding",
    "the release's features: embedding (the private V, r columns) or none (N×0)",
    choices=("embedding", "none"),
)  # fmt: skip

DPR_DIAGNOSTICS = Param(
    "dpr_diagnostics", bool, False,
    "add non-private diagnostics to the run record (walk pairs, steps without pairs, gradient "
    "norms, f's spread, V against an empty-graph control, edge-score z): computed from the "
    "graph and W, for the experimenter, never part of a release you publish",
)  # fmt: skip

_MODEL = (
    DPR_DIAGNOSTICS,
    DPR_EPOCHS, DPR_NODE_BATCH, DPR_WALKS, DPR_WALK_LENGTH, DPR_DIM, DPR_HIDDEN, WN_SCALE,
    PRESET_SENSITIVITY, DAMPING, DPR_LR, STRICT_SENSITIVITY, SYMMETRIZE, FIRST_STAGE,
    EDGE_BUDGET_DIVISOR, DPR_FEATURES,
)  # fmt: skip
_DP = (DPR_EPSILON, DPR_DELTA, NOISE_CALIBRATION, DPR_ACCOUNTANT)
