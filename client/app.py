"""The Flower ClientApp: one SuperNode hosting one or more logical node-clients.

Each logical node reads only its own row and features (from a node store), and answers a round
with its encoded report or with a bare refusal, never a crash. Everything that protects the
node comes from the node's side, never from the server's message (see
:mod:`ldpgraph.client.budget`):

- **Deployment** (node config ``data-file``): the SuperNode's own ``--node-config`` gives
  ``budget`` (required: without a finite one every LDP round is refused), ``unit``
  (``per-vector`` unless it says ``per-bit``), the caps ``max-feature-share``,
  ``max-epsilon-adjacency`` and ``max-epsilon-features``, ``trust-curator`` (consent to raw
  upload), ``ledger`` (the ledger directory; default ``$XDG_STATE_HOME/ldpgraph/ledger``) and
  ``ledger-witness`` (its witness, a second place; default
  ``$XDG_CONFIG_HOME/ldpgraph/ledger-witness``), both outside the partition's directory
  (:mod:`ldpgraph.client.ledger`), and, for tests only, ``seed``; without it every request
  draws fresh OS entropy. Its client step runs inside
  :func:`~ldpgraph.protocols.mechanisms.constant_work`: its reply time does not depend on its
  data or noise beyond the public sizes.
- **Simulation** (no ``data-file``): the harness plays every node; it writes each simulated
  node's settings (budget, consent, reproducible seed) beside the node data it serves, and the
  ledger lives in the run directory.

A malformed request (its where-values included) is answered with one bare refusal per hosted
node, before anything is charged; an error a SuperNode raises (its own configuration or node
file unusable) names no file: the path stays in the node's log.

No torch on this import path.
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.clientapp import ClientApp

from ldpgraph.protocols.mechanisms import CONSTANT_WORK, SPARSE, constant_work
from ldpgraph.protocols.messages import HELLO, MessageError, RoundMessage
from ldpgraph.protocols.registry import protocol_from_config
from ldpgraph.protocols.reports import (
    CONFIG_RECORD,
    HOSTS_RECORD,
    encode_report,
    node_record_name,
)

from .budget import REFUSED, Ledger, NodeConfigError, NodeSettings, admit_nodes
from .ledger import NodeLedger
from .nodedata import NodeDataError, NodeStore, open_store
from .units import PER_VECTOR, round_charge

log = logging.getLogger("ldpgraph.client")

#: Key of the simulated nodes' settings in a simulation node store's meta.json.
SIMULATED_SETTINGS = "simulated-node-settings"
#: The unit a deployed node counts in unless its configuration says otherwise.
DEPLOYED_UNIT = PER_VECTOR

app = ClientApp()


def default_ledger() -> Path:
    """A deployed node's ledger directory unless configured: the operator's state home."""
    home = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(home) / "ldpgraph" / "ledger"


def default_witness() -> Path:
    """Where a deployed node witnesses its ledger unless configured: the operator's
    configuration home (another tree than the ledger's)."""
    home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(home) / "ldpgraph" / "ledger-witness"


class Hosted:
    """The node store a SuperNode reads, the logical nodes it hosts, their own settings and
    ledger, and (``problem``) why its nodes refuse every round (None: they need not)."""

    def __init__(
        self,
        store: NodeStore,
        nodes: list[int],
        settings: NodeSettings,
        ledger: Ledger | NodeLedger,
        problem: str | None = None,
        deployed: bool = False,
    ) -> None:
        self.store = store
        self.nodes = nodes
        self.settings = settings
        self.ledger = ledger
        self.problem = problem
        self.deployed = deployed


def _inside(path: Path, root: Path) -> bool:
    path, root = path.resolve(), root.resolve()
    return path == root or root in path.parents


def _ledger_problem(settings: NodeSettings, data_file: Path) -> str | None:
    """Why this deployed node's ledger places are unusable (None: they are usable)."""
    assert settings.ledger is not None and settings.witness is not None
    partition = data_file.resolve().parent
    for name, place in (("ledger", settings.ledger), ("ledger witness", settings.witness)):
        if _inside(place, partition):
            return (
                f"the {name} {place} lies inside the partition directory {partition}, which "
                "`ldpgraph partition` writes: put it where the operator keeps node state"
            )
    if _inside(settings.ledger, settings.witness) or _inside(settings.witness, settings.ledger):
        return "the ledger and its witness must be two places, neither inside the other"
    legacy = Path(str(data_file).rstrip("/") + ".ledger.json")
    if legacy.exists():
        return (
            f"a ledger of an earlier version lies at {legacy}; its spends are not in "
            f"{settings.ledger}: move it aside once its nodes' spends are settled (a reset is "
            "the operator's explicit --reset-ledger)"
        )
    return None


def _deployed(node_cfg: Any) -> Hosted:
    path = Path(str(node_cfg["data-file"]))
    try:
        store = open_store(str(path))
    except NodeDataError as exc:
        log.error("this SuperNode's node file is unusable: %s", exc)
        raise NodeConfigError("this SuperNode's node file is unusable (its log says why)") from None
    settings = NodeSettings.from_node_config(
        node_cfg,
        default_ledger(),
        durable=True,
        default_unit=DEPLOYED_UNIT,
        default_witness=default_witness(),
    )
    nodes = list(store.node_ids)
    assert settings.ledger is not None and settings.witness is not None
    problem = _ledger_problem(settings, path)
    try:
        fingerprints = {node: store.fingerprint(node) for node in nodes}
    except NodeDataError as exc:
        fingerprints, problem = {}, f"a node's data is unusable: {exc}"
    ledger = NodeLedger(settings.ledger, settings.witness, fingerprints, settings.unit)
    return Hosted(store, nodes, settings, ledger, problem, deployed=True)


def _simulated(node_cfg: Any, cfg: dict[str, Any]) -> Hosted:
    """The harness wrote the store and every simulated node's settings beside it. Only a
    store the harness marked as such serves this path (a deployed node file is not)."""
    try:
        store = open_store(str(cfg["data"]))
        k = int(cfg["nodes-per-client"])
        first = int(node_cfg["partition-id"]) * k
    except (KeyError, TypeError, ValueError) as exc:
        log.error("malformed simulation request: %s", exc)
        raise MessageError("malformed request: no usable simulation node store") from None
    if SIMULATED_SETTINGS not in store.meta:
        log.error("%s is not a simulation node store", store.path)
        raise NodeDataError(
            "not a simulation node store; a deployed SuperNode needs its own node file in its "
            "node config (data-file=...)"
        )
    last = min(store.first + store.count, first + k)
    own = store.meta.get(SIMULATED_SETTINGS) or {}
    path = store.path / "ledgers" / f"{first}.json"
    settings = NodeSettings.from_node_config(own, path, durable=False)
    graph = str(store.meta.get("graph") or store.partition or "simulation")
    return Hosted(store, list(range(first, last)), settings, Ledger(path, graph))


def hosted(context: Context, cfg: dict[str, Any]) -> Hosted:
    """What this SuperNode hosts, and the settings its nodes configured for themselves.
    ``cfg``: the received message (a simulation reads where its store lies from it)."""
    if "data-file" in context.node_config:  # deployment: all from the node's own config
        return _deployed(context.node_config)
    return _simulated(context.node_config, cfg)


def _where_problem(host: Hosted, where: Any) -> str | None:
    """Why the message's where-values do not describe this node's graph (None: they do)."""
    n = where.get("num-nodes")
    if n is None:
        return "the request names no graph size (num-nodes)"
    if n != host.store.num_nodes:
        return f"the request is for a {n}-node graph, this node's has {host.store.num_nodes}"
    partition = where.get("partition") or ""
    if host.deployed and partition and host.store.partition not in ("", partition):
        return "the request is for another partition than this node file's"
    return None


def _refusals(nodes: list[int]) -> dict[str, ConfigRecord]:
    return {node_record_name(n): ConfigRecord({"node": n, "refused": REFUSED}) for n in nodes}


def answer(cfg: dict[str, Any], context: Context) -> dict[str, ConfigRecord]:
    """The records of this SuperNode's reply to one server message.

    A request the node cannot or will not serve gets one bare ``refused`` record per hosted
    node; why stays in the node's own log. Everything about the request is checked before
    anything is charged.
    """
    try:
        host = hosted(context, cfg)
    except NodeConfigError as exc:
        log.error("this SuperNode's node config is unusable: %s", exc)
        raise
    try:
        message = RoundMessage.from_record(cfg)
        problem = _where_problem(host, message.where)
        if problem is not None:
            raise MessageError(problem)
    except MessageError as exc:
        log.warning("refusing a malformed request: %s", exc)
        return _refusals(host.nodes)
    if message.op == HELLO:
        return _hello(host)
    round_ = message.round
    assert round_ is not None  # a parsed report request names its round
    # The protocol reads its values of the message, as on the local backend.
    values = message.protocol_values()
    try:
        protocol = protocol_from_config(values)
        charge = round_charge(protocol, round_, host.store.num_nodes, host.store.num_features)
        if not (math.isfinite(charge.per_bit) or protocol.raw_upload):
            raise ValueError(f"round cost ε={charge.per_bit}")
        protocol.check_request(round_, values, host.store.num_nodes)
    except Exception as exc:  # a malformed request: refuse, never crash, charge nothing
        log.warning("refusing a malformed request: %s", exc)
        return _refusals(host.nodes)
    if host.problem is not None:
        log.error("this SuperNode's nodes refuse every round: %s", host.problem)
        return _refusals(host.nodes)
    admitted, refused = admit_nodes(
        host.ledger, host.nodes, charge, round_, host.settings, protocol.raw_upload
    )
    for reason in refused.values():
        log.info("refused: %s", reason)
    records = _refusals(list(refused))
    records.update(_reports(host, protocol, round_, values, admitted))
    return records


def _hello(host: Hosted) -> dict[str, ConfigRecord]:
    """The hello's reply: the hosted node ids, their privacy unit and how they draw rows."""
    hosts = {
        "nodes": np.asarray(host.nodes, "<i4").tobytes(),
        "unit": host.settings.unit,
        "sampling": CONSTANT_WORK if host.deployed else SPARSE,
    }
    return {HOSTS_RECORD: ConfigRecord(hosts)}


def _reports(
    host: Hosted, protocol: Any, round_: int, values: Any, admitted: list[int]
) -> dict[str, ConfigRecord]:
    """The admitted nodes' reports, each node's charge already spent: a node whose step fails
    refuses the round and its charge stays spent (fail closed)."""
    records: dict[str, ConfigRecord] = {}
    for node in admitted:
        try:
            # A deployed node's reply time is seen by the server: its RR rows are drawn in
            # constant work. The simulation keeps the sparse rows (no one times a reply).
            with constant_work(host.deployed):
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
