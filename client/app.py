"""The Flower ClientApp: one SuperNode hosting one or more logical node-clients.

Each logical node reads only its own row and features (from a node store), keeps its own
spent budget in the SuperNode's persistent state, uses its own random streams, and answers a
round with its encoded report — or with a refusal, never a crash. Which nodes a SuperNode hosts
comes from its node config: ``data-file`` names a node store (deployment); otherwise, in
simulation, ``partition-id`` and the server's ``nodes-per-client`` select a block of the shared
store the server names. Optional node config: ``budget`` (ε), ``trust-curator`` (bool).
No torch on this import path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp

from ldpgraph.protocols.registry import protocol_from_config
from ldpgraph.protocols.reports import (
    CONFIG_RECORD,
    HOSTS_RECORD,
    encode_report,
    node_record_name,
)

from .budget import Refusal, check_and_spend
from .nodedata import NodeStore, open_store

SPENT_STATE = "ldpgraph.spent"

app = ClientApp()


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def hosted_nodes(context: Context, cfg: dict[str, Any]) -> tuple[NodeStore, list[int]]:
    """The node store this SuperNode reads and the logical node ids it hosts."""
    node_cfg = context.node_config
    if "data-file" in node_cfg:
        store = open_store(str(node_cfg["data-file"]))
        store.check_against(int(cfg["num-nodes"]), str(cfg.get("partition", "")))
        return store, list(store.node_ids)
    store = open_store(str(cfg["data"]))
    k = int(cfg["nodes-per-client"])
    first = int(node_cfg["partition-id"]) * k
    last = min(store.first + store.count, first + k)
    return store, list(range(first, last))


def _reply(msg: Message, records: dict[str, ConfigRecord]) -> Message:
    return Message(RecordDict(records), reply_to=msg)


def answer(cfg: dict[str, Any], context: Context) -> dict[str, ConfigRecord]:
    """The records of this SuperNode's reply to one server message."""
    op = cfg.get("op")
    store, nodes = hosted_nodes(context, cfg)
    if op == "hello":
        return {HOSTS_RECORD: ConfigRecord({"nodes": np.asarray(nodes, dtype="<i4").tobytes()})}
    if op != "report":
        raise ValueError(f"unknown operation {op!r}")

    protocol = protocol_from_config(cfg)
    round_ = int(cfg["round"])
    seed = int(cfg["seed"])
    budget = float(context.node_config.get("budget", cfg.get("default-budget", 0.0)))
    trusts = _truthy(context.node_config.get("trust-curator", cfg.get("default-trust", False)))
    state = context.state
    spent = dict(state.config_records[SPENT_STATE]) if SPENT_STATE in state.config_records else {}
    cost = protocol.round_epsilon(round_)
    records: dict[str, ConfigRecord] = {}
    for node in nodes:
        trial = dict(spent)
        try:
            check_and_spend(trial, node, cost, budget, protocol.raw_upload, trusts)
        except Refusal as exc:
            records[node_record_name(node)] = ConfigRecord({"node": node, "refused": str(exc)})
            continue
        report = protocol.client_step(round_, store.view(node), cfg, seed)
        records[node_record_name(node)] = ConfigRecord(encode_report(report))
        spent = trial
    state.config_records[SPENT_STATE] = ConfigRecord({k: float(v) for k, v in spent.items()})
    return records


@app.query()
def query(msg: Message, context: Context) -> Message:
    cfg = dict(msg.content.config_records[CONFIG_RECORD])
    return _reply(msg, answer(cfg, context))
