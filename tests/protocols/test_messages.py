"""The typed round message (ldpgraph.protocols.messages): its wire form is exactly the flat dict
of earlier versions, it parses back to itself, a malformed one raises MessageError, and a node
refuses it."""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

import numpy as np
import pytest
from flwr.app import ConfigRecord

from ldpgraph.client import app as client_app
from ldpgraph.protocols.messages import (
    RESERVED_KEYS,
    MessageError,
    RoundMessage,
    declared_params,
)
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.protocols.reports import CONFIG_RECORD, HOSTS_RECORD
from ldpgraph.server.collector import GridCollector
from ldpgraph.server.rounds import round_message
from ldpgraph.simulation.backends.local import collect_round
from ldpgraph.simulation.pipeline import curator_view

from ..client import test_guardian as guardian
from ..client.test_guardian import PARTITION, N, assert_bare_refusals, context, reports

# The hostile-server suite's fixtures: its graph and a deployed node file of nodes 10..14.
graph = guardian.graph
node_file = guardian.node_file

SEED = 11
SIM_WHERE = {"data": "/tmp/run/nodes", "nodes-per-client": 4, "num-nodes": 12, "partition": ""}
DEPLOY_WHERE = {"num-nodes": N, "partition": PARTITION}
PROTOCOLS = ["hogs", "hogs-edge", "rr", "ldpgen", "fp-ldpgen", "solitude", "fp-blink", "none"]


