"""The hidden link set that ``lp`` and ``attack`` score (not a metric itself).

Before any node reports, a seeded 20 % of the graph's undirected edges is taken out of the graph
the nodes hold, and as many true non-edges (pairs unconnected in the original graph) are drawn
beside them. No node ever reports a hidden edge and no mechanism sees one, so every release is
scored on links it cannot have copied: a scorer trained on the release ranks the hidden edges
against the hidden non-edges (ROC-AUC).

The nodes hold the reduced graph for *everything*: the release node classification trains on
is built from it too, so a run with ``lp`` or ``attack`` trains on 80 % of the edges (its
``metrics`` key is part of the run's identity, so it never mixes with a run without them).
Features and labels are unchanged. The split follows the PrivDPR paper's link prediction
(80/20 of the links, equal non-edges for the test set; PrivDPR, §6).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ldpgraph.protocols.graph import Graph, sample_free_pairs
from ldpgraph.protocols.rng import stage_rng

#: Share of the undirected edges hidden from the nodes.
HIDDEN_FRACTION = 0.2
#: The shared-prepare key of the metrics that score the hidden set (``lp``, ``attack``).
HOLDOUT_KEY = "hidden-links"


class HoldoutError(ValueError):
    """A graph that cannot give a hidden link set (too few edges or non-edges)."""


@dataclass(frozen=True)
class HeldOut:
    """The hidden true edges and as many true non-edges, each ``[k, 2]`` int64 with u < v."""

    edges: np.ndarray
    non_edges: np.ndarray

    @property
    def count(self) -> int:
        return int(self.edges.shape[0])

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """The targets as ``[2k, 2]`` pairs and their labels (1: hidden edge, 0: non-edge)."""
        labels = np.concatenate([np.ones(self.count), np.zeros(len(self.non_edges))])
        return np.concatenate([self.edges, self.non_edges]), labels.astype(np.int64)


def pair_keys(pairs: np.ndarray, num_nodes: int) -> np.ndarray:
    """One int64 key per unordered pair (``min * n + max``)."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    return np.minimum(pairs[:, 0], pairs[:, 1]) * num_nodes + np.maximum(pairs[:, 0], pairs[:, 1])


def sample_non_edges(
    edges: np.ndarray,
    num_nodes: int,
    count: int,
    rng: np.random.Generator,
    taken: np.ndarray | None = None,
) -> np.ndarray:
    """``count`` distinct pairs u < v that are not in ``edges`` (canonical ``[m, 2]``), uniform
    over all such pairs, as ``[count, 2]`` in draw order. Rejection sampling in batches (cost
    grows with ``count``, not n²); when most pairs are edges, the free pairs are listed (there
    are then at most ~5 m pairs in all). ``taken``: the edges' sorted :func:`pair_keys`, when
    the caller samples many times from one graph."""
    n = int(num_nodes)
    total = n * (n - 1) // 2
    if taken is None:
        taken = np.sort(pair_keys(edges, n))
    free = total - len(taken)
    if count > free:
        raise HoldoutError(f"the graph has {free} non-edges, fewer than the {count} needed")
    return sample_free_pairs(n, count, taken, rng)


def hide_edges(
    graph: Graph, seed: int, fraction: float = HIDDEN_FRACTION, metric: str = "lp"
) -> tuple[Graph, HeldOut]:
    """The graph the nodes hold (``graph`` less a seeded ``fraction`` of its edges; features,
    labels and the other edges unchanged) and the hidden set. Deterministic in ``seed``."""
    m, n = graph.num_edges, graph.num_nodes
    count = int(fraction * m)
    if count < 1:
        need = int(np.ceil(1 / fraction))
        raise HoldoutError(
            f"metric {metric} hides {fraction:.0%} of the edges before collection and needs a "
            f"graph of at least {need} edges (one hidden edge); {graph.name} has {m}"
        )
    rng = stage_rng(seed, "hidden-links")
    hidden = np.zeros(m, dtype=bool)
    hidden[rng.choice(m, size=count, replace=False)] = True
    try:
        non_edges = sample_non_edges(graph.edges, n, count, rng)
    except HoldoutError as exc:
        raise HoldoutError(
            f"metric {metric} needs as many non-edges as hidden edges ({count}): {exc}"
        ) from None
    order = np.argsort(pair_keys(non_edges, n), kind="stable")
    held = HeldOut(graph.edges[hidden].copy(), non_edges[order])
    # The cached adjacency (meta "_adj") is the full graph's: drop it, keep the rest.
    meta = {k: v for k, v in graph.meta.items() if not k.startswith("_")}
    return replace(graph, edges=graph.edges[~hidden].copy(), meta=meta), held


@dataclass(frozen=True)
class InnerSplit:
    """A release's own link split, drawn the way :func:`hide_edges` draws the hidden set: the
    release less its ``pairs``' positives (``kept``, what a scorer may encode), and the
    ``[k + k', 2]`` training pairs (``k`` release edges taken out of ``kept``, then ``k'`` ≤ k
    release non-edges) with their 0/1 ``labels``."""

    kept: np.ndarray
    pairs: np.ndarray
    labels: np.ndarray


