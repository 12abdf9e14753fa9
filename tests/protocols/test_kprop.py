"""KProp: the sparse operator equals a dense reference; hogs-kprop equals dense HoGS + dense
KProp."""

from __future__ import annotations

import numpy as np
import pytest

from ldpgraph.protocols.base import CuratorView
from ldpgraph.protocols.graph import canonical_edges
from ldpgraph.protocols.ldp.kprop import kprop, label_kprop_targets
from ldpgraph.protocols.mechanisms import flip_probability
from ldpgraph.protocols.registry import make_protocol

from ..reference.hogs import dense_hogs
from .test_hogs import collect, dense_inputs, random_graph


def dense_kprop(x, edges, n, k, norm="sym", isolated="zero"):
    """Literal dense Ā^K X: A without self-loops, D its degrees, 1/0 masked to 0."""
    a = np.zeros((n, n))
    for u, v in edges:
        if u != v:
            a[u, v] = a[v, u] = 1.0
    deg = a.sum(axis=1)
    inv = np.array([1.0 / dd if dd > 0 else 0.0 for dd in deg])
    if norm == "sym":
        op = np.diag(np.sqrt(inv)) @ a @ np.diag(np.sqrt(inv))
    else:
        op = np.diag(inv) @ a
    out = np.asarray(x, dtype=np.float64)
    for _ in range(k):
        nxt = op @ out
        if isolated == "keep":
            nxt[deg == 0] = out[deg == 0]
        out = nxt
    return out


def random_edges(n, m, seed, isolated=5):
    rng = np.random.default_rng(seed)
    pairs = rng.integers(isolated, n, size=(m, 2))  # nodes < isolated stay isolated
    return canonical_edges(pairs, n)


@pytest.mark.parametrize("k", [0, 1, 2, 5])
@pytest.mark.parametrize("norm", ["sym", "mean"])
@pytest.mark.parametrize("isolated", ["zero", "keep"])
def test_sparse_equals_dense(k, norm, isolated):
    n, d = 60, 7
    edges = random_edges(n, 150, seed=k + 10 * len(norm))
    x = np.random.default_rng(k).random((n, d))
    got = kprop(x, edges, n, k, norm, isolated)
    ref = dense_kprop(x, edges, n, k, norm, isolated)
    assert np.abs(got - ref).max() <= 1e-12
    if k >= 1:
        alone = np.ones(n, bool)
        alone[edges.ravel()] = False
        assert alone[:5].all()
        expect = x[alone] if isolated == "keep" else 0.0
        np.testing.assert_array_equal(got[alone], np.broadcast_to(expect, got[alone].shape))


def test_small_graph_by_hand():
    # Path 0-1-2 and an isolated node 3.
    edges = np.array([[0, 1], [1, 2]])
    x = np.array([[1.0], [2.0], [4.0], [8.0]])
    np.testing.assert_allclose(kprop(x, edges, 4, 1, "mean", "keep").ravel(), [2.0, 2.5, 2.0, 8.0])
    s = 1 / np.sqrt(2)
    np.testing.assert_allclose(
        kprop(x, edges, 4, 1, "sym", "zero").ravel(), [2 * s, s + 4 * s, 2 * s, 0.0]
    )
    np.testing.assert_array_equal(kprop(x, edges, 4, 0), x)
    # Duplicated or reversed edges count once; self-loops are dropped.
    dup = np.array([[0, 1], [1, 0], [1, 2], [2, 2]])
    np.testing.assert_allclose(kprop(x, dup, 4, 2, "sym"), kprop(x, edges, 4, 2, "sym"))


def test_label_targets():
    n = 30
    edges = random_edges(n, 60, seed=3, isolated=2)
    y = np.random.default_rng(1).integers(0, 3, n)
    known = np.arange(n) < 20
    t = label_kprop_targets(y, known, edges, n, 2, 3)
    np.testing.assert_allclose(t.sum(axis=1), 1.0)
    onehot = np.zeros((n, 3))
    onehot[np.flatnonzero(known), y[known]] = 1
    z = dense_kprop(onehot, edges, n, 2)
    ref = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    assert np.abs(t - ref).max() <= 1e-12


def test_bad_arguments():
    x = np.zeros((3, 2))
    with pytest.raises(ValueError, match="norm"):
        kprop(x, np.zeros((0, 2), int), 3, 1, norm="gcn")
    with pytest.raises(ValueError, match="isolated"):
        kprop(x, np.zeros((0, 2), int), 3, 1, isolated="drop")
    with pytest.raises(ValueError, match="k must"):
        kprop(x, np.zeros((0, 2), int), 3, -1)


@pytest.mark.parametrize("eps,share,tau", [(1.5, 0.5, 0.5), (4.0, 0.3, 0.7), (8.0, 0.7, 0.5)])
@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("norm", ["sym", "mean"])
@pytest.mark.parametrize("drop", [(), (3, 7)])
def test_hogs_kprop_equals_dense_reference(eps, share, tau, k, norm, drop):
    g = random_graph(60, 20, seed=int(eps * 10) + k)
    proto = make_protocol(
        "hogs-kprop", epsilon=eps, feature_share=share, tau=tau, kprop_k=k, kprop_norm=norm
    )
    result = collect(proto, g, seed=7, drop=drop)
    release = proto.server_step(0, result, CuratorView(60, 20), seed=7)
    bits, observed, x = dense_inputs(result, 60, 20, None)
    _, edges, raw = dense_hogs(bits, observed, x, flip_probability(proto.eps_adjacency), tau, 0)
    np.testing.assert_array_equal(release.edges, edges)
    ref = dense_kprop(raw, edges, 60, k, norm, isolated="keep")
    assert release.x.dtype == np.float32
    assert np.abs(release.x - ref).max() <= 1e-6
    assert release.stats["kprop_k"] == k and release.stats["feature_step"] == "kprop"
    assert release.privacy.protocol == "hogs-kprop"
    assert proto.config() == {
        "protocol": "hogs-kprop",
        "epsilon": eps,
        "feature_share": share,
        "tau": tau,
        "kprop_k": k,
        "kprop_norm": norm,
        "kprop_isolated": "keep",
    }


def test_hogs_kprop_validation():
    with pytest.raises(ValueError, match="kprop_k"):
        make_protocol("hogs-kprop", epsilon=4.0, kprop_k=-1)
    with pytest.raises(ValueError, match="kprop_norm"):
        make_protocol("hogs-kprop", epsilon=4.0, kprop_norm="gcn")
    with pytest.raises(ValueError, match="steps"):  # KProp replaces HoGS's feature step
        make_protocol("hogs-kprop", epsilon=4.0, steps=2)
