"""The link-inference attacks: Table III's scores on a hand-made graph, cosine with zero rows,
well above 0.5 on a clustered graph, near 0.5 on an Erdős–Rényi graph of the same density
(where a leak of the hidden edges would show), ``max``, what the metric refuses, and that the
trained attacks never train on a pair they score."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols.graph import canonical_edges, edges_to_csr
from ldpgraph.protocols.types import Release
from ldpgraph.server import evaluation
from ldpgraph.server.evaluation.attack import ATTACKS, GRAPH_ATTACKS, pair_cosine, structural_scores

from ...support.toy_central import MajorityModel
from .conftest import CPU, no_privacy

TRAINED = ("embedding_svm", "node2vec_svm", "seal")


def test_structural_scores_by_hand():
    # 0-1, 0-2, 1-2, 1-3, 2-3, 3-4; node 5 isolated. deg: 2, 3, 3, 3, 1, 0
    edges = canonical_edges(np.array([[0, 1], [0, 2], [1, 2], [1, 3], [2, 3], [3, 4]]), 6)
    pairs = np.array([[0, 3], [0, 4], [4, 5], [1, 2]])
    s = structural_scores(edges_to_csr(edges, 6), pairs)
    assert s["cn"].tolist() == [2, 0, 0, 2]  # {1, 2}; -; -; {0, 3}
    assert s["aa"] == pytest.approx([2 / math.log(3), 0, 0, 1 / math.log(2) + 1 / math.log(3)])
    assert s["ra"] == pytest.approx([2 / 3, 0, 0, 1 / 2 + 1 / 3])
    # |N(0) ∪ N(3)| = |{1, 2, 4}| = 3; N(1) ∪ N(2) = {0, 1, 2, 3}: 2 of 4; an empty union: 0
    assert s["jaccard"] == pytest.approx([2 / 3, 0, 0, 2 / 4])


def test_cosine_by_hand_and_zero_rows():
    x = np.array([[1, 0, 1], [1, 1, 0], [0, 0, 0], [2, 0, 2]], dtype=np.float32)
    got = pair_cosine(x, np.array([[0, 1], [0, 2], [0, 3]]))
    assert got == pytest.approx([0.5, 0.0, 1.0])
    assert pair_cosine(np.zeros((3, 0)), np.array([[0, 1]])).tolist() == [0.0]


def test_attacks_find_links_of_a_clustered_graph(sbm):
    _graph, _prepared, _ctx, out = sbm
    attack = out["attack"]
    assert set(attack) == {*ATTACKS, "max", "best"}
    for name in ("cn", "aa", "ra", "jaccard", "embedding_cosine"):
        assert attack[name] > 0.8, (name, attack[name])
    # the embedding and subgraph attacks see the blocks (0.97 each here)
    for name in ("embedding_cosine", "embedding_svm", "node2vec_cosine", "node2vec_svm", "seal"):
        assert attack[name] > 0.9, (name, attack[name])
    assert attack["max"] == max(attack[a] for a in ATTACKS) == attack[attack["best"]]


def test_attacks_are_blind_on_an_erdos_renyi_graph(er):
    _graph, _prepared, _ctx, out = er
    for name in ATTACKS:
        assert abs(out["attack"][name] - 0.5) < 0.06, (name, out["attack"][name])


def test_attack_on_a_release_with_the_hidden_edges_is_caught(er, quick_seal):
    # A release that leaks the hidden edges (the original graph) gives the embedding attack
    # far more than 0.5 on the same graph where the held release gave ~0.5.
    graph, prepared, ctx, _out = er
    leaked = Release(graph.edges, graph.x, no_privacy())
    ctx2 = evaluation.EvaluationContext(graph, ctx.split, leaked, None, 0, device=CPU)
    out = evaluation.evaluate(["attack"], ctx2, prepared.held_out)
    assert out["attack"]["embedding_cosine"] > 0.7


def test_a_model_release_is_skipped_and_a_missing_hidden_set_refused(sbm):
    graph, _prepared, ctx, _out = sbm
    model = Release.of_model(MajorityModel(0), graph.num_nodes, no_privacy())
    ctx_model = evaluation.EvaluationContext(graph, ctx.split, model, None, 0, device=CPU)
    out = evaluation.evaluate(["lp", "attack"], ctx_model, {})
    assert set(out["skipped_metrics"]) == {"lp", "attack"}
    with pytest.raises(ValueError, match="hid none"):
        evaluation.evaluate(["attack"], ctx, {})
    few = Release(ctx.release.edges[:3], ctx.release.x[:10], no_privacy())
    ctx_few = evaluation.EvaluationContext(graph, ctx.split, few, None, 0, device=CPU)
    with pytest.raises(ValueError, match="original 600 nodes; it has 10"):
        evaluation.evaluate(["attack"], ctx_few, _prepared.held_out)


def test_protected_pairs_are_scored_against_true_non_links(sbm, quick_seal):
    """A release that declares protected pairs gets ``attack.protected``: on the clustered
    graph they are found (AUC near 1) whether kept or taken out, on a random release with
    no features they are not; the
    top-level hidden-link figures are the same either way; the non-links are true non-links,
    disjoint from the hidden non-edges, and seeded."""
    from ldpgraph.server.evaluation.attack import protected_targets
    from ldpgraph.server.evaluation.holdout import pair_keys

    graph, prepared, ctx, out = sbm
    held = prepared.held_out["attack"]
    rng = np.random.default_rng(3)
    nodes_edges = prepared.graph.edges
    chosen = rng.choice(len(nodes_edges), size=60, replace=False)
    protected = nodes_edges[chosen]
    rest = np.delete(nodes_edges, chosen, axis=0)
    kept = Release(nodes_edges, prepared.graph.x, no_privacy(), protected=protected)
    removed = Release(rest, prepared.graph.x, no_privacy(), protected=protected)
    results = {}
    for name, release in (("kept", kept), ("removed", removed)):
        c = evaluation.EvaluationContext(graph, ctx.split, release, None, 0, device=CPU)
        results[name] = evaluation.evaluate(["attack"], c, prepared.held_out)["attack"]
    assert results["kept"]["protected"]["count"] == 60
    section = results["kept"]["protected"]
    assert GRAPH_ATTACKS == tuple(k for k in ATTACKS if k != "feature_cosine")
    assert section["max_graph"] == max(section[k] for k in GRAPH_ATTACKS)
    assert results["kept"]["protected"]["max"] > 0.9
    # hidden-link figures unchanged (SEAL's too by construction, but it runs quick here)
    for name in ATTACKS:
        if name != "seal":
            assert results["kept"][name] == out["attack"][name], name
    # removed, the clustered graph still betrays them through common neighbours
    assert results["removed"]["protected"]["max"] > 0.8
    n = graph.num_nodes
    noise = canonical_edges(rng.integers(0, n, size=(len(rest), 2)), n)
    blind = Release(noise, np.zeros((n, 0), np.float32), no_privacy(), protected=protected)
    c = evaluation.EvaluationContext(graph, ctx.split, blind, None, 0, device=CPU)
    scored = evaluation.evaluate(["attack"], c, prepared.held_out)["attack"]["protected"]
    assert scored["max"] < 0.75
    c = evaluation.EvaluationContext(graph, ctx.split, removed, None, 0, device=CPU)
    pairs, labels = protected_targets(c, held)
    non = pair_keys(pairs[labels == 0], n)
    assert len(np.unique(non)) == 60
    assert not np.isin(non, pair_keys(graph.edges, n)).any()
    assert not np.isin(non, pair_keys(held.non_edges, n)).any()
    again, _ = protected_targets(c, held)
    np.testing.assert_array_equal(pairs, again)
    # a declared pair that is no edge of the original graph is refused
    bogus = Release(rest, prepared.graph.x, no_privacy(), protected=pairs[labels == 0][:3])
    c = evaluation.EvaluationContext(graph, ctx.split, bogus, None, 0, device=CPU)
    with pytest.raises(ValueError, match="not edges of the original graph"):
        evaluation.evaluate(["attack"], c, prepared.held_out)


def test_trained_attacks_never_train_on_a_scored_pair(sbm, monkeypatch, quick_seal):
    """The SVMs and SEAL train on the release's edges and non-edges less every pair of the
    target set they score: the hidden edges and non-edges, or the protected pairs (which this
    release keeps, so they would be positives) and their non-links. (Without the exclusion
    the kept protected pairs are training positives, and the 480 hidden non-edges, among
    ~180 000 free pairs, meet ~2 400 sampled negatives.)"""
    from ldpgraph.server.evaluation import seal, svm
    from ldpgraph.server.evaluation.attack import protected_targets
    from ldpgraph.server.evaluation.holdout import pair_keys, release_training_pairs

    graph, prepared, ctx, _out = sbm
    held = prepared.held_out["attack"]
    protected = prepared.graph.edges[::10]
    release = Release(prepared.graph.edges, prepared.graph.x, no_privacy(), protected=protected)
    c = evaluation.EvaluationContext(graph, ctx.split, release, None, 0)
    drawn: list[tuple[np.ndarray, np.ndarray]] = []

    def spy(edges, num_nodes, exclude, size, rng):
        pairs, labels = release_training_pairs(edges, num_nodes, exclude, size, rng)
        drawn.append((pairs, exclude))
        return pairs, labels

    monkeypatch.setattr(svm, "release_training_pairs", spy)
    monkeypatch.setattr(seal, "release_training_pairs", spy)
    out = evaluation.evaluate(["attack"], c, prepared.held_out)["attack"]
    n = graph.num_nodes
    hidden = pair_keys(held.pairs()[0], n)
    kept = pair_keys(protected_targets(c, held)[0], n)
    # 2 SVMs and SEAL for the hidden set, then again for the protected set
    assert len(drawn) == 6
    for i, (pairs, exclude) in enumerate(drawn):
        scored = hidden if i < 3 else kept
        np.testing.assert_array_equal(np.sort(pair_keys(exclude, n)), np.sort(scored))
        usable = len(release.edges) - (len(protected) if i > 2 else 0)  # all but targets
        assert len(pairs) == (600 if i in (2, 5) else 2 * usable)  # SEAL: 300 (quick_seal)
        assert not np.isin(pair_keys(pairs, n), scored).any()
    assert set(out["protected"]) >= set(ATTACKS)
    for name in TRAINED:
        assert 0.0 <= out[name] <= 1.0 and 0.0 <= out["protected"][name] <= 1.0