def old_wire(
    protocol, round_: int, where: dict[str, Any], feedback: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The round message as the code before RoundMessage built it (server/rounds.py's
    round_message, GridCollector.collect and its None filter)."""
    message = {**protocol.config(), **(feedback or {}), **protocol.public_message(round_, SEED)}
    values = {"op": "report", "round": round_, **where, **message}
    return {k: v for k, v in values.items() if v is not None}


def ldpgen_feedback(protocol, graph) -> dict[str, Any]:
    """LDPGen's real round-0 feedback (k1 and the groups) on the guardian's graph."""
    result = collect_round(protocol, graph, 0, {**protocol.config()}, SEED)
    curator = curator_view(graph, protocol.name == "ldpgen")
    return protocol.server_step(0, result, curator, SEED)


# -- the wire is unchanged ------------------------------------------------------------------------


@pytest.mark.parametrize("name", PROTOCOLS)
@pytest.mark.parametrize("where", [SIM_WHERE, DEPLOY_WHERE, {}])
def test_round_zero_wire_is_the_old_dict(name, where):
    proto = make_protocol(name)
    record = round_message(proto, 0, SEED).with_where(where).to_record()
    assert record == old_wire(proto, 0, where)
    ConfigRecord(record)  # it fits a ConfigRecord as it is


@pytest.mark.parametrize("name", ["ldpgen", "fp-ldpgen"])
def test_ldpgen_feedback_round_wire_is_the_old_dict(name, graph):
    proto = make_protocol(name, epsilon=4.0, k1=3)
    feedback = ldpgen_feedback(proto, graph)
    message = round_message(proto, 1, SEED, feedback)
    assert message.to_record() == old_wire(proto, 1, {}, feedback)
    assert message.with_where(SIM_WHERE).to_record() == old_wire(proto, 1, SIM_WHERE, feedback)
    # The feedback is public, never a parameter.
    assert feedback.items() <= message.public.items() and not set(feedback) & set(message.params)
    # What the protocol reads (local backend and Flower node alike) is the old local message.
    assert message.protocol_values() == {**proto.config(), **feedback}
    assert proto.num_features(1, message.protocol_values(), 24) == feedback["ldpgen_k"]


@pytest.mark.parametrize("name", PROTOCOLS)
def test_protocol_values_are_the_old_local_message(name):
    proto = make_protocol(name)
    old = {**proto.config(), **proto.public_message(0, SEED)}
    assert round_message(proto, 0, SEED).protocol_values() == old


def test_hello_wire_is_the_old_dict():
    assert RoundMessage.hello(SIM_WHERE).to_record() == {"op": "hello", **SIM_WHERE}
    assert RoundMessage.hello({**DEPLOY_WHERE, "data": None}).to_record() == {
        "op": "hello",
        **DEPLOY_WHERE,
    }


class RecordingGrid:
    """A Grid whose SuperNodes never answer: it keeps the ConfigRecord of every message."""

    def __init__(self, node_ids: list[int]) -> None:
        self.node_ids = node_ids
        self.sent: list[tuple[int, dict[str, Any]]] = []

    def get_node_ids(self) -> list[int]:
        return self.node_ids

    def push_messages(self, messages) -> list[str]:
        for msg in messages:
            self.sent.append(
                (msg.metadata.dst_node_id, dict(msg.content.config_records[CONFIG_RECORD]))
            )
        return [f"m{i}" for i in range(len(messages))]

    def pull_messages(self, ids) -> list:
        return []


def test_the_grid_collector_sends_the_old_dicts(monkeypatch):
    from flwr.supercore.task_identity import TaskIdentity

    # A ServerApp's identity, as the Flower runtime sets it before a ServerApp builds messages.
    for key in ("_run_id", "_node_id", "_task_id"):
        monkeypatch.setattr(TaskIdentity, key, 1)
    grid = RecordingGrid([5, 9])
    col = GridCollector(grid, 12, 2, wait_timeout=0.2, round_timeout=0.01, abort=threading.Event())
    col.discover(SIM_WHERE)
    assert grid.sent == [(5, {"op": "hello", **SIM_WHERE}), (9, {"op": "hello", **SIM_WHERE})]
    col.hosts = {5: np.arange(0, 6), 9: np.arange(6, 12)}
    grid.sent.clear()
    proto = make_protocol("ldpgen", epsilon=2.0)
    col.collect(proto, round_message(proto, 0, SEED), 24)
    assert grid.sent == [(sid, old_wire(proto, 0, SIM_WHERE)) for sid in (5, 9)]
    with pytest.raises(ValueError, match="not a round's request: hello"):
        col.collect(proto, RoundMessage.hello(SIM_WHERE), 24)


# -- round trips ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PROTOCOLS)
@pytest.mark.parametrize("round_", [0, 1, 7])
def test_report_round_trip(name, round_):
    proto = make_protocol(name)
    message = RoundMessage.report(
        round_, proto.config(), proto.public_message(0, SEED), where=SIM_WHERE
    )
    record = message.to_record()
    again = RoundMessage.from_record(record)
    assert again == message and again.to_record() == record
    # Through a real ConfigRecord, as a node receives it.
    assert RoundMessage.from_record(dict(ConfigRecord(record))) == message
    # The node rebuilds the protocol from the parameters alone.
    assert set(again.params) <= set(declared_params(name))
    assert make_protocol(again.protocol, **again.params).config() == proto.config()


def test_undeclared_config_values_travel_as_public_values():
    """hogs-edge states feature_share and steps in its config without declaring them: they are
    public values, as the node reads them, and the wire keeps them."""
    proto = make_protocol("hogs-edge")
    message = round_message(proto, 0, SEED)
    assert set(message.params) == {"epsilon", "tau"}
    assert set(message.public) == {"feature_share", "steps"}
    assert RoundMessage.from_record(message.to_record()) == message


def test_ldpgen_round_one_round_trip(graph):
    proto = make_protocol("fp-ldpgen", epsilon=4.0, k1=3)
    message = round_message(proto, 1, SEED, ldpgen_feedback(proto, graph))
    record = message.with_where(DEPLOY_WHERE).to_record()
    assert RoundMessage.from_record(record) == message.with_where(DEPLOY_WHERE)
    assert isinstance(record["ldpgen_groups"], bytes)


@pytest.mark.parametrize("where", [SIM_WHERE, DEPLOY_WHERE, {}])
def test_hello_round_trip(where):
    message = RoundMessage.hello(where)
    assert RoundMessage.from_record(message.to_record()) == message
    assert message.protocol is None and message.round is None


def test_a_message_is_immutable_and_has_no_field_for_the_nodes_settings():
    message = round_message(make_protocol("hogs"), 0, SEED)
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.round = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        message.params["epsilon"] = 1e9  # type: ignore[index]
    names = {f.name for f in dataclasses.fields(RoundMessage)}
    assert names == {"op", "protocol", "round", "params", "public", "where"}


# -- malformed messages ---------------------------------------------------------------------------


def _hogs_record(**change: Any) -> dict[str, Any]:
    record = round_message(make_protocol("hogs"), 0, SEED).with_where(DEPLOY_WHERE).to_record()
    return {**record, **change}


MALFORMED = {
    "unknown op": _hogs_record(op="steal"),
    "no op": {k: v for k, v in _hogs_record().items() if k != "op"},
    "negative round": _hogs_record(round=-1),
    "float round": _hogs_record(round=1.0),
    "fractional round": _hogs_record(round=1.5),
    "bool round": _hogs_record(round=True),
    "string round": _hogs_record(round="0"),
    "None round": _hogs_record(round=None),
    "missing round": {k: v for k, v in _hogs_record().items() if k != "round"},
    "non-str protocol": _hogs_record(protocol=3),
    "missing protocol": {k: v for k, v in _hogs_record().items() if k != "protocol"},
    "unknown protocol": _hogs_record(protocol="no-such-protocol"),
    "None value": _hogs_record(epsilon=None),
    "dict value": _hogs_record(epsilon={"x": 1}),
    "mixed list": _hogs_record(extra=[1, "a"]),
    "string num-nodes": _hogs_record(**{"num-nodes": str(N)}),
    "bool nodes-per-client": _hogs_record(**{"nodes-per-client": True}),
    "negative nodes-per-client": _hogs_record(**{"nodes-per-client": -1}),
    "int partition": _hogs_record(partition=7),
    "hello with a round": {"op": "hello", "round": 0, **DEPLOY_WHERE},
    "hello with a protocol": {"op": "hello", "protocol": "hogs", **DEPLOY_WHERE},
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_messages_raise_message_error(case):
    with pytest.raises(MessageError) as info:
        RoundMessage.from_record(MALFORMED[case])
    assert "\n" not in str(info.value) and str(info.value)


def test_not_a_mapping_is_a_message_error():
    with pytest.raises(MessageError, match="mapping"):
        RoundMessage.from_record([("op", "report")])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "build",
    [
        lambda: RoundMessage("steal"),
        lambda: RoundMessage.report(0, {"epsilon": 1.0}),  # no protocol name
        lambda: RoundMessage.report(-1, {"protocol": "hogs"}),
        lambda: RoundMessage.report(0, {"protocol": "hogs"}, {"round": 3}),
        lambda: RoundMessage.report(0, {"protocol": "hogs"}, {"num-nodes": 3}),
        lambda: RoundMessage.report(0, {"protocol": "hogs", "epsilon": 1.0}, {"epsilon": 2.0}),
        lambda: RoundMessage.report(0, {"protocol": "hogs"}, {"x": np.int64(3)}),
        lambda: RoundMessage.report(0, {"protocol": "hogs"}, where={"budget": 9.0}),
        lambda: RoundMessage.hello({"seed": 1}),
        lambda: RoundMessage("hello", protocol="hogs"),
    ],
)
def test_the_server_cannot_build_a_malformed_message(build):
    with pytest.raises(MessageError):
        build()


def test_reserved_keys_are_the_op_round_name_and_where_values():
    assert RESERVED_KEYS == {"op", "round", "protocol", *SIM_WHERE}


# -- a node refuses them ------------------------------------------------------------------------


@pytest.mark.parametrize(
    # An int partition fails the node file's own check first (an error, as before).
    "case",
    [c for c in sorted(MALFORMED) if "partition" not in c and "hello" not in c],
)
def test_a_node_refuses_a_malformed_message(node_file, case):
    records = client_app.answer(MALFORMED[case], context(node_file, budget=9.0))
    assert_bare_refusals(records)


@pytest.mark.parametrize("case", ["hello with a round", "hello with a protocol"])
def test_a_node_refuses_a_malformed_hello(node_file, case):
    assert_bare_refusals(client_app.answer(MALFORMED[case], context(node_file, budget=9.0)))


def test_a_node_answers_the_typed_messages(node_file):
    ctx = context(node_file, budget=9.0)
    hello = client_app.answer(RoundMessage.hello(DEPLOY_WHERE).to_record(), ctx)
    ids = np.frombuffer(dict(hello[HOSTS_RECORD])["nodes"], dtype="<i4")
    assert ids.tolist() == list(range(10, 15))
    proto = make_protocol("hogs", epsilon=4.0)
    request = round_message(proto, 0, SEED).with_where(DEPLOY_WHERE).to_record()
    got = reports(client_app.answer(request, ctx))
    assert all(r is not None for r in got.values())
