"""Building every protocol the same way in parametrised tests."""

from __future__ import annotations

from typing import Any

from ldpgraph.protocols.registry import protocol_info


def at_epsilon(name: str, epsilon: float) -> dict[str, Any]:
    """``{"epsilon": epsilon}`` for a protocol that declares ε, ``{}`` for one that has none
    (``none``): make_protocol refuses a parameter the protocol does not declare."""
    return {"epsilon": epsilon} if "epsilon" in protocol_info(name).param_names else {}


#: Settings that let a protocol run on a test graph of a few dozen nodes (DPAR's defaults ask
#: for M = 70 APPR vectors on a training graph subsampled at q′ = 0.09).
SMALL_GRAPH = {"appr_nodes": 3, "q_prime": 0.9, "sgd_epochs": 2, "batch_size": 8}


def for_small_graph(name: str, epsilon: float) -> dict[str, Any]:
    """:func:`at_epsilon` plus the :data:`SMALL_GRAPH` settings ``name`` declares."""
    declared = protocol_info(name).param_names
    return {**at_epsilon(name, epsilon), **{k: v for k, v in SMALL_GRAPH.items() if k in declared}}
