"""The evaluation's scikit-learn pieces: CPU seconds per call on a clustered graph.

``attack``'s linear SVM (:func:`~ldpgraph.server.evaluation.svm.svm_scores`, ``LinearSVC``),
``lp``'s scorer (:func:`~ldpgraph.server.evaluation.lp.hadamard_logreg`,
``LogisticRegression``) and one ROC-AUC (``roc_auc_score``), each on one thread, on a planted
partition of ``--blocks`` blocks whose nodes carry a noisy 64-d block embedding (the shape of
the GAE embedding they score): Cora's size (2,708 nodes, ~4,200 release edges: ~8,400
training pairs) and a graph past the 2^16-positive cap (131,072 training pairs). Best of
``--repeats``, ``time.process_time``.

Measured on the 2-core development machine (loaded; best of 3, interleaved) against the former
hand-written code of commit 05c0f9a (torch L-BFGS SVM matched to LinearSVC at tol 1e-10,
torch L-BFGS logistic regression, AUC from ``scipy.stats.rankdata``) on the same data:

====================  ==========  ===========================
piece                 Cora size   100,000 nodes (at the cap)
====================  ==========  ===========================
SVM, former           0.056 s     1.25 s
SVM, LinearSVC        0.042 s     1.25 s
logistic, former      0.043 s     0.79 s
LogisticRegression    0.025 s     0.38 s
AUC, former           0.5 ms      0.5 ms
roc_auc_score         3.5 ms      3.5 ms
====================  ==========  ===========================

On a nearly separable problem at the cap (131,072 Gaussian rows, 64 features) liblinear took
2.9 s where the former L-BFGS took 1.1 s: an ``attack`` run fits two SVMs, so up to ~4 s more
on a release of 65,536 edges or more. The AUC's extra 3 ms is scikit-learn's input checking,
a dozen calls a run. The decision values differ from the former ones by < 1e-4 (SVM) and
< 1e-2 (logistic, whose former L-BFGS stopped at its own tolerance).

    python benchmarks/bench_sklearn_eval.py
    python benchmarks/bench_sklearn_eval.py --repeats 5 --blocks 7
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from ldpgraph.protocols.graph import canonical_edges
from ldpgraph.server.evaluation.holdout import roc_auc
from ldpgraph.server.evaluation.lp import hadamard_logreg
from ldpgraph.server.evaluation.svm import svm_scores


def planted(n: int, m: int, blocks: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A noisy block embedding ``[n, 64]`` and ~``m`` edges, 90 % inside a block."""
    rng = np.random.default_rng(seed)
    block = rng.integers(0, blocks, n)
    z = np.eye(blocks)[block] @ rng.standard_normal((blocks, 64)) + rng.standard_normal((n, 64))
    u = rng.integers(0, n, 2 * m)
    order = np.argsort(block, kind="stable")
    size = np.bincount(block, minlength=blocks)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    k = int(1.8 * m)
    inside = order[start[block[u[:k]]] + rng.integers(0, size[block[u[:k]]])]
    v = np.concatenate([inside, rng.integers(0, n, 2 * m - k)])
    return z, canonical_edges(np.stack([u, v], axis=1), n)[:m]


def best(repeats: int, fn: Callable[..., object], *args: object) -> float:
    """The least CPU seconds of ``repeats`` calls ``fn(*args)``."""
    times = []
    for _ in range(repeats):
        t = time.process_time()
        fn(*args)
        times.append(time.process_time() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--blocks", type=int, default=7)
    args = ap.parse_args()
    for n, m in ((2708, 4221), (100_000, 300_000)):
        z, edges = planted(n, m, args.blocks, 0)
        rng = np.random.default_rng(1)
        targets = rng.integers(0, n, (2000, 2))
        targets = targets[targets[:, 0] != targets[:, 1]]
        labels = np.arange(len(targets)) % 2
        scores = z[targets[:, 0], 0]
        row = {
            "svm": best(args.repeats, svm_scores, z, edges, targets, targets, 0, "b"),
            "logistic": best(args.repeats, hadamard_logreg, z, edges, targets, 0),
            "auc": best(args.repeats, roc_auc, labels, scores),
        }
        cells = ", ".join(f"{k} {v:.3f} s" for k, v in row.items())
        print(f"n={n:,} release edges={len(edges):,}: {cells}")


if __name__ == "__main__":
    main()
