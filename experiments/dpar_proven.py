"""DPAR under the two ε conventions without the node-collection round (every node uploads, as
``ldpgraph run --trust-curator`` with no refusals): the same strategy, split and seed as a run.

    python experiments/dpar_proven.py account  DATASET EPS [EPS ...]   # paper noise, proven ε
    python experiments/dpar_proven.py train    DATASET PROTOCOL EPS [EPS ...]  # proven, accuracy

``account`` builds Π (DP-APPR) and the DP-SGD plan under ``epsilon_convention=paper`` and prints
the proven ε of that noise (no training). ``train`` releases at ``epsilon_convention=proven`` and
prints the test accuracy (docs/reproduction/dpar/README.md, "proven ε").
"""

from __future__ import annotations

import json
import sys

import numpy as np

from ldpgraph.protocols.central.base import UploadedGraph
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.simulation.config import RunConfig
from ldpgraph.simulation.pipeline import curator_view, prepare

#: The paper's Table 1 δ per dataset (its 80 % training split).
DELTA = {"cora-ml": 2e-3, "coauthor-cs": 8e-4, "coauthor-physics": 1e-4}


def _setup(dataset: str, protocol: str, **params):
    cfg = RunConfig(
        protocol=protocol, dataset=dataset, trust_curator=True, train_split=0.8, val_split=0.1,
        backend="local",
    ).validate()  # fmt: skip
    prep = prepare(cfg)
    graph, split = prep.graph, prep.split
    curator = curator_view(graph, False, split, "cpu")
    uploaded = UploadedGraph(
        graph.name, graph.edges, graph.x, curator.labels, graph.feature_domain,
        uploaded=np.ones(graph.num_nodes, dtype=bool),
    )  # fmt: skip
    return graph, split, curator, uploaded


def account(dataset: str, epsilons: list[float]) -> None:
    for name in ("dpar-features", "dpar-em0", "dpar-em1", "dpar-gm"):
        graph, split, curator, up = _setup(dataset, name)
        for eps in epsilons:
            s = make_protocol(name, epsilon=eps, delta=DELTA[dataset], epsilon_convention="paper")
            st = s.structure(up, curator, 0)
            rep = s.privacy_report(graph.num_features, noise=st.noise, plan=st.plan)
            print(
                json.dumps(
                    {
                        "dataset": dataset,
                        "protocol": name,
                        "paper_epsilon": eps,
                        "proven_epsilon": rep.epsilon,
                        "D": st.plan.rows,
                    }
                ),
                flush=True,
            )


def train(dataset: str, protocol: str, epsilons: list[float]) -> None:
    graph, split, curator, up = _setup(dataset, protocol)
    for eps in epsilons:
        s = make_protocol(protocol, epsilon=eps, delta=DELTA[dataset])
        rel = s.release(up, curator, 0)
        acc = float((rel.model.predict(split.test) == graph.y[split.test]).mean())
        print(
            json.dumps(
                {
                    "dataset": dataset,
                    "protocol": protocol,
                    "epsilon": eps,
                    "headline": rel.privacy.epsilon,
                    "paper_epsilon": rel.privacy.paper_epsilon,
                    "test_accuracy": acc,
                    "D": rel.stats["column_rows"],
                    "noise_multiplier": rel.stats["noise_multiplier"],
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    what, dataset, *rest = sys.argv[1:]
    if what == "account":
        account(dataset, [float(e) for e in rest])
    else:
        train(dataset, rest[0], [float(e) for e in rest[1:]])
