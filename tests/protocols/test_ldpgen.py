"""LDPGen and FP-LDPGen: the client's noisy degree vectors (statistically), the server's
deterministic parts against literal dense references, the generator's edge counts per group
pair, determinism, the privacy report per round, and the local run over both rounds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldpgraph.protocols.base import CuratorView, RoundResult
from ldpgraph.protocols.laplace import PLD_DISCRETIZATION
from ldpgraph.protocols.ldp.ldpgen import LdpGenProtocol
from ldpgraph.protocols.ldp.ldpgen_generate import (
    block_factors,
    choose_k1,
    kmeans,
    out_probabilities,
    reexpress,
    sample_chung_lu,
    sample_directed,
    sample_distinct,
)
from ldpgraph.protocols.ldp.ldpgen_messages import (
    MSG_GROUPS,
    MSG_K,
    encode_groups,
    group_degrees,
    initial_partition,
)
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.protocols.reports import decode_report, encode_report
from ldpgraph.protocols.types import NodeView
from ldpgraph.simulation.backends.local import collect_round, run_protocol
from ldpgraph.simulation.datasets import load_dataset

from ..reference.ldpgen import (
    block_sums,
    chung_lu_expected,
    dense_block_factors,
    dense_chung_lu_expected,
    dense_group_degrees,
    dense_probabilities,
    dense_reexpress,
    expected_directed_counts,
)

Z999 = 3.2905  # two-sided 99.9% normal quantile


def pmf_inside(noise: np.ndarray, eps: float) -> bool:
    """Integer noise whose empirical P[K = k], k = −3..3, lies within 99.9% binomial intervals
    of the discrete Laplace pmf (1 − a)/(1 + a)·a^|k|, a = e^{−ε}."""
    if not np.array_equal(noise, np.round(noise)):
        return False
    a = math.exp(-eps)
    n = noise.shape[0]
    for k in range(-3, 4):
        p = (1 - a) / (1 + a) * a ** abs(k)
        if abs((noise == k).sum() / n - p) > Z999 * math.sqrt(p * (1 - p) / n):
            return False
    return True


def make(name: str, **kw) -> LdpGenProtocol:
    return make_protocol(name, **kw)


@pytest.fixture(scope="module")
def graph():
    return load_dataset("synthetic:n=200,classes=3,d=20")


def curator(g, public: bool) -> CuratorView:
    return CuratorView(g.num_nodes, g.num_features, public_features=g.x if public else None)


# ------------------------------------------------------------------ budget


@pytest.mark.parametrize(
    "name,kw,r0,r1",
    [
        ("ldpgen", {"epsilon": 4.0}, 2.0, 2.0),
        ("ldpgen", {"epsilon": 3.0, "phase_share": 0.25}, 0.75, 2.25),
        ("fp-ldpgen", {"epsilon": 4.0, "feature_share": 0.25}, 1.5 + 1.0, 1.5),
    ],
)
def test_round_epsilons_sum_to_epsilon(name, kw, r0, r1):
    proto = make(name, **kw)
    assert proto.round_epsilon(0) == pytest.approx(r0, abs=1e-12)
    assert proto.round_epsilon(1) == pytest.approx(r1, abs=1e-12)
    assert proto.round_epsilon(0) + proto.round_epsilon(1) == pytest.approx(kw["epsilon"])
    p = proto
    assert p.eps1 + p.eps2 + p.eps_features == pytest.approx(p.params.epsilon, abs=1e-12)


# ------------------------------------------------------------------ client step


def test_client_degree_vector_noise_both_rounds():
    """ε = 3, fp-ldpgen, feature_share 1/3: ε1 = ε2 = 1, ε_f = 1. k0 = k1 = 10 so 10⁴ reports
    give 10⁵ noise draws per round; the residuals are discrete Laplace at ε_r (integers), a
    5% wrong ε fails."""
    n, k, reps = 120, 10, 10_000
    proto = make("fp-ldpgen", epsilon=3.0, feature_share=1 / 3, k0=k)
    p = proto
    assert (p.eps1, p.eps2) == pytest.approx((1.0, 1.0))
    x = np.array([0.0] * 8 + [1.0] * 8)
    view = NodeView(5, np.arange(10, 70), x, n)
    g0 = initial_partition(0, n, k)
    true0 = group_degrees(view.neighbors, g0, k)
    groups1 = np.arange(n) % k
    true1 = group_degrees(view.neighbors, groups1, k)
    assert true1.dtype == np.int64 and true1.tolist() == [6] * k
    msg = {MSG_K: k, MSG_GROUPS: encode_groups(groups1)}
    noise0 = np.empty((reps, k))
    noise1 = np.empty((reps, k))
    feat_ones = np.zeros(16)
    for seed in range(reps):
        # The partition depends on the run seed: recompute it per seed as the client does.
        proto._partition0 = (seed, n, g0)  # pin ξ0 so the true counts stay fixed
        r0 = proto.client_step(0, view, {}, seed)
        noise0[seed] = np.array([r0.extras[f"deg{g}"] for g in range(k)]) - true0
        feat_ones += r0.features
        r1 = proto.client_step(1, view, msg, seed)
        assert r1.features.dtype == np.float32 and r1.features.shape == (k,)
        noise1[seed] = r1.features.astype(np.float64) - true1
    for noise, eps in ((noise0, p.eps1), (noise1, p.eps2)):
        flat = noise.ravel()
        assert pmf_inside(flat, eps)
        assert not pmf_inside(flat, eps / 1.05)
        assert not pmf_inside(flat, eps / 0.95)
        # Entries are independent: the correlation of two entries is within 99.9% of 0.
        corr = np.corrcoef(noise[:, 0], noise[:, 1])[0, 1]
        assert abs(corr) <= Z999 / math.sqrt(reps)
    # 1-bit features at ε_f = 1: Pr[1] = 1/(e+1) for x = 0 and e/(e+1) for x = 1.
    lo, hi = 1 / (math.e + 1), math.e / (math.e + 1)
    for ones, prob in ((feat_ones[:8].sum(), lo), (feat_ones[8:].sum(), hi)):
        trials = 8 * reps
        assert abs(ones / trials - prob) <= Z999 * math.sqrt(prob * (1 - prob) / trials)


def test_client_group_degrees_equal_dense(graph):
    adj = graph.adjacency().toarray()
    for k in (2, 5):
        groups = initial_partition(7, graph.num_nodes, k)
        dense = dense_group_degrees(adj, groups, k)
        for u in range(graph.num_nodes):
            np.testing.assert_array_equal(group_degrees(graph.neighbors(u), groups, k), dense[u])


def test_client_rejects_a_bad_message():
    proto = make("ldpgen", epsilon=2.0)
    view = NodeView(0, np.array([1, 2]), np.zeros(3), 10)
    bad = [
        {MSG_K: 3, MSG_GROUPS: encode_groups(np.zeros(9, dtype=int))},
        {MSG_K: 3, MSG_GROUPS: encode_groups(np.full(10, 3))},
        {MSG_K: 0, MSG_GROUPS: encode_groups(np.zeros(10, dtype=int))},
        {MSG_K: 3, MSG_GROUPS: "not bytes"},
    ]
    for msg in bad:
        with pytest.raises(ValueError):
            proto.client_step(1, view, msg, 0)


def test_reports_round_trip_the_wire(graph):
    for name in ("ldpgen", "fp-ldpgen"):
        proto = make(name, epsilon=4.0, k1=3)
        msg = {**proto.config(), MSG_K: 3, MSG_GROUPS: encode_groups(np.arange(200) % 3)}
        from ldpgraph.simulation.backends.local import node_view

        for r in (0, 1):
            rep = proto.client_step(r, node_view(graph, 4), msg, 9)
            schema = proto.schema(r)
            got = decode_report(
                encode_report(rep),
                num_nodes=200,
                round_=r,
                num_features=LdpGenProtocol.num_features(r, msg, graph.num_features),
                node_id=4,
                **schema.expected(),
            )
            assert got.extras == pytest.approx(rep.extras)
            if rep.features is not None:
                np.testing.assert_array_equal(got.features, rep.features)


def test_round_message_is_configrecord_compatible(graph):
    flwr = pytest.importorskip("flwr.common")
    proto = make("ldpgen", epsilon=4.0)
    result = collect_round(proto, graph, 0, proto.config(), 2)
    msg = proto.server_step(0, result, curator(graph, True), 2)
    flwr.ConfigRecord({**proto.config(), **msg})
    assert isinstance(msg[MSG_K], int) and isinstance(msg[MSG_GROUPS], bytes)


# ------------------------------------------------------------------ server: dense references


def random_setup(n: int, k_old: int, k: int, seed: int):
    rng = np.random.default_rng(seed)
    old = rng.integers(0, k_old, n)
    new = rng.integers(0, k, n)
    new[:k] = np.arange(k)  # every final cluster non-empty
    delta1 = rng.integers(0, 12, (n, k_old)).astype(np.float64)
    return delta1, old, new


@pytest.mark.parametrize("n,k_old,k,seed", [(30, 2, 3, 0), (40, 4, 4, 1), (25, 3, 2, 2)])
def test_generator_parts_equal_dense(n, k_old, k, seed):
    delta1, old, new = random_setup(n, k_old, k, seed)
    old[0] = k_old - 1  # keep it valid even if a group is empty
    dhat = reexpress(delta1, old, new, k_old, k)
    np.testing.assert_allclose(dhat, dense_reexpress(delta1, old, new, k_old, k), rtol=1e-12)
    m = block_factors(dhat, new, k)
    np.testing.assert_allclose(m, dense_block_factors(dhat, new, k), rtol=1e-12)
    q = out_probabilities(dhat, new, m)
    p = dense_probabilities(dhat, new, m)
    for u in range(n):
        for v in range(n):
            if u != v:
                assert q[u, new[v]] == p[u, v]
    np.testing.assert_allclose(
        expected_directed_counts(q, new, k), block_sums(p, new, k), rtol=1e-12
    )
    np.testing.assert_allclose(
        chung_lu_expected(dhat, new, k), dense_chung_lu_expected(dhat, new, k), rtol=1e-12
    )


def test_empty_groups_contribute_nothing():
    delta1 = np.array([[3.0, 5.0], [1.0, 2.0]])
    dhat = reexpress(delta1, np.array([0, 0]), np.array([1, 1]), 2, 2)
    np.testing.assert_array_equal(dhat, [[0.0, 3.0], [0.0, 1.0]])
    m = block_factors(dhat, np.array([1, 1]), 2)
    assert np.isfinite(m).all() and m[:, 0].tolist() == [0.0, 0.0]


def test_k1_rule():
    noisy = np.array([[1.2, 2.9], [0.1, 0.2], [10.0, 9.6]])
    eps2 = 2.0
    eta = np.array([4.0, 1.0, 20.0])  # round(4.1), clip(round(0.3)) = 1, round(19.6)
    d = eta / 2
    f = d + (d**2 - 2 * (1 + math.sqrt(5)) * d + 1) / eps2
    k1, value = choose_k1(noisy, eps2, 100)
    assert value == pytest.approx(f.mean())
    assert k1 == math.ceil(f.mean())
    assert choose_k1(np.zeros((4, 2)), 0.5, 10)[0] == 1  # negative mean clips to 1


def test_kmeans_separates_clusters_and_is_deterministic():
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    truth = rng.integers(0, 3, 300)
    data = centres[truth] + rng.normal(0, 0.5, (300, 2))
    a = kmeans(data, 3, np.random.default_rng(5))
    b = kmeans(data, 3, np.random.default_rng(5))
    np.testing.assert_array_equal(a, b)
    # A relabelling of the truth.
    pairs = set(zip(truth.tolist(), a.tolist(), strict=True))
    assert len(pairs) == 3


# ------------------------------------------------------------------ generator statistics


def test_sample_distinct_is_uniform_without_replacement():
    rng = np.random.default_rng(3)
    counts = np.array([0, 1, 3, 7, 9, 10])
    pools = np.full(6, 10)
    reps = 4000
    freq = np.zeros((6, 10))
    for _ in range(reps):
        rows, ranks = sample_distinct(counts, pools, rng)
        assert np.bincount(rows, minlength=6).tolist() == counts.tolist()
        assert np.unique(rows * 10 + ranks).size == rows.size
        np.add.at(freq, (rows, ranks), 1)
    for r in range(1, 5):
        prob = counts[r] / 10
        err = Z999 * math.sqrt(prob * (1 - prob) / reps)
        assert np.abs(freq[r] / reps - prob).max() <= err + 1e-12


def test_directed_generator_edge_counts_per_group_pair():
    """Over 300 samples the mean number of edges per ordered group pair is within 99.9% of
    Σ p_uv (variance Σ p(1−p)); no loops or duplicates; heads uniform inside a group."""
    n, k, reps = 60, 3, 300
    rng = np.random.default_rng(1)
    groups = rng.integers(0, k, n)
    q = rng.uniform(0, 1, (n, k)) ** 2
    q[0] = [1.0, 0.95, 0.0]
    sizes = np.bincount(groups, minlength=k)
    pool = sizes[None, :] - (groups[:, None] == np.arange(k))
    expected = expected_directed_counts(q, groups, k)
    var = np.zeros((k, k))
    np.add.at(var, groups, pool * q * (1 - q))
    counts = np.zeros((k, k))
    heads0 = np.zeros(n)
    for s in range(reps):
        e = sample_directed(q, groups, k, np.random.default_rng(100 + s))
        assert (e[:, 0] != e[:, 1]).all()
        assert np.unique(e[:, 0] * n + e[:, 1]).size == e.shape[0]
        np.add.at(counts, (groups[e[:, 0]], groups[e[:, 1]]), 1)
        np.add.at(heads0, e[e[:, 0] == 0, 1], 1)
    assert (np.abs(counts / reps - expected) <= Z999 * np.sqrt(var / reps) + 1e-12).all()
    # Node 0 links to every other member of group 0 (q = 1) and to none of group 2.
    others0 = (groups == 0) & (np.arange(n) != 0)
    assert (heads0[others0] == reps).all() and (heads0[groups == 2] == 0).all()
    # A wrong expectation (5% off) would fail at this sample size somewhere.
    assert not (np.abs(counts / reps - 1.05 * expected) <= Z999 * np.sqrt(var / reps)).all()


def test_chung_lu_generator_pair_counts_per_group_pair():
    n, k, reps = 80, 3, 300
    rng = np.random.default_rng(2)
    groups = rng.integers(0, k, n)
    dhat = rng.uniform(0, 6, (n, k))
    expected = chung_lu_expected(dhat, groups, k)
    counts = np.zeros((k, k))
    for s in range(reps):
        e = sample_chung_lu(dhat, groups, k, np.random.default_rng(500 + s))
        assert (e[:, 0] != e[:, 1]).all()
        a, b = groups[e[:, 0]], groups[e[:, 1]]
        np.add.at(counts, (np.minimum(a, b), np.maximum(a, b)), 1)
    upper = np.triu(np.ones((k, k), dtype=bool))
    # Poisson counts: variance = mean.
    err = Z999 * np.sqrt(expected / reps)
    assert (np.abs(counts / reps - expected)[upper] <= err[upper]).all()
    assert (counts[~upper] == 0).all()


# ------------------------------------------------------------------ end to end


@pytest.mark.parametrize(
    "name,kw",
    [
        ("ldpgen", {}),
        ("ldpgen", {"generator": "chunglu", "k1": 4}),
        ("fp-ldpgen", {"feature_share": 0.5, "k1": 3}),
    ],
)
def test_local_run_protocol_end_to_end(graph, name, kw):
    proto = make(name, epsilon=4.0, **kw)
    release, _ = run_protocol(proto, graph, curator(graph, name == "ldpgen"), seed=11)
    e = release.edges
    assert e.ndim == 2 and e.shape[1] == 2 and (e[:, 0] < e[:, 1]).all()
    assert np.unique(e[:, 0] * 200 + e[:, 1]).size == e.shape[0]
    assert 0 < release.num_edges < 200 * 199 // 2
    st = release.stats
    assert st["round0_reports"] == st["round1_reports"] == 200
    assert st["undirected_edges"] == release.num_edges
    assert sum(st["cluster_sizes"]) == 200 and len(st["cluster_sizes"]) == st["k1"]
    if "k1" in kw:
        assert st["k1"] == kw["k1"]
    if name == "ldpgen":
        assert release.x is graph.x
    else:
        assert release.x.dtype == np.float32 and release.x.shape == (200, 20)
        assert release.x.min() >= 0 and release.x.max() <= 1


def test_determinism(graph):
    for name in ("ldpgen", "fp-ldpgen"):
        fps = []
        for seed in (3, 3, 4):
            proto = make(name, epsilon=4.0)
            fps.append(run_protocol(proto, graph, curator(graph, name == "ldpgen"), seed)[0])
        assert fps[0].fingerprint() == fps[1].fingerprint()
        assert fps[0].fingerprint() != fps[2].fingerprint()


def test_fp_ldpgen_feature_reconstruction_is_neighbour_mean(graph):
    proto = make("fp-ldpgen", epsilon=4.0, k1=3)
    cur = curator(graph, False)
    r0 = collect_round(proto, graph, 0, proto.config(), 5)
    x_tilde = np.stack([r0.reports[u].features for u in range(200)]).astype(np.float64)
    msg = {**proto.config(), **proto.server_step(0, r0, cur, 5)}
    release = proto.server_step(1, collect_round(proto, graph, 1, msg, 5), cur, 5)
    adj = np.zeros((200, 200))
    adj[release.edges[:, 0], release.edges[:, 1]] = 1
    adj += adj.T
    deg = adj.sum(axis=1)
    want = np.where(deg[:, None] > 0, adj @ x_tilde / np.maximum(deg, 1)[:, None], x_tilde)
    assert np.abs(release.x - want).max() <= 1e-6


def test_missing_reports_and_round_order(graph):
    proto = make("ldpgen", epsilon=4.0, k1=3)
    cur = curator(graph, True)
    r0 = collect_round(proto, graph, 0, proto.config(), 1)
    with pytest.raises(RuntimeError, match="round-0"):
        make("ldpgen", epsilon=4.0).server_step(1, r0, cur, 1)
    r0 = RoundResult({u: r for u, r in r0.reports.items() if u % 7}, np.arange(0, 200, 7))
    msg = {**proto.config(), **proto.server_step(0, r0, cur, 1)}
    r1 = collect_round(proto, graph, 1, msg, 1)
    r1 = RoundResult({u: r for u, r in r1.reports.items() if u % 5}, np.arange(0, 200, 5))
    release = proto.server_step(1, r1, cur, 1)
    assert release.stats["round0_reports"] == 200 - 29
    assert release.stats["round1_reports"] == 160
    with pytest.raises(ValueError, match="public features"):
        p2 = make("ldpgen", epsilon=4.0, k1=3)
        m2 = {**p2.config(), **p2.server_step(0, collect_round(p2, graph, 0, {}, 1), cur, 1)}
        p2.server_step(1, collect_round(p2, graph, 1, m2, 1), CuratorView(200, 20), 1)


# ------------------------------------------------------------------ privacy


@pytest.mark.parametrize(
    "name,kw", [("ldpgen", {"epsilon": 5.0}), ("fp-ldpgen", {"epsilon": 5.0, "feature_share": 0.3})]
)
def test_privacy_report_per_round(name, kw):
    from dp_accounting import NeighboringRelation, dp_event, pld

    proto = make(name, **kw)
    rep = proto.privacy_report(num_features=20)
    for r in (0, 1):
        parts = [part for part in rep.parts if part["round"] == r]
        assert parts == proto.round_parts(r, 20)
        closed = sum(part["epsilon_closed_form"] for part in parts)
        assert closed == pytest.approx(proto.round_epsilon(r), abs=1e-12)
        for part in parts:
            c = part["epsilon_closed_form"]
            assert c - 1e-9 <= part["epsilon"] <= c + PLD_DISCRETIZATION + 1e-9
            if part["part"].startswith("degree-vector"):
                assert part["mechanism"] == "discrete-laplace"
                assert part["noise_decay"] == pytest.approx(math.exp(-c))
                assert part["sensitivity"] == 1
                # dp-accounting's own DiscreteLaplaceDpEvent (sensitivity 1, one entry of the
                # vector moves by 1) gives the same ε.
                acc = pld.PLDAccountant(NeighboringRelation.ADD_OR_REMOVE_ONE)
                acc.compose(dp_event.DiscreteLaplaceDpEvent(noise_parameter=c, sensitivity=1))
                assert acc.get_epsilon(0.0) == pytest.approx(c, abs=1e-6)
    # Both discrete-Laplace rounds together, by dp-accounting, equal ε1 + ε2.
    p = proto
    acc = pld.PLDAccountant(NeighboringRelation.ADD_OR_REMOVE_ONE)
    acc.compose(dp_event.DiscreteLaplaceDpEvent(noise_parameter=p.eps1, sensitivity=1))
    acc.compose(dp_event.DiscreteLaplaceDpEvent(noise_parameter=p.eps2, sensitivity=1))
    assert acc.get_epsilon(0.0) == pytest.approx(p.eps1 + p.eps2, abs=1e-3)
    # One edge is counted in both endpoints' vectors in both rounds: 2(ε1 + ε2).
    assert rep.unit_epsilons["edge"] == pytest.approx(2 * (p.eps1 + p.eps2), abs=5e-4)
    n_parts = len(rep.parts)
    assert 5.0 - 1e-9 <= rep.epsilon <= 5.0 + n_parts * PLD_DISCRETIZATION + 1e-9
    assert rep.delta == 0.0 and rep.paper_epsilon == 5.0
    if name == "ldpgen":
        assert "public" in rep.unit
    else:
        assert any("per feature BIT" in note for note in rep.notes)


def test_bad_parameters():
    for kw in (
        {"epsilon": 0.0},
        {"epsilon": 1.0, "phase_share": 1.0},
        {"epsilon": 1.0, "k0": 0},
        {"epsilon": 1.0, "k1": -1},
        {"epsilon": 1.0, "generator": "bter"},
    ):
        with pytest.raises(ValueError):
            make("ldpgen", **kw)
    with pytest.raises(ValueError, match="feature_share"):
        make("fp-ldpgen", epsilon=1.0, feature_share=1.0)


def test_round0_partition_comes_from_the_servers_public_seed(monkeypatch):
    """ξ0 must be the same for every node although each deployed node draws its noise from
    its own entropy: the server sends its seed in round 0's message (public_message)."""
    from ldpgraph.protocols.ldp import ldpgen

    class NoNoise:
        def __init__(self, *_a, **_k) -> None:
            pass

        def perturb_many(self, values, _rng):
            return np.asarray(values)

    monkeypatch.setattr(ldpgen, "DiscreteLaplace", NoNoise)
    proto = make("ldpgen", epsilon=4.0, k0=5)
    n = 60
    msg = {**proto.config(), **proto.public_message(0, 7)}
    assert proto.public_message(1, 7) == {}
    want = ldpgen.group_degrees(np.arange(10, 40), ldpgen.initial_partition(7, n, 5), 5)
    for stream_seed in (1, 2**100, 12345):  # three nodes' own, unrelated seeds
        view = NodeView(3, np.arange(10, 40), np.zeros(4), n)
        got = proto.client_step(0, view, msg, stream_seed).extras
        assert [got[f"deg{g}"] for g in range(5)] == want.tolist()
    with pytest.raises(ValueError, match="partition0_seed"):
        proto.client_step(0, view, {**msg, ldpgen.MSG_P0: -1}, 1)


def test_hostile_ldpgen_parameters_are_rejected():
    with pytest.raises(ValueError, match="k0"):
        make("ldpgen", epsilon=4.0, k0=10**9)
    with pytest.raises(ValueError, match="smallest"):
        make("ldpgen", epsilon=1e-25)
