"""The Flower ClientApp: one SuperNode hosting one or more logical node-clients.

Each logical node reads only its own row and features (from a node store), and answers a round
with its encoded report or with a bare refusal, never a crash. Everything that protects the
node comes from the node's side, never from the server's message (see
:mod:`ldpgraph.client.budget`):

- **Deployment** (node config ``data-file``): the SuperNode's own ``--node-config`` gives
  ``budget`` (required: without a finite one every LDP round is refused), ``trust-curator``
  (consent to raw upload), ``ledger`` (default: ``<data-file>.ledger.json``, beside the node
  file) and, for tests only, ``seed``; without it every request draws fresh OS entropy.
- **Simulation** (no ``data-file``): the harness plays every node; it writes each simulated
  node's settings (budget, consent, reproducible seed) beside the node data it serves, and the
  ledger lives in the run directory.

No torch on this import path.
"""

from __future__ import annotations

import hashlib
import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp

from ldpgraph.protocols.messages import HELLO, MessageError, RoundMessage
from ldpgraph.protocols.registry import protocol_from_config
from ldpgraph.protocols.reports import (
    CONFIG_RECORD,
    HOSTS_RECORD,
    encode_report,
    node_record_name,
)

from .budget import REFUSED, Ledger, NodeConfigError, NodeSettings, admit_nodes
from .nodedata import NodeDataError, NodeStore, open_store

log = logging.getLogger("ldpgraph.client")

#: Key of the simulated nodes' settings in a simulation node store's meta.json.
SIMULATED_SETTINGS = "simulated-node-settings"

app = ClientApp()


class Hosted:
    """The node store a SuperNode reads, the logical nodes it hosts and their own settings."""

    def __init__(self, store: NodeStore, nodes: list[int], settings: NodeSettings) -> None:
        self.store = store
        self.nodes = nodes
        self.settings = settings
        meta = store.meta
        # The ledger's key: the graph's content (`ldpgraph partition` records it), so that a
        # re-partition of the same graph into other blocks does not start a fresh budget.
        fallback = f"{store.num_nodes}:{store.num_features}:{meta.get('first')}:{meta.get('count')}"
        self.graph = (
            str(meta.get("graph") or "")
            or store.partition
            or hashlib.sha256(fallback.encode()).hexdigest()[:16]
        )
        self.ledger = Ledger(settings.ledger, self.graph, durable=settings.durable)
        #: Why every request to this SuperNode is refused (a request for another graph).
        self.refusal: str | None = None


def hosted(context: Context, cfg: dict[str, Any]) -> Hosted:
    """What this SuperNode hosts, and the settings its nodes configured for themselves.
    ``cfg``: the received message, read before it is parsed (only its where-values): a
    malformed message is answered with one refusal per hosted node."""
    node_cfg = context.node_config
    if "data-file" in node_cfg:  # deployment: everything from the node's own configuration
        path = str(node_cfg["data-file"])
        store = open_store(path)
        default_ledger = Path(path.rstrip("/") + ".ledger.json")
        settings = NodeSettings.from_node_config(node_cfg, default_ledger, durable=True)
        host = Hosted(store, list(store.node_ids), settings)
        # A request for another graph or partition, or naming none, is refused (not raised:
        # an error reply would carry the node file's path).
        num_nodes = cfg.get("num-nodes")
        partition = cfg.get("partition", "")
        try:
            if isinstance(num_nodes, bool) or not isinstance(num_nodes, int):
                raise NodeDataError(f"the request's num-nodes is {num_nodes!r}, not an integer")
            store.check_against(num_nodes, partition if isinstance(partition, str) else "?")
        except NodeDataError as exc:
            host.refusal = str(exc)
        return host
    # Simulation: the harness wrote the store and every simulated node's settings beside it.
    # Only a store the harness marked as such serves this path (a deployed node file is not).
    store = open_store(str(cfg["data"]))
    if SIMULATED_SETTINGS not in store.meta:
        raise NodeDataError(
            f"{store.path} is not a simulation node store; a deployed SuperNode needs its own "
            "node file in its node config (data-file=...)"
        )
    k = int(cfg["nodes-per-client"])
    first = int(node_cfg["partition-id"]) * k
    last = min(store.first + store.count, first + k)
    own = store.meta.get(SIMULATED_SETTINGS) or {}
    ledger = store.path / "ledgers" / f"{first}.json"
    settings = NodeSettings.from_node_config(own, ledger, durable=False)
    return Hosted(store, list(range(first, last)), settings)


def _refusals(nodes: list[int]) -> dict[str, ConfigRecord]:
    return {node_record_name(n): ConfigRecord({"node": n, "refused": REFUSED}) for n in nodes}


def answer(cfg: dict[str, Any], context: Context) -> dict[str, ConfigRecord]:
    """The records of this SuperNode's reply to one server message.

    A request the node cannot or will not serve gets one bare ``refused`` record per hosted
    node; why stays in the node's own log.
    """
    try:
        host = hosted(context, cfg)
    except NodeConfigError as exc:
        log.error("this SuperNode's node config is unusable: %s", exc)
        raise
    if host.refusal is not None:
        log.warning("refusing a request: %s", host.refusal)
        return _refusals(host.nodes)
    try:
        message = RoundMessage.from_record(cfg)
    except MessageError as exc:
        log.warning("refusing a malformed request: %s", exc)
        return _refusals(host.nodes)
    if message.op == HELLO:
        return {HOSTS_RECORD: ConfigRecord({"nodes": np.asarray(host.nodes, "<i4").tobytes()})}
    round_ = message.round
    assert round_ is not None  # a parsed report request names its round
    # The protocol reads its values of the message, as on the local backend.
    values = message.protocol_values()
    try:
        protocol = protocol_from_config(values)
        cost = float(protocol.round_epsilon(round_))
        if not (math.isfinite(cost) or protocol.raw_upload):
            raise ValueError(f"round cost ε={cost}")
    except Exception as exc:  # a malformed request: refuse, never crash
        log.warning("refusing a malformed request: %s", exc)
        return _refusals(host.nodes)
    admitted, refused = admit_nodes(
        host.ledger, host.nodes, cost, round_, host.settings, protocol.raw_upload
    )
    for reason in refused.values():
        log.info("refused: %s", reason)
    records = _refusals(list(refused))
    for node in admitted:
        try:
            report = protocol.client_step(
                round_, host.store.view(node), values, host.settings.stream_seed()
            )
        except Exception as exc:  # the charge stays spent: fail closed
            log.warning("node %d refuses round %d: %s", node, round_, exc)
            records.update(_refusals([node]))
            continue
        records[node_record_name(node)] = ConfigRecord(encode_report(report))
    return records


@app.query()
def query(msg: Message, context: Context) -> Message:
    cfg = dict(msg.content.config_records[CONFIG_RECORD])
    return Message(RecordDict(answer(cfg, context)), reply_to=msg)
