"""Explicit random streams.

Every random draw in ldpgraph comes from a generator derived from (run seed, node id, round,
purpose) for a node's report, or from (run seed, stage) for a server-side stage. The same seed
therefore gives the same report whether the node runs as a Flower client, in a batch or in a
vectorised loop, and no code touches a global random state.
"""

from __future__ import annotations

import hashlib

import numpy as np

#: Purposes of a node's streams; each gets its own independent stream so that, e.g., the
#: adjacency report of a node does not change when the feature mechanism changes.
ADJACENCY = 1
FEATURES = 2
DEGREE = 3
#: Asymmetric RR's keep-or-drop draw on each reported 1 (``hogs-arr``): its own stream, so
#: the RR draws on ADJACENCY are HoGS's for the same seed whatever the sampling probability.
SAMPLING = 4


def _stage_key(stage: str) -> int:
    return int.from_bytes(hashlib.sha256(stage.encode()).digest()[:8], "little")


def node_rng(seed: int, node_id: int, round_: int, purpose: int) -> np.random.Generator:
    """The generator node ``node_id`` uses in round ``round_`` for ``purpose``."""
    if seed < 0 or node_id < 0 or round_ < 0:
        raise ValueError("seed, node id and round must be non-negative")
    return np.random.Generator(
        np.random.PCG64(np.random.SeedSequence([seed, node_id, round_, purpose]))
    )


def stage_rng(seed: int, stage: str) -> np.random.Generator:
    """The generator of a server-side stage (``"split"``, ``"synthetic-graph"``, …)."""
    if seed < 0:
        raise ValueError("seed must be non-negative")
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, _stage_key(stage)])))


def stage_seed(seed: int, stage: str) -> int:
    """A 63-bit integer seed for libraries that want one (torch), derived like stage_rng."""
    return int(stage_rng(seed, stage).integers(0, 2**63 - 1))
