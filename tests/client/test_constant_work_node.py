"""A deployed node draws its RR rows in constant work (its reply time is seen by the server)
and says so in its hello; the simulation keeps the sparse rows and records them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from flwr.app import Context, RecordDict

from ldpgraph.client import app as client_app
from ldpgraph.client.budget import NodeSettings
from ldpgraph.protocols import mechanisms
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.protocols.reports import HOSTS_RECORD, node_record_name
from ldpgraph.simulation.backends.local import run_protocol
from ldpgraph.simulation.pipeline import curator_view

from .conftest import NODES, N


@pytest.fixture
def spied(monkeypatch):
    """Which sampler each row took: 'sparse' or 'dense', and whether constant work was on."""
    seen: list[tuple[str, bool]] = []
    sparse, dense = mechanisms._sparse_row, mechanisms._dense_mask

    def spy_sparse(*a, **k):
        seen.append(("sparse", mechanisms.constant_work_enabled()))
        return sparse(*a, **k)

    def spy_dense(*a, **k):
        seen.append(("dense", mechanisms.constant_work_enabled()))
        return dense(*a, **k)

    monkeypatch.setattr(mechanisms, "_sparse_row", spy_sparse)
    monkeypatch.setattr(mechanisms, "_dense_mask", spy_dense)
    return seen


def ask(node_file, op: str, protocol: str, **params):
    meta = json.loads((node_file / "meta.json").read_text())
    cfg = {"data-file": str(node_file), "budget": 100.0, "unit": "per-bit"}
    ctx = Context(run_id=1, node_id=7, node_config=cfg, state=RecordDict(), run_config={})
    proto = make_protocol(protocol, **params)
    msg = {"op": op, "num-nodes": N, "partition": meta["partition"]}
    if op == "report":
        msg.update(round=0, **proto.config())
    return client_app.answer(msg, ctx)


@pytest.mark.parametrize("protocol", ["hogs", "hogs-arr"])
def test_a_deployed_node_draws_its_rows_in_constant_work(node_file, spied, protocol):
    """At ε = 8 (the sparse regime of the simulation) every hosted node's row is the dense,
    constant-work one, and every node answered."""
    records = ask(node_file, "report", protocol, epsilon=8.0)
    answered = [n for n in NODES if "refused" not in dict(records[node_record_name(n)])]
    assert answered == list(NODES)
    assert spied and all(s == ("dense", True) for s in spied), spied
    assert not mechanisms.constant_work_enabled()  # off again after the step


def test_a_deployed_node_states_its_sampling_in_its_hello(node_file):
    hosts = dict(ask(node_file, "hello", "hogs", epsilon=8.0)[HOSTS_RECORD])
    assert hosts["sampling"] == mechanisms.CONSTANT_WORK


def test_the_simulation_keeps_the_sparse_rows_and_records_them(graph, spied):
    proto = make_protocol("hogs", epsilon=8.0)
    release, _ = run_protocol(
        proto, graph, curator_view(graph, False), 0, settings=NodeSettings(budget=100.0, seed=0)
    )
    assert release.stats["collection"]["node_sampling"] == {mechanisms.SPARSE: N}
    assert all(not on for _, on in spied)
    row = mechanisms.RandomizedResponse(8.0).perturb_row(
        np.arange(1, 5), N, np.random.default_rng(0), exclude=0
    )
    assert spied[-1] == ("sparse", False) and row.dtype == np.int32
