"""Nodes bound to SuperNodes: a SuperNode that claims another's node ids gets none of them, and
the honest SuperNodes' records all arrive, whatever the order of the hello replies.

The hello round and one report round run through the real GridCollector, real Flower
messages and the real ClientApp handler on node files written by ``ldpgraph partition
--supernode-keys``; only the SuperLink is replaced by an in-process Grid that hands the
ServerApp each SuperNode's authenticated public key (as ``Grid.get_nodes()`` does)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.proto.node_pb2 import NodeInfo

from ldpgraph.client import app as client_app
from ldpgraph.client.nodedata import open_store
from ldpgraph.protocols.messages import RoundMessage
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.protocols.reports import CONFIG_RECORD, HOSTS_RECORD, encode_report, node_record_name
from ldpgraph.protocols.types import Report
from ldpgraph.server.binding import (
    CONTESTED,
    NO_KEY,
    NOT_BOUND,
    BindingError,
    Manifest,
    grant_claims,
    key_fingerprint,
)
from ldpgraph.server.collector import GridCollector
from ldpgraph.simulation.cli import main
from ldpgraph.simulation.partition import CuratorFileError, load_curator, write_partition

N, BLOCK = 30, 10
DATASET = f"synthetic:n={N},classes=2,d=8,seed=1"


def keypair(directory: Path, name: str) -> tuple[Path, bytes]:
    """An ECDSA P-384 key as deploy/make-supernode-keys.sh makes it: the OpenSSH .pub the
    partitioner reads, and the PEM the SuperLink stores for the SuperNode."""
    key = ec.generate_private_key(ec.SECP384R1()).public_key()
    pub = directory / f"{name}.pub"
    pub.write_bytes(
        key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    )
    pem = key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return pub, pem


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    root = tmp_path_factory.mktemp("bound")
    keys = [keypair(root, name) for name in ("b0", "b1", "b2", "rogue")]
    args = ["partition", "--dataset", DATASET, "--out", str(root / "part")]
    args += ["--nodes-per-file", str(BLOCK), "--supernode-keys", *(str(k[0]) for k in keys[:3])]
    assert main(args) == 0
    open_store.cache_clear()
    yield root, keys
    open_store.cache_clear()


@pytest.fixture(autouse=True)
def task_identity(monkeypatch):
    """Inside a ServerApp Flower knows its run and node; here we say them."""
    from flwr.supercore.task_identity import TaskIdentity

    monkeypatch.setattr(TaskIdentity, "_run_id", 1)
    monkeypatch.setattr(TaskIdentity, "_node_id", 0)
    monkeypatch.setattr(TaskIdentity, "_task_id", 1)


class FakeGrid:
    """A SuperLink in one process: SuperNode ``sid`` answers with ``handlers[sid](cfg)`` (the
    records of its reply) and authenticated with the PEM key ``keys[sid]``."""

    def __init__(self, handlers: dict, keys: dict[int, bytes]) -> None:
        self.handlers, self.keys = handlers, keys
        self.inbox: dict[str, Message] = {}
        self.count = 0

    def get_node_ids(self):
        return list(self.handlers)

    def get_nodes(self):
        return [NodeInfo(node_id=sid, public_key=self.keys.get(sid, b"")) for sid in self.handlers]

    def push_messages(self, msgs):
        ids = []
        for msg in msgs:
            self.count += 1
            mid = f"m{self.count}"
            msg.metadata.__dict__["_message_id"] = mid
            cfg = dict(msg.content.config_records[CONFIG_RECORD])
            records = self.handlers[msg.metadata.dst_node_id](cfg)
            reply = Message(RecordDict(records), reply_to=msg)
            reply.metadata.__dict__["_src_node_id"] = msg.metadata.dst_node_id
            self.inbox[mid] = reply
            ids.append(mid)
        return ids

    def pull_messages(self, ids):
        return [self.inbox.pop(i) for i in ids if i in self.inbox]


def honest(part: Path, block: int):
    ctx = Context(
        run_id=1,
        node_id=block,
        # Counted per bit (edge LDP, as the runs state it): per vector, ε = 4 costs far more.
        node_config={
            "data-file": str(part / f"nodes-{block:05d}"),
            "budget": 100.0,
            "unit": "per-bit",
        },
        state=RecordDict(),
        run_config={},
    )
    return lambda cfg: client_app.answer(cfg, ctx)


def rogue(claimed: np.ndarray, degree: float = 1e12):
    """Claims ``claimed`` in the hello and sends a fabricated report for each."""

    def handle(cfg):
        if cfg["op"] == "hello":
            return {HOSTS_RECORD: ConfigRecord({"nodes": claimed.astype("<i4").tobytes()})}
        out = {}
        for node in claimed.tolist():
            rep = Report(node, cfg["round"], N, np.arange(N)[np.arange(N) != node], None)
            out[node_record_name(node)] = ConfigRecord(encode_report(rep))
        return out

    return handle


@pytest.mark.parametrize("rogue_first", [True, False])
def test_a_supernode_claiming_anothers_ids_gets_none(deployment, rogue_first):
    root, keys = deployment
    part = root / "part"
    curator = load_curator(part)
    assert curator.manifest is not None
    handlers = {10 + b: honest(part, b) for b in range(3)}
    pems = {10 + b: keys[b][1] for b in range(3)}
    # A registered SuperNode (its own key) that claims ids 0-9, block 0's.
    handlers[99] = rogue(np.arange(10))
    pems[99] = keys[3][1]
    order = [99, 10, 11, 12] if rogue_first else [10, 11, 12, 99]
    grid = FakeGrid({sid: handlers[sid] for sid in order}, pems)
    col = GridCollector(grid, N, 3, wait_timeout=5, round_timeout=5, manifest=curator.manifest)
    hosts = col.discover({"data": "", "nodes-per-client": BLOCK, "num-nodes": N,
                          "partition": curator.partition})  # fmt: skip
    assert 99 not in hosts
    assert {sid: ids.tolist() for sid, ids in hosts.items()} == {
        10 + b: list(range(b * BLOCK, (b + 1) * BLOCK)) for b in range(3)
    }
    hello = col.hello_stats.to_dict()
    assert hello["granted"] == N and hello["refused_claims"] == 10
    assert hello["reasons"] == {NO_KEY: 10}  # its key binds no node file
    proto = make_protocol("hogs", epsilon=4.0)
    replies = col.collect(proto, RoundMessage.report(0, proto.config()), 8)
    assert sorted(replies.reports) == list(range(N))  # every honest record arrived
    assert replies.stats.replied == N and replies.stats.missing == 0


def test_a_bound_supernode_claiming_beyond_its_block_keeps_only_its_own(deployment):
    """SuperNode b1 (a key the manifest names) claims its own block and block 0: it gets its
    own, block 0 stays b0's, and the ten refused claims are counted."""
    root, keys = deployment
    part = root / "part"
    curator = load_curator(part)
    greedy = rogue(np.arange(0, 2 * BLOCK))
    grid = FakeGrid(
        {11: greedy, 10: honest(part, 0), 12: honest(part, 2)},
        {10: keys[0][1], 11: keys[1][1], 12: keys[2][1]},
    )
    col = GridCollector(grid, N, 3, wait_timeout=5, round_timeout=5, manifest=curator.manifest)
    hosts = col.discover({"data": "", "nodes-per-client": BLOCK, "num-nodes": N,
                          "partition": curator.partition})  # fmt: skip
    assert hosts[10].tolist() == list(range(BLOCK))
    assert hosts[11].tolist() == list(range(BLOCK, 2 * BLOCK))
    assert col.hello_stats.reasons == {NOT_BOUND: BLOCK}


