"""``attack``: link-inference attacks on the release, the empirical privacy beside formal ε.

The attacker sees only the release (its edges, unweighted, and its features), never the
original graph, and scores the links hidden before collection against as many true non-links
(:mod:`.holdout`, the same set ``lp`` scores): a release that leaks no more about a link than
its own structure and features gives AUC 0.5. The attacks are PPGSL's Table III (Wu et al.
§1.7) on the published graph, with 𝒩 its neighbour sets:

* ``cn``, ``aa``, ``ra``, ``jaccard``: common neighbours, Adamic–Adar, resource allocation and
  Jaccard on the released graph (:mod:`.heuristics`);
* ``feature_cosine``: cosine of the two released feature rows (a release's features are what
  the attacker has: noisy under LDP, the true ones where a strategy publishes them);
* ``embedding_cosine``: cosine of the two GAE embeddings (PPGSL's main attack, GAE+sim);
  ``embedding_svm``: a linear SVM on the GAE embeddings' Hadamard product (GAE+ML, :mod:`.svm`);
* ``node2vec_cosine``: cosine of the two node2vec embeddings (N2V+sim, :mod:`.node2vec`);
  ``node2vec_svm``: the linear SVM on node2vec's (N2V+ML);
* ``seal``: SEAL-lite, a GNN on DRNL-labelled 2-hop enclosing subgraphs, no node attributes
  (:mod:`.seal`).

A zero vector has cosine 0. ``max`` is the strongest attack's AUC and ``best`` its name, over
all of them.

**Trained attacks.** ``embedding_svm``, ``node2vec_svm`` and ``seal`` learn from the release:
its edges as positives, as many of its non-edges as negatives (Wu et al. 2025). They are handed the
targets unlabelled and never train on one: the pairs a set scores (the hidden edges and
non-edges; the protected pairs and their non-links below) are left out of the training pairs
of the attacks that score it (:func:`~.holdout.release_training_pairs`), so each target set has
its own trained attacks, and the hidden-link figures do not depend on whether a release
declares protected pairs. The GAE and node2vec embeddings are unsupervised: they read the whole
release, once per evaluation.

**Protected links.** A release may declare the pairs it set out to hide (``Release.protected``:
PPGSL's sensitive links, which the curator saw in the upload and kept out of the release; Wu et
al. 2025, §V-A). The hidden links above are ones no mechanism saw, so they measure what a
release leaks about links in general, not whether a defence protects what it knew. When a
release declares protected pairs, the same attacks also score them against as many true
non-links (pairs unconnected in the original graph and not among the hidden non-edges, drawn
with ``stage_rng(seed, "protected-non-links")``) under ``attack.protected`` (AUCs, ``max``,
``best``, ``count``, and ``max_graph``/``best_graph``: the strongest of the attacks that read the
released graph (:data:`GRAPH_ATTACKS`), all but ``feature_cosine``, which a defence that
publishes the true features, as PPGSL does, cannot move); the top-level figures stay the
hidden-link ones, comparable across every protocol. A declared pair that is not a true edge of
the original graph is an error.

Records made before the trained attacks existed have ``max`` over the first six attacks only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldpgraph.protocols.graph import Graph, edges_to_csr
from ldpgraph.protocols.rng import stage_rng

from .base import EvaluationContext, Metric, register_metric
from .embedding import release_embedding
from .heuristics import structural_scores
from .holdout import (
    HOLDOUT_KEY,
    HeldOut,
    held_out_of,
    hide_edges,
    pair_keys,
    roc_auc,
    sample_non_edges,
)
from .lp import check_nodes
from .node2vec import release_node2vec
from .seal import SealAttack
from .svm import svm_scores

#: Every attack, in the order the record lists them.
ATTACKS = (
    "cn",
    "aa",
    "ra",
    "jaccard",
    "feature_cosine",
    "embedding_cosine",
    "embedding_svm",
    "node2vec_cosine",
    "node2vec_svm",
    "seal",
)
#: The attacks that read the released graph (``max_graph`` of the protected section).
GRAPH_ATTACKS = tuple(a for a in ATTACKS if a != "feature_cosine")
#: Pairs per chunk of the row-wise products (bounds memory on wide features).
CHUNK = 8192


@register_metric
class LinkAttack(Metric):
    """``attack``: AUC per attack on the hidden links, and the strongest one."""

    name = "attack"
    kinds = ("graph",)
    shared_prepare = HOLDOUT_KEY

    def prepare(self, graph: Graph, seed: int) -> tuple[Graph, HeldOut]:
        return hide_edges(graph, seed, metric=self.name)

    def evaluate(self, ctx: EvaluationContext) -> dict[str, Any]:
        held = held_out_of(ctx.held_out, self.name)
        release = ctx.release
        check_nodes(release.num_nodes, ctx.graph.num_nodes, self.name)
        pairs, labels = held.pairs()
        out = attack_aucs(ctx, pairs, labels)
        if release.protected is not None and len(release.protected):
            pairs, labels = protected_targets(ctx, held)
            protected = attack_aucs(ctx, pairs, labels)
            graph_only = max(GRAPH_ATTACKS, key=protected.__getitem__)
            protected["max_graph"], protected["best_graph"] = protected[graph_only], graph_only
            out["protected"] = {**protected, "count": int(labels.sum())}
        return {"attack": out}


def attack_aucs(ctx: EvaluationContext, pairs: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
    """Every attack's AUC on ``pairs`` (labels 1: link), ``max`` and ``best``; the trained
    attacks are trained without ``pairs`` (the embeddings are shared through ``ctx.cache``)."""
    release = ctx.release
    scores = structural_scores(edges_to_csr(release.edges, release.num_nodes), pairs)
    scores["feature_cosine"] = pair_cosine(release.x, pairs)
    gae = release_embedding(ctx)
    scores["embedding_cosine"] = pair_cosine(gae, pairs)
    scores["embedding_svm"] = _svm(ctx, gae, "gae", pairs)
    n2v = release_node2vec(ctx)
    scores["node2vec_cosine"] = pair_cosine(n2v, pairs)
    scores["node2vec_svm"] = _svm(ctx, n2v, "node2vec", pairs)
    scores["seal"] = SealAttack(
        release.edges, release.num_nodes, pairs, ctx.seed, ctx.num_threads
    ).scores(pairs)
    out: dict[str, Any] = {name: roc_auc(labels, scores[name]) for name in ATTACKS}
    best = max(out, key=out.__getitem__)
    out["max"], out["best"] = out[best], best
    return out


def _svm(ctx: EvaluationContext, z: np.ndarray, name: str, pairs: np.ndarray) -> np.ndarray:
    """The linear-SVM attack on embedding ``z`` (GAE+ML, N2V+ML): :func:`.svm.svm_scores`,
    never trained on ``pairs``."""
    release = ctx.release
    stage = f"attack-svm-{name}"
    return svm_scores(z, release.edges, pairs, pairs, ctx.seed, stage, ctx.num_threads)


def protected_targets(ctx: EvaluationContext, held: HeldOut) -> tuple[np.ndarray, np.ndarray]:
    """The release's protected pairs (label 1) and as many true non-links (label 0)."""
    n = ctx.graph.num_nodes
    protected = np.asarray(ctx.release.protected, dtype=np.int64).reshape(-1, 2)
    protected = np.sort(protected, axis=1)
    edges = np.sort(pair_keys(ctx.graph.edges, n))
    keys = pair_keys(protected, n)
    at = np.minimum(np.searchsorted(edges, keys), max(len(edges) - 1, 0))
    if len(edges) == 0 or (edges[at] != keys).any():
        raise ValueError(
            "metric attack: the release declares protected pairs that are not edges of the "
            "original graph"
        )
    taken = np.union1d(edges, pair_keys(held.non_edges, n))
    rng = stage_rng(ctx.seed, "protected-non-links")
    non = sample_non_edges(ctx.graph.edges, n, len(protected), rng, taken)
    labels = np.concatenate([np.ones(len(protected)), np.zeros(len(non))]).astype(np.int64)
    return np.concatenate([protected, non]), labels


def pair_cosine(x: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Cosine similarity of the rows of each pair (0 where a row is all zeros)."""
    out = np.zeros(len(pairs))
    if x.shape[1] == 0:
        return out
    for start in range(0, len(pairs), CHUNK):
        p = pairs[start : start + CHUNK]
        a = np.asarray(x[p[:, 0]], dtype=np.float64)
        b = np.asarray(x[p[:, 1]], dtype=np.float64)
        norm = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
        dot = (a * b).sum(axis=1)
        out[start : start + len(p)] = np.divide(dot, norm, out=np.zeros_like(dot), where=norm > 0)
    return out
