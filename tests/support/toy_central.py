"""Two toy central-DP strategies that prove the central path end to end (they are not
mechanisms we ship): each is one small class on :class:`CentralStrategy`, as a real one is.

- ``toy-degree`` (graph release): each degree of the uploaded graph plus discrete-Laplace
  noise at rate ε/2 (one edge changes two degrees by one: L1 sensitivity 2, so ε-edge-DP),
  then a Chung–Lu graph with those expected degrees (post-processing). Features are released
  as uploaded: the toy protects edges only.
- ``toy-majority`` (model release): the class histogram of the training labels plus
  discrete-Laplace noise at rate ε/2 (one node's label moves two counts: sensitivity 2, so
  ε-label-DP); the model predicts the noisy majority class for every node.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from ldpgraph.protocols.base import CuratorView
from ldpgraph.protocols.central.base import CentralStrategy, UploadedGraph
from ldpgraph.protocols.graph import canonical_edges
from ldpgraph.protocols.laplace import DiscreteLaplace
from ldpgraph.protocols.rng import stage_rng
from ldpgraph.protocols.types import PrivacyReport, Release


class _Toy(CentralStrategy):
    """ε and a discrete Laplace of sensitivity 2; the report in its ``unit``."""

    unit = ""

    def __init__(self, epsilon: float) -> None:
        self.epsilon = float(epsilon)
        self.mechanism = DiscreteLaplace(self.epsilon, sensitivity=2)

    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        return PrivacyReport(
            protocol=self.name,
            unit=self.unit,
            epsilon=self.epsilon,
            delta=0.0,
            accountant="closed form (discrete Laplace, sensitivity 2)",
            headline=f"ε = {self.epsilon:g} per {self.unit} (central DP, toy)",
            unit_epsilons={self.unit: self.epsilon},
        )


class ToyDegreeGraph(_Toy):
    name = "toy-degree"
    kind = "graph"
    unit = "edge"

    def release(self, graph: UploadedGraph, curator: CuratorView, seed: int) -> Release:
        n = graph.num_nodes
        degrees = np.bincount(graph.edges.ravel(), minlength=n).astype(np.int64)
        noisy = self.mechanism.perturb_many(degrees, stage_rng(seed, "toy-degree/noise"))
        weight = np.clip(noisy, 0, None).astype(np.float64)
        total = weight.sum()
        rng = stage_rng(seed, "toy-degree/generate")
        pairs = np.zeros((0, 2), dtype=np.int64)
        if total > 0:  # Chung–Lu: m = total/2 endpoint pairs drawn ∝ expected degree
            m = int(total // 2)
            p = weight / total
            pairs = np.stack([rng.choice(n, m, p=p), rng.choice(n, m, p=p)], axis=1)
            pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        return Release(
            edges=canonical_edges(pairs, n),
            x=graph.x,
            privacy=self.privacy_report(curator.num_features),
            stats={"noisy_degree_sum": int(noisy.sum())},
        )


class MajorityModel:
    """Predicts one class for every node."""

    def __init__(self, label: int) -> None:
        self.label = int(label)

    def predict(self, nodes: np.ndarray) -> np.ndarray:
        return np.full(np.asarray(nodes).shape, self.label, dtype=np.int64)


class ToyMajority(_Toy):
    name = "toy-majority"
    kind = "model"
    unit = "training label"

    def release(self, graph: UploadedGraph, curator: CuratorView, seed: int) -> Release:
        if curator.labels is None or curator.train_nodes is None:
            raise ValueError("toy-majority trains on the curator's training labels")
        train = np.asarray(curator.train_nodes, dtype=np.int64)
        classes = int(max(curator.labels.max(), 0)) + 1
        counts = np.bincount(curator.labels[train], minlength=classes).astype(np.int64)
        noisy = self.mechanism.perturb_many(counts, stage_rng(seed, "toy-majority/noise"))
        model = MajorityModel(int(np.argmax(noisy)))
        return Release.of_model(
            model, graph.num_nodes, self.privacy_report(), {"noisy_counts": noisy.tolist()}
        )


@contextmanager
def registered() -> Iterator[None]:
    """Both toys in the protocol registry, as a plug-in registers them (one by its import
    path, imported on first use; one by its class); removed afterwards."""
    from ldpgraph.protocols import registry
    from ldpgraph.protocols.base import EPSILON

    registry.register(
        "toy-degree",
        "tests.support.toy_central:ToyDegreeGraph",
        params=(EPSILON,),
        summary="toy: discrete-Laplace degrees, Chung–Lu graph",
    )
    registry.register("toy-majority", ToyMajority, params=(EPSILON,), label="Majority")
    try:
        yield
    finally:
        registry.unregister("toy-degree")
        registry.unregister("toy-majority")
