"""``lp``: link prediction on the release, scored on the links hidden before collection.

The PrivDPR paper's protocol (Zhang et al. 2025, §6, as we read it): 80/20 split of the links (the
20 % hidden from every node, :mod:`.holdout`), equal non-edges beside the test links, ROC-AUC.
The paper scores node embeddings; a graph release has none, so a GAE trained on the release
gives them (:mod:`.embedding`). A model release has no graph to score and is skipped.

**The learned scorer trains on the task it is scored on.** The hidden links are absent from the
release and the hidden non-edges are uniform pairs. So the scorer's training pairs are drawn the
same way from the release itself (:func:`.holdout.inner_split`): a seeded 20 % of the release's
edges is taken out of the graph it reads, beside as many uniform non-edges of the release. A GAE
trains on the rest, stopped early at its best inner ROC-AUC (read every 10 epochs); scikit-learn's
logistic regression then learns, on the inner pairs, from five scores of a pair on that graph:
the GAE's inner product ``z_u · z_v``, log(1 + CN), Adamic–Adar, resource allocation and Jaccard
(supervised link prediction on topological features, Lichtenwalter et al. 2010), and scores the
hidden pairs with the same five on the whole release (the graph they are hidden from). Five
weights, not the 64 of ``z_u ⊙ z_v``: most inner positives of a noisy release are noise edges,
and on such labels the wider model fitted worse (EdgeRand-like flips on a 600-node SBM: 0.85
against 0.89, a 5-clique graph 0.66 against 0.74; on Cora-ML EdgeRand ε = 6 within 0.012).
``auc_learned`` is its AUC and ``auc_dot`` the early-stopped GAE's own inner-product decoder.

*Why.* The earlier scorer trained on the release's edges as positives, with the GAE reading those
very edges, against uniform non-edges. On a noisy release it learned the noise: on EdgeRand
ε = 6 Cora-ML (``--seed 0``) its GAE's embedding shrank towards a constant over 200 epochs
(inner-product AUC on the hidden pairs 0.71 at epoch 10, 0.50 from epoch 80) and the scorer sat
at 0.500 while common neighbours scored 0.800. Records made before this (no ``inner_links``
key) have that scorer's AUC as ``auc_learned``.

**The headline.** The training-free heuristics on the release (common neighbours, Adamic–Adar,
resource allocation; Liben-Nowell & Kleinberg 2007, :mod:`.heuristics`) are scored beside the
learned one (``auc_cn``, ``auc_aa``, ``auc_ra``); the headline ``auc`` is the best of the four,
``best`` names it and ``scorer`` describes it. The pick is made on the hidden pairs themselves,
as the attack suite's ``max`` is: an upper envelope over four fixed scorers, not a tuned model.
Records made before the heuristics (no ``best`` key) have the learned AUC as ``auc``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ldpgraph.protocols import progress
from ldpgraph.protocols.graph import Graph, edges_to_csr
from ldpgraph.protocols.rng import stage_rng

from .base import EvaluationContext, Metric, register_metric
from .embedding import MAX_PAIRS, gae_embedding
from .heuristics import structural_scores
from .holdout import (
    HOLDOUT_KEY,
    HeldOut,
    held_out_of,
    hide_edges,
    inner_split,
    roc_auc,
    sample_non_edges,
)
from .svm import hadamard

#: L-BFGS iterations at most (it stops after ~10 on these pairs; sklearn's default is 100).
MAX_ITER = 1000
SCORER = (
    "logistic regression on a pair's GAE [128, 64] inner product and neighbourhood scores "
    "(CN, AA, RA, Jaccard), trained on the release's own held-out links vs non-edges"
)
#: The headline's candidates, in the order the record lists them, and what each one is.
SCORERS = {
    "learned": SCORER,
    "cn": "common neighbours on the release",
    "aa": "Adamic-Adar on the release",
    "ra": "resource allocation on the release",
}


@register_metric
class LinkPrediction(Metric):
    """``lp``: ROC-AUC of a scorer trained on the release, on the hidden edges vs non-edges."""

    name = "lp"
    kinds = ("graph",)
    shared_prepare = HOLDOUT_KEY

    def prepare(self, graph: Graph, seed: int) -> tuple[Graph, HeldOut]:
        return hide_edges(graph, seed, metric=self.name)

    def evaluate(self, ctx: EvaluationContext) -> dict[str, Any]:
        held = held_out_of(ctx.held_out, self.name)
        release = ctx.release
        check_nodes(release.num_nodes, ctx.graph.num_nodes, self.name)
        pairs, labels = held.pairs()
        n = release.num_nodes
        inner = inner_split(release.edges, n, pairs, ctx.seed, limit=MAX_PAIRS)
        progress.stage(
            f"lp: GAE on the release less {int(inner.labels.sum())} of its links, "
            f"{len(pairs)} hidden pairs to score"
        )
        z = inner_embedding(ctx, inner.kept, inner.pairs, inner.labels)
        full = edges_to_csr(release.edges, n)
        test, heuristic = pair_features(z, pairs, full)
        if len(inner.labels):
            train, _ = pair_features(z, inner.pairs, edges_to_csr(inner.kept, n))
            scores = logreg_scores(train, inner.labels, test, ctx.num_threads)
        else:  # no edge or no free pair in the release: nothing to learn from
            scores = np.zeros(len(pairs))
        aucs = {"learned": roc_auc(labels, scores)}
        aucs.update({name: roc_auc(labels, heuristic[name]) for name in ("cn", "aa", "ra")})
        best = max(SCORERS, key=aucs.__getitem__)  # ties keep the earlier (learned first)
        return {
            "lp": {
                "auc": aucs[best],
                "best": best,
                "scorer": SCORERS[best],
                **{f"auc_{name}": auc for name, auc in aucs.items()},
                "auc_dot": roc_auc(labels, inner_product(z, pairs)),
                "hidden_edges": held.count,
                "inner_links": int(inner.labels.sum()),
            }
        }


def check_nodes(released: int, original: int, metric: str) -> None:
    if released != original:
        raise ValueError(
            f"metric {metric} needs a release over the original {original} nodes; it has {released}"
        )


def inner_product(z: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """The GAE decoder's score of each pair: ``z_u · z_v``."""
    return (z[pairs[:, 0]] * z[pairs[:, 1]]).sum(axis=1)


