"""DPAR-Bounded (protocols/central/dpar_bounded.py; docs/privacy/dpar.md, "DPAR-Bounded"): one
node's removal removes at most D rows and changes no other (brute force on random graphs, the
released Π fixed), the clipped sum moves by at most D·C, the DP-SGD ε is dp-accounting's
subsampled Gaussian at rate 1 − (1 − q)^D and multiplier z/D, and the release meets the
requested ε."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from dp_accounting import NeighboringRelation, dp_event, rdp

from ldpgraph.protocols.central.base import UploadedGraph
from ldpgraph.protocols.central.dpar_bounded import complete_rows, group_sgd_epsilon
from ldpgraph.protocols.central.dpar_model import (
    SgdPlan,
    SparseFeatures,
    _init_mlp,
    _padded,
    column_rows,
    sparse_clipped_sum,
    sparse_target_batch,
)
from ldpgraph.protocols.registry import make_protocol
from ldpgraph.simulation.datasets import synthetic_graph
from ldpgraph.simulation.splits import split_for

from ...support.central import curator_for

FAST = dict(appr_nodes=12, top_k=3, column_rows_cap=3, sgd_epochs=2, batch_size=20)


def _uploaded(graph, here=None):
    up = np.ones(graph.num_nodes, dtype=bool) if here is None else here
    return UploadedGraph(graph.name, graph.edges, graph.x, graph.y, graph.feature_domain,
                         uploaded=up)  # fmt: skip


def _clipped_total(pi, rows, x, y, params, clip):
    """Σ of the clipped per-target gradients of the example ``rows`` (no dropout)."""
    idx, w = _padded(pi)
    i = torch.as_tensor(np.flatnonzero(rows))
    feats = SparseFeatures.of(x, "cpu")
    batch = sparse_target_batch(
        feats, torch.as_tensor(idx)[i], torch.as_tensor(w, dtype=torch.float32)[i],
        torch.as_tensor(y)[i], 0.0, params["w1"].shape[1], None,
    )  # fmt: skip
    return sparse_clipped_sum(params, batch, clip)[0]


@pytest.mark.parametrize("graph_seed", [1, 2, 3])
def test_one_node_removes_at_most_D_rows_and_D_times_C_of_the_sum(graph_seed):
    """Random graphs, Π as released (fixed): for every present training node j, removing j
    turns at most D = column_rows(Π)[j] ≤ D_max rows from example to no example, turns no
    row the other way, and moves the clipped gradient sum by at most D·C."""
    graph = synthetic_graph(n=80, classes=3, avg_degree=8, d=12, seed=graph_seed)
    split = split_for(graph.num_nodes, graph_seed)
    strategy = make_protocol("dpar-bounded", epsilon=50.0, **FAST)
    st = strategy.structure(_uploaded(graph), curator_for(graph, split), graph_seed)
    assert st.kept.size == np.unique(split.train).size  # q′ = 1: every slot kept
    own = np.arange(st.pi.shape[0])
    cols = column_rows(st.pi, own)
    assert st.plan.rows == cols.max() <= FAST["column_rows_cap"]
    x = np.asarray(graph.x, dtype=np.float32)[st.kept]
    y = np.asarray(graph.y)[st.kept]
    gen = torch.Generator().manual_seed(graph_seed)
    params = _init_mlp(x.shape[1], 5, 3, gen, "cpu")
    params["w2"] = params["w2"] * 10  # large gradients: most rows clip
    clip = 0.5
    rows = complete_rows(st.pi, st.here, st.row_nodes)
    full = _clipped_total(st.pi, rows, x * st.here[:, None], y, params, clip)
    moved = 0
    for j in np.flatnonzero(st.here):
        gone = st.here.copy()
        gone[j] = False
        rows_j = complete_rows(st.pi, gone, st.row_nodes)
        assert not (rows_j & ~rows).any(), "removing a node added an example"
        removed = int((rows & ~rows_j).sum())
        assert 1 <= removed <= cols[j] <= st.plan.rows
        moved = max(moved, removed)
        part = _clipped_total(st.pi, rows_j, x * gone[:, None], y, params, clip)
        diff = math.sqrt(sum(float((full[k] - part[k]).pow(2).sum()) for k in full))
        assert diff <= clip * removed + 1e-5
    assert moved >= 2  # the graph reached some node's features from another row


def test_group_accounting_is_dp_accountings_subsampled_gaussian():
    plan = SgdPlan(q=0.02, steps=500, rows=3, noise=6.0, calibration="")
    acc = rdp.RdpAccountant(neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE)
    rate = 1 - (1 - 0.02) ** 3
    acc.compose(dp_event.SelfComposedDpEvent(
        dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(2.0)), 500))  # fmt: skip
    assert group_sgd_epsilon(plan, 1e-3) == pytest.approx(acc.get_epsilon(1e-3), rel=1e-9)
    one = SgdPlan(q=0.02, steps=500, rows=1, noise=2.0, calibration="")
    assert group_sgd_epsilon(one, 1e-3) < group_sgd_epsilon(plan, 1e-3)


def test_release_meets_the_requested_epsilon_and_is_seeded():
    graph = synthetic_graph(n=120, classes=3, avg_degree=6, d=10, seed=4)
    split = split_for(graph.num_nodes, 0)
    strategy = make_protocol("dpar-bounded", epsilon=4.0, **FAST)
    a = strategy.release(_uploaded(graph), curator_for(graph, split), 7)
    b = strategy.release(_uploaded(graph), curator_for(graph, split), 7)
    assert a.fingerprint() == b.fingerprint()
    assert a.privacy.epsilon == pytest.approx(4.0, rel=1e-3)
    assert a.privacy.epsilon <= 4.0 * (1 + 1e-6)
    sgd = next(p for p in a.privacy.parts if p["part"] == "dp-sgd")
    assert sgd["D"] == a.stats["column_rows"] >= 1
    assert "group" in sgd["calibration"] and "1 − (1 − q)^D" in sgd["accountant"]
    assert a.stats["kept_slots"] == np.unique(split.train).size


def test_variant_fixes_what_its_construction_needs():
    s = make_protocol("dpar-bounded", epsilon=1.0)
    assert s.name == "dpar-bounded" and s.proven and s.capped and not s.amplify
    assert s.p.q_prime == 1.0 and s.p.non_appr_rows == "identity"


@pytest.mark.slow
def test_audit_row_passes_and_its_planted_row_fails():
    """`ldpgraph audit --central dpar-bounded`: the honest ε = 0.5 passes (its planted run at
    ε = 100 claiming 0.5 fails, so the test had the power to catch it). The planted row reads
    the honest row's planted batch (``shared``): two batches of draws, not four."""
    from ldpgraph.simulation import audit_central as ac
    from ldpgraph.simulation.audit_central_cases import CASES

    shared: ac.Batches = {}
    honest = ac.audit_case(CASES["dpar-bounded"], 1e-2, 100, shared=shared)
    assert honest.verdict == ac.PASS, honest.reason
    assert honest.planted_verdict == ac.FAIL
    planted = ac.audit_case(ac.planted_row(CASES["dpar-bounded"]), 1e-2, 100, shared=shared)
    assert planted.verdict == ac.FAIL, planted.reason
    assert planted.claimed_epsilon == pytest.approx(honest.claimed_epsilon)
    assert planted.epsilon_lower_bound == honest.planted_lower_bound  # the same batch
    assert len(shared) == 2
