"""A linear SVM on pair features of a node embedding: the ``attack`` metric's classifier
attacks GAE+ML and N2V+ML (PPGSL's Table III, spec 004 §1.7; not a metric itself).

The attacker trains on what the release shows: its edges as positives and as many of its
non-edges as negatives (spec §1.7, "positives are the published graph's links"), never a pair
it is asked to score (:func:`~.holdout.release_training_pairs`), then ranks the targets by the
decision value. scikit-learn is only a test dependency, so the SVM is fitted here: scikit-learn
``LinearSVC``'s default problem (C = 1, squared hinge, L2 penalty on the weights *and* the
intercept, as liblinear's ``intercept_scaling = 1``), in its primal form

    min_{w, b}  ½ (‖w‖² + b²) + C Σ_i max(0, 1 − y_i (w·h_i + b))²,   y_i ∈ {−1, +1},

which is differentiable, solved by L-BFGS in float64 (tests compare it with ``LinearSVC``).

**Pair features.** The spec's [P] feature is the concatenation [z_i‖z_j]; a linear score of it
is w₁·z_i + w₂·z_j, a sum of two per-node terms that cannot express that i and j are alike
(averaged over both orders, as spec A21 asks, it is a function of z_i + z_j only): on a
clustered graph of uniform degrees it is blind. The Hadamard product z_i ⊙ z_j (node2vec's own
choice for link prediction, and the ``lp`` scorer's) is symmetric and makes w a weighted inner
product. Features are standardised with the training pairs' mean and deviation.
"""

from __future__ import annotations

import numpy as np

from ldpgraph.protocols.rng import stage_rng

from .holdout import release_training_pairs

C = 1.0
#: Training positives at most (as many negatives).
MAX_PAIRS = 1 << 16
MAX_ITER = 500


def hadamard(z: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """``z_u ⊙ z_v`` of every pair, float64 ``[k, d]``."""
    zz = np.asarray(z, dtype=np.float64)
    return zz[pairs[:, 0]] * zz[pairs[:, 1]]


def fit_linear_svm(
    h: np.ndarray, y: np.ndarray, c: float = C, num_threads: int | None = None
) -> tuple[np.ndarray, float]:
    """Weights and intercept of the L2-regularised squared-hinge linear SVM (LinearSVC's
    default objective, see the module docstring) on features ``h`` and 0/1 labels ``y``.

    Args:
        h: ``[k, d]`` features.
        y: ``[k]`` labels, 0 or 1.
        c: the loss weight C.
        num_threads: torch CPU threads (None: one).
    """
    import torch

    from ldpgraph.server.training import _cpu_threads

    h_t = torch.as_tensor(np.asarray(h, dtype=np.float64))
    sign = torch.as_tensor(np.where(np.asarray(y) > 0, 1.0, -1.0))
    w = torch.zeros(h_t.shape[1] + 1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS(
        [w],
        max_iter=MAX_ITER,
        tolerance_grad=1e-10,
        tolerance_change=1e-14,
        history_size=20,
        line_search_fn="strong_wolfe",
    )

    def closure() -> torch.Tensor:
        opt.zero_grad()
        margin = sign * (h_t @ w[:-1] + w[-1])
        loss = 0.5 * (w @ w) + c * torch.clamp(1.0 - margin, min=0.0).square().sum()
        loss.backward()
        return loss

    with _cpu_threads(num_threads or 1):
        opt.step(closure)
    out = w.detach().numpy()
    return out[:-1].copy(), float(out[-1])


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
        num_threads: torch CPU threads (None: one).
    """
    rng = stage_rng(seed, stage)
    train, labels = release_training_pairs(edges, z.shape[0], exclude, MAX_PAIRS, rng)
    if len(train) == 0:
        return np.zeros(len(pairs))
    h = hadamard(z, train)
    mean, std = h.mean(axis=0), h.std(axis=0)
    std[std == 0] = 1.0
    w, b = fit_linear_svm((h - mean) / std, labels, num_threads=num_threads)
    return ((hadamard(z, pairs) - mean) / std) @ w + b
