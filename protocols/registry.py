"""Protocol names → classes, and rebuilding a protocol from its flat config (the round
message a node receives). numpy only: the client imports this."""

from __future__ import annotations

from typing import Any

from .base import LdpProtocol
from .floors import FeaturesOnly, NonPrivate
from .hogs import HogsParams, HogsProtocol

PROTOCOLS: dict[str, str] = {
    "hogs": "HoGS: edge LDP + feature LDP, homophily-based reconstruction",
    "hogs-edge": "HoGS with edge LDP only; features public (Table III)",
    "none": "non-private: the original graph and features (upper bound)",
    "features-only": "feature-only floor: 1-bit features, no edges (train with --model mlp)",
}


class UnknownProtocolError(ValueError):
    pass


def make_protocol(name: str, **params: Any) -> LdpProtocol:
    """Build a protocol from its name and parameters (epsilon, feature_share, tau, steps)."""
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
    return FeaturesOnly(float(params["epsilon"]), float(params.get("feature_share", 0.5)))


def protocol_from_config(cfg: dict[str, Any]) -> LdpProtocol:
    """Rebuild the protocol a server described in a round message."""
    name = cfg.get("protocol")
    if not isinstance(name, str):
        raise UnknownProtocolError("round message has no protocol name")
    params = {k: v for k, v in cfg.items() if k != "protocol"}
    return make_protocol(name, **params)
