"""GAP's parameters, declared once (the mechanism: :mod:`.gap`). Provenance tags: [P] the paper
(Sajadmanesh et al., "GAP: Differentially Private Graph Neural Networks with Aggregation
Perturbation", USENIX Security 2023), [I] an implementer's choice."""

from __future__ import annotations

from ..base import EPSILON
from ..params import Param
from . import base
from .base import EPSILON_CONVENTION

GAP_EPSILON = EPSILON.but(
    help="edge-level ε of the K perturbed aggregations: the proven bound "
    "(epsilon_convention=proven) or the paper's directed-edge calibration (paper; the "
    "headline is then the proven ε of that noise)"
)
GAP_DELTA = base.DELTA.but(
    default=1e-5,
    help="δ of the edge-level (ε, δ) guarantee; 0 or unset: 1e-5 (below 1/|E| of the "
    "citation graphs, as the paper chooses δ)",
)
GAP_ACCOUNTANT = base.ACCOUNTANT_PARAM.but(
    help="dp-accounting accountant of the K Gaussian aggregations: rdp (the paper's) or pld"
)
GAP_CONVENTION = EPSILON_CONVENTION.but(
    help="what --epsilon means: proven (σ calibrated at the undirected edge's sensitivity √2) "
    "or paper (σ at the paper's sensitivity 1, one directed edge; the headline is then the "
    "proven ε of that σ)"
)
GAP_HOPS = Param("gap_hops", int, 2, "K: perturbed aggregation hops (paper: 1 to 5) [P]", low=1)
GAP_EMBED = Param(
    "gap_embed", int, 16, "width of the encoder's embedding (the rows aggregated) [P]", low=1
)
GAP_HIDDEN = Param("gap_hidden", int, 64, "hidden units of encoder and classifier [I]", low=1)
GAP_ENCODER_EPOCHS = Param(
    "gap_encoder_epochs", int, 100, "full-batch Adam epochs of the encoder [I]", low=1
)
GAP_EPOCHS = Param("gap_epochs", int, 100, "full-batch Adam epochs of the classifier [I]", low=1)
GAP_LR = Param("gap_lr", float, 0.01, "Adam learning rate of both MLPs [I]", low=0.0, low_open=True)

#: The parameters of ``gap-edge``, in the order listings show them.
EDGE_PARAMS = (
    GAP_EPSILON, GAP_DELTA, GAP_CONVENTION, GAP_ACCOUNTANT, GAP_HOPS, GAP_EMBED, GAP_HIDDEN,
    GAP_ENCODER_EPOCHS, GAP_EPOCHS, GAP_LR,
)  # fmt: skip

# --- gap-node (node level) ----------------------------------------------------------------

GAP_NODE_EPSILON = EPSILON.but(
    help="node-level ε of the whole release (encoder DP-SGD, K perturbed aggregations, "
    "classifier DP-SGD composed by dp-accounting): the proven bound"
)
GAP_MAX_DEGREE = Param(
    "gap_max_degree", int, 10,
    "D: each node keeps at most D neighbours (mutual lowest random priorities); the "
    "aggregation's node-level sensitivity is √D [P]", low=1,
)  # fmt: skip
GAP_SGD_EPOCHS = Param(
    "gap_sgd_epochs", int, 10,
    "gap-node: DP-SGD epochs of the encoder and of the classifier (steps = epochs·⌈N/B⌉, "
    "N the training slots) [I]", low=1,
)  # fmt: skip
GAP_BATCH_SIZE = Param(
    "gap_batch_size", int, 256,
    "gap-node: DP-SGD expected batch size B (Poisson rate B/N over the training slots) [I]",
    low=1,
)  # fmt: skip
GAP_CLIP = Param(
    "gap_clip", float, 1.0, "gap-node: DP-SGD per-node gradient clip C [I]", low=0.0,
    low_open=True,
)  # fmt: skip

#: The parameters of ``gap-node``, in the order listings show them.
NODE_PARAMS = (
    GAP_NODE_EPSILON, GAP_DELTA, GAP_ACCOUNTANT, GAP_MAX_DEGREE, GAP_HOPS, GAP_EMBED,
    GAP_HIDDEN, GAP_SGD_EPOCHS, GAP_BATCH_SIZE, GAP_CLIP, GAP_LR,
)  # fmt: skip
