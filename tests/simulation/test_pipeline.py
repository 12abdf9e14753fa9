"""A run builds its protocol once and hands that one object to every stage: the configuration's
validation builds it to check it (a constructor refuses a budget split it cannot serve), the
run uses that one, and nothing after that builds again (``ldpgraph run`` used to build three:
validation twice, then the release stage)."""

from __future__ import annotations

import pytest

from ldpgraph.protocols import registry
from ldpgraph.simulation import cli, pipeline
from ldpgraph.simulation.config import RunConfig

SMALL = "synthetic:n=120,classes=3,d=20,avg_degree=4,seed=1"
BASE = dict(dataset=SMALL, protocol="rr", epsilon=4.0, epochs=2, backend="local", device="cpu")


@pytest.fixture
def builds(monkeypatch) -> list[str]:
    """The names of the protocols built from here on (every build goes through the class's
    ``from_params``, whoever asks for it)."""
    cls = registry.protocol_info("rr").resolve()
    original = cls.from_params
    names: list[str] = []

    def counting(name, **params):
        names.append(name)
        return original(name, **params)

    monkeypatch.setattr(cls, "from_params", counting)
    return names


def test_a_run_builds_its_protocol_once(builds):
    pipeline.run(RunConfig(**BASE))
    assert builds == ["rr"]  # RunConfig.validate's, which the run then uses


def test_a_changed_configuration_is_rebuilt_not_served_the_old_protocol(builds):
    config = RunConfig(**BASE).validate()
    assert pipeline.build_protocol(config) is pipeline.build_protocol(config)
    config.epsilon = 2.0
    assert pipeline.build_protocol(config).round_epsilon(0) == pytest.approx(2.0)
    assert builds == ["rr", "rr"]


def test_the_built_protocol_does_not_travel_with_a_pickled_configuration():
    import pickle

    config = RunConfig(**BASE).validate()
    assert config.built_protocol() is not None
    copy = pickle.loads(pickle.dumps(config))
    assert copy == config and copy.built_protocol() is None


def test_a_given_protocol_is_the_one_the_run_uses(builds):
    config = RunConfig(**BASE).validate()
    own = pipeline.run(config)
    builds.clear()
    protocol = pipeline.build_protocol(config)
    given = pipeline.run(config, protocol=protocol)
    assert builds == []  # validation's protocol, passed on: no rebuild
    assert given["fingerprint"] == own["fingerprint"]
    assert given["accuracy"] == own["accuracy"]


def test_a_release_and_a_replay_use_the_protocol_they_are_given(builds):
    config = RunConfig(**BASE).validate()
    graph = pipeline.prepare(config).graph
    builds.clear()
    protocol = pipeline.build_protocol(config)
    replay = pipeline.replay_for(config, graph, protocol)
    first, _ = pipeline.release(config, graph, replay=replay, protocol=protocol)
    again, _ = pipeline.release(config, graph, replay=replay, protocol=protocol)
    assert builds == []
    assert first.fingerprint() == again.fingerprint()


def test_ldpgraph_run_builds_the_protocol_once(builds, capsys):
    argv = ["run", "--quiet", "--dataset", SMALL, "--protocol", "rr", "--epochs", "2"]
    assert cli.main([*argv, "--backend", "local", "--device", "cpu"]) == 0
    assert builds == ["rr"]  # the flags' validation builds the run's one protocol
    assert "rr" in capsys.readouterr().out
