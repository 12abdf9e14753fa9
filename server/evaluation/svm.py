"""A linear SVM on pair features of a node embedding: the ``attack`` metric's classifier
attacks GAE+ML and N2V+ML (PPGSL's Table III, Wu et al. 2025; not a metric itself).

The attacker trains on what the release shows: its edges as positives and as many of its
non-edges as negatives (the published graph's links are the positives), never a pair
it is asked to score (:func:`~.holdout.release_training_pairs`), then ranks the targets by the
decision value. The SVM is scikit-learn's ``LinearSVC`` at its defaults (C = 1, squared hinge,
L2 penalty on the weights *and* the intercept, as liblinear's ``intercept_scaling = 1``,
``tol = 1e-4``), solved in the primal (``dual=False``: liblinear's trust-region Newton, which
draws nothing at random):

    min_{w, b}  ½ (‖w‖² + b²) + C Σ_i max(0, 1 − y_i (w·h_i + b))²,   y_i ∈ {−1, +1}.

**Pair features.** The paper's feature is the concatenation [z_i‖z_j]; a linear score of it
is w₁·z_i + w₂·z_j, a sum of two per-node terms that cannot express that i and j are alike
(averaged over both orders, it is a function of z_i + z_j only): on a
clustered graph of uniform degrees it is blind. The Hadamard product z_i ⊙ z_j (node2vec's own
choice for link prediction, and the ``lp`` scorer's) is symmetric and makes w a weighted inner
product. Features are standardised with the training pairs' mean and deviation
(``StandardScaler``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ldpgraph.protocols.rng import stage_rng

from .holdout import release_training_pairs

if TYPE_CHECKING:
    from sklearn.pipeline import Pipeline

C = 1.0
#: Training positives at most (as many negatives).
MAX_PAIRS = 1 << 16
#: liblinear's iteration cap (its default; the primal solver stops after ~10 on these pairs).
MAX_ITER = 1000


def hadamard(z: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """``z_u ⊙ z_v`` of every pair, float64 ``[k, d]``."""
    zz = np.asarray(z, dtype=np.float64)
    return zz[pairs[:, 0]] * zz[pairs[:, 1]]


def linear_svm(c: float = C) -> Pipeline:
    """The unfitted classifier: standardise, then ``LinearSVC`` (module docstring)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    return make_pipeline(StandardScaler(), LinearSVC(C=c, dual=False, max_iter=MAX_ITER))


def svm_scores(
    z: np.ndarray,
    edges: np.ndarray,
    pairs: np.ndarray,
    exclude: np.ndarray,
    seed: int,
    stage: str,
    num_threads: int | None = None,
) -> np.ndarray:
    """Decision values for ``pairs`` of a linear SVM on standardised ``z_u ⊙ z_v``, trained on
    up to :data:`MAX_PAIRS` of the release's ``edges`` and as many of its non-edges, none in
    ``exclude``; all zeros when the release gives nothing to train on.

    Args:
        z: ``[n, d]`` node embedding of the release.
        edges: the release's canonical edges.
        pairs: ``[k, 2]`` pairs to score.
        exclude: pairs never trained on (every target the caller will score).
        seed: run seed (the training pairs: ``stage_rng(seed, stage)``).
        stage: the name of this attack's training-pair draw.
        num_threads: BLAS/OpenMP threads (None: one), through threadpoolctl.
    """
    from threadpoolctl import threadpool_limits

    rng = stage_rng(seed, stage)
    train, labels = release_training_pairs(edges, z.shape[0], exclude, MAX_PAIRS, rng)
    if len(train) == 0:
        return np.zeros(len(pairs))
    with threadpool_limits(limits=num_threads or 1):
        model = linear_svm().fit(hadamard(z, train), labels)
        return model.decision_function(hadamard(z, pairs))