def inner_split(
    edges: np.ndarray,
    num_nodes: int,
    exclude: np.ndarray,
    seed: int,
    fraction: float = HIDDEN_FRACTION,
    limit: int | None = None,
) -> InnerSplit:
    """Hide a seeded ``fraction`` (at least one, at most ``limit``) of the release's ``edges``
    and draw as many of its non-edges, none of them among the ``exclude`` pairs (the targets,
    handed over unlabelled). A scorer trained to tell these positives from these negatives,
    on features of ``kept``, learns the task it is scored on: the hidden links are absent from
    the graph it reads, and the non-edges are uniform pairs, as the targets are (Lichtenwalter
    et al. 2010: train on links the feature graph does not hold). Fewer non-edges than
    positives where the release is nearly complete; no pairs at all where it has no edge or no
    free pair.

    Args:
        edges: the release's canonical ``[m, 2]`` edges.
        num_nodes: node count.
        exclude: ``[t, 2]`` target pairs (either orientation).
        seed: the run seed (the draws come from its ``"inner-links"`` stage).
        fraction: share of the release's edges taken out.
        limit: positives at most.
    """
    n = int(num_nodes)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    m = len(edges)
    empty = np.zeros((0, 2), dtype=np.int64)
    count = max(1, int(fraction * m)) if m else 0
    if limit is not None:
        count = min(count, limit)
    taken = np.union1d(pair_keys(edges, n), pair_keys(exclude, n))
    negatives = min(count, n * (n - 1) // 2 - len(taken))
    if count == 0 or negatives <= 0:
        return InnerSplit(edges, empty, np.zeros(0, dtype=np.int64))
    rng = stage_rng(seed, "inner-links")
    hidden = np.zeros(m, dtype=bool)
    hidden[rng.choice(m, size=count, replace=False)] = True
    non_edges = sample_free_pairs(n, negatives, taken, rng)
    labels = np.concatenate([np.ones(count), np.zeros(negatives)]).astype(np.int64)
    return InnerSplit(edges[~hidden], np.concatenate([edges[hidden], non_edges]), labels)


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve: scikit-learn's ``roc_auc_score`` (ties counted half), with a
    one-line error where it is undefined (one class) or the scores are not finite."""
    from sklearn.metrics import roc_auc_score  # not at import: choosing metrics stays cheap

    labels = np.asarray(labels).astype(bool).ravel()
    scores = np.asarray(scores, dtype=np.float64).ravel()
    if labels.shape != scores.shape:
        raise ValueError(f"{labels.size} labels for {scores.size} scores")
    if labels.all() or not labels.any():
        raise ValueError("ROC-AUC needs at least one positive and one negative")
    if not np.isfinite(scores).all():
        raise ValueError("ROC-AUC of non-finite scores")
    return float(roc_auc_score(labels, scores))


def held_out_of(ctx_held_out: object, metric: str) -> HeldOut:
    """The hidden set a metric's prepare step kept, or a clear error where there is none."""
    if not isinstance(ctx_held_out, HeldOut):
        raise ValueError(
            f"metric {metric} scores the links hidden before collection, but this run hid none "
            "(run it through ldpgraph.simulation.pipeline, which prepares every chosen metric)"
        )
    return ctx_held_out


def release_training_pairs(
    edges: np.ndarray,
    num_nodes: int,
    exclude: np.ndarray,
    size: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """What a classifier attack trains on: up to ``size`` of the release's ``edges`` (label 1)
    and as many of its non-edges (label 0), none of them among the ``exclude`` pairs (the
    targets the attack will score: it is handed them unlabelled and never trains on them).
    The non-edges are uniform over the release's other non-edges; fewer non-edges than
    positives leaves fewer positives (a near-complete release). Returns ``[2k, 2]`` pairs
    (positives first) and their 0/1 labels; empty when the release has no usable edge.

    Args:
        edges: the release's canonical ``[m, 2]`` edges.
        num_nodes: node count.
        exclude: ``[t, 2]`` target pairs (either orientation).
        size: positives at most (a uniform subset of the usable edges above it).
        rng: the draws.
    """
    n = int(num_nodes)
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    banned = np.unique(pair_keys(exclude, n))
    keys = pair_keys(edges, n)
    usable = edges[~np.isin(keys, banned)]
    taken = np.union1d(keys, banned)
    size = min(len(usable), size, n * (n - 1) // 2 - len(taken))
    if size <= 0:
        return np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64)
    pos = usable if size == len(usable) else usable[rng.choice(len(usable), size, replace=False)]
    neg = sample_free_pairs(n, size, taken, rng)
    labels = np.concatenate([np.ones(size), np.zeros(size)]).astype(np.int64)
    return np.concatenate([pos, neg]), labels
