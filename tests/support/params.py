"""Building every protocol the same way in parametrised tests."""

from __future__ import annotations

from typing import Any

from ldpgraph.protocols.registry import protocol_info


def at_epsilon(name: str, epsilon: float) -> dict[str, Any]:
    """``{"epsilon": epsilon}`` for a protocol that declares ε, ``{}`` for one that has none
    (``none``): make_protocol refuses a parameter the protocol does not declare."""
    return {"epsilon": epsilon} if "epsilon" in protocol_info(name).param_names else {}
