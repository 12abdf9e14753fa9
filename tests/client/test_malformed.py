"""Malformed requests against a deployed SuperNode: each is refused with bare records, before
anything is charged, and no error a SuperNode raises names a file."""

from __future__ import annotations

import json

import numpy as np
import pytest
from flwr.app import Context, RecordDict

from ldpgraph.client import app as client_app
from ldpgraph.client.budget import NodeConfigError
from ldpgraph.client.nodedata import open_store
from ldpgraph.protocols.ldp.ldpgen import MSG_GROUPS, MSG_K, MSG_P0
from ldpgraph.protocols.messages import MessageError
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.protocols.reports import HOSTS_RECORD, node_record_name
from ldpgraph.simulation.datasets import load_dataset
from ldpgraph.simulation.partition import write_partition

N = 40
NODES = range(10)


@pytest.fixture
def node_file(tmp_path):
    graph = load_dataset(f"synthetic:n={N},classes=2,d=8,seed=1")
    write_partition(graph, tmp_path / "part", 10, dataset="synthetic")
    open_store.cache_clear()
    yield tmp_path / "part" / "nodes-00000"
    open_store.cache_clear()


def context(node_file, **extra) -> Context:
    cfg = {"data-file": str(node_file), "budget": 1000.0, "unit": "per-bit", **extra}
    return Context(run_id=1, node_id=7, node_config=cfg, state=RecordDict(), run_config={})


def request(node_file, protocol="hogs", round_=0, **params) -> dict:
    meta = json.loads((node_file / "meta.json").read_text())
    base = {"epsilon": 4.0}
    return {"op": "report", "round": round_, "num-nodes": N, "partition": meta["partition"],
            **make_protocol(protocol, **base).config(), **params}  # fmt: skip


def answered(records) -> list[int]:
    return [n for n in NODES if "refused" not in dict(records[node_record_name(n)])]


def assert_refused_uncharged(records) -> None:
    assert set(records) == {node_record_name(n) for n in NODES}
    for n in NODES:
        assert dict(records[node_record_name(n)]) == {"node": n, "refused": "refused"}
    assert not list(client_app.default_ledger().glob("*/*.log"))  # nothing charged


class _Drop:
    """A key to leave out of the request; its repr names the test the same in every process
    (pytest-xdist's workers must collect the same ids)."""

    def __repr__(self) -> str:
        return "DROP"


DROP = _Drop()
MALFORMED = [
    # where-values: the three that used to raise in hosted(), and their kin
    {"num-nodes": DROP}, {"num-nodes": N + 1}, {"num-nodes": "40"}, {"num-nodes": 40.0},
    {"num-nodes": True}, {"num-nodes": -1}, {"num-nodes": None},
    {"partition": "0123456789abcdef"}, {"partition": 5}, {"data": 5},
    {"nodes-per-client": "x"},
    # the operation and the round
    {"op": "steal"}, {"op": DROP}, {"op": None}, {"round": -1}, {"round": 1.5},
    {"round": "zero"}, {"round": None}, {"round": DROP}, {"round": True},
    # the protocol and its values
    {"protocol": DROP}, {"protocol": "no-such-protocol"}, {"protocol": 3}, {"protocol": ""},
    {"epsilon": -1.0}, {"epsilon": float("nan")}, {"epsilon": float("inf")},
    {"epsilon": "eight"}, {"epsilon": 1e-30}, {"epsilon": [1.0, 2.0]},
    {"feature_share": 7.0}, {"feature_share": -0.5}, {"feature_share": 1.0},
    # values a ConfigRecord cannot hold
    {"extra": {"a": 1}}, {"extra": [1, "a"]}, {5: "x"},
]  # fmt: skip


def test_the_unmodified_request_is_answered(node_file):
    assert answered(client_app.answer(request(node_file), context(node_file))) == list(NODES)


