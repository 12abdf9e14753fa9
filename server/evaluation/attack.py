"""``attack``: link-inference attacks on the release, the empirical privacy beside formal ε.

The attacker sees only the release (its edges, unweighted, and its features), never the
original graph, and scores the links hidden before collection against as many true non-links
(:mod:`.holdout`, the same set ``lp`` scores): a release that leaks no more about a link than
its own structure and features gives AUC 0.5. The attacks are PPGSL's Table III (spec 004
§1.7) on the published graph, with 𝒩 its neighbour sets:

* ``cn``: |𝒩(x) ∩ 𝒩(y)|; ``aa``: Σ_{z ∈ 𝒩(x) ∩ 𝒩(y)} 1 / log|𝒩(z)|;
  ``ra``: Σ_{z ∈ 𝒩(x) ∩ 𝒩(y)} 1 / |𝒩(z)|; ``jaccard``: |𝒩(x) ∩ 𝒩(y)| / |𝒩(x) ∪ 𝒩(y)|;
* ``feature_cosine``: cosine of the two released feature rows (a release's features are what
  the attacker has: noisy under LDP, the true ones where a strategy publishes them);
* ``embedding_cosine``: cosine of the two GAE embeddings (PPGSL's main attack, GAE+sim).

A common neighbour z of x ≠ y has |𝒩(z)| ≥ 2, so AA's logarithm is positive; a zero vector
has cosine 0. ``max`` is the strongest attack's AUC and ``best`` its name. SEAL and the
classifier attacks (N2V/GAE+ML) are not run.

**Protected links.** A release may declare the pairs it set out to hide (``Release.protected``:
PPGSL's sensitive links, which the curator saw in the upload and kept out of the release; spec
004 §1.7, §5.2). The hidden links above are ones no mechanism saw, so they measure what a
release leaks about links in general, not whether a defence protects what it knew. When a
release declares protected pairs, the same attacks also score them against as many true
non-links (pairs unconnected in the original graph and not among the hidden non-edges, drawn
with ``stage_rng(seed, "protected-non-links")``) under ``attack.protected`` (AUCs, ``max``,
``best``, ``count``, and ``max_graph``/``best_graph``: the strongest of the attacks that read the
released graph, all but ``feature_cosine``, which a defence that publishes the true features,
as PPGSL does, cannot move); the top-level figures stay the hidden-link ones, comparable
across every protocol. A declared pair that is not a true edge of the original graph is an error.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ldpgraph.protocols.graph import Graph, edges_to_csr
from ldpgraph.protocols.rng import stage_rng

from .base import EvaluationContext, Metric, register_metric
from .embedding import release_embedding
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

#: The attacks that read the released graph (``max_graph`` of the protected section).
GRAPH_ATTACKS = ("cn", "aa", "ra", "jaccard", "embedding_cosine")
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
    """Every attack's AUC on ``pairs`` (labels 1: link), ``max`` and ``best``."""
    release = ctx.release
    scores = structural_scores(edges_to_csr(release.edges, release.num_nodes), pairs)
    scores["feature_cosine"] = pair_cosine(release.x, pairs)
    scores["embedding_cosine"] = pair_cosine(release_embedding(ctx), pairs)
    out: dict[str, Any] = {name: roc_auc(labels, s) for name, s in scores.items()}
    best = max(out, key=out.__getitem__)
    out["max"], out["best"] = out[best], best
    return out


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


def structural_scores(adj: sp.csr_matrix, pairs: np.ndarray) -> dict[str, np.ndarray]:
    """CN, AA, RA and Jaccard of every pair on the symmetric 0/1 adjacency ``adj``."""
    adj = sp.csr_matrix(adj, dtype=np.float64)
    adj.data[:] = 1.0
    degree = np.asarray(adj.sum(axis=1)).ravel()
    common = adj[pairs[:, 0]].multiply(adj[pairs[:, 1]]).tocsr()  # 1 at each common z
    with np.errstate(divide="ignore"):
        inv_log = np.where(degree > 1, 1.0 / np.log(np.maximum(degree, 2.0)), 0.0)
        inv = np.where(degree > 0, 1.0 / np.maximum(degree, 1.0), 0.0)
    cn = np.asarray(common.sum(axis=1)).ravel()
    union = degree[pairs[:, 0]] + degree[pairs[:, 1]] - cn
    return {
        "cn": cn,
        "aa": common @ inv_log,
        "ra": common @ inv,
        "jaccard": np.divide(cn, union, out=np.zeros_like(cn), where=union > 0),
    }


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
