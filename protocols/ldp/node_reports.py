"""The two perturbations most protocols' client steps share, each on the node's own stream:
randomized response on its adjacency row and the 1-bit mechanism on its features. numpy only
(client import path)."""

from __future__ import annotations

import numpy as np

from ..mechanisms import AsymmetricRR, OneBit, RandomizedResponse
from ..rng import ADJACENCY, FEATURES, SAMPLING, node_rng
from ..types import NodeView


def noisy_row(view: NodeView, epsilon: float, seed: int, round_: int) -> np.ndarray:
    """Sorted int32 ids of the node's reported 1-bits (RR with ``epsilon``, diagonal excluded)."""
    return RandomizedResponse(epsilon).perturb_row(
        view.neighbors,
        view.num_nodes,
        node_rng(seed, view.node_id, round_, ADJACENCY),
        exclude=view.node_id,
    )


def sampled_row(view: NodeView, epsilon: float, mu: float, seed: int, round_: int) -> np.ndarray:
    """:func:`noisy_row` (the same RR draws, on the ADJACENCY stream), then each reported 1
    kept with probability ``mu`` on the node's SAMPLING stream (asymmetric RR)."""
    return AsymmetricRR(epsilon, mu).perturb_row(
        view.neighbors,
        view.num_nodes,
        node_rng(seed, view.node_id, round_, ADJACENCY),
        exclude=view.node_id,
        keep_rng=node_rng(seed, view.node_id, round_, SAMPLING),
    )


def noisy_features(view: NodeView, epsilon: float, seed: int, round_: int) -> np.ndarray:
    """The node's 1-bit-perturbed feature vector (uint8) with ``epsilon`` per bit."""
    mech = OneBit(epsilon, view.feature_domain)
    return mech.perturb(view.features, node_rng(seed, view.node_id, round_, FEATURES))