def test_grant_claims_without_a_manifest_gives_contested_ids_to_none():
    claims = {1: np.arange(0, 6), 2: np.arange(4, 10), 3: None}
    for order in (claims, dict(reversed(list(claims.items())))):
        hosts, stats = grant_claims(order, 10)
        assert hosts[1].tolist() == [0, 1, 2, 3] and hosts[2].tolist() == [6, 7, 8, 9]
        assert stats.reasons[CONTESTED] == 4 and stats.granted == 8


def test_fingerprint_is_the_same_for_the_ssh_and_pem_forms(tmp_path):
    pub, pem = keypair(tmp_path, "k")
    assert key_fingerprint(pub.read_bytes()) == key_fingerprint(pem)
    with pytest.raises(BindingError, match="not an OpenSSH or PEM public key"):
        key_fingerprint(b"ssh-ed25519 garbage")


def test_partition_needs_one_key_per_file_and_a_whole_manifest(tmp_path):
    from ldpgraph.simulation.datasets import load_dataset

    graph = load_dataset(DATASET)
    pub, _ = keypair(tmp_path, "only")
    with pytest.raises(CuratorFileError, match="1 SuperNode key.s. for 3 node files"):
        write_partition(graph, tmp_path / "p", BLOCK, dataset=DATASET, supernode_keys=[pub])
    write_partition(graph, tmp_path / "q", BLOCK, dataset=DATASET, supernode_keys=[pub] * 3)
    doc = json.loads((tmp_path / "q" / "curator.json").read_text())
    assert {b["supernode"] for b in doc["blocks"]} == {key_fingerprint(pub.read_bytes())}
    del doc["blocks"][1]["supernode"]
    (tmp_path / "q" / "curator.json").write_text(json.dumps(doc))
    with pytest.raises(CuratorFileError, match="binds only some node files"):
        load_curator(tmp_path / "q")
    assert Manifest.from_blocks(3, [{"first": 0, "count": 3}]) is None


def test_a_deployment_without_a_manifest_is_refused(tmp_path):
    from ldpgraph.simulation.backends.flower import release_over_grid
    from ldpgraph.simulation.config import ConfigError, RunConfig

    with pytest.raises(ConfigError, match="--supernode-keys"):
        release_over_grid(None, make_protocol("hogs", epsilon=1.0), None, None, RunConfig(),
                          tmp_path, supernodes=1)  # fmt: skip


def test_an_unbound_supernode_does_not_count_towards_the_expected_ones(deployment):
    """Three bound SuperNodes are expected; two of them and an impostor connect: the server
    keeps waiting for the third (and says so), instead of starting with the impostor."""
    from ldpgraph.server.collector import CollectionError

    root, keys = deployment
    part = root / "part"
    curator = load_curator(part)
    handlers = {10: honest(part, 0), 11: honest(part, 1), 99: rogue(np.arange(10))}
    pems = {10: keys[0][1], 11: keys[1][1], 99: keys[3][1]}
    col = GridCollector(
        FakeGrid(handlers, pems), N, 3, wait_timeout=0.5, round_timeout=5,
        manifest=curator.manifest,
    )  # fmt: skip
    with pytest.raises(CollectionError, match="only 2 of 3 SuperNodes connected"):
        col.wait_for_supernodes(poll=0.05)
