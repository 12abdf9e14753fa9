"""A deployed node's ledger fails closed: every way the re-audit made an exhausted node answer
again (ledger deleted, replaced by a valid empty one, the graph re-written elsewhere,
`ldpgraph partition` run twice, the dataset relabelled) now refuses, as do damaged bytes of
every kind; only the operator's named ``--reset-ledger`` starts a ledger afresh."""

from __future__ import annotations

import hashlib
import json
import os
import shutil

import pytest
from flwr.app import Context, RecordDict

from ldpgraph.client import app as client_app
from ldpgraph.client.budget import NodeSettings, admit_nodes
from ldpgraph.client.ledger import (
    LedgerError,
    NodeLedger,
    genesis,
    main,
    read_chain,
    reset,
    verified,
)
from ldpgraph.client.nodedata import fingerprint, open_store, write_store
from ldpgraph.client.units import Charge
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.protocols.reports import node_record_name
from ldpgraph.simulation.datasets import load_dataset
from ldpgraph.simulation.partition import write_partition

N = 40
DATASET = f"synthetic:n={N},classes=2,d=8,seed=1"
NODES = range(0, 10)  # the first node file of a 10-node partition


@pytest.fixture(scope="module")
def graph():
    return load_dataset(DATASET)


@pytest.fixture
def places(tmp_path):
    """The operator's ledger and witness, outside every partition directory."""
    return tmp_path / "operator" / "ledger", tmp_path / "keys" / "witness"


def partition(graph, out, label="synthetic"):
    write_partition(graph, out, 10, dataset=label)
    open_store.cache_clear()
    return out / "nodes-00000"


def ask(node_file, places, epsilon=8.0, **node_config):
    """One hogs request at ε to the SuperNode of ``node_file`` (budget 8, per bit): which of
    its nodes answered."""
    ledger, witness = places
    meta = json.loads((node_file / "meta.json").read_text())
    cfg = {"data-file": str(node_file), "budget": 8.0, "unit": "per-bit",
           "ledger": str(ledger), "ledger-witness": str(witness), **node_config}  # fmt: skip
    ctx = Context(run_id=1, node_id=7, node_config=cfg, state=RecordDict(), run_config={})
    msg = {"op": "report", "round": 0, "num-nodes": N, "partition": meta["partition"],
           **make_protocol("hogs", epsilon=epsilon).config()}  # fmt: skip
    records = client_app.answer(msg, ctx)
    return [n for n in NODES if "refused" not in dict(records[node_record_name(n)])]


@pytest.fixture
def exhausted(graph, tmp_path, places):
    """A node file whose nodes spent 8 of 8."""
    node_file = partition(graph, tmp_path / "part")
    assert ask(node_file, places) == list(NODES)
    assert ask(node_file, places, epsilon=0.5) == []
    return node_file


def logs(ledger):
    return sorted(ledger.glob("*/*.log"))


# -- the five ways the re-audit reopened an exhausted node --------------------------------------


def test_deleted_ledger_refuses(exhausted, places):
    shutil.rmtree(places[0])
    assert ask(exhausted, places, epsilon=0.5) == []


def test_ledger_replaced_by_a_valid_empty_one_refuses(exhausted, places, tmp_path):
    ledger, witness = places
    for log in logs(ledger):
        log.write_bytes(b"")  # an empty log
    assert ask(exhausted, places, epsilon=0.5) == []
    # A valid fresh chain (each node's first charge of 0.5), written by a ledger whose witness
    # is elsewhere, copied over the real logs: it does not reach the witnessed head.
    store = open_store(str(exhausted))
    other = NodeLedger(tmp_path / "forge", tmp_path / "forge-w",
                       {n: store.fingerprint(n) for n in NODES}, "per-bit")  # fmt: skip
    charge = Charge(0.5, 5.0, 0.45, 0.05)
    assert admit_nodes(other, list(NODES), charge, 0, NodeSettings(budget=8.0), False)[0]
    for log in logs(tmp_path / "forge"):
        shutil.copy(log, ledger / log.parent.name / log.name)
    assert ask(exhausted, places, epsilon=0.5) == []


