"""The claim of issue 30, proved: a new protocol with a new parameter, and a new metric with a
setting, are one module each, and nothing else is edited. The test writes them into a
temporary package outside the repository, names it in ``LDPGRAPH_PLUGINS``, and runs them
through ``ldpgraph run`` (local and Flower backends), ``ldpgraph protocols``, a sweep and the
results store; the parameter and the setting become flags, configuration keys, store columns
and identity keys by themselves (docs/extending.md)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from ldpgraph.protocols import catalog, registry
from ldpgraph.server.evaluation import METRICS
from ldpgraph.simulation import cli
from ldpgraph.simulation.config import RunConfig, key_names, section_of
from ldpgraph.simulation.results.identity import run_key
from ldpgraph.simulation.results.store import ResultsStore

SMALL = "synthetic:n=60,classes=2,d=8,avg_degree=4,seed=1"

PROTOCOL = '''
"""A toy LDP protocol: HoGS with one more (server-side) parameter."""

from typing import Any

from ldpgraph.protocols.ldp.hogs import HogsProtocol
from ldpgraph.protocols.params import Param
from ldpgraph.protocols.registry import protocol_info, register

TOY_BOOST = Param(
    "toy_boost", float, 0.25, "toy: a number the server records", low=0.0, high=1.0,
    server_side=True,
)


@register("toy-hogs", params=(*protocol_info("hogs").params, TOY_BOOST), summary="toy: HoGS+")
class ToyHogs(HogsProtocol):
    @classmethod
    def from_params(cls, name: str, **params: Any) -> "ToyHogs":
        boost = params.pop("toy_boost")
        proto = super().from_params("hogs", **params)
        proto.name, proto.toy_boost = name, boost
        return proto

    def config(self) -> dict[str, Any]:
        return {**super().config(), "protocol": self.name, "toy_boost": self.toy_boost}
'''

METRIC = '''
"""A toy metric with one setting."""

from typing import Any

from ldpgraph.protocols.params import Param
from ldpgraph.server.evaluation.base import EvaluationContext, Metric, register_metric

TOY_PAD = Param("toy_edge_pad", int, 3, "toy metric: added to the released edge count", low=0)


@register_metric
class ToyEdges(Metric):
    name = "toy-edges"
    kinds = ("graph",)
    settings = (TOY_PAD,)

    def evaluate(self, ctx: EvaluationContext) -> dict[str, Any]:
        pad = int((ctx.config or {}).get("toy_edge_pad", TOY_PAD.default))
        edges = int(len(ctx.release.edges))
        return {"toy_edges": {"edges": edges, "padded": edges + pad}}
'''


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The package, importable here and in every process a run starts (PYTHONPATH), named
    in LDPGRAPH_PLUGINS; removed again afterwards."""
    name = f"toyplugin_{uuid.uuid4().hex[:8]}"
    pkg = tmp_path / "plugins" / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import metric, protocol  # noqa: F401\n")
    (pkg / "protocol.py").write_text(textwrap.dedent(PROTOCOL))
    (pkg / "metric.py").write_text(textwrap.dedent(METRIC))
    root = str(tmp_path / "plugins")
    monkeypatch.syspath_prepend(root)
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    )
    monkeypatch.setenv(catalog.PLUGINS_ENV, name)
    yield name
    registry.unregister("toy-hogs")
    METRICS.pop("toy-edges", None)
    catalog._LOADED.discard(name)
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]


def _run(capsys: pytest.CaptureFixture[str], *extra: str) -> dict:
    argv = ["run", "--protocol", "toy-hogs", "--toy-boost", "0.5", "--epsilon", "4"]
    argv += ["--metrics", "accuracy,toy-edges", "--toy-edge-pad", "7", "--dataset", SMALL]
    argv += ["--epochs", "3", "--seed", "1", "--json", "--quiet", *extra]
    assert cli.main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _check(result: dict) -> None:
    assert result["config"]["protocol"] == "toy-hogs"
    assert result["config"]["toy_boost"] == 0.5 and result["config"]["toy_edge_pad"] == 7
    stats = result["toy_edges"]
    assert stats["padded"] == stats["edges"] + 7


def test_a_plugged_in_protocol_and_metric_run_everywhere(plugin, tmp_path, capsys):
    # The declarations became configuration keys, in their sections, with their defaults.
    assert "toy-hogs" in registry.protocol_names()
    assert {"toy_boost", "toy_edge_pad"} <= set(key_names())
    assert section_of("toy_boost") == "protocol" and section_of("toy_edge_pad") == "metrics"
    assert RunConfig().toy_boost == 0.25 and RunConfig().toy_edge_pad == 3
    # ldpgraph protocols lists it with its parameter.
    assert cli.main(["protocols", "--json"]) == 0
    listed = {p["name"]: p for p in json.loads(capsys.readouterr().out)}
    assert [p["name"] for p in listed["toy-hogs"]["params"]][-1] == "toy_boost"
    assert listed["toy-hogs"]["privacy_model"] == "ldp"
    # ldpgraph run (local backend), recorded in a store.
    db = tmp_path / "runs.db"
    local = _run(capsys, "--backend", "local", "--store", str(db))
    _check(local)
    with ResultsStore(db) as store:
        rows = store.rows(status="done")
    assert len(rows) == 1 and rows[0]["config"]["toy_boost"] == 0.5
    assert rows[0]["run_key"] == run_key(local["config"])
    # The new parameter is part of the run's identity; other protocols' runs ignore it.
    assert run_key({**local["config"], "toy_boost": 0.6}) != run_key(local["config"])
    hogs = RunConfig(protocol="hogs").to_dict()
    assert run_key({**hogs, "toy_boost": 0.6}) == run_key(hogs)
    # A tiny sweep over the new parameter.
    sweep = tmp_path / "toy.toml"
    sweep.write_text(
        f'name = "toy"\ndatasets = ["{SMALL}"]\nprotocols = ["toy-hogs"]\nmodels = ["gcn"]\n'
        "epsilons = [4]\nruns_per_config = 1\nfinal_runs = 1\nseed = 3\n"
        '[fixed]\nepochs = 3\nmetrics = "accuracy,toy-edges"\ntoy_edge_pad = 2\n'
        "[grid.g]\ntoy_boost = [0.1, 0.2]\n"
    )
    argv = ["sweep", str(sweep), "--grid", "g", "--store", str(db), "--workers", "0", "--quiet"]
    assert cli.main(argv) == 0
    capsys.readouterr()
    with ResultsStore(db) as store:
        swept = store.rows(sweep="toy", status="done")
    assert {r["config"]["toy_boost"] for r in swept} == {0.1, 0.2}
    assert all(r["config"]["toy_edge_pad"] == 2 for r in swept)


@pytest.mark.slow
@pytest.mark.engine
def test_a_plugged_in_protocol_runs_on_the_flower_backend(plugin, tmp_path, capsys):
    pytest.importorskip("flwr")
    flower = _run(capsys, "--backend", "flower", "--ray-actors", "1", "--nodes-per-client", "30")
    _check(flower)
