"""The gin metric (server/evaluation/gin.py): stratified disjoint folds, a GIN that separates
classes of clearly different structure and sits at chance on shuffled labels or on generated
graphs that carry no structure, the same numbers for the same seed, and one-line errors on
inputs it cannot score. Few epochs, tiny graphs, on the CPU (same bits for the same seed)."""

from __future__ import annotations

import numpy as np
import pytest

from ldpgraph.protocols.rng import stage_rng
from ldpgraph.protocols.types import PrivacyReport, Release
from ldpgraph.server.evaluation import EvaluationContext, evaluate
from ldpgraph.server.evaluation.gin import (
    DEGREE_CAP,
    _Encoded,
    gin_cross_validation,
    labelled_originals,
    stratified_folds,
    summary_lines,
)
from ldpgraph.server.record import SECTION_LINES
from ldpgraph.simulation.config import ConfigError, RunConfig
from ldpgraph.simulation.datasets.graph_collections import union

CPU = "cpu"
#: Short training: the classes below separate within the first epoch.
QUICK = {"epochs": 8, "iterations": 50, "hidden": 16, "layers": 3}
#: Graph sizes of every class: the same range, so the node count says nothing of the class
#: and every graph of a class is a different graph.
SIZES = range(5, 25)


def cycle(n: int) -> np.ndarray:
    return np.array([(i, (i + 1) % n) for i in range(n)])


def star(n: int) -> np.ndarray:
    return np.array([(0, i) for i in range(1, n)])


def path(n: int) -> np.ndarray:
    return np.array([(i, i + 1) for i in range(n - 1)])


def structured() -> tuple[list[tuple[np.ndarray, int]], np.ndarray]:
    """Cycles (class 0), paths (1) and stars (2), one of each size in SIZES. (Not cliques: a
    clique's one degree is a star centre's, and a degree no training graph had is a one-hot
    column GIN never learnt.)"""
    graphs = [(make(n), n) for make in (cycle, path, star) for n in SIZES]
    labels = np.repeat(np.arange(3), len(SIZES))
    return graphs, labels


def folds_of(labels: np.ndarray, seed: int = 0) -> list[np.ndarray]:
    return stratified_folds(labels, 5, stage_rng(seed, "gin-folds"))


def no_privacy() -> PrivacyReport:
    return PrivacyReport("toy", "edge", 1.0, 0.0, "none")


def graphs_release(graphs: list[tuple[np.ndarray, int]]) -> Release:
    parts = [
        Release(edges=e, x=np.zeros((n, 0), np.float32), privacy=no_privacy()) for e, n in graphs
    ]
    return Release.of_graphs(parts, no_privacy())


def run_gin(original, release, seed: int = 0, metrics: tuple = ("gin",)) -> dict:
    config = {"gin_epochs": QUICK["epochs"], "gin_hidden": 16, "gin_layers": 3}
    ctx = EvaluationContext(
        graph=original, split=None, release=release, train_config=None, seed=seed, device=CPU,
        config=config,
    )  # fmt: skip
    return evaluate(list(metrics), ctx)


