"""Helpers for testing central strategies: the curator's view of a split graph, and one
strategy's release on the local backend and through Flower's simulation engine."""

from __future__ import annotations

from typing import Any

from ldpgraph.protocols.base import CuratorView, training_labels


def curator_for(graph, split, labels: bool = True, **kw: Any) -> CuratorView:
    """The curator's view of ``graph``: the training and validation labels of ``split`` (never
    a test label), or none at all with ``labels=False``. Seeded (``replayable``) unless
    ``replayable=False`` is given: these tests replay a release from its seed; the default of
    a real run is the other way round."""
    kw.setdefault("replayable", True)
    if not labels:
        return CuratorView(graph.num_nodes, graph.num_features, graph.feature_domain, **kw)
    return CuratorView(
        graph.num_nodes,
        graph.num_features,
        graph.feature_domain,
        labels=training_labels(graph.y, split.train, split.val),
        train_nodes=split.train,
        val_nodes=split.val,
        **kw,
    )


def local_and_flower(config) -> tuple[dict[str, Any], dict[str, Any]]:
    """The records of one run configuration on the local backend and on Flower's simulation
    engine (two Ray actors), which must agree: same release fingerprint, same accuracy. Both on
    the CPU, where a seed gives the same bits (a GPU's kernels may sum in another order)."""
    from dataclasses import replace

    from ldpgraph.simulation.pipeline import run

    # seeded: the central release's noise is the run seed's, so the two can be compared
    local = run(replace(config, backend="local", device="cpu", seeded=True))
    flower = run(replace(config, backend="flower", ray_actors=2, device="cpu", seeded=True))
    assert flower["release_kind"] == local["release_kind"]
    assert flower["fingerprint"] == local["fingerprint"]
    assert flower["accuracy"] == local["accuracy"]
    return local, flower
