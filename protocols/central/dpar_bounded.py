"""DPAR-Bounded: DPAR (Zhang et al., WWW 2024) with a node-level sensitivity that holds by
construction, so its DP-SGD is one group add/remove accounted by dp-accounting (the proof is
docs/privacy/dpar.md, "DPAR-Bounded").

What differs from ``dpar-gm`` under ``epsilon_convention=proven`` (:mod:`.dpar`):

1. **Every training slot is kept** (q′ = 1): no amplification is claimed for the q′ subsample
   (:attr:`.dpar.Dpar.amplify`), so subsampling would only discard data.
2. **Π** is DPAR-GM's (DP-APPR by the Gaussian mechanism over M seeds, top-K, then the column
   cap): Π is a DP release, so the number of rows that read a node, D ≤ D_max =
   ``column_rows_cap`` (its own row counted), is public.
3. **Complete rows.** A row of Π holds a training example only when its own node and every node
   its row reads are present (:meth:`DparBounded.example_rows`). Removing node j therefore
   *removes* at most D examples (its own row and the rows that read x_j) and changes no other
   row; in ``dpar-gm`` those readers stay with x_j zeroed, a change that needs a weak triangle
   inequality through a third world.
4. **DP-SGD accounting:** add/remove of a group of D rows. Per step the batch holds some of
   the group with probability 1 − (1 − q)^D and their clipped sum moves by ≤ D·C, so the step
   is dominated by the Poisson-subsampled Gaussian of that rate and noise multiplier σ/D, which
   dp-accounting composes over the T steps (``PoissonSampledDpEvent``/``GaussianDpEvent``).
   The noise multiplier is calibrated by dp-accounting's own search at that rate, times D.

The DP-APPR part, the composition (ε_pr + ε_sgd), the slots and the inference are DPAR-GM's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..registry import register
from . import dpar_privacy as dp
from .dpar import Dpar
from .dpar_model import SgdPlan, Structure
from .dpar_params import (
    _DP_APPR,
    ACCOUNTANT_PARAM,
    APPR_NODES,
    BATCH_SIZE,
    CLIP_GM,
    COLUMN_MODE,
    COLUMN_ROWS_CAP,
    COLUMN_TAU,
    DELTA,
    DP_EPSILON,
    INFERENCE_STEPS,
    ISTA_GAMMA,
    ISTA_RHO,
    MLP_DROPOUT,
    MLP_HIDDEN,
    PPR_ALPHA,
    SGD_CLIP,
    SGD_EPOCHS,
    SGD_LR,
    TOP_K,
)

NAME = "dpar-bounded"
#: What the variant fixes (not parameters: any other value breaks the construction or wastes
#: data): every slot kept, identity rows for nodes outside V_M, the proven calibration.
FIXED = {"q_prime": 1.0, "node_sampling": "bernoulli", "non_appr_rows": "identity",
         "epsilon_convention": "proven", "sgd_sensitivity": "strict"}  # fmt: skip


def complete_rows(pi: sp.spmatrix, here: np.ndarray, row_nodes: np.ndarray) -> np.ndarray:
    """Which rows of ``pi`` hold an example: the row's own node (``row_nodes``) is present
    (``here``) and so is every column the row reads (a nonzero entry)."""
    pi = sp.csr_matrix(pi)
    reads = sp.csr_matrix(((pi.data != 0).astype(float), pi.indices, pi.indptr), shape=pi.shape)
    reads_absent = np.asarray(reads @ (~here).astype(float)).ravel() > 0
    return here[row_nodes] & ~reads_absent


@register(
    NAME,
    label="DPAR-Bounded",
    params=(DP_EPSILON, DELTA, SGD_CLIP, ACCOUNTANT_PARAM, COLUMN_ROWS_CAP) + _DP_APPR
    + (APPR_NODES, TOP_K, ISTA_RHO, ISTA_GAMMA, COLUMN_TAU, COLUMN_MODE, CLIP_GM, PPR_ALPHA,
       SGD_LR, SGD_EPOCHS, BATCH_SIZE, MLP_HIDDEN, MLP_DROPOUT, INFERENCE_STEPS),
    summary="DPAR with node-level sensitivity bounded by construction (complete rows, column "
    "cap D): DP-APPR-GM + DP-SGD accounted as add/remove of D rows",
)  # fmt: skip
class DparBounded(Dpar):
    """DPAR-GM with complete rows and the group accounting (module docstring)."""

    def __init__(self, **params: Any) -> None:
        super().__init__("gm", **{**params, **FIXED})
        self.name = NAME

    @classmethod
    def from_params(cls, name: str, **params: Any) -> DparBounded:
        return cls(**params)

    def example_rows(self, st: Structure) -> np.ndarray:
        """Rows holding an example: complete rows only (point 3 of the module docstring)."""
        return complete_rows(st.pi, st.here, st.row_nodes)

    def sgd_plan(self, rows: int, d_rows: int) -> SgdPlan:
        """DP-SGD of ``rows`` Π rows when one node removes at most D = ``d_rows`` of them:
        multiplier z = D·z_leg, z_leg calibrated by dp-accounting at rate 1 − (1 − q)^D."""
        from . import dpsgd

        p, b = self.p, self.budgets()
        assert b is not None
        q = min(1.0, p.batch_size / rows)
        steps = p.sgd_epochs * math.ceil(rows / p.batch_size)
        rate = dp.strict_rate(q, d_rows)
        with dp.quiet_absl():
            z = dpsgd.calibrate_noise_multiplier(b.eps_sgd, b.delta_sgd, rate, steps, p.accountant)
        how = f"proven: {p.accountant.upper()}, add/remove of D = {d_rows} rows (group)"
        return SgdPlan(q, steps, d_rows, z * d_rows, how)

    def sgd_epsilon(self, plan: SgdPlan) -> tuple[float, float]:
        """(proven ε_sgd of ``plan``'s noise, NaN: the paper states no figure for it)."""
        return group_sgd_epsilon(plan, self.budgets().delta_sgd, self.p.accountant), math.nan

    def sgd_accountant(self, plan: SgdPlan) -> str:
        return (
            f"dp_accounting {self.p.accountant.upper()}: Poisson-subsampled Gaussian at rate "
            f"1 − (1 − q)^D, multiplier z/D (add/remove of a group of D = {plan.rows} rows)"
        )


def group_sgd_epsilon(plan: SgdPlan, delta: float, accountant: str = "rdp") -> float:
    """ε at ``delta`` of DP-SGD with ``plan``'s noise when one node adds/removes at most
    ``plan.rows`` = D rows: dp-accounting's subsampled Gaussian at rate 1 − (1 − q)^D and
    multiplier z/D over ``plan.steps`` steps."""
    from . import dpsgd

    if plan.noise <= 0:
        return math.inf
    rate = dp.strict_rate(plan.q, plan.rows)
    with dp.quiet_absl():
        return dpsgd.sgd_epsilon(plan.noise / plan.rows, rate, plan.steps, delta, accountant)
