"""The result record (ldpgraph.server.record): one builder, one summary, one marked log line;
and the pipeline's derivation of the training settings from a run's configuration."""

from __future__ import annotations

import json
import sys
from dataclasses import fields
from types import SimpleNamespace

import numpy as np
import pytest

from ldpgraph.protocols.types import PrivacyReport, Release
from ldpgraph.server.record import (
    RESULT_MARKER,
    build_record,
    json_default,
    metric_sections,
    result_line,
    summary,
)
from ldpgraph.server.training import TrainConfig
from ldpgraph.simulation.config import RunConfig

#: What the accuracy metric fills (server/evaluation/accuracy.py).
SECTIONS = {
    "accuracy": {"val": 0.5, "test": 0.25, "train": 1.0},
    "training": {"best_epoch": 7, "device": "cpu", "collapsed": False},
}


def release() -> Release:
    privacy = PrivacyReport(
        "hogs",
        "adjacency bit",
        2.0,
        0.0,
        "closed form",
        parts=[{"part": "adjacency", "epsilon": 2.0, "unit": "adjacency bit"}],
    )
    rounds = [{"asked": 4, "replied": 3, "rejected": 1, "refused": 0, "missing": 0}]
    return Release(
        edges=np.array([[0, 1], [1, 2]]),
        x=np.zeros((4, 3), dtype=np.uint8),
        privacy=privacy,
        stats={"collection": {"backend": "local", "rounds": rounds, "node_randomness": "seeded"}},
    )


def record(edges: int | None = 5) -> dict:
    graph = SimpleNamespace(num_nodes=4, num_edges=edges, num_features=3, num_classes=2)
    timings = {"collect": 0.123456, "train": 1.0}
    return build_record(RunConfig(backend="local").to_dict(), graph, release(), SECTIONS, timings)


def test_the_record_has_the_stores_keys_and_no_more():
    rec = record()
    assert set(rec) == {
        "config",
        "accuracy",
        "training",
        "release_kind",
        "privacy",
        "graph",
        "release",
        "fingerprint",
        "timings",
        "versions",
        "command",
    }
    assert rec["accuracy"] == {"val": 0.5, "test": 0.25, "train": 1.0}
    assert rec["training"] == {"best_epoch": 7, "device": "cpu", "collapsed": False}
    assert rec["graph"]["synthetic"] == {"nodes": 4, "edges": 2, "features": 3}
    assert rec["release_kind"] == "graph"
    assert rec["timings"] == {"collect": 0.1235, "train": 1.0}
    assert rec["fingerprint"] == release().fingerprint()
    assert rec["versions"]["python"] == "{}.{}.{}".format(*sys.version_info[:3])
    assert rec["release"]["collection"]["rounds"][0]["rejected"] == 1


def test_the_summary_names_units_rounds_and_an_unknown_edge_count():
    text = summary(record(edges=None))
    # The first line leads with the proven guarantee: the headline ε, its unit and δ, and the
    # ε asked for beside it.
    assert text.splitlines()[0] == (
        "ldpgraph run: hogs on cora: ε = 2 per adjacency bit, δ = 0 [asked ε = 8]"
    )
    assert "  run           with gcn, seed 0, backend local" in text
    assert "release noise" not in text  # an LDP release: its nodes' noise is said below
    assert "test 25.0%   val 50.0%" in text
    assert "adjacency: ε = 2 per adjacency bit" in text
    assert "original 4 nodes / ? edges; synthetic 4 / 2" in text
    assert "round 0       asked 4  replied 3  rejected 1  refused 0  missing 0" in text
    assert "COLLAPSED" not in text


def test_the_summary_of_a_model_release_and_a_skipped_metric():
    rec = record()
    rec["release_kind"] = "model"
    rec["training"] = {"selection": "released model"}
    rec["skipped_metrics"] = {"lp": "does not score a model release"}
    text = summary(rec)
    assert "test 25.0%   val 50.0%   (model release)" in text
    assert "lp            skipped: does not score a model release" in text
    assert "released: a model" in text
    assert "  run           model release, seed 0" in text and "with gcn" not in text
    del rec["accuracy"]
    assert "accuracy" not in summary(rec)


