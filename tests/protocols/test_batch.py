"""Batched client steps: the same streams, the same reports byte for byte, in a compact batch.

The batched path (:func:`~ldpgraph.protocols.ldp.node_reports.rr_onebit_batch`, the default
``client_step_batch``) must give exactly what ``client_step`` gives node by node, since stored
fingerprints and the local = Flower equality rest on it. The checks below compare every byte
of every report in each regime of the batched RR rows (dense rows, p ≥ DENSE_FLIP; rows whose
first block of ranks repeats one and finish in later rounds; slices of rows and hubs in slices
of their own), and check the container itself: int32 indices, its Mapping view, its
validation, concatenation and drops.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from ldpgraph.protocols.base import ReportSchema
from ldpgraph.protocols.batch import BatchBuilder, NodeBatch, ReportBatch
from ldpgraph.protocols.graph import Graph, canonical_edges
from ldpgraph.protocols.ldp import node_reports, rr_batch
from ldpgraph.protocols.ldp.assemble import adjacency_reports, extra_reports, feature_reports
from ldpgraph.protocols.ldp.node_reports import rr_onebit_batch
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.protocols.rng import (
    ADJACENCY,
    DEGREE,
    FEATURES,
    batch_streams_exact,
    generator_from_words,
    node_rng,
    stream_words,
)
from ldpgraph.protocols.support import noisy_count
from ldpgraph.protocols.types import Report
from ldpgraph.server.rounds import batch_problems, report_problem
from ldpgraph.simulation.datasets.synthetic import synthetic_graph


def assert_same_reports(a, b) -> None:
    """Every report of ``a`` equals ``b``'s: ids, dtypes, shapes and bytes."""
    assert sorted(a) == sorted(b)
    for node in a:
        ra, rb = a[node], b[node]
        assert (ra.node_id, ra.round, ra.num_nodes) == (rb.node_id, rb.round, rb.num_nodes)
        for name in ("adjacency", "features"):
            x, y = getattr(ra, name), getattr(rb, name)
            assert (x is None) == (y is None), (node, name)
            if x is not None:
                assert (x.dtype, x.shape) == (y.dtype, y.shape), (node, name)
                assert x.tobytes() == y.tobytes(), (node, name)
        assert ra.extras == rb.extras, node


def node_by_node(proto, graph: Graph, nodes, round_, msg, seeds) -> dict[int, Report]:
    batch = NodeBatch.of_graph(graph, np.asarray(nodes))
    return {
        v.node_id: proto.client_step(round_, v, msg, seeds if isinstance(seeds, int) else seeds[k])
        for k, v in enumerate(batch.views())
    }


@pytest.fixture(scope="module")
def small() -> Graph:
    return synthetic_graph(n=1500, avg_degree=10.0, d=24, seed=2)


@pytest.fixture(scope="module")
def large() -> Graph:
    # n > 10^4: long rows of zeros; first blocks of ranks with and without repeats.
    return synthetic_graph(n=12_000, avg_degree=10.0, d=16, seed=3)


# -- RR rows ---------------------------------------------------------------------------------


def hub_graph() -> Graph:
    """n = 600: a hub joined to half the graph, isolated nodes, the rest sparse."""
    rng = np.random.default_rng(5)
    pairs = rng.integers(0, 560, size=(1500, 2))
    hub = np.stack([np.zeros(300, np.int64), rng.choice(np.arange(1, 560), 300, replace=False)], 1)
    edges = canonical_edges(np.concatenate([pairs, hub]), 600)
    return Graph("hub", edges, np.zeros((600, 1), np.uint8), np.zeros(600, np.int64))


