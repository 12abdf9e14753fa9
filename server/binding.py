"""Which SuperNode may speak for which node: the partition's manifest, and the hello round's
rule that applies it.

``ldpgraph partition --supernode-keys`` binds every node file (a block of node ids) to the
public key of the SuperNode that will host it, the key Flower's SuperNode authentication
checks on every connection (``flower-supernode --auth-supernode-private-key``; the SuperLink
knows each connected SuperNode's key and tells the ServerApp through ``Grid.get_nodes()``). The
binding is written into the curator file, which only the server reads. In the hello round a
SuperNode's claim for a node id is granted only when the manifest binds that id to the
SuperNode's own key; every other claim is refused and counted, so a SuperNode that claims
another's ids gets none of them, and the honest owner still gets all of its own whatever the
order of the replies.

Without a manifest (the simulation engine, whose virtual SuperNodes the harness starts itself
and which have no keys) no claim is trusted over another: an id claimed by more than one
SuperNode goes to none of them, and is counted. A deployment without a manifest is refused.

A key's identity is the SHA-256 of its DER SubjectPublicKeyInfo (the same for the OpenSSH
``.pub`` file the operator holds and the PEM the SuperLink stores).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: The reasons a claim is refused (the record counts node ids per reason).
NOT_BOUND = "claim for a node bound to another SuperNode"
NO_KEY = "claim by a SuperNode without a registered key the manifest names"
CONTESTED = "node claimed by more than one SuperNode"
INVALID = "SuperNode sent a malformed host list (counted per SuperNode)"


class BindingError(ValueError):
    """A public key or manifest that cannot be read; the message says why, in one line."""


def key_fingerprint(data: bytes | str) -> str:
    """The identity of a SuperNode's public key: sha256 of its DER SubjectPublicKeyInfo, hex.
    ``data``: an OpenSSH public key line (``.pub``) or a PEM public key (what the SuperLink
    stores and ``Grid.get_nodes()`` returns)."""
    from cryptography.hazmat.primitives import serialization

    raw = data.encode() if isinstance(data, str) else bytes(data)
    try:
        if raw.lstrip().startswith(b"-----BEGIN"):
            key = serialization.load_pem_public_key(raw)
        else:
            key = serialization.load_ssh_public_key(raw.strip())
    except (ValueError, TypeError) as exc:
        raise BindingError(f"not an OpenSSH or PEM public key ({exc})") from None
    der = key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(der).hexdigest()


@dataclass(frozen=True)
class Manifest:
    """node id → the fingerprint of the key of the SuperNode that hosts it, as blocks of
    consecutive ids (``first``, ``count``, ``supernode``), the curator file's ``blocks``."""

    num_nodes: int
    blocks: tuple[tuple[int, int, str], ...]

    @classmethod
    def from_blocks(cls, num_nodes: int, blocks: Sequence[Mapping[str, Any]]) -> Manifest | None:
        """The manifest of a curator file's blocks; None when no block names a SuperNode key,
        an error when only some do."""
        keys = [b.get("supernode") for b in blocks]
        if not any(keys):
            return None
        if not all(isinstance(k, str) and len(k) == 64 for k in keys):
            raise BindingError("the curator file binds only some node files to a SuperNode key")
        return cls(
            num_nodes,
            tuple((int(b["first"]), int(b["count"]), str(b["supernode"])) for b in blocks),
        )

    def owners(self) -> np.ndarray:
        """For every node id the index of its key in :attr:`keys` (−1: bound to none)."""
        keys = self.keys
        out = np.full(self.num_nodes, -1, dtype=np.int64)
        for first, count, key in self.blocks:
            out[first : first + count] = keys.index(key)
        return out

    @property
    def keys(self) -> list[str]:
        return sorted({key for _, _, key in self.blocks})


@dataclass
class HelloStats:
    """What the hello round granted: SuperNodes that replied, node ids granted, and the node
    ids whose claim was refused, per reason."""

    supernodes: int = 0
    granted: int = 0
    refused: int = 0
    reasons: Counter = field(default_factory=Counter)
    binding: str = ""

    def refuse(self, count: int, reason: str) -> None:
        if count:
            self.refused += count
            self.reasons[reason] += count

    def to_dict(self) -> dict[str, Any]:
        return {
            "binding": self.binding,
            "supernodes": self.supernodes,
            "granted": self.granted,
            "refused_claims": self.refused,
            "reasons": dict(self.reasons.most_common()),
        }


def parse_claim(raw: Any, num_nodes: int) -> np.ndarray | None:
    """The node ids of a hello reply's host list (little-endian int32 bytes), or None when it
    is malformed: not bytes, empty, out of [0, n) or with a repeated id."""
    if not isinstance(raw, bytes) or not raw or len(raw) % 4:
        return None
    ids = np.frombuffer(raw, dtype="<i4").astype(np.int64)
    if ids.min() < 0 or ids.max() >= num_nodes or np.unique(ids).size != ids.size:
        return None
    return ids


def grant_claims(
    claims: Mapping[int, np.ndarray | None],
    num_nodes: int,
    manifest: Manifest | None = None,
    keys: Mapping[int, str | None] | None = None,
) -> tuple[dict[int, np.ndarray], HelloStats]:
    """The node ids each SuperNode may speak for. ``claims``: by SuperNode id, the ids it
    claims (None: a malformed host list); ``keys``: by SuperNode id, the fingerprint of its
    authenticated key (None: it has none). The result does not depend on the order of
    ``claims``: a claim is granted on the manifest, never on being first."""
    stats = HelloStats(supernodes=len(claims))
    stats.binding = (
        f"manifest: {len(manifest.keys)} SuperNode key(s) bind {num_nodes} nodes"
        if manifest is not None
        else "none: an id claimed by more than one SuperNode goes to none (simulation)"
    )
    keys = keys or {}
    wanted: dict[int, np.ndarray] = {}
    owners = manifest.owners() if manifest is not None else None
    index = {k: i for i, k in enumerate(manifest.keys)} if manifest is not None else {}
    for sid, ids in claims.items():
        if ids is None:
            stats.refuse(1, INVALID)
            continue
        if owners is not None:
            mine = index.get(keys.get(sid) or "", -2)
            if mine == -2:
                stats.refuse(int(ids.size), NO_KEY)
                continue
            ok = owners[ids] == mine
            stats.refuse(int((~ok).sum()), NOT_BOUND)
            ids = ids[ok]
        wanted[sid] = ids
    count = np.zeros(num_nodes, dtype=np.int64)
    for ids in wanted.values():
        count[ids] += 1
    hosts: dict[int, np.ndarray] = {}
    for sid in sorted(wanted):
        ids = wanted[sid]
        alone = count[ids] == 1
        stats.refuse(int((~alone).sum()), CONTESTED)
        if alone.any():
            hosts[sid] = ids[alone]
            stats.granted += int(alone.sum())
    return hosts, stats


__all__ = [
    "CONTESTED",
    "INVALID",
    "NOT_BOUND",
    "NO_KEY",
    "BindingError",
    "HelloStats",
    "Manifest",
    "grant_claims",
    "key_fingerprint",
    "parse_claim",
]
