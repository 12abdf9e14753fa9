"""`ldpgraph partition`: node files hold only their nodes' rows, the curator file only what the
server may know; wrong, stale or corrupt files are refused with a clear error."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ldpgraph.client.nodedata import NodeDataError, NodeStore
from ldpgraph.simulation.cli import main
from ldpgraph.simulation.datasets import load_dataset
from ldpgraph.simulation.partition import CuratorFileError, load_curator
from ldpgraph.simulation.splits import make_split

DATASET = "synthetic:n=50,classes=3,d=12,seed=3"


@pytest.fixture
def part(tmp_path):
    out = tmp_path / "part"
    args = ["partition", "--dataset", DATASET, "--out", str(out), "--nodes-per-file", "16"]
    assert main(args) == 0
    return out


def test_node_files_hold_only_their_rows(part):
    graph = load_dataset(DATASET)
    names = sorted(p.name for p in part.iterdir())
    assert names == ["curator.json", "nodes-00000", "nodes-00001", "nodes-00002", "nodes-00003"]
    seen = []
    for name in names[1:]:
        store = NodeStore(part / name)
        assert store.num_nodes == 50 and store.num_features == 12
        for node in store.node_ids:
            view = store.view(node)
            assert np.array_equal(view.neighbors, graph.neighbors(node))
            assert np.array_equal(view.features, graph.x[node])
            seen.append(node)
        assert store.features.shape == (store.count, 12)  # nobody else's features
    assert seen == list(range(50))
    assert NodeStore(part / "nodes-00003").count == 2


def test_curator_file_has_what_the_server_may_know(part):
    graph = load_dataset(DATASET)
    doc = json.loads((part / "curator.json").read_text())
    assert set(doc) == {
        "format", "version", "partition", "dataset", "num_nodes", "num_features",
        "num_classes", "feature_domain", "labels", "split", "blocks",
    }  # fmt: skip
    cur = load_curator(part)
    assert (cur.num_nodes, cur.num_features, cur.num_classes) == (50, 12, 3)
    assert np.array_equal(cur.y, graph.y) and cur.public_features is None
    assert cur.num_edges is None
    split = make_split(50, 0, 0.5, 0.25)
    assert np.array_equal(cur.split_for(0, 0.5, 0.25).test, split.test)
    assert np.array_equal(cur.split_for(7, 0.5, 0.25).train, make_split(50, 7).train)
    assert cur.partition == NodeStore(part / "nodes-00001").partition


def test_wrong_or_corrupt_node_files_are_refused(part, tmp_path):
    store = part / "nodes-00001"
    other = tmp_path / "other"
    main(["partition", "--dataset", "synthetic:n=50,classes=3,d=12,seed=4", "--out", str(other)])
    with pytest.raises(NodeDataError, match="belongs to partition"):
        NodeStore(other / "nodes-00000").check_against(50, NodeStore(store).partition)
    with pytest.raises(NodeDataError, match="60-node graph"):
        NodeStore(store).check_against(60)

    raw = bytearray((store / "features.npy").read_bytes())
    raw[-1] ^= 1
    (store / "features.npy").write_bytes(bytes(raw))
    with pytest.raises(NodeDataError, match="features.npy is corrupt"):
        NodeStore(store)

    meta = json.loads((part / "nodes-00002" / "meta.json").read_text())
    (part / "nodes-00002" / "meta.json").write_text(json.dumps({**meta, "version": 1}))
    with pytest.raises(NodeDataError, match="version 1, expected 2"):
        NodeStore(part / "nodes-00002")
    (part / "nodes-00002" / "meta.json").write_text("{not json")
    with pytest.raises(NodeDataError, match="corrupt"):
        NodeStore(part / "nodes-00002")
    with pytest.raises(NodeDataError, match="missing meta.json"):
        NodeStore(tmp_path)


def test_wrong_or_corrupt_curator_files_are_refused(part, tmp_path):
    path = part / "curator.json"
    doc = json.loads(path.read_text())
    cases = [
        ({**doc, "version": 9}, "version 9"),
        ({**doc, "format": "x"}, "not an ldpgraph curator file"),
        ({**doc, "labels": doc["labels"][:-1]}, "labels do not match"),
        ({**doc, "blocks": doc["blocks"][1:]}, "do not tile"),
        ({**doc, "split": {**doc["split"], "test": []}}, "split is not a partition"),
        ({k: v for k, v in doc.items() if k != "num_nodes"}, "missing field"),
    ]
    for bad, message in cases:
        path.write_text(json.dumps(bad))
        with pytest.raises(CuratorFileError, match=message):
            load_curator(part)
    path.write_text('{"format": ')
    with pytest.raises(CuratorFileError, match="corrupt"):
        load_curator(path)
    with pytest.raises(CuratorFileError, match="no curator file"):
        load_curator(tmp_path / "nowhere")


def test_partition_cli_errors(part, capsys):
    assert main(["partition", "--dataset", DATASET, "--out", str(part)]) == 2
    assert "not an empty directory" in capsys.readouterr().err
    args = ["partition", "--dataset", DATASET, "--out", str(part / "x"), "--nodes-per-file", "-1"]
    assert main(args) == 2
    assert "--nodes-per-file must be >= 1" in capsys.readouterr().err
    # Options are checked before anything is written: nothing is left to block a rerun.
    bad = ["partition", "--dataset", DATASET, "--out", str(part / "y"), "--train-split", "0.9",
           "--val-split", "0.5"]  # fmt: skip
    assert main(bad) == 2
    assert "must not exceed 1" in capsys.readouterr().err
    assert not (part / "y").exists()


def test_partition_defaults_to_a_few_files_and_leaves_nothing_on_failure(tmp_path, monkeypatch):
    from ldpgraph.simulation import partition

    out = tmp_path / "auto"
    assert main(["partition", "--dataset", DATASET, "--out", str(out)]) == 0
    n = load_dataset(DATASET).num_nodes
    files = sorted(p.name for p in out.glob("nodes-*"))
    k = partition.automatic_nodes_per_file(n)
    assert len(files) == -(-n // k) <= partition.AUTO_FILES and k == -(-n // partition.AUTO_FILES)

    def broken(*_a, **_k):
        raise OSError("disk full")

    monkeypatch.setattr(partition, "write_curator", broken)
    with pytest.raises(OSError):
        partition.write_partition(load_dataset(DATASET), tmp_path / "half", 4, dataset=DATASET)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["auto"]


def test_public_features_only_on_request(tmp_path):
    out = tmp_path / "pub"
    main(["partition", "--dataset", DATASET, "--out", str(out), "--public-features"])
    cur = load_curator(out)
    assert np.array_equal(cur.public_features, load_dataset(DATASET).x)
    (out / "curator-features.npy").write_bytes(b"\x93NUMPY broken")
    with pytest.raises(CuratorFileError, match="checksum"):
        load_curator(out)