def inner_embedding(
    ctx: EvaluationContext, kept: np.ndarray, pairs: np.ndarray, labels: np.ndarray
) -> np.ndarray:
    """The GAE embedding of the release less its inner positives, the one with the best
    inner-product ROC-AUC on the inner ``pairs`` among those read every 10 epochs (a GAE on a
    noisy release drifts to chance as it fits the noise; early stopping keeps the best)."""
    has_both = 0 < labels.sum() < len(labels)

    def inner_auc(z: np.ndarray) -> float:
        return roc_auc(labels, inner_product(z, pairs))

    return gae_embedding(
        kept,
        ctx.release.x,
        ctx.seed,
        device=ctx.device,
        num_threads=ctx.num_threads,
        select=inner_auc if has_both else None,
    )


def pair_features(
    z: np.ndarray, pairs: np.ndarray, adj: sp.csr_matrix
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Each pair's ``z_u · z_v``, log(1 + CN), AA, RA and Jaccard on ``adj`` as ``[k, 5]``,
    and the neighbourhood scores themselves."""
    scores = structural_scores(adj, pairs)
    features = [inner_product(z, pairs), np.log1p(scores["cn"]), scores["aa"], scores["ra"]]
    return np.column_stack([*features, scores["jaccard"]]), scores


def logreg_scores(
    train: np.ndarray, labels: np.ndarray, test: np.ndarray, num_threads: int | None = None
) -> np.ndarray:
    """Decision values on ``test`` of scikit-learn's ``LogisticRegression`` at its defaults
    (L2, C = 1, intercept not penalised, L-BFGS) on standardised features, fitted on
    ``(train, labels)`` on one BLAS/OpenMP thread unless told; all zeros with one class."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from threadpoolctl import threadpool_limits

    if labels.min() == labels.max():
        return np.zeros(len(test))
    model = make_pipeline(StandardScaler(), LogisticRegression(C=1.0, max_iter=MAX_ITER))
    with threadpool_limits(limits=num_threads or 1):
        model.fit(train, labels)
        return model.decision_function(test)


def hadamard_logreg(
    z: np.ndarray, edges: np.ndarray, pairs: np.ndarray, seed: int, num_threads: int | None = None
) -> np.ndarray:
    """The earlier scorer, kept for the scikit-learn benchmark: logistic regression on
    ``z_u ⊙ z_v``, fitted on up to :data:`MAX_PAIRS` of the release's ``edges`` (which the
    embedding read) and as many of its non-edges. All zeros without edges."""
    n = z.shape[0]
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    if len(edges) == 0:
        return np.zeros(len(pairs))
    rng = stage_rng(seed, "lp-train")
    size = min(len(edges), MAX_PAIRS, n * (n - 1) // 2 - len(edges))
    if size == 0:  # a complete release: no non-edge to learn from
        return np.zeros(len(pairs))
    pos = edges if size == len(edges) else edges[rng.choice(len(edges), size, replace=False)]
    neg = sample_non_edges(edges, n, size, rng)
    labels = np.concatenate([np.ones(size), np.zeros(size)]).astype(np.int64)
    train = hadamard(z, np.concatenate([pos, neg]))
    return logreg_scores(train, labels, hadamard(z, pairs), num_threads)
