"""Protocol names → classes, and rebuilding a protocol from its flat config (the round
message a node receives). numpy only: the client imports this."""

from __future__ import annotations

from typing import Any

from .base import LdpProtocol
from .ldp.blink import BlinkParams, BlinkProtocol
from .ldp.floors import FeaturesOnly, NonPrivate
from .ldp.hogs import HogsParams, HogsProtocol
from .ldp.hogs_kprop import HogsKpropProtocol
from .ldp.ldpgen import LdpGenParams, LdpGenProtocol
from .ldp.rr import RRParams, RRProtocol
from .ldp.solitude import SolitudeProtocol

PROTOCOLS: dict[str, str] = {
    "hogs": "HoGS: edge LDP + feature LDP, homophily-based reconstruction",
    "hogs-edge": "HoGS with edge LDP only; features public (Table III)",
    "none": "non-private: the original graph and features (upper bound)",
    "features-only": "feature-only floor: 1-bit features, no edges (train with --model mlp)",
    "rr": "plain RR adjacency (OR of both reports) + raw 1-bit features, no denoising",
    "rr-edge": "plain RR adjacency (OR of both reports), features public (Blink_GNN's RR)",
    "blink-hard": "Blink: RR row + discrete-Laplace degree, beta-model posterior, edges P > 0.5",
    "blink-soft": "Blink soft: posterior-weighted edges (pairs with P >= min_weight)",
    "blink-hybrid": "Blink hybrid: the floor(sum P) largest posteriors, weighted",
    "fp-blink": "FP-BLink: Blink + 1-bit features + HoGS feature reconstruction (share1, share2)",
    "blink-fr": "ablation BLink + FR: Blink topology + HoGS feature reconstruction",
    "ldpgen": "LDPGen (Blink_GNN's version): 2 rounds of discrete-Laplace degree vectors, "
    "k-means, block generator; features public",
    "fp-ldpgen": "FP-LDPGen: LDPGen on (1-feature_share)·ε + 1-bit features + HoGS feature "
    "reconstruction",
    "hogs-kprop": "ablation TR + KProp: HoGS topology + KProp (kprop_k steps) of the 1-bit "
    "features",
    "solitude": "Solitude in its official-code mode (as HoGS reproduces it): RR graph (OR) + "
    "KProp(lx) of 1-bit features; the joint learned-graph training is not implemented",
}

#: Protocols whose server trains on the true features (edge LDP only): the curator view of
#: these carries the feature matrix.
PUBLIC_FEATURES = frozenset(
    {"hogs-edge", "rr-edge", "blink-hard", "blink-soft", "blink-hybrid", "ldpgen"}
)

#: Default share of the graph budget spent on the noisy degree (Blink's δ).
DEFAULT_DEGREE_SHARE = 0.1


class UnknownProtocolError(ValueError):
    pass


def uses_public_features(name: str) -> bool:
    """Whether the server of protocol ``name`` needs the true features (``CuratorView``)."""
    return name in PUBLIC_FEATURES


def make_protocol(name: str, **params: Any) -> LdpProtocol:
    """Build a protocol from its name and parameters; each protocol takes the ones it knows
    and ignores the rest: epsilon, feature_share (HoGS's δ), tau, steps (HoGS's l),
    degree_share (Blink's δ), variant and min_weight (Blink), share1/share2 (FP-BLink's δ1/δ2,
    default 1 − feature_share and 1 − degree_share), combine (rr: "or", "and", "lower")."""
    if name not in PROTOCOLS:
        raise UnknownProtocolError(
            f"unknown protocol {name!r}; choose one of: {', '.join(PROTOCOLS)}"
        )
    if name in ("hogs", "hogs-edge"):
        return HogsProtocol(
            HogsParams(
                epsilon=float(params["epsilon"]),
                feature_share=float(params.get("feature_share", 0.5)),
                tau=float(params.get("tau", 0.5)),
                steps=int(params.get("steps", 1)),
                public_features=name == "hogs-edge",
            )
        )
    if name == "none":
        return NonPrivate()
    if name in ("rr", "rr-edge"):
        return RRProtocol(
            RRParams(
                epsilon=float(params["epsilon"]),
                feature_share=float(params.get("feature_share", 0.5)),
                public_features=name == "rr-edge",
                combine=str(params.get("combine", "or")),
            )
        )
    if name.startswith("blink-") or name == "fp-blink":
        return _make_blink(name, params)
    if name in ("ldpgen", "fp-ldpgen"):
        return LdpGenProtocol(
            LdpGenParams(
                epsilon=float(params["epsilon"]),
                feature_share=float(params.get("feature_share", 0.5)),
                public_features=name == "ldpgen",
                k0=int(params.get("k0", 2)),
                k1=int(params.get("k1", 0)),
                phase_share=float(params.get("phase_share", 0.5)),
                generator=str(params.get("generator", "blinkgnn")),
                steps=int(params.get("steps", 1)),
            )
        )
    if name == "hogs-kprop":
        return HogsKpropProtocol(
            HogsParams(
                epsilon=float(params["epsilon"]),
                feature_share=float(params.get("feature_share", 0.5)),
                tau=float(params.get("tau", 0.5)),
            ),
            kprop_k=int(params.get("kprop_k", 1)),
            kprop_norm=str(params.get("kprop_norm", "sym")),
            kprop_isolated=str(params.get("kprop_isolated", "keep")),
        )
    if name == "solitude":
        return SolitudeProtocol(
            float(params["epsilon"]),
            feature_share=float(params.get("feature_share", 0.5)),
            lx=int(params.get("lx", 2)),
            ly=int(params.get("ly", 0)),
        )
    return FeaturesOnly(float(params["epsilon"]), float(params.get("feature_share", 0.5)))


def protocol_from_config(cfg: dict[str, Any]) -> LdpProtocol:
    """Rebuild the protocol a server described in a round message."""
    name = cfg.get("protocol")
    if not isinstance(name, str):
        raise UnknownProtocolError("round message has no protocol name")
    params = {k: v for k, v in cfg.items() if k != "protocol"}
    return make_protocol(name, **params)


def _make_blink(name: str, params: dict[str, Any]) -> BlinkProtocol:
    epsilon = float(params["epsilon"])
    degree_share = float(params.get("degree_share", DEFAULT_DEGREE_SHARE))
    min_weight = float(params.get("min_weight", 1e-3))
    if name in ("blink-hard", "blink-soft", "blink-hybrid"):
        blink = BlinkParams(
            epsilon,
            degree_share=degree_share,
            variant=name.removeprefix("blink-"),
            min_weight=min_weight,
        )
        return BlinkProtocol(blink, name)
    feature_share = float(params.get("feature_share", 0.5))
    shares = None
    if name == "fp-blink":
        # FP-BLink (HoGS paper): ε_d = δ1(1−δ2)ε, ε_a = δ1δ2ε, ε_f = (1−δ1)ε, with δ1 = share1
        # and δ2 = share2; without them the run's feature_share and degree_share decide.
        shares = (
            float(params.get("share1", 1.0 - feature_share)),
            float(params.get("share2", 1.0 - degree_share)),
        )
        feature_share, degree_share = 1.0 - shares[0], 1.0 - shares[1]
    blink = BlinkParams(
        epsilon,
        degree_share=degree_share,
        feature_share=feature_share,
        public_features=False,
        variant=str(params.get("variant", "hard")),
        steps=int(params.get("steps", 1)),
        min_weight=min_weight,
    )
    return BlinkProtocol(blink, name, shares)