@pytest.mark.parametrize("eps", [0.5, 2.3, 3.0, 5.0])
@pytest.mark.parametrize("cells", [None, 64])
def test_batched_rr_rows_equal_perturb_row(monkeypatch, eps, cells):
    """Every regime of the batched RR rows gives perturb_row's row byte for byte: dense rows
    (ε = 0.5), later rounds after repeated ranks (ε = 2.3, 3: ~55 and ~28 flips among 600),
    few flips (ε = 5); whole batches and slices of at most 64 cells (a hub alone)."""
    if cells is not None:
        monkeypatch.setattr(rr_batch, "_RANK_CELLS", cells)
    graph = hub_graph()
    nodes = np.concatenate([np.arange(600)[::-1][:300], np.arange(300)])
    batch = NodeBatch.of_graph(graph, nodes)
    later = []
    real = rr_batch._flipped_ranks

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        later.append(out[2].size)
        return out

    monkeypatch.setattr(rr_batch, "_flipped_ranks", spy)
    indptr, indices = rr_batch.rr_rows(batch, rr_batch.strict_rows(batch), 3, 11, eps)
    for k, view in enumerate(batch.views()):
        want = node_reports.noisy_row(view, eps, 11, 3)
        got = indices[indptr[k] : indptr[k + 1]]
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), (eps, view.node_id)
    if eps in (2.3, 3.0):
        assert sum(later) > 0  # some rows did finish in later rounds


def test_rows_of_graphs_past_2_to_the_30_are_made_node_by_node():
    """The 2-D slices sort 2·rank + 1 in int32; a graph of more than 2^30 nodes takes the
    node-by-node path, and its rows are perturb_row's (ids near 2^31 included)."""
    n = 2**31 - 16
    batch = NodeBatch(
        np.array([5, 7]), np.array([0, 2, 2]), np.array([3, 2**30 + 5], np.int32),
        np.zeros((2, 1), np.uint8), n,
    )  # fmt: skip
    got = rr_onebit_batch(batch, 0, 1, 19.0, None)
    for k, view in enumerate(batch.views()):
        want = node_reports.noisy_row(view, 19.0, 1, 0)
        assert got.indices[got.indptr[k] : got.indptr[k + 1]].tobytes() == want.tobytes()
        assert want.size > 1 and want.max() >= 2**30


@pytest.mark.parametrize("mu", [0.0, 1.5, float("nan")])
def test_the_batched_step_refuses_mu_outside_0_1(small, mu):
    batch = NodeBatch.of_graph(small, np.arange(50))
    with pytest.raises(ValueError, match="mu must be in"):
        rr_onebit_batch(batch, 0, 1, 4.0, None, mu=mu)


@pytest.mark.parametrize("eps", [0.5, 3.0])
def test_batched_sampled_rows_equal_asymmetric_rr(monkeypatch, eps):
    """μ < 1 (hogs-arr): dense rows (RR's row, then keep_each on SAMPLING) and sparse rows
    (the lazy sampling) are AsymmetricRR.perturb_row's, byte for byte, in slices too."""
    monkeypatch.setattr(rr_batch, "_RANK_CELLS", 64)
    graph = hub_graph()
    batch = NodeBatch.of_graph(graph, np.arange(600))
    got = rr_batch.rr_rows(batch, rr_batch.strict_rows(batch), 2, 13, eps, 0.3)
    indptr, indices = got
    for k, view in enumerate(batch.views()):
        want = node_reports.sampled_row(view, eps, 0.3, 13, 2)
        assert indices[indptr[k] : indptr[k + 1]].tobytes() == want.tobytes(), view.node_id


# -- streams ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2**32 - 1, 2**32, 2**64 + 5, 2**128 - 1])
def test_stream_words_are_seedsequence_words(seed):
    nodes = np.array([0, 1, 2, 77, 123_456, 2**32 - 1])
    for round_ in (0, 3):
        for purpose in (ADJACENCY, FEATURES, DEGREE):
            words = stream_words(seed, nodes, round_, purpose)
            assert words.dtype == np.uint64 and words.shape == (nodes.size, 4)
            for k, node in enumerate(nodes.tolist()):
                want = np.random.SeedSequence([seed, node, round_, purpose])
                assert words[k].tolist() == want.generate_state(4, np.uint64).tolist()


