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


def test_an_unseeded_central_release_is_not_replayable_and_a_seeded_one_is():
    """Unseeded (the default): the release noise comes from OS entropy, so the same run
    configuration, seed 0 included, gives two releases; seeded: the same release, and the
    record says it is replayable, not private. The split (the curator's, not release noise)
    stays the run seed's either way."""
    a, b = (run(_config("toy-degree", metrics="none")) for _ in range(2))
    assert a["fingerprint"] != b["fingerprint"]
    assert a["release"]["replayable"] is False and "OS entropy" in a["release"]["release_noise"]
    c, d = (run(_config("toy-degree", metrics="none", seed=3, seeded=True)) for _ in range(2))
    assert c["fingerprint"] == d["fingerprint"] and c["release"]["replayable"] is True
    assert "not a private release" in c["release"]["release_noise"]
    # The simulated nodes' own streams stay seeded (the harness plays the nodes), as before.
    assert a["release"]["collection"]["node_randomness"] == "seeded"


@pytest.mark.slow
@pytest.mark.engine
def test_flower_backend_releases_what_the_local_backend_releases():
    """The same seed gives the same raw uploads through Flower's simulation engine, so the same
    release (seeded: replayable); every virtual SuperNode's nodes answered the plain upload.
    Unseeded, the ServerApp's release draws its own noise: another release."""
    seeded = dict(seed=4, device="cpu", seeded=True)  # same bits: on the CPU
    local = run(_config("toy-degree", **seeded))
    flower = run(_config("toy-degree", backend="flower", ray_actors=2, **seeded))
    assert flower["fingerprint"] == local["fingerprint"]
    assert flower["release"]["replayable"] is True
    unseeded = run(_config("toy-degree", backend="flower", ray_actors=2, seed=4, device="cpu"))
    assert unseeded["fingerprint"] != local["fingerprint"]
    assert unseeded["release"]["replayable"] is False
    (counts,) = flower["release"]["collection"]["rounds"]
    assert counts["replied"] == 120 and counts["missing"] == 0
    assert flower["accuracy"] == local["accuracy"]


@pytest.mark.slow
@pytest.mark.engine
def test_flower_backend_model_release():
    _, flower = local_and_flower(_config("toy-majority", seed=2))
    assert flower["release_kind"] == "model"
