"""A model that collapsed onto one class is detected after training: the record says so
(``training.collapsed``) and `ldpgraph run` warns on stderr with what to try."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ldpgraph.protocols.graph import Graph
from ldpgraph.server.training import TrainConfig, collapse_check, train_and_evaluate
from ldpgraph.simulation import cli, pipeline
from ldpgraph.simulation.splits import Split


def dense_offset_graph(seed: int = 0):
    """tests/server/test_training.py::test_centering_rescues_dense_offset_features's case:
    2000 dense 0/1 columns around 0.45 (as the 1-bit mechanism reports them) with a weak class
    signal in a few; raw, Adam at lr 0.01 locks a GCN onto one class."""
    rng = np.random.default_rng(seed)
    n, d, k = 200, 2000, 4
    y = np.repeat(np.arange(k), n // k)
    p = np.full((n, d), 0.45)
    for c in range(k):
        p[y == c, c * 40 : (c + 1) * 40] += 0.15
    x = (rng.random((n, d)) < p).astype(np.float32)
    iu, iv = np.triu_indices(n, k=1)
    keep = rng.random(iu.size) < np.where(y[iu] == y[iv], 0.1, 0.02)
    edges = np.stack([iu[keep], iv[keep]], axis=1).astype(np.int64)
    perm = rng.permutation(n)
    return edges, x, y, Split(perm[:100], perm[100:150], perm[150:])


def test_training_reports_the_collapse_and_its_absence():
    edges, x, y, split = dense_offset_graph()
    out = {}
    for center in (False, True):
        cfg = TrainConfig(lr=0.01, dropout=0.0, weight_decay=0.0, epochs=60, center_features=center)
        out[center] = train_and_evaluate(edges, x, y, split, cfg, 0, num_classes=4)
    assert out[False]["collapsed"] is True
    assert out[True]["collapsed"] is False
    for r in out.values():
        assert 0.0 < r["top_class_share"] <= 1.0
        assert r["majority_rate"] == pytest.approx(np.bincount(y[split.val]).max() / 50)


@pytest.mark.parametrize(
    "val_acc,top_share,y_val,y_eval,collapsed",
    [
        (0.25, 1.00, [0, 1, 2, 3], [0, 1, 2, 3], True),  # one class for every test node
        (0.90, 0.96, [0, 1, 2, 3], [0, 1, 2, 3], True),  # nearly every test node
        (0.51, 0.60, [0, 0, 1, 2], [0, 1, 2, 3], True),  # at the majority rate (0.5)
        (0.80, 0.60, [0, 0, 1, 2], [0, 1, 2, 3], False),
        (0.97, 0.97, [0, 1], [0] * 97 + [1] * 3, False),  # the labels are that skewed
        (1.00, 1.00, [1, 1], [1, 1], False),  # one class only: nothing to collapse onto
    ],
)
def test_collapse_rule(val_acc, top_share, y_val, y_eval, collapsed):
    got = collapse_check(val_acc, top_share, np.array(y_val), np.array(y_eval))
    assert got["collapsed"] is collapsed


def test_run_warns_and_records_a_collapse(capsys, monkeypatch):
    edges, x, y, _ = dense_offset_graph()
    monkeypatch.setattr(pipeline, "load_dataset", lambda *_a, **_k: Graph("dense", edges, x, y))
    argv = ["run", "--quiet", "--json", "--dataset", "cora", "--protocol", "none"]
    argv += ["--trust-curator", "--backend", "local", "--epochs", "60", "--dropout", "0"]
    argv += ["--weight-decay", "0"]
    assert cli.main([*argv, "--no-center-features"]) == 0
    out, err = capsys.readouterr()
    record = json.loads(out)
    assert record["training"]["collapsed"] is True
    assert "warning: the model collapsed onto one class" in err
    assert "--center-features" in err and "--lr 0.001" in err
    assert cli.main(argv) == 0  # centred (the default): it learns, no warning
    out, err = capsys.readouterr()
    assert json.loads(out)["training"]["collapsed"] is False
    assert "collapsed" not in err