def test_per_node_seeds_and_the_generators_equal_node_rng():
    rng = np.random.default_rng(0)
    seeds = [int(s) for s in rng.integers(0, 2**63, 30)] + [0, 2**127 + 1, 2**33]
    nodes = np.arange(len(seeds)) * 11
    words = stream_words(seeds, nodes, 1, FEATURES)
    for k, node in enumerate(nodes.tolist()):
        fast = generator_from_words(words[k])
        slow = node_rng(seeds[k], node, 1, FEATURES)
        assert fast.random(5).tobytes() == slow.random(5).tobytes()
        assert fast.integers(0, 2**40, 3).tolist() == slow.integers(0, 2**40, 3).tolist()
    assert batch_streams_exact()
    with pytest.raises(ValueError, match="seeds for"):
        stream_words([1, 2], nodes, 0, ADJACENCY)
    with pytest.raises(ValueError, match="non-negative"):
        stream_words(-1, nodes, 0, ADJACENCY)


# -- the batched client steps ----------------------------------------------------------------

PROTOCOLS = [
    ("hogs", {"epsilon": 8.0}),
    ("hogs", {"epsilon": 1.0, "feature_share": 0.5}),  # dense rows: ~27% of bits flip
    ("hogs-edge", {"epsilon": 4.0}),
    ("rr", {"epsilon": 4.0}),
    ("blink-hard", {"epsilon": 4.0}),
    ("fp-blink", {"epsilon": 4.0}),
    ("features-only", {"epsilon": 2.0}),
    ("solitude", {"epsilon": 4.0}),
    ("ldpgen", {"epsilon": 4.0}),  # the default client_step_batch (a loop)
    ("hogs-arr", {"epsilon": 4.0, "mu": 0.5}),  # sparse rows, sampled lazily on SAMPLING
    ("hogs-arr", {"epsilon": 1.0, "mu": 0.5}),  # dense rows: RR's row, then keep_each
    ("hogs-kprop", {"epsilon": 4.0}),
]


@pytest.mark.parametrize(("name", "params"), PROTOCOLS, ids=lambda v: str(v))
def test_batched_reports_are_byte_identical(small, name, params):
    proto = make_protocol(name, **params)
    msg = {**proto.config(), **proto.public_message(0, 5)}
    nodes = np.arange(small.num_nodes)
    got = proto.client_step_batch(0, NodeBatch.of_graph(small, nodes), msg, 5)
    assert isinstance(got, ReportBatch)
    assert_same_reports(node_by_node(proto, small, nodes, 0, msg, 5), got)


@pytest.mark.parametrize("name", ["hogs", "blink-hard"])
def test_batched_reports_are_byte_identical_on_long_rows(large, name):
    proto = make_protocol(name, epsilon=6.0)
    # A scattered subset (a guard refused the others), and a later round.
    nodes = np.flatnonzero(np.random.default_rng(1).random(large.num_nodes) < 0.25)
    got = proto.client_step_batch(2, NodeBatch.of_graph(large, nodes), proto.config(), 11)
    assert_same_reports(node_by_node(proto, large, nodes, 2, proto.config(), 11), got)


def test_batched_reports_with_one_seed_per_node(small):
    proto = make_protocol("hogs", epsilon=4.0)
    nodes = np.arange(0, small.num_nodes, 3)
    seeds = [int(s) for s in np.random.default_rng(4).integers(0, 2**62, nodes.size)]
    seeds[0] = 2**127 + 9  # an OS-entropy seed is 128 bits
    got = proto.client_step_batch(0, NodeBatch.of_graph(small, nodes), proto.config(), seeds)
    assert_same_reports(node_by_node(proto, small, nodes, 0, proto.config(), seeds), got)


def test_unsorted_rows_take_the_reference_path():
    # A view whose row is not strictly increasing (and holds the node itself) is served node by
    # node: the batched mapping assumes sorted rows; the reports stay the same.
    batch = NodeBatch(
        nodes=np.array([0, 1, 2]),
        indptr=np.array([0, 3, 4, 6]),
        indices=np.array([2, 1, 0, 2, 1, 0], dtype=np.int32),
        features=np.zeros((3, 4), dtype=np.uint8),
        num_nodes=50,
    )
    proto = make_protocol("hogs", epsilon=1.0)
    got = proto.client_step_batch(0, batch, {}, 3)
    want = {v.node_id: proto.client_step(0, v, {}, 3) for v in batch.views()}
    assert_same_reports(want, got)


