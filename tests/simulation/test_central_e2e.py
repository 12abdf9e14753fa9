"""A central strategy end to end, as the harness runs one: registered at runtime like a plug-in,
collected through the local backend and Flower's simulation engine (one raw-upload round from
the nodes that trust the curator), released as a graph or a model, evaluated, recorded, stored.
The toys are in tests/support/toy_central.py: each is one class, as a real mechanism is."""

from __future__ import annotations

import numpy as np
import pytest

from ldpgraph.simulation.config import ConfigError, RunConfig
from ldpgraph.simulation.datasets import load_dataset
from ldpgraph.simulation.pipeline import run
from ldpgraph.simulation.results.store import ResultsStore
from ldpgraph.simulation.splits import split_for

from ..support.central import local_and_flower
from ..support.toy_central import registered

SMALL = "synthetic:n=120,classes=3,d=20,avg_degree=5,seed=3"


@pytest.fixture(autouse=True)
def toys():
    with registered():
        yield


def _config(protocol: str, backend: str = "local", **kw) -> RunConfig:
    base = dict(protocol=protocol, dataset=SMALL, epsilon=2.0, backend=backend, epochs=5)
    return RunConfig(**{**base, "trust_curator": True, **kw}).validate()


def test_a_central_strategy_needs_the_nodes_consent():
    with pytest.raises(ConfigError, match="uploads raw data"):
        RunConfig(protocol="toy-degree", dataset=SMALL).validate()


def test_graph_release_through_the_local_backend():
    record = run(_config("toy-degree"))
    assert record["release_kind"] == "graph"
    assert record["privacy"]["unit"] == "edge" and record["privacy"]["epsilon"] == 2.0
    (counts,) = record["release"]["collection"]["rounds"]
    assert counts["asked"] == counts["replied"] == 120 and counts["refused"] == 0
    assert record["release"]["uploaded_nodes"] == 120
    assert 0.0 <= record["accuracy"]["test"] <= 1.0 and record["training"]["epochs_run"] == 5


def test_model_release_is_scored_on_labels_it_never_saw(tmp_path):
    record = run(_config("toy-majority"))
    assert record["release_kind"] == "model"
    assert record["graph"]["synthetic"] == {"nodes": 120, "edges": 0, "features": 0}
    graph = load_dataset(SMALL)
    split = split_for(graph.num_nodes, 0)
    predicted = int(np.argmax(record["release"]["noisy_counts"]))
    expect = float((graph.y[split.test] == predicted).mean())
    assert record["accuracy"]["test"] == pytest.approx(expect)
    # The store keeps it like any run, and it resumes.
    with ResultsStore(tmp_path / "r.db") as store:
        config = record["config"]
        assert store.claim(config)
        store.finish(config, record)
        assert store.is_done(config)
        row = store.get(config)
        assert row["extra"]["release_kind"] == "model" and row["test_acc"] == pytest.approx(expect)


@pytest.mark.slow
def test_flower_backend_releases_what_the_local_backend_releases():
    """The same seed gives the same raw uploads through Flower's simulation engine, so the same
    release; every virtual SuperNode's nodes answered the plain upload."""
    local = run(_config("toy-degree", seed=4, device="cpu"))  # same bits: on the CPU
    flower = run(_config("toy-degree", backend="flower", seed=4, ray_actors=2, device="cpu"))
    assert flower["fingerprint"] == local["fingerprint"]
    (counts,) = flower["release"]["collection"]["rounds"]
    assert counts["replied"] == 120 and counts["missing"] == 0
    assert flower["accuracy"] == local["accuracy"]


@pytest.mark.slow
def test_flower_backend_model_release():
    _, flower = local_and_flower(_config("toy-majority", seed=2))
    assert flower["release_kind"] == "model"
