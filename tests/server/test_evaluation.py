"""The metric registry: names and ``all``, a clear error for an unknown metric, a metric's
prepare step acting once before collection, sections merged into the record, metrics that do
not fit a release kind skipped with a reason, and accuracy on graph and model releases."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ldpgraph.protocols.graph import canonical_edges
from ldpgraph.protocols.types import PrivacyReport, Release
from ldpgraph.server import evaluation
from ldpgraph.server.evaluation import (
    METRICS,
    EvaluationContext,
    Metric,
    UnknownMetricError,
    register_metric,
    resolve_metrics,
)
from ldpgraph.server.training import TrainConfig, train_and_evaluate
from ldpgraph.simulation.datasets import synthetic_graph
from ldpgraph.simulation.splits import split_for

from ..support.toy_central import MajorityModel


@pytest.fixture
def hiding_metric():
    """A metric that hides every 10th edge before collection and reports how many the release
    recovered (the shape link-prediction takes)."""

    evaluation.metric_names()  # the package's own metrics first, as in a real process

    @register_metric
    class HideEdges(Metric):
        name = "hide-test"
        calls = 0

        def prepare(self, graph, seed):
            HideEdges.calls += 1
            hidden = graph.edges[::10]
            kept = np.delete(graph.edges, np.s_[::10], axis=0)
            return replace(graph, edges=kept, meta={}), hidden

        def evaluate(self, ctx):
            have = {tuple(e) for e in ctx.release.edges.tolist()}
            found = sum(tuple(e) in have for e in ctx.held_out.tolist())
            return {"hidden": {"count": len(ctx.held_out), "in_release": found}}

    yield HideEdges
    METRICS.pop("hide-test")


@pytest.fixture(scope="module")
def small():
    graph = synthetic_graph(n=150, classes=3, avg_degree=6, d=20, seed=2)
    return graph, split_for(graph.num_nodes, 0)


def _privacy():
    return PrivacyReport("t", "none", float("inf"), 1.0, "none")


def test_names_all_and_unknown(hiding_metric):
    assert resolve_metrics("accuracy") == ("accuracy",)
    assert resolve_metrics("all") == tuple(METRICS)
    assert resolve_metrics("hide-test, accuracy") == ("accuracy", "hide-test")  # registry order
    assert evaluation.DEFAULT_METRICS == ("accuracy",)
    with pytest.raises(UnknownMetricError, match="did you mean 'accuracy'"):
        resolve_metrics("acuracy")
    with pytest.raises(UnknownMetricError, match="no metric"):
        resolve_metrics("")


def test_prepare_hides_once_and_evaluate_merges_sections(hiding_metric, small):
    graph, split = small
    prepared = evaluation.prepare(["accuracy", "hide-test"], graph, seed=0)
    assert hiding_metric.calls == 1
    hidden = prepared.held_out["hide-test"]
    assert len(hidden) == len(graph.edges[::10]) and prepared.graph.num_edges < graph.num_edges
    assert "accuracy" not in prepared.held_out  # accuracy sets nothing aside
    # A release built from what the nodes held cannot contain a hidden edge.
    release = Release(prepared.graph.edges, graph.x, _privacy())
    ctx = EvaluationContext(graph, split, release, TrainConfig(epochs=3), seed=0)
    out = evaluation.evaluate(["hide-test", "accuracy"], ctx, prepared.held_out)
    assert out["hidden"] == {"count": len(hidden), "in_release": 0}
    assert set(out) == {"hidden", "accuracy", "training"}


def test_accuracy_on_a_graph_release_is_todays_training(small):
    graph, split = small
    release = Release(graph.edges, graph.x, _privacy())
    cfg = TrainConfig(epochs=5)
    # Both on the CPU, where a seed gives the same bits (tests/server/test_training.py).
    ctx = EvaluationContext(graph, split, release, cfg, 0, device="cpu")
    out = evaluation.evaluate(["accuracy"], ctx)
    direct = train_and_evaluate(graph.edges, graph.x, graph.y, split, cfg, 0, device="cpu")
    assert out["accuracy"] == {
        "val": direct["val_acc"],
        "test": direct["test_acc"],
        "train": direct["train_acc"],
    }
    assert out["training"]["best_epoch"] == direct["best_epoch"]


def test_accuracy_of_a_model_release_scores_its_predictions(small):
    graph, split = small
    label = int(np.bincount(graph.y).argmax())
    release = Release.of_model(MajorityModel(label), graph.num_nodes, _privacy())
    out = evaluation.evaluate(["accuracy"], EvaluationContext(graph, split, release, None, 0))
    for part in ("train", "val", "test"):
        nodes = getattr(split, part)
        assert out["accuracy"][part] == pytest.approx((graph.y[nodes] == label).mean())


def test_a_metric_that_does_not_fit_the_kind_is_skipped(small):
    graph, split = small
    one = Release(canonical_edges(np.array([[0, 1]]), 2), np.zeros((2, 1)), _privacy())
    collection = Release.of_graphs([one, one], _privacy())
    out = evaluation.evaluate(["accuracy"], EvaluationContext(graph, split, collection, None, 0))
    assert out == {"skipped_metrics": {"accuracy": "does not score a graphs release"}}


def test_the_metric_table_is_exactly_what_the_modules_register():
    """base.BUILTIN against the package: every module imported, the metrics they register
    equal the table (class paths included), in the table's order; a mismatch names the line."""
    import importlib
    import pkgutil

    from ldpgraph.protocols.catalog import path_of, table_mismatches
    from ldpgraph.server.evaluation import base

    for mod in pkgutil.iter_modules(evaluation.__path__, evaluation.__name__ + "."):
        importlib.import_module(mod.name)
    registered = {
        name: path_of(cls)
        for name, cls in METRICS.items()
        if cls.__module__.startswith(evaluation.__name__ + ".")
    }
    assert table_mismatches(base.BUILTIN, registered) == []
    assert evaluation.metric_names()[: len(base.BUILTIN)] == tuple(base.BUILTIN)
