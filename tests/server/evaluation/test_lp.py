"""``lp``: the GAE scorer ranks hidden links of a clustered graph far above chance and those of
an Erdős–Rényi graph near chance; it is deterministic in the seed, trains one GAE shared with
``attack``, scores an edgeless release at chance, and a whole run records both sections."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ldpgraph.protocols.types import Release
from ldpgraph.server import evaluation
from ldpgraph.server.evaluation import embedding
from ldpgraph.server.record import json_default
from ldpgraph.simulation import pipeline
from ldpgraph.simulation.config import RunConfig

from .conftest import CPU, held_release, no_privacy


def test_lp_ranks_hidden_links_of_a_clustered_graph(sbm):
    graph, prepared, _ctx, out = sbm
    lp = out["lp"]
    assert lp["hidden_edges"] == prepared.held_out["lp"].count == int(0.2 * graph.num_edges)
    assert lp["auc"] > 0.9 and lp["auc_dot"] > 0.9, lp
    assert "logistic regression" in lp["scorer"]


def test_lp_is_near_chance_on_an_erdos_renyi_graph(er):
    _graph, _prepared, _ctx, out = er
    assert abs(out["lp"]["auc"] - 0.5) < 0.06 and abs(out["lp"]["auc_dot"] - 0.5) < 0.06


def test_lp_is_seeded_and_shares_one_gae_with_attack(sbm, monkeypatch):
    graph, _prepared, _ctx, out = sbm
    calls = []
    real = embedding.gae_embedding
    monkeypatch.setattr(
        embedding, "gae_embedding", lambda *a, **k: calls.append(1) or real(*a, **k)
    )
    _, _, again = held_release(graph)
    assert again == out and len(calls) == 1


def test_an_edgeless_release_scores_at_chance(sbm):
    graph, prepared, ctx, _out = sbm
    empty = Release(np.zeros((0, 2), dtype=np.int64), graph.x, no_privacy())
    ctx_empty = evaluation.EvaluationContext(graph, ctx.split, empty, None, 0, device=CPU)
    out = evaluation.evaluate(["lp", "attack"], ctx_empty, prepared.held_out)
    assert out["lp"]["auc"] == out["lp"]["auc_dot"] == 0.5
    assert out["attack"]["cn"] == out["attack"]["embedding_cosine"] == 0.5


def test_a_run_records_lp_and_attack():
    cfg = RunConfig(
        dataset="synthetic:n=200,classes=4,avg_degree=8,d=20,seed=2",
        protocol="rr",
        epsilon=4.0,
        backend="local",
        metrics="accuracy,lp,attack",
        epochs=5,
    )
    record = pipeline.run(cfg)
    json.loads(json.dumps(record, default=json_default, allow_nan=False))
    assert record["lp"]["hidden_edges"] == int(0.2 * record["graph"]["original"]["edges"])
    assert 0.0 <= record["lp"]["auc"] <= 1.0
    assert record["attack"]["max"] == pytest.approx(
        max(v for k, v in record["attack"].items() if k not in ("max", "best"))
    )
    assert "accuracy" in record and "skipped_metrics" not in record
