"""The two perturbations most protocols' client steps share, each on the node's own stream:
randomized response on its adjacency row and the 1-bit mechanism on its features. numpy only
(client import path).

:func:`rr_onebit_batch` is the same client step for a whole :class:`NodeBatch` at once: every
node still draws from its own streams (:func:`~ldpgraph.protocols.rng.node_rng`'s, built in
bulk), makes exactly the draws :func:`noisy_row` / :func:`noisy_features` make, in the same
order, so the reports are byte-identical to the node-by-node ones; what is batched is the
bookkeeping around the draws (building the streams, the feature probabilities, the packing).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..batch import NodeBatch, ReportBatch
from ..laplace import DiscreteLaplace
from ..mechanisms import AsymmetricRR, OneBit, RandomizedResponse
from ..rng import (
    ADJACENCY,
    DEGREE,
    FEATURES,
    SAMPLING,
    batch_streams_exact,
    generator_from_words,
    node_rng,
    stream_words,
)
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


def noisy_degree(view: NodeView, epsilon: float, seed: int, round_: int) -> int:
    """The node's degree (its distinct neighbours) plus discrete Laplace noise with ``epsilon``."""
    neighbors = np.asarray(view.neighbors, dtype=np.int64)
    degree = int(np.unique(neighbors[neighbors != view.node_id]).shape[0])
    return DiscreteLaplace(epsilon).perturb(degree, node_rng(seed, view.node_id, round_, DEGREE))


def _streams(seeds: int | Sequence[int], nodes: np.ndarray, round_: int, purpose: int):
    """A function k -> the generator of the batch's k-th node for ``purpose``."""
    if batch_streams_exact():
        words = stream_words(seeds, nodes, round_, purpose)
        return lambda k: generator_from_words(words[k])
    node_list = nodes.tolist()
    if isinstance(seeds, int | np.integer):
        return lambda k: node_rng(int(seeds), node_list[k], round_, purpose)
    return lambda k: node_rng(int(seeds[k]), node_list[k], round_, purpose)


def _strict_rows(batch: NodeBatch) -> tuple[np.ndarray, np.ndarray] | None:
    """Every row's neighbours without the node itself (indptr int64, indices int64), or None
    when a row is not strictly increasing or names a node outside the graph (then the
    node-by-node path serves the batch, and the server judges what it makes of such rows)."""
    indptr = np.asarray(batch.indptr, dtype=np.int64)
    ones = np.asarray(batch.indices, dtype=np.int64)
    rows = np.repeat(np.arange(len(batch)), np.diff(indptr))
    own = ones == batch.nodes[rows]
    if own.any():
        keep = ~own
        ones, rows = ones[keep], rows[keep]
        indptr = np.zeros(len(batch) + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=len(batch)), out=indptr[1:])
    step_ok = np.diff(ones) > 0
    same_row = rows[1:] == rows[:-1]
    if (same_row & ~step_ok).any():
        return None
    if ones.size and (ones.min() < 0 or ones.max() >= batch.num_nodes):
        return None
    return indptr, ones


