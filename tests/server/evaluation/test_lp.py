"""``lp``: the learned scorer ranks hidden links of a clustered graph far above chance and those
of an Erdős–Rényi graph near chance, and stays far above chance on noisy releases where common
neighbours do; its training pairs are drawn from the release the way the hidden set is drawn
from the graph; it is deterministic in the seed, scores an edgeless release at chance, the
GAE's early stopping keeps the best read, and a whole run records both sections."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ldpgraph.protocols.graph import Graph, canonical_edges
from ldpgraph.protocols.types import Release
from ldpgraph.server import evaluation
from ldpgraph.server.evaluation import embedding
from ldpgraph.server.evaluation import lp as lp_metric
from ldpgraph.server.record import json_default
from ldpgraph.simulation import pipeline
from ldpgraph.simulation.config import RunConfig
from ldpgraph.simulation.datasets import synthetic_graph
from ldpgraph.simulation.splits import split_for

from .conftest import CPU, held_release, no_privacy

#: Random flips per node in the noisy releases, in expectation (each pair flips w.p. NOISE / n).
NOISE = 25.0


def test_lp_ranks_hidden_links_of_a_clustered_graph(sbm):
    graph, prepared, _ctx, out = sbm
    lp = out["lp"]
    assert lp["hidden_edges"] == prepared.held_out["lp"].count == int(0.2 * graph.num_edges)
    assert lp["auc_learned"] > 0.9 and lp["auc_dot"] > 0.9, lp
    aucs = {name: lp[f"auc_{name}"] for name in lp_metric.SCORERS}
    assert lp["auc"] == max(aucs.values()) == aucs[lp["best"]]
    assert lp["scorer"] == lp_metric.SCORERS[lp["best"]]
    assert "logistic regression" in lp_metric.SCORERS["learned"]


def flipped_release(graph: Graph, noise: float, seed: int = 3):
    """Hide the links, then release what the nodes hold with EdgeRand-like random flips (Wu et
    al. 2016): each pair flips with probability ``noise / n``. Returns the evaluated ``lp`` and
    the release's edge count."""
    n = graph.num_nodes
    prepared = evaluation.prepare(["lp"], graph, 0)
    rng = np.random.default_rng(seed)
    iu, iv = np.triu_indices(n, 1)
    flip = rng.random(len(iu)) < noise / n
    held = prepared.graph.edges[:, 0] * n + prepared.graph.edges[:, 1]
    keys = np.setxor1d(held, iu[flip] * n + iv[flip])
    edges = canonical_edges(np.stack([keys // n, keys % n], axis=1), n)
    release = Release(edges, graph.x, no_privacy())
    ctx = evaluation.EvaluationContext(graph, split_for(n, 0), release, None, 0, device=CPU)
    return evaluation.evaluate(["lp"], ctx, prepared.held_out)["lp"], len(edges)


def test_the_learned_scorer_is_not_at_chance_on_noisy_releases():
    """Two releases with about 25 random links per node against 8 or 4 true ones: a 600-node
    SBM of 20 communities, and 120 disjoint 5-cliques (links predictable from common neighbours,
    no large communities for a GAE to find). Common neighbours rank the hidden links far above
    chance on both, and so must the learned scorer (about 0.89 and 0.74 here; trained on the
    release's edges as they are, as before, the clique graph's was 0.66 and Cora-ML's EdgeRand
    ε = 6 release's 0.500)."""
    n, k = 600, 5
    sbm = synthetic_graph(n=n, classes=20, avg_degree=8, homophily=1.0, d=50, seed=1)
    rng = np.random.default_rng(3)
    cliques = [(c + i, c + j) for c in range(0, n, k) for i in range(k) for j in range(i + 1, k)]
    x = (rng.random((n, 50)) < 0.1).astype(np.uint8)
    clique_graph = Graph("cliques", canonical_edges(np.array(cliques), n), x, rng.integers(0, 3, n))
    for graph in (sbm, clique_graph):
        lp, released = flipped_release(graph, NOISE)
        assert lp["auc_cn"] > 0.65, (graph.name, lp)
        assert lp["auc_learned"] > 0.7, (graph.name, lp)
        assert lp["auc"] == max(lp[f"auc_{name}"] for name in lp_metric.SCORERS), lp
        assert lp["inner_links"] == int(0.2 * released), lp


def test_lp_is_near_chance_on_an_erdos_renyi_graph(er):
    _graph, _prepared, _ctx, out = er
    assert abs(out["lp"]["auc"] - 0.5) < 0.06 and abs(out["lp"]["auc_dot"] - 0.5) < 0.06


def test_lp_is_seeded_and_trains_its_gae_on_the_release_less_its_inner_links(sbm, monkeypatch):
    """``lp``'s GAE reads the release less the inner positives (so it cannot memorise the
    links its scorer trains on), early-stopped on the inner pairs; ``attack`` trains its own on
    the whole release."""
    graph, prepared, _ctx, out = sbm
    calls = []
    real = embedding.gae_embedding
    monkeypatch.setattr(
        embedding, "gae_embedding", lambda *a, **k: calls.append((a, k)) or real(*a, **k)
    )
    monkeypatch.setattr(lp_metric, "gae_embedding", embedding.gae_embedding)
    _, _, again = held_release(graph)
    assert again == out and len(calls) == 2
    edges = sorted(len(a[0]) for a, _k in calls)
    inner = out["lp"]["inner_links"]
    assert edges == [prepared.graph.num_edges - inner, prepared.graph.num_edges]
    assert inner == int(0.2 * prepared.graph.num_edges)
    assert sum(k.get("select") is not None for _a, k in calls) == 1


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


def test_inner_split_draws_like_the_hidden_set():
    """The inner positives are a seeded 20 % of the release's edges, taken out of ``kept``; the
    negatives as many uniform non-edges of the release, none of them a target pair."""
    from ldpgraph.server.evaluation.holdout import inner_split, pair_keys

    n = 300
    rng = np.random.default_rng(0)
    edges = canonical_edges(rng.integers(0, n, size=(2000, 2)), n)
    targets = canonical_edges(rng.integers(0, n, size=(400, 2)), n)
    split = inner_split(edges, n, targets, seed=4)
    k = int(0.2 * len(edges))
    pos, neg = split.pairs[:k], split.pairs[k:]
    assert split.labels.tolist() == [1] * k + [0] * k
    keys = set(pair_keys(edges, n).tolist())
    assert set(pair_keys(pos, n).tolist()) <= keys
    assert not set(pair_keys(neg, n).tolist()) & (keys | set(pair_keys(targets, n).tolist()))
    assert len(np.unique(pair_keys(neg, n))) == k
    kept = set(pair_keys(split.kept, n).tolist())
    assert kept | set(pair_keys(pos, n).tolist()) == keys and not kept & set(pair_keys(pos, n))
    again = inner_split(edges, n, targets, seed=4)
    assert (again.pairs == split.pairs).all()
    assert not (inner_split(edges, n, targets, seed=5).pairs == split.pairs).all()
    assert len(inner_split(edges, n, targets, seed=4, limit=10).labels) == 20
    assert inner_split(edges[:0], n, targets, seed=4).labels.size == 0


def test_early_stopping_keeps_the_best_read_embedding():
    """``select`` is read every 10 epochs and after the last; the best read is returned, and
    reading it changes nothing about the training (the last read equals the plain run)."""
    rng = np.random.default_rng(1)
    n = 60
    edges = canonical_edges(rng.integers(0, n, size=(200, 2)), n)
    x = (rng.random((n, 8)) < 0.3).astype(np.float32)
    reads: list[np.ndarray] = []

    def first_is_best(z: np.ndarray) -> float:
        reads.append(z)
        return -float(len(reads))

    z = embedding.gae_embedding(edges, x, 0, epochs=25, select=first_is_best)
    plain = embedding.gae_embedding(edges, x, 0, epochs=25)
    assert len(reads) == 3  # epochs 10, 20 and 25
    assert np.array_equal(z, reads[0]) and np.array_equal(reads[-1], plain)
    assert not np.array_equal(reads[0], reads[-1])
