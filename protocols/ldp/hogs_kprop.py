"""``hogs-kprop``: the HoGS ablation "TR + KProp (K = 1, 2)" (the HoGS paper, Xu et al.,
Section V, ablation study; KProp from LPGNN, Sajadmanesh & Gatica-Perez, CCS'21, official code
github.com/sisaman/LPGNN).

Clients run HoGS's client step unchanged (RR row with ε_a = (1−share)·ε, 1-bit features with
ε_f = share·ε). The server runs HoGS's topology reconstruction (TR) unchanged (edges where
P_ij ≥ τ) and replaces HoGS's feature reconstruction by KProp over that reconstructed graph:
X̂ = Ā_Ê^K·X̃, with X̃ the raw 1-bit reports (not unbiased, as in HoGS).

Operator (see :mod:`.kprop`): by default LPGNN's symmetric normalisation without self-loops
(``kprop_norm="sym"``); ``kprop_norm="mean"`` is the row-normalised D^{−1}A the paper's word
"averaging" suggests. Isolated nodes keep X̃ by default (a deviation from LPGNN, which zeroes
them: HoGS's own reconstruction leaves a node without neighbours as it is);
``kprop_isolated="zero"`` gives LPGNN's behaviour. Which one produced a number is in the
release's stats and the config.

Implemented by reuse: :class:`HogsProtocol` with no feature step (so its release carries the
TR edges and the raw noisy features), then KProp on that release. Privacy is HoGS's (KProp is
post-processing).
"""

from __future__ import annotations

from typing import Any

from ..base import EPSILON, FEATURE_SHARE, CuratorView, RoundResult
from ..params import Param
from ..registry import register
from ..types import Release
from .hogs import TAU, HogsProtocol
from .kprop import ISOLATED, NORMS, kprop
from .split_budget import SplitBudgetProtocol

KPROP_K = Param(
    "kprop_k", int, 1, "KProp steps K over the reconstructed graph", low=0, server_side=True
)
KPROP_NORM = Param(
    "kprop_norm",
    str,
    "sym",
    "KProp's operator: sym (LPGNN's D^-1/2 A D^-1/2) or mean (D^-1 A)",
    choices=NORMS,
    server_side=True,
    run_key=False,  # library use only: runs keep LPGNN's symmetric operator
)
KPROP_ISOLATED = Param(
    "kprop_isolated",
    str,
    "keep",
    "isolated nodes keep their noisy features (keep) or get zeros (zero, as LPGNN)",
    choices=ISOLATED,
    server_side=True,
    run_key=False,  # library use only
)


@register(
    "hogs-kprop",
    label="TR + KProp",
    params=(EPSILON, FEATURE_SHARE, TAU, KPROP_K, KPROP_NORM, KPROP_ISOLATED),
    summary="ablation TR + KProp: HoGS topology + KProp (kprop_k steps) of the 1-bit features",
)
class HogsKpropProtocol(HogsProtocol):
    """HoGS topology + KProp features (HoGS's own feature step is off)."""

    @property
    def steps(self) -> int:
        """0: KProp replaces HoGS's feature averaging (Algorithm 3)."""
        return 0

    def config(self) -> dict[str, Any]:
        return SplitBudgetProtocol.config(self)  # its own parameters, none of HoGS's extras

    def server_step(
        self, round_: int, result: RoundResult, curator: CuratorView, seed: int
    ) -> Release:
        release = super().server_step(round_, result, curator, seed)
        p = self.params
        x = kprop(
            release.x,
            release.edges,
            curator.num_nodes,
            p.kprop_k,
            norm=p.kprop_norm,
            isolated=p.kprop_isolated,
        )
        release.x = x.astype("float32")
        release.stats.update(
            {
                "feature_step": "kprop",
                "kprop_k": p.kprop_k,
                "kprop_norm": p.kprop_norm,
                "kprop_isolated": p.kprop_isolated,
            }
        )
        return release