def test_an_unproven_headline_leads_the_summary_and_survives_strict_json():
    """ε = ∞ (no proof) with the paper's figure beside it, a central release's noise said;
    JSON has no ∞: the record writes it as "Infinity" and reads it back as ∞."""
    import math

    from ldpgraph.server.record import from_json, to_json

    rec = record()
    rec["privacy"].update(unit="edge", epsilon=math.inf, delta=1e-5, paper_epsilon=8.0)
    rec["release"].update(replayable=False)
    lines = summary(rec).splitlines()
    assert (
        lines[0] == "ldpgraph run: hogs on cora: ε = ∞ per edge, δ = 1e-05, no proof (see privacy)"
    )
    assert lines[1] == " " * 16 + "[asked ε = 8, paper's ε = 8]"
    assert "  release noise OS entropy (not replayable from this record)" in lines
    rec["release"]["replayable"] = True
    assert "  release noise seeded: replayable, not a private release" in summary(rec)
    text = to_json(rec)
    assert '"epsilon": "Infinity"' in text
    json.loads(text, parse_constant=lambda c: 1 / 0)  # strict: no bare Infinity
    back = from_json(text)
    assert back["privacy"]["epsilon"] == math.inf and back["privacy"]["paper_epsilon"] == 8.0
    line = result_line(rec)
    assert from_json(line[len(RESULT_MARKER) :])["privacy"]["epsilon"] == math.inf


def test_the_marked_line_carries_the_record_as_strict_json():
    rec = record()
    rec["config"]["seed"] = np.int64(3)
    rec["privacy"]["epsilon"] = np.float32(2.0)
    line = result_line(rec)
    assert line.startswith(RESULT_MARKER) and "\n" not in line
    back = json.loads(line[len(RESULT_MARKER) :], parse_constant=lambda c: 1 / 0)
    assert back["privacy"]["epsilon"] == 2.0 and back["config"]["seed"] == 3
    assert json_default(np.arange(2)) == [0, 1]


def test_training_settings_are_derived_from_the_run_configuration():
    run = RunConfig(model="sage", lr=0.05, hidden=8, center_features=False, selection="val_loss")
    train = TrainConfig.from_mapping(run.to_dict())
    shared = {f.name for f in fields(TrainConfig)} & set(run.to_dict())
    assert shared == {f.name for f in fields(TrainConfig)} - {"heads", "patience"}
    assert all(getattr(train, name) == getattr(run, name) for name in shared)
    assert train.heads == TrainConfig().heads and train.patience is None


def test_metric_sections_and_the_record_keys_they_may_not_take():
    rec = record()
    rec.update({"lp": {"auc": 0.75}, "phase": "final"})
    assert list(metric_sections(rec)) == ["accuracy", "training", "lp"]
    graph = SimpleNamespace(num_nodes=4, num_edges=5, num_features=3, num_classes=2)
    with pytest.raises(RuntimeError, match=r"\['graph'\] would overwrite"):
        build_record({}, graph, release(), {"graph": {"x": 1}}, {})


def test_the_summary_shows_the_graph_statistics_and_any_other_metric():
    rec = record()
    rec["graph_stats"] = {
        "edges": {"original": 5278, "release": 5100, "re": 0.0337},
        "cpl": {"original": 6.3103, "release": None, "re": None},
        "degree_ks": 0.1234,
        "paths": {
            "original": {"method": "exact", "sources": 2708},
            "release": {"method": "sampled", "sources": 500},
        },
        "weights": "weighted: the 2 of 4 released pairs with weight >= 0.5 are the edges",
        "seconds": 2.6153,
    }
    rec["lp"] = {"auc": 0.81234, "hidden": 1055, "scorer": "logistic"}
    text = summary(rec)
    assert (
        "  graph stats   original → release (RE); paths exact / sampled "
        "(2708 / 500 sources); 2.6 s" in text
    )
    assert "edges 5278 → 5100 (0.0337)   cpl 6.31 → -   degree KS 0.123" in text
    assert "weighted: the 2 of 4 released pairs" in text
    assert "  lp            auc 0.8123   hidden 1055" in text
    assert all(len(line) <= 100 for line in text.splitlines())


def test_the_summary_shows_every_attack_and_the_strongest():
    """Ten attacks and their maximum on the hidden links, then the protected pairs' (a
    generic section line would cut them at eight); no cell is split across lines."""
    from ldpgraph.server.evaluation.attack import ATTACKS

    rec = record()
    aucs = {name: 0.5 + i / 100 for i, name in enumerate(ATTACKS)}
    rec["attack"] = {**aucs, "max": 0.59, "best": "seal"}
    rec["attack"]["protected"] = {
        **aucs,
        "max": 0.59,
        "best": "seal",
        "max_graph": 0.59,
        "best_graph": "seal",
        "count": 380,
    }
    lines = summary(rec).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  attack"))
    block = "\n".join(lines[start : start + 6])
    for name, auc in aucs.items():
        assert block.count(f"{name} {auc:.4g}") == 2, name
    assert "max 0.59 (seal)" in block and "max_graph 0.59 (seal)" in block
    assert "    protected   count 380" in block
    assert all(len(line) <= 100 for line in lines)
