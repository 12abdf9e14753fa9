"""The ``dp-sage`` row of the central audit (:mod:`.audit_central_cases`): node v added/removed
(its upload, features and label), the training slots the same in both worlds (they are
public in dp-sage's neighbouring relation, docs/privacy/sage.md).

Design (DPAR's row, with v also in a kept edge): the training nodes but v share feature 0 and
class 0; v alone has feature 2 and class 1 and one neighbour w (a training node of class 0),
so in D₁ v removes its own self and subgraph examples and w's subgraph example (reading x_v);
validation nodes carry every class (the class count does not depend on v); a non-training
isolated probe has v's features. The statistic is the model's class at the probe: only v can
teach class 1 for that input.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .audit_central_types import CentralCase, World, audit_curator, audit_graph

SAGE_TRAIN = 6
SAGE_CLASSES = 4


def sage_worlds() -> tuple[World, World]:
    """(D₀ without v = 0, D₁ with it); v's one neighbour is training node 1."""

    train = np.arange(SAGE_TRAIN)
    val = np.arange(SAGE_TRAIN, SAGE_TRAIN + SAGE_CLASSES)
    probe = SAGE_TRAIN + SAGE_CLASSES
    n = probe + 1
    x = np.zeros((n, 3), dtype=np.float32)
    x[:, 0] = 1.0
    x[0] = (0.0, 0.0, 1.0)
    x[probe] = x[0]
    labels = np.full(n, -1, dtype=np.int64)
    labels[train] = 0
    labels[0] = 1
    labels[val] = np.arange(SAGE_CLASSES)
    edges = [(0, 1)]  # reported by both; without v, node 1's report still lists it
    with_v = World(audit_graph(edges, x), audit_curator(n, 3, labels, train, val))
    x0, labels0 = x.copy(), labels.copy()
    x0[0], labels0[0] = 0.0, -1
    up = np.ones(n, dtype=bool)
    up[0] = False
    without = World(audit_graph(edges, x0, up), audit_curator(n, 3, labels0, train, val))
    return without, with_v


def sage_probe_is_class_1(release: Any) -> float:
    return float(release.model.predict(np.array([SAGE_TRAIN + SAGE_CLASSES]))[0] == 1)


#: Full batches (q = 1: no amplification, the most power), K = 1 (D = 3), 60 steps (at
#: ε = 100 the probe is class 1 in 20 of 20 releases with v, 0 of 20 without; 8 steps gave
#: 3 of 20, too little power): one release in about 0.3 s on the loaded 2 cores.
SAGE_SMALL = {"epsilon": 0.5, "sage_max_degree": 1, "sage_batch_size": 2 * SAGE_TRAIN,
              "sage_epochs": 60, "sage_lr": 0.1, "sage_hidden": 8}  # fmt: skip


def sage_case() -> CentralCase:
    return CentralCase(
        "dp-sage", "dp-sage", SAGE_SMALL, {**SAGE_SMALL, "epsilon": 100.0},
        "dp-sage run at --epsilon 100, claiming the headline of --epsilon 0.5",
        "training node 0 added/removed (its upload: features, label, report; its one "
        "neighbour a training node)",
        "prediction of a probe node with node 0's features is class 1 (node 0's class)",
        sage_worlds, sage_probe_is_class_1, 150,
    )  # fmt: skip