def test_features_outside_the_domain_are_refused(small):
    bad = NodeBatch.of_graph(small, np.arange(5))
    bad = NodeBatch(bad.nodes, bad.indptr, bad.indices, bad.features * 3, bad.num_nodes)
    with pytest.raises(ValueError, match="outside the declared domain"):
        rr_onebit_batch(bad, 0, 1, 2.0, 1.0)


# -- the container ---------------------------------------------------------------------------


def test_the_batch_holds_int32_indices_and_reads_like_a_dict(small):
    proto = make_protocol("hogs", epsilon=8.0)
    nodes = np.arange(small.num_nodes)
    batch = proto.client_step_batch(0, NodeBatch.of_graph(small, nodes), {}, 0)
    assert batch.indices.dtype == np.int32 and batch.indptr.dtype == np.int64
    assert batch.features.dtype == np.uint8 and batch.features.shape == (small.num_nodes, 24)
    # Its memory is that of the reports: 4 bytes per reported 1, d bytes per feature row.
    expected = batch.indices.size * 4 + (small.num_nodes + 1) * 8 + small.num_nodes * (8 + 24)
    assert batch.nbytes == expected
    assert len(batch) == small.num_nodes and 7 in batch and small.num_nodes not in batch
    rep = batch[7]
    assert isinstance(rep, Report) and rep.node_id == 7 and rep.adjacency.dtype == np.int32
    with pytest.raises(KeyError):
        batch[small.num_nodes]
    with pytest.raises(ValueError, match="read-only"):
        rep.adjacency[0] = 1
    assert dict(batch.items()).keys() == set(range(small.num_nodes))
    again = pickle.loads(pickle.dumps(batch))
    assert_same_reports(batch, again)
    assert not again.indices.flags.writeable


def test_assembly_from_a_batch_equals_assembly_from_reports(small):
    proto = make_protocol("blink-hard", epsilon=4.0, degree_share=0.2)
    nodes = np.flatnonzero(np.arange(small.num_nodes) % 4 != 1)  # some nodes sent nothing
    batch = proto.client_step_batch(0, NodeBatch.of_graph(small, nodes), {}, 9)
    plain = dict(batch.items())
    n = small.num_nodes
    r_batch, obs_batch = adjacency_reports(batch, n)
    r_plain, obs_plain = adjacency_reports(plain, n)
    assert (r_batch != r_plain).nnz == 0 and (obs_batch == obs_plain).all()
    assert r_batch.indices.dtype == np.int32
    assert not r_batch.indices.flags.writeable  # shared with the batch, not copied
    v_batch, s_batch = extra_reports(batch, "degree", n)
    v_plain, s_plain = extra_reports(plain, "degree", n)
    assert (v_batch == v_plain).all() and (s_batch == s_plain).all() and s_batch.sum() == len(nodes)
    hogs = make_protocol("hogs", epsilon=4.0)
    batch = hogs.client_step_batch(0, NodeBatch.of_graph(small, nodes), {}, 9)
    x_batch, f_batch = feature_reports(batch, n, 24)
    x_plain, f_plain = feature_reports(dict(batch.items()), n, 24)
    assert (x_batch == x_plain).all() and (f_batch == f_plain).all()
    assert x_batch.flags.writeable  # the server owns its copy


def test_concat_and_drop_keep_every_row(small):
    proto = make_protocol("blink-hard", epsilon=4.0)
    nodes = np.arange(300)
    whole = proto.client_step_batch(0, NodeBatch.of_graph(small, nodes), {}, 1)
    parts = [
        proto.client_step_batch(0, NodeBatch.of_graph(small, nodes[a:b]), {}, 1)
        for a, b in ((0, 100), (100, 101), (101, 300))
    ]
    assert_same_reports(whole, ReportBatch.concat(parts))
    with pytest.raises(ValueError, match="increasing"):
        ReportBatch.concat(parts[::-1])
    fewer = whole.drop([0, 5, 299])
    assert len(fewer) == 297 and 5 not in fewer
    assert_same_reports({k: whole[k] for k in fewer}, fewer)