def rr_onebit_batch(
    batch: NodeBatch,
    round_: int,
    seeds: int | Sequence[int],
    eps_adjacency: float | None,
    eps_features: float | None,
    degree: tuple[str, float] | None = None,
) -> ReportBatch:
    """Every node's report of a round made of RR on its adjacency row (``eps_adjacency``;
    None: no adjacency), 1-bit features (``eps_features``; None: none) and, optionally, its
    noisy degree as the extra field ``degree = (name, ε)``: the reports :func:`noisy_row`,
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
        strict = _strict_rows(batch)
        if strict is None:
            return _reference_batch(batch, round_, seeds, eps_adjacency, eps_features, degree)
        indptr, indices = _rr_rows(batch, strict, round_, seeds, eps_adjacency)
    features = None
    if eps_features is not None:
        features = _onebit_rows(batch, round_, seeds, eps_features)
    extras = {}
    if degree is not None:
        name, eps = degree
        extras[name] = (_degrees(batch, round_, seeds, eps), np.ones(m, dtype=bool))
    return ReportBatch(round_, n, nodes, indptr, indices, None, features, None, extras)


def _rr_rows(
    batch: NodeBatch,
    strict: tuple[np.ndarray, np.ndarray],
    round_: int,
    seeds: int | Sequence[int],
    epsilon: float,
) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`RandomizedResponse.perturb_row` of every row: the same draws on each node's
    stream (survival uniforms, the binomial count, the flipped ranks), the same mapping."""
    m, n = len(batch), batch.num_nodes
    p = RandomizedResponse(epsilon).p
    ptr, ones = strict
    deg = np.diff(ptr)
    # The excluded ids of a row (its neighbours and itself), sorted, and for each the number
    # of zeros below it (``below`` of perturb_row).
    rows = np.repeat(np.arange(m, dtype=np.int64), deg)
    own = np.arange(m, dtype=np.int64) * (n + 1) + batch.nodes
    key = np.concatenate([rows * (n + 1) + ones, own])
    key.sort()
    excluded = key % (n + 1)
    ex_ptr = ptr + np.arange(m + 1, dtype=np.int64)
    below = excluded - (np.arange(excluded.size, dtype=np.int64) - np.repeat(ex_ptr[:-1], deg + 1))
    # The rows are built in int32 (their final type; every id is < n < 2^31): numpy sorts
    # int32 about twice as fast as int64, and sorting is most of a dense row's cost.
    below = below.astype(np.int32)
    ones = ones.astype(np.int32)
    num_zeros = (n - deg - 1).tolist()
    uniforms = np.empty(ones.size, dtype=np.float64)
    stream = _streams(seeds, batch.nodes, round_, ADJACENCY)
    starts, ex_starts = ptr.tolist(), ex_ptr.tolist()
    out: list[np.ndarray] = []
    lengths = np.empty(m, dtype=np.int64)
    concatenate = np.concatenate
    for k in range(m):
        rng = stream(k)
        a, b = starts[k], starts[k + 1]
        u = uniforms[a:b]
        rng.random(out=u)
        kept = ones[a:b][u >= p]
        nz = num_zeros[k]
        count = int(rng.binomial(nz, p)) if nz > 0 else 0
        if count:
            ranks = rng.choice(nz, size=count, replace=False, shuffle=False).astype(np.int32)
            ranks.sort()  # sorted queries: a faster search, a nearly sorted row to sort
            ranks += below[ex_starts[k] : ex_starts[k + 1]].searchsorted(ranks, side="right")
            row = concatenate((kept, ranks))
            row.sort()
        else:
            row = kept
        out.append(row)
        lengths[k] = row.shape[0]
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    if out:
        concatenate(out, out=indices)
    return indptr, indices


def _onebit_rows(
    batch: NodeBatch, round_: int, seeds: int | Sequence[int], epsilon: float
) -> np.ndarray:
    """:meth:`OneBit.perturb` of every row: one uniform per feature from each node's stream."""
    x = batch.features
    mech = OneBit(epsilon, batch.feature_domain)
    stream = _streams(seeds, batch.nodes, round_, FEATURES)
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
    stream = _streams(seeds, batch.nodes, round_, DEGREE)
    n = batch.num_nodes
    ones = np.asarray(batch.indices, dtype=np.int64)
    rows = np.repeat(np.arange(len(batch), dtype=np.int64), np.diff(batch.indptr))
    other = ones != batch.nodes[rows]
    distinct = np.unique(rows[other] * (n + 1) + ones[other]) // (n + 1)
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
) -> ReportBatch:
    """The batch made node by node with the reference functions (rows that are not strictly
    increasing: the batched path assumes sorted, duplicate-free rows)."""
    from ..types import Report

    reports = []
    for k, view in enumerate(batch.views()):
        seed = int(seeds) if isinstance(seeds, int | np.integer) else int(seeds[k])
        adj = None if eps_adjacency is None else noisy_row(view, eps_adjacency, seed, round_)
        feats = None if eps_features is None else noisy_features(view, eps_features, seed, round_)
        extras = {}
        if degree is not None:
            extras[degree[0]] = float(noisy_degree(view, degree[1], seed, round_))
        reports.append(Report(view.node_id, round_, view.num_nodes, adj, feats, extras))
    return ReportBatch.from_reports(batch.nodes, reports, round_, batch.num_nodes)