@pytest.mark.parametrize("change", MALFORMED, ids=lambda c: repr(c)[:40])
def test_malformed_request_refuses_uncharged(node_file, change):
    msg = request(node_file)
    for key, value in change.items():
        if value is DROP:
            msg.pop(key, None)
        else:
            msg[key] = value
    assert_refused_uncharged(client_app.answer(msg, context(node_file)))


def test_a_hello_for_another_graph_is_refused(node_file):
    meta = json.loads((node_file / "meta.json").read_text())
    hello = {"op": "hello", "num-nodes": N, "partition": meta["partition"]}
    reply = client_app.answer(hello, context(node_file))
    assert HOSTS_RECORD in reply and dict(reply[HOSTS_RECORD])["unit"] == "per-bit"
    assert_refused_uncharged(client_app.answer({**hello, "num-nodes": N - 1}, context(node_file)))


# -- LDPGen: a malformed round is refused before its charge -----------------------------------


def ldpgen_round1(node_file, **change):
    values = {MSG_K: 2, MSG_GROUPS: (np.arange(N) % 2).astype("<i4").tobytes(), **change}
    return {k: v for k, v in request(node_file, "ldpgen", 1, **values).items() if v is not DROP}


def test_a_wellformed_ldpgen_round1_is_answered(node_file):
    records = client_app.answer(ldpgen_round1(node_file), context(node_file))
    assert answered(records) == list(NODES)


@pytest.mark.parametrize(
    "change",
    [
        {MSG_K: DROP}, {MSG_K: "2"}, {MSG_K: 0}, {MSG_K: N + 1}, {MSG_K: True}, {MSG_K: 2.0},
        {MSG_GROUPS: DROP}, {MSG_GROUPS: b"\x00" * 8}, {MSG_GROUPS: "groups"},
        {MSG_GROUPS: np.full(N, 5, "<i4").tobytes()},
    ],
    ids=lambda c: repr(c)[:40],
)  # fmt: skip
def test_a_malformed_ldpgen_round1_refuses_uncharged(node_file, change):
    assert_refused_uncharged(
        client_app.answer(ldpgen_round1(node_file, **change), context(node_file))
    )


@pytest.mark.parametrize("p0", [-1, "x", 2**63, True])
def test_a_malformed_ldpgen_round0_refuses_uncharged(node_file, p0):
    msg = request(node_file, "ldpgen", 0, **{MSG_P0: p0})
    assert_refused_uncharged(client_app.answer(msg, context(node_file)))


# -- an error a SuperNode raises names no file --------------------------------------------------


def test_an_unusable_node_file_raises_without_its_path(node_file, tmp_path):
    (node_file / "indices.npy").write_bytes(b"garbage")
    open_store.cache_clear()
    with pytest.raises(NodeConfigError) as err:
        client_app.answer(request(node_file), context(node_file))
    assert str(tmp_path) not in str(err.value) and "/" not in str(err.value)


def test_a_bad_node_config_raises_without_a_path(node_file, tmp_path):
    for bad in ({"unit": "per-byte"}, {"max-feature-share": "lots"}, {"seed": "-3"}):
        with pytest.raises(NodeConfigError) as err:
            client_app.answer(request(node_file), context(node_file, **bad))
        assert str(tmp_path) not in str(err.value)


def test_a_simulation_request_without_a_usable_store_names_no_path(node_file, tmp_path):
    ctx = Context(run_id=1, node_id=7, node_config={"partition-id": 0}, state=RecordDict(),
                  run_config={})  # fmt: skip
    wheres = [
        {"data": str(tmp_path / "nowhere"), "nodes-per-client": 5},
        {"data": str(node_file)},
        {"data": str(node_file), "nodes-per-client": 5},
    ]
    for where in wheres:
        with pytest.raises((MessageError, ValueError)) as err:
            client_app.answer({**request(node_file), **where}, ctx)
        assert str(tmp_path) not in str(err.value)
