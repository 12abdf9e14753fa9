"""The lean assembly HoGS's numpy curator uses: R's pattern without an array of its values,
the reported feature rows shared with the batch instead of copied, and the reported pairs'
regrouped half dropped once scored. Each is the plain assembly's content, and refuses what
it cannot serve."""

from __future__ import annotations

import numpy as np
import pytest

from ldpgraph.protocols.batch import NodeBatch
from ldpgraph.protocols.ldp.assemble import adjacency_reports, feature_reports
from ldpgraph.protocols.ldp.reported_pairs import ReportedPairs
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.simulation.datasets.synthetic import synthetic_graph


@pytest.fixture(scope="module")
def graph():
    return synthetic_graph(n=400, avg_degree=8.0, d=12, seed=4)


def _batch(graph, nodes):
    proto = make_protocol("hogs", epsilon=4.0)
    return proto.client_step_batch(0, NodeBatch.of_graph(graph, np.asarray(nodes)), {}, 5)


@pytest.mark.parametrize("as_dict", [False, True])
def test_pattern_only_is_the_same_pattern_without_values(graph, as_dict):
    nodes = np.flatnonzero(np.arange(graph.num_nodes) % 5 != 2)
    reports = _batch(graph, nodes)
    if as_dict:
        reports = dict(reports.items())
    full, obs_full = adjacency_reports(reports, graph.num_nodes)
    lean, obs_lean = adjacency_reports(reports, graph.num_nodes, pattern_only=True)
    assert (obs_full == obs_lean).all()
    np.testing.assert_array_equal(lean.indptr, full.indptr)
    np.testing.assert_array_equal(lean.indices, full.indices)
    assert lean.data.strides == (0,) and lean.data.shape == (full.nnz,)  # one byte in all
    assert (lean.data == 1).all() and not lean.data.flags.writeable
    a, b = ReportedPairs(full), ReportedPairs(lean)
    for x, y in zip(a.blocks(block_rows=37), b.blocks(block_rows=37), strict=True):
        for name in ("i", "j", "ones"):
            np.testing.assert_array_equal(getattr(x, name), getattr(y, name))


def test_shared_feature_rows_are_the_batch_rows_read_only(graph):
    n, d = graph.num_nodes, graph.num_features
    batch = _batch(graph, np.arange(n))
    flags = batch.features.flags.writeable
    copied, sent_c = feature_reports(batch, n, d)
    shared, sent_s = feature_reports(batch, n, d, share=True)
    np.testing.assert_array_equal(shared, copied)
    assert shared.dtype == copied.dtype and (sent_s == sent_c).all() and sent_s.all()
    assert np.shares_memory(shared, batch.features) and not shared.flags.writeable
    assert batch.features.flags.writeable == flags  # the batch is untouched
    assert not np.shares_memory(copied, batch.features)


def test_shared_feature_rows_copy_where_the_batch_is_not_every_row(graph):
    n, d = graph.num_nodes, graph.num_features
    some = _batch(graph, np.arange(1, n))  # node 0 silent: its row must be zeros
    x, sent = feature_reports(some, n, d, share=True)
    assert x.flags.writeable and not sent[0] and (x[0] == 0).all()
    np.testing.assert_array_equal(x, feature_reports(some, n, d)[0])
    whole = _batch(graph, np.arange(n))
    other = feature_reports(whole, n, d, dtype=np.float32, share=True)[0]  # another dtype
    assert other.dtype == np.float32 and not np.shares_memory(other, whole.features)


def test_dropped_lower_triangle_still_answers_has_but_not_rows(graph):
    batch = _batch(graph, np.arange(graph.num_nodes))
    r, _ = adjacency_reports(batch, graph.num_nodes, pattern_only=True)
    pairs = ReportedPairs(r)
    i = np.repeat(np.arange(40), 40)
    j = np.tile(np.arange(40), 40)
    has, ones = pairs.has(i, j), pairs.ones(i, j)
    pairs.drop_regrouped()
    assert pairs.nbytes == 0
    np.testing.assert_array_equal(pairs.has(i, j), has)
    np.testing.assert_array_equal(pairs.ones(i, j), ones)
    with pytest.raises(RuntimeError, match="dropped"):
        pairs.rows(0, 10)
    with pytest.raises(RuntimeError, match="dropped"):
        next(pairs.blocks())
