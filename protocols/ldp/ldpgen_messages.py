"""LDPGen's round messages and what a node computes from them (Qin et al., CCS'17, as
Blink_GNN implements it): the public partitions ξ0 and ξ1 and the node's true neighbour count
per group, before its noise. numpy only (the client's import path).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..rng import stage_rng

#: Message keys of round 1: the number of groups k1 and ξ1 as int32 bytes.
MSG_K = "ldpgen_k"
MSG_GROUPS = "ldpgen_groups"
#: The most groups a degree vector may have (a server-chosen k0 sizes each node's report).
MAX_GROUPS = 4096
#: Round 0's public partition seed: ξ0 is the same for every node (and the server) because the
#: server sends it, not because the nodes share a stream (a deployed node's own seed is entropy).
MSG_P0 = "ldpgen_partition0_seed"


def extra_names(k0: int) -> tuple[str, ...]:
    """The extras of a round-0 report: ``deg0 … deg{k0−1}``."""
    return tuple(f"deg{g}" for g in range(k0))


def initial_partition(seed: int, n: int, k0: int) -> np.ndarray:
    """ξ0: every node's group, uniform in [0, k0), from the public stage stream."""
    return stage_rng(seed, "ldpgen-partition0").integers(0, k0, size=n).astype(np.int64)


def encode_groups(groups: np.ndarray) -> bytes:
    return np.asarray(groups, dtype="<i4").tobytes()


def decode_groups(payload: Any, n: int, k: int) -> np.ndarray:
    """ξ1 from the round message, validated (length n, values in [0, k))."""
    if not isinstance(payload, bytes | bytearray) or len(payload) != 4 * n:
        raise ValueError(f"{MSG_GROUPS} must be {4 * n} bytes of int32")
    groups = np.frombuffer(bytes(payload), dtype="<i4").astype(np.int64)
    if groups.size and (groups.min() < 0 or groups.max() >= k):
        raise ValueError(f"{MSG_GROUPS} has a group outside [0, {k})")
    return groups


def round0_seed(message: Mapping[str, Any], default: int) -> int:
    """Round 0's public seed of ξ0 (``default`` when the message omits it, as tests do)."""
    p0 = message.get(MSG_P0, default)
    if isinstance(p0, bool) or not isinstance(p0, int) or not 0 <= p0 < 2**63:
        raise ValueError(f"{MSG_P0} must be an integer in [0, 2^63), got {p0!r}")
    return p0


def round1_groups(message: Mapping[str, Any], n: int) -> tuple[int, np.ndarray]:
    """Round 1's k1 and ξ1 from the message, validated (k1 an integer in [1, n])."""
    k = message.get(MSG_K)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
        raise ValueError(f"{MSG_K} must be an integer in [1, {n}], got {k!r}")
    return k, decode_groups(message.get(MSG_GROUPS), n, k)


def group_degrees(neighbors: np.ndarray, groups: np.ndarray, k: int) -> np.ndarray:
    """δ[g] = |N(u) ∩ groups⁻¹(g)|: the node's true neighbour count in every group (int64:
    the discrete Laplace mechanism takes integers)."""
    return np.bincount(groups[np.asarray(neighbors, dtype=np.int64)], minlength=k).astype(np.int64)