def test_reports_that_do_not_pack_stay_a_dict(small):
    # A report that names another node, or int64 adjacency, is kept as sent (the validator
    # then rejects or accepts it as it would a Flower reply).
    reports = [Report(0, 0, 10, np.array([1], dtype=np.int64)), Report(1, 0, 10, None)]
    with pytest.raises(ValueError, match="int32"):
        ReportBatch.from_reports(np.array([0, 1]), reports, 0, 10)
    with pytest.raises(ValueError, match="another node"):
        ReportBatch.from_reports(np.array([0, 2]), reports, 0, 10)


def test_batch_validation_matches_the_per_report_checks():
    n = 20
    rows = {
        0: np.array([1, 2], dtype=np.int32),
        1: np.array([3, 3], dtype=np.int32),  # duplicated
        2: np.array([5, 4], dtype=np.int32),  # unsorted
        3: np.array([3, 7], dtype=np.int32),  # its own diagonal
        4: np.array([7, 25], dtype=np.int32),  # out of range
        5: np.zeros(0, dtype=np.int32),
        6: np.array([-1, 2], dtype=np.int32),  # out of range
    }
    feats = np.zeros((7, 3), dtype=np.float32)
    feats[5, 1] = np.nan  # not finite
    reports = [Report(v, 0, n, rows[v], feats[v], {"degree": 2.0} if v != 0 else {}) for v in rows]
    batch = ReportBatch.from_reports(np.arange(7), reports, 0, n)
    schema = ReportSchema(
        adjacency=True, features=True, extras=("degree",), extra_support=noisy_count(1.0)
    )
    want = {
        r.node_id: p
        for r in reports
        if (p := report_problem(r, r.node_id, 0, n, 3, schema)) is not None
    }
    got = batch_problems(batch, 0, n, 3, schema)
    assert set(want) == set(range(7))  # every row has one problem
    assert got == want
    # A chunk boundary inside a row does not hide (or invent) a disorder.
    from ldpgraph.server.rounds import _adjacency_problems

    for chunk in (1, 2, 3, 5, 100):
        bad_range, bad_order, own = (
            set(np.flatnonzero(rows).tolist()) for rows, _ in _adjacency_problems(batch, n, chunk)
        )
        assert (bad_range, bad_order, own) == ({4, 6}, {1, 2}, {3})
    wrong_round = batch_problems(batch, 1, n, 3, schema)
    assert len(wrong_round) == 7 and all("round 0" in p for p in wrong_round.values())


def test_the_builder_grows_past_its_estimate_and_keeps_every_index():
    # The first part says ~1 index a row; the second has 50 a row: the buffer must grow.
    def part(nodes: np.ndarray, per_row: int) -> ReportBatch:
        rows = [np.arange(per_row, dtype=np.int32) + 1 for _ in nodes]
        reports = [Report(int(v), 0, 5000, r) for v, r in zip(nodes, rows, strict=True)]
        return ReportBatch.from_reports(nodes, reports, 0, 5000)

    parts = [part(np.arange(10), 1), part(np.arange(10, 1000), 50), part(np.arange(1000, 1200), 2)]
    builder = BatchBuilder(0, 5000, 1201)
    for p in parts:
        builder.add(p)
    with pytest.raises(ValueError, match="increasing"):
        builder.add(part(np.array([5]), 1))  # refused whole: the builder is unchanged
    joined = builder.finish()
    assert joined.indices.size == 10 + 990 * 50 + 200 * 2
    want = np.concatenate([p.indices for p in parts])
    assert np.array_equal(joined.indices, want) and joined.indices.dtype == np.int32
    assert np.array_equal(
        joined.indptr, np.concatenate([[0], np.cumsum([1] * 10 + [50] * 990 + [2] * 200)])
    )
    assert_same_reports({k: p[k] for p in parts for k in p}, joined)