def test_same_graph_rewritten_elsewhere_refuses(graph, exhausted, places, tmp_path):
    adj = graph.adjacency()
    copy = write_store(
        tmp_path / "elsewhere" / "copy",
        adj.indptr[:11], adj.indices[: adj.indptr[10]], graph.x[:10].astype("float64"),
        first=0, num_nodes=N, feature_domain=graph.feature_domain,
        partition=json.loads((exhausted / "meta.json").read_text())["partition"],
    )  # fmt: skip
    assert ask(copy, places, epsilon=0.5) == []


def test_partition_run_twice_with_the_default_ledger_refuses(graph, tmp_path):
    """No ledger in the node config: the operator's default place, the same for both runs."""
    first = partition(graph, tmp_path / "run-1")
    defaults = client_app.default_ledger(), client_app.default_witness()
    assert ask(first, defaults) == list(NODES)
    second = partition(graph, tmp_path / "run-2")
    assert ask(second, defaults, epsilon=0.5) == []


def test_relabelled_dataset_refuses(graph, exhausted, places, tmp_path):
    relabelled = partition(graph, tmp_path / "relabelled", label="not-synthetic")
    assert ask(relabelled, places, epsilon=0.5) == []


def test_repartition_keeps_the_spent_budget(graph, tmp_path, places):
    first = partition(graph, tmp_path / "a")
    assert ask(first, places, epsilon=5.0) == list(NODES)
    again = partition(graph, tmp_path / "b")
    assert ask(again, places, epsilon=4.0) == []  # 5 + 4 > 8
    assert ask(again, places, epsilon=3.0) == list(NODES)  # 5 + 3 = 8


# -- damaged bytes of every kind refuse; none raises -------------------------------------------


def _first_log(places):
    return logs(places[0])[0]