def test_folds_are_stratified_disjoint_and_cover_every_graph():
    labels = np.repeat([0, 1, 2], [21, 24, 24])  # DBLP's classes
    folds = folds_of(labels)
    together = np.concatenate(folds)
    assert len(folds) == 5 and len(together) == len(labels)
    assert (np.sort(together) == np.arange(len(labels))).all()  # disjoint and covering
    sizes = [len(f) for f in folds]
    assert max(sizes) - min(sizes) <= 1
    for c, count in ((0, 21), (1, 24), (2, 24)):
        per_fold = [int((labels[f] == c).sum()) for f in folds]
        assert sum(per_fold) == count
        assert set(per_fold) <= {count // 5, -(-count // 5)}
    # seeded: the same seed the same folds, another seed others
    assert all((a == b).all() for a, b in zip(folds, folds_of(labels), strict=True))
    assert any((a != b).any() for a, b in zip(folds, folds_of(labels, seed=1), strict=True))


def test_too_few_graphs_of_a_class_or_one_class_is_an_error():
    with pytest.raises(ValueError, match="at least 5 graphs of every class.*class 2: 3"):
        folds_of(np.repeat([0, 1, 2], [6, 7, 3]))
    with pytest.raises(ValueError, match="at least 2 classes"):
        folds_of(np.zeros(10, dtype=np.int64))


def test_degree_one_hot_is_capped():
    n = DEGREE_CAP + 50
    data = _Encoded([(star(n), n), (np.zeros((0, 2), np.int64), 3)])
    assert data.degree[0][0] == DEGREE_CAP and (data.degree[0][1:] == 1).all()
    assert (data.degree[1] == 0).all()
    deg, ei, owner = data.batch(np.array([1, 0]), CPU)
    assert ei.shape == (2, 2 * (n - 1)) and int(ei.min()) == 3  # graph 0 follows graph 1's nodes
    assert owner.tolist() == [0] * 3 + [1] * n and deg.tolist()[3] == DEGREE_CAP


def test_gin_separates_structure_and_not_shuffled_labels():
    graphs, labels = structured()
    folds = folds_of(labels)
    right = gin_cross_validation(graphs, labels, folds, seed=0, device=CPU, **QUICK)
    assert right["final"] >= 0.95 and len(right["final_per_fold"]) == 5
    assert right["best"] >= right["final"] and 1 <= right["best_epoch"] <= QUICK["epochs"]
    # Labels independent of the graphs: chance (1/3) on the test folds. A model that saw its
    # test graphs would score far above it (every graph here is a different graph).
    shuffled = stage_rng(7, "shuffle").permutation(labels)
    folds = folds_of(shuffled)
    chance = gin_cross_validation(graphs, shuffled, folds, seed=0, device=CPU, **QUICK)
    assert chance["final"] <= 0.55


@pytest.fixture(autouse=True)
def quick_metric(monkeypatch):
    """The metric's batches per epoch as QUICK's (the run's keys set the rest)."""
    from ldpgraph.server.evaluation import gin

    monkeypatch.setattr(gin, "ITERATIONS", QUICK["iterations"])


def test_metric_scores_generated_graphs_against_the_originals():
    graphs, labels = structured()
    original = union("toy", graphs, labels)
    # Generated = the originals: the same folds, weights and batches give the same numbers.
    same = run_gin(original, graphs_release(graphs))["gin"]
    same["generated"].pop("seconds"), same["original"].pop("seconds")
    assert same["generated"] == same["original"] and same["original"]["final"] >= 0.95
    assert (
        same["graphs"] == 60 and same["classes"] == 3 and same["majority"] == pytest.approx(1 / 3)
    )
    # Generated graphs without edges (the original's node count only, which is the same range
    # in every class): nothing to learn the class from.
    empty = [(np.zeros((0, 2), np.int64), n) for _, n in graphs]
    out = run_gin(original, graphs_release(empty), metrics=("collection", "gin"))
    assert "collection_stats" in out
    assert out["gin"]["generated"]["final"] <= 0.55
    out["gin"]["original"].pop("seconds")
    assert out["gin"]["original"] == same["original"]
    lines = SECTION_LINES["gin"]("gin", out["gin"])
    assert lines == summary_lines("gin", out["gin"]) and "optimistic" in lines[1]


def test_same_seed_same_numbers():
    # The folds come from the seed (test above); the weights, dropout and batches too.
    graphs, labels = structured()
    shuffled = stage_rng(3, "shuffle").permutation(labels)
    folds = folds_of(shuffled)
    a, b, c = (
        gin_cross_validation(graphs, shuffled, folds, seed=s, device=CPU, **QUICK)
        for s in (0, 0, 1)
    )
    for part in (a, b, c):
        part.pop("seconds")
    assert a == b
    assert c["final_per_fold"] != a["final_per_fold"]


def test_bad_inputs_are_one_line_errors():
    graphs, labels = structured()
    one_graph = union("toy", graphs[:1], labels[:1])
    one_graph.meta.pop("graph_ptr")
    with pytest.raises(ValueError, match="collection dataset"):
        labelled_originals(one_graph)
    # a collection whose classes have fewer members than folds
    few = union("toy", graphs[:3] + graphs[20:23], np.repeat([0, 1], 3))
    with pytest.raises(ValueError, match="at least 5 graphs of every class"):
        run_gin(few, graphs_release(graphs[:3] + graphs[20:23]))
    with pytest.raises(ValueError, match="holds 59 graphs for 60"):
        run_gin(union("toy", graphs, labels), graphs_release(graphs[:-1]))
    # the configuration keys
    assert RunConfig(metrics="collection,gin").validate().metrics == "collection,gin"
    with pytest.raises(ConfigError, match="gin-layers must be >= 2"):
        RunConfig(gin_layers=1).validate()
