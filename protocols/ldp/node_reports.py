"""The two perturbations most protocols' client steps share, each on the node's own stream:
randomized response on its adjacency row and the 1-bit mechanism on its features. numpy only
(client import path).

:func:`rr_onebit_batch` is the same client step for a whole :class:`NodeBatch` at once: every
node still draws from its own streams (:func:`~ldpgraph.protocols.rng.node_rng`'s, built in
bulk), makes exactly the draws :func:`noisy_row` / :func:`noisy_features` make, in the same
order, so the reports are byte-identical to the node-by-node ones; what is batched is the
bookkeeping around the draws (building the streams, the feature probabilities, the packing;
the adjacency rows in :mod:`.rr_batch`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..batch import NodeBatch, ReportBatch
from ..laplace import DiscreteLaplace
from ..mechanisms import AsymmetricRR, OneBit, RandomizedResponse, check_keep_probability
from ..rng import ADJACENCY, DEGREE, FEATURES, SAMPLING, node_rng
from ..sorting import unique_ints
from ..types import NodeView
from .rr_batch import MAX_SLICED_NODES, rr_rows, streams, strict_rows


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


def noisy_degree(view: NodeView, epsilon: float, seed: int, round_: int) -> int:
    """The node's degree (its distinct neighbours) plus discrete Laplace noise with ``epsilon``."""
    neighbors = np.asarray(view.neighbors, dtype=np.int64)
    degree = int(np.unique(neighbors[neighbors != view.node_id]).shape[0])
    return DiscreteLaplace(epsilon).perturb(degree, node_rng(seed, view.node_id, round_, DEGREE))


def rr_onebit_batch(
    batch: NodeBatch,
    round_: int,
    seeds: int | Sequence[int],
    eps_adjacency: float | None,
    eps_features: float | None,
    degree: tuple[str, float] | None = None,
    mu: float = 1.0,
) -> ReportBatch:
    """Every node's report of a round made of RR on its adjacency row (``eps_adjacency``;
    None: no adjacency; ``mu`` < 1: asymmetric RR, each reported 1 kept with μ), 1-bit
    features (``eps_features``; None: none) and, optionally, its noisy degree as the extra
    field ``degree = (name, ε)``: the reports :func:`noisy_row` (:func:`sampled_row`),
    :func:`noisy_features` and :func:`noisy_degree` make node by node, byte for byte.

    Args:
        batch: the nodes and what each knows.
        round_: the round.
        seeds: the run seed of every node's streams, or one seed per node (OS entropy).
        eps_adjacency: ε of each adjacency bit, or None.
        eps_features: ε of each feature bit, or None.
        degree: (extra field name, ε of the degree), or None.
    """
    m, n = len(batch), batch.num_nodes
    nodes = batch.nodes
    indptr = indices = None
    if eps_adjacency is not None:
        check_keep_probability(mu)  # as a node refuses μ outside (0, 1]
        strict = strict_rows(batch)
        # The slices sort 2·rank + 1 in int32: ranks (and ids) must stay below 2^30.
        if strict is None or n > MAX_SLICED_NODES:
            return _reference_batch(batch, round_, seeds, eps_adjacency, eps_features, degree, mu)
        indptr, indices = rr_rows(batch, strict, round_, seeds, eps_adjacency, mu)
    features = None
    if eps_features is not None:
        features = _onebit_rows(batch, round_, seeds, eps_features)
    extras = {}
    if degree is not None:
        name, eps = degree
        extras[name] = (_degrees(batch, round_, seeds, eps), np.ones(m, dtype=bool))
    return ReportBatch(round_, n, nodes, indptr, indices, None, features, None, extras)


def _onebit_rows(
    batch: NodeBatch, round_: int, seeds: int | Sequence[int], epsilon: float
) -> np.ndarray:
    """:meth:`OneBit.perturb` of every row: one uniform per feature from each node's stream."""
    x = batch.features
    mech = OneBit(epsilon, batch.feature_domain)
    stream = streams(seeds, batch.nodes, round_, FEATURES)
    out = np.empty(x.shape, dtype=np.uint8)
    step = max(1, (1 << 22) // max(1, 8 * x.shape[1]))  # ~4 MB of uniforms at a time
    for lo in range(0, len(batch), step):
        hi = min(lo + step, len(batch))
        prob = mech.probability(x[lo:hi])
        uniforms = np.empty(prob.shape, dtype=np.float64)
        for k in range(lo, hi):
            stream(k).random(out=uniforms[k - lo])
        np.less(uniforms, prob, out=out[lo:hi], casting="unsafe")
    return out


def _degrees(
    batch: NodeBatch, round_: int, seeds: int | Sequence[int], epsilon: float
) -> np.ndarray:
    """:func:`noisy_degree` of every node, as float64 (what the report's extras carry)."""
    mech = DiscreteLaplace(epsilon)
    stream = streams(seeds, batch.nodes, round_, DEGREE)
    n = batch.num_nodes
    ones = np.asarray(batch.indices, dtype=np.int64)
    rows = np.repeat(np.arange(len(batch), dtype=np.int64), np.diff(batch.indptr))
    other = ones != batch.nodes[rows]
    distinct = unique_ints(rows[other] * (n + 1) + ones[other]) // (n + 1)
    degrees = np.bincount(distinct, minlength=len(batch)).tolist()
    return np.array(
        [float(mech.perturb(degrees[k], stream(k))) for k in range(len(batch))],
        dtype=np.float64,
    )


def _reference_batch(
    batch: NodeBatch,
    round_: int,
    seeds: int | Sequence[int],
    eps_adjacency: float | None,
    eps_features: float | None,
    degree: tuple[str, float] | None,
    mu: float = 1.0,
) -> ReportBatch:
    """The batch made node by node with the reference functions (rows that are not strictly
    increasing: the batched path assumes sorted, duplicate-free rows; graphs past 2^30 nodes)."""
    from ..types import Report

    reports = []
    for k, view in enumerate(batch.views()):
        seed = int(seeds) if isinstance(seeds, int | np.integer) else int(seeds[k])
        if eps_adjacency is None:
            adj = None
        elif mu < 1.0:
            adj = sampled_row(view, eps_adjacency, mu, seed, round_)
        else:
            adj = noisy_row(view, eps_adjacency, seed, round_)
        feats = None if eps_features is None else noisy_features(view, eps_features, seed, round_)
        extras = {}
        if degree is not None:
            extras[degree[0]] = float(noisy_degree(view, degree[1], seed, round_))
        reports.append(Report(view.node_id, round_, view.num_nodes, adj, feats, extras))
    return ReportBatch.from_reports(batch.nodes, reports, round_, batch.num_nodes)