@pytest.mark.parametrize(
    "damage",
    ["truncate", "nan", "negative", "directory", "devnull", "chmod", "garbage", "edit",
     "drop-last", "swap"],
)  # fmt: skip
def test_damaged_ledger_refuses(exhausted, places, damage):
    log = _first_log(places)
    data = log.read_bytes()
    if damage == "truncate":
        log.write_bytes(data[: len(data) // 2])
    elif damage == "nan":
        log.write_bytes(data.replace(b'"per-bit":8.0', b'"per-bit":NaN'))
    elif damage == "negative":
        log.write_bytes(data.replace(b'"per-bit":8.0', b'"per-bit":-8.0'))
    elif damage == "directory":
        log.unlink()
        log.mkdir()
    elif damage == "devnull":
        log.unlink()
        log.symlink_to(os.devnull)
    elif damage == "chmod":
        log.chmod(0)
        places[0].chmod(0)
    elif damage == "garbage":
        log.write_bytes(os.urandom(300) + b"\xff\xfe\n")
    elif damage == "edit":  # the spend lowered, the line still canonical
        log.write_bytes(data.replace(b'"spent":{"per-bit":8.0', b'"spent":{"per-bit":0.5'))
    elif damage == "drop-last":  # a second entry, then the log cut back to the first
        fp = log.name.removesuffix(".log")
        with NodeLedger(*places, {0: fp}, "per-bit").open([0]) as book:
            book.admit(0, Charge(0.25, 1.0, 0.2, 0.05), 1, NodeSettings(budget=99.0), False)
        log.write_bytes(data)
    elif damage == "swap":  # another node's (valid) log under this node's name
        other = logs(places[0])[1]
        shutil.copy(other, log)
    try:
        assert ask(exhausted, places, epsilon=0.5) == []
        if not (damage == "chmod" and os.geteuid() == 0):  # root reads a mode-000 file
            with pytest.raises(LedgerError):  # refused for its ledger, not its budget
                verified(places[0], places[1], log.name.removesuffix(".log"))
    finally:
        places[0].chmod(0o755)
        if log.exists() and not log.is_symlink():
            log.chmod(0o644)


def test_witness_removed_or_damaged_refuses(exhausted, places):
    ledger, witness = places
    heads = sorted(witness.glob("*/*.head"))
    heads[0].write_bytes(b"\x00garbage")
    for head in heads[1:]:
        head.unlink()
    assert ask(exhausted, places, epsilon=0.5) == []


@pytest.mark.parametrize("where", ["/dev/null", "file"])
def test_unusable_ledger_place_refuses_without_raising(graph, tmp_path, places, where):
    node_file = partition(graph, tmp_path / "part")
    ledger = tmp_path / "a-file"
    ledger.write_text("x")
    target = os.devnull if where == "/dev/null" else str(ledger)
    assert ask(node_file, (target, places[1])) == []


def test_ledger_inside_the_partition_directory_refuses(graph, tmp_path, places):
    node_file = partition(graph, tmp_path / "part")
    assert ask(node_file, (tmp_path / "part" / "ledger", places[1])) == []
    assert ask(node_file, (places[0], tmp_path / "part" / "w")) == []
    assert ask(node_file, (places[0], places[0] / "w")) == []  # two places, not one
    assert not logs(tmp_path / "part" / "ledger") and not logs(places[0])


def test_a_legacy_ledger_beside_the_node_file_refuses(graph, tmp_path, places):
    node_file = partition(graph, tmp_path / "part")
    node_file.with_name(node_file.name + ".ledger.json").write_text("{}")
    assert ask(node_file, places) == []


def test_an_appended_reset_entry_refuses(exhausted, places):
    """Only a chain's first entry may be a reset: appended, it would erase the spends."""
    log = _first_log(places)
    data = log.read_bytes()
    last = data[:-1].split(b"\n")[-1]
    fp = log.stem
    entry = {"v": 1, "kind": "reset", "fp": fp, "seq": 1, "replaced": None,
             "prev": hashlib.sha256(last).hexdigest(),
             "spent": {"per-bit": 0.0, "per-vector": 0.0}}  # fmt: skip
    line = json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()
    log.write_bytes(data + line + b"\n")
    store = open_store(str(exhausted))
    with pytest.raises(LedgerError, match="entry 1"):
        verified(places[0], places[1], fp)
    assert [store.fingerprint(n) for n in NODES].count(fp) == 1
    assert ask(exhausted, places, epsilon=0.5) == []


def test_a_log_that_extends_its_witness_counts(exhausted, places):
    """A crash between the log append and the witness write leaves the log one entry ahead:
    it verifies, and its extra spend counts."""
    ledger, witness = places
    store = open_store(str(exhausted))
    fp = store.fingerprint(0)
    head = witness / fp[:2] / f"{fp}.head"
    before = head.read_bytes()
    with NodeLedger(ledger, witness, {0: fp}, "per-bit").open([0]) as book:
        book.spent["0"] = 0.0  # a forced extra charge, as a crashed earlier write left it
        book.admit(0, Charge(0.25, 1.0, 0.2, 0.05), 1, NodeSettings(budget=99.0), False)
    head.write_bytes(before)
    assert verified(ledger, witness, fp).spent["per-bit"] == 8.25


# -- a reset only when the operator names it ----------------------------------------------------


def test_reset_only_the_named_ledger(exhausted, places, capsys):
    ledger, witness = places
    store = open_store(str(exhausted))
    fps = [store.fingerprint(n) for n in NODES]
    shutil.rmtree(ledger)  # deleted: refused until the operator says otherwise
    assert ask(exhausted, places, epsilon=0.5) == []
    assert main(["--ledger", str(ledger), "--witness", str(witness),
                 "--reset-ledger", fps[3]]) == 0  # fmt: skip
    assert fps[3] in capsys.readouterr().out
    assert ask(exhausted, places, epsilon=0.5) == [3]
    chain = verified(ledger, witness, fps[3])
    assert chain.spent["per-bit"] == 0.5 and len(chain.hashes) == 2
    first = json.loads((ledger / fps[3][:2] / f"{fps[3]}.log").read_text().splitlines()[0])
    assert first["kind"] == "reset" and first["replaced"]["seq"] == 0
    with pytest.raises(LedgerError, match="not a node fingerprint"):
        reset(ledger, witness, "all")
    assert main(["--ledger", str(ledger), "--witness", str(witness), "--reset-ledger", "x"]) == 2
    # The operator's view: every node's fingerprint and state (refusing ones say why).
    assert main(["--ledger", str(ledger), "--witness", str(witness),
                 "--data-file", str(exhausted)]) == 0  # fmt: skip
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 10 and "REFUSES" in out[0] and "per-bit 0.5" in out[3]


def test_reset_keeps_the_old_log_aside(exhausted, places):
    ledger, witness = places
    fp = open_store(str(exhausted)).fingerprint(0)
    reset(ledger, witness, fp, durable=False)
    assert (ledger / fp[:2] / f"{fp}.log.reset-0").exists()
    assert verified(ledger, witness, fp).spent == {"per-bit": 0.0, "per-vector": 0.0}


# -- the chain itself ---------------------------------------------------------------------------


def test_fingerprint_is_the_data_not_its_encoding():
    a = fingerprint(3, [5, 1, 9], [0, 1, 1])
    assert a == fingerprint(3, [1, 5, 9, 9], [0.0, 1.0, 1.0])  # order, dtype, duplicates
    assert a == fingerprint(3, [1, 5, 9], [-0.0, 1.0, 1.0])
    assert a != fingerprint(3, [1, 5], [0, 1, 1])  # one edge less
    assert a != fingerprint(3, [1, 5, 9], [1, 1, 1])  # one feature changed
    assert a != fingerprint(4, [1, 5, 9], [0, 1, 1])  # another node


def test_read_chain_checks_every_link(tmp_path):
    fp = "ab" * 32
    book = NodeLedger(tmp_path / "l", tmp_path / "w", {0: fp}, "per-vector", durable=False)
    charge = Charge(1.0, 30.0, 0.9, 0.1)
    for round_ in range(3):
        with book.open([0]) as b:
            b.admit(0, charge, round_, NodeSettings(budget=100.0, unit="per-vector"), False)
    data = (tmp_path / "l" / fp[:2] / f"{fp}.log").read_bytes()
    chain = read_chain(data, fp)
    assert chain.spent == {"per-bit": 3.0, "per-vector": 90.0} and len(chain.hashes) == 3
    assert json.loads(data.splitlines()[0])["prev"] == genesis(fp)
    with pytest.raises(LedgerError, match="entry 0"):
        read_chain(data, "cd" * 32)  # another node's chain
    lines = data.splitlines(keepends=True)
    with pytest.raises(LedgerError, match="entry 1"):
        read_chain(lines[0] + lines[2], fp)  # a removed middle entry
    with pytest.raises(LedgerError, match="entry 0"):
        read_chain(lines[0].replace(b'{"charge"', b'{ "charge"'), fp)  # not canonical


@pytest.mark.parametrize("content", [b"\xff\xfe\x00garbage", b"[1, 2]", b"null", b"[" * 100000])
def test_the_simulation_ledger_refuses_garbage_without_raising(tmp_path, content):
    """The flower simulation's per-run JSON ledger: bytes that are not a ledger refuse."""
    from ldpgraph.client.budget import Ledger

    path = tmp_path / "ledger.json"
    path.write_bytes(content)
    admitted, refused = admit_nodes(Ledger(path, "g"), [0, 1], 1.0, 0, NodeSettings(9.0), False)
    assert admitted == [] and set(refused) == {0, 1}
