"""``hogs-kprop``: the HoGS ablation "TR + KProp (K = 1, 2)" (the HoGS paper, Xu et al.,
Section V, ablation study; KProp from LPGNN, Sajadmanesh & Gatica-Perez, CCS'21, official code
github.com/sisaman/LPGNN).

Clients run HoGS's client step unchanged (RR row with ε_a = (1−share)·ε, 1-bit features with
ε_f = share·ε). The server runs HoGS's topology reconstruction (TR) unchanged (edges where
P_ij ≥ τ) and replaces HoGS's feature reconstruction by KProp over that reconstructed graph:
X̂ = Ā_Ê^K·X̃, with X̃ the raw 1-bit reports (not unbiased, as in HoGS).

Operator (see :mod:`.kprop`): by default LPGNN's symmetric normalisation without self-loops
(``kprop_norm="sym"``); ``kprop_norm="mean"`` is the row-normalised D^{−1}A the paper's word
"averaging" suggests. Isolated nodes keep X̃ (the spec's deviation from LPGNN, which zeroes them);
``kprop_isolated="zero"`` gives LPGNN's behaviour. Which one produced a number is in the
release's stats and the config.

Implemented by reuse: :class:`HogsProtocol` with ``steps = 0`` (so its release carries the TR
edges and the raw noisy features), then KProp on that release. Privacy is HoGS's (KProp is
post-processing).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..base import EPSILON, FEATURE_SHARE, CuratorView, RoundResult
from ..params import Param
from ..registry import register
from ..types import Release
from .hogs import TAU, HogsParams, HogsProtocol
from .kprop import ISOLATED, NORMS, kprop

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
)
KPROP_ISOLATED = Param(
    "kprop_isolated",
    str,
    "keep",
    "isolated nodes keep their noisy features (keep) or get zeros (zero, as LPGNN)",
    choices=ISOLATED,
    server_side=True,
)


@register(
    "hogs-kprop",
    label="TR + KProp",
    params=(EPSILON, FEATURE_SHARE, TAU, KPROP_K, KPROP_NORM, KPROP_ISOLATED),
    summary="ablation TR + KProp: HoGS topology + KProp (kprop_k steps) of the 1-bit features",
)
class HogsKpropProtocol(HogsProtocol):
    """HoGS topology + KProp features. ``params.steps`` is ignored (forced to 0)."""

    @classmethod
    def from_params(cls, name: str, **params: Any) -> HogsKpropProtocol:
        hogs = HogsParams(params["epsilon"], params["feature_share"], params["tau"])
        return cls(hogs, params["kprop_k"], params["kprop_norm"], params["kprop_isolated"])

    def __init__(
        self,
        params: HogsParams,
        kprop_k: int = KPROP_K.default,
        kprop_norm: str = KPROP_NORM.default,
        kprop_isolated: str = KPROP_ISOLATED.default,
    ) -> None:
        if params.public_features:
            raise ValueError("hogs-kprop needs private (1-bit) features")
        if int(kprop_k) != kprop_k or kprop_k < 0:
            raise ValueError(f"kprop_k must be a non-negative integer, got {kprop_k}")
        if kprop_norm not in NORMS:
            raise ValueError(f"kprop_norm must be one of {NORMS}, got {kprop_norm!r}")
        if kprop_isolated not in ISOLATED:
            raise ValueError(f"kprop_isolated must be one of {ISOLATED}, got {kprop_isolated!r}")
        super().__init__(replace(params, steps=0))
        self.name = "hogs-kprop"
        self.kprop_k = int(kprop_k)
        self.kprop_norm = kprop_norm
        self.kprop_isolated = kprop_isolated

    def config(self) -> dict[str, Any]:
        p = self.params
        return {
            "protocol": self.name,
            "epsilon": p.epsilon,
            "feature_share": p.feature_share,
            "tau": p.tau,
            "kprop_k": self.kprop_k,
            "kprop_norm": self.kprop_norm,
            "kprop_isolated": self.kprop_isolated,
        }

    def server_step(
        self, round_: int, result: RoundResult, curator: CuratorView, seed: int
    ) -> Release:
        release = super().server_step(round_, result, curator, seed)
        x = kprop(
            release.x,
            release.edges,
            curator.num_nodes,
            self.kprop_k,
            norm=self.kprop_norm,
            isolated=self.kprop_isolated,
        )
        release.x = x.astype("float32")
        release.stats.update(
            {
                "feature_step": "kprop",
                "kprop_k": self.kprop_k,
                "kprop_norm": self.kprop_norm,
                "kprop_isolated": self.kprop_isolated,
            }
        )
        return release
