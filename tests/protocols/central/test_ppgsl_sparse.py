"""PPGSL's fast kernels (protocols/central/ppgsl_sparse.py and the pieces of ppgsl_model.py
that use them, issue 35) against plain references written here: the CSR propagation and the
feature product equal the gather/scatter form with their gradients (values included), the
surrogate's negatives are the shared sampler's draw for draw, and the learner says its rounds
to a progress listener (issue 33)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ldpgraph.protocols import progress
from ldpgraph.protocols.central import ppgsl as pg
from ldpgraph.protocols.central.baselines import sample_free_pairs
from ldpgraph.protocols.central.ppgsl_sparse import CsrPattern
from ldpgraph.protocols.params import Params


def reference_propagation(pairs: torch.Tensor, n: int, h: torch.Tensor, w: torch.Tensor):
    """Â·h with Â = D^-1/2 (A′ + I) D^-1/2 by gather and index_add (the pre-issue-35 form)."""
    src = torch.cat([pairs[:, 0], pairs[:, 1]])
    dst = torch.cat([pairs[:, 1], pairs[:, 0]])
    w2 = torch.cat([w, w])
    deg = torch.ones(n, dtype=h.dtype).index_add(0, dst, w2)
    dinv = deg.rsqrt()
    norm = w2 * dinv[src] * dinv[dst]
    return (h * (dinv * dinv).unsqueeze(1)).index_add(0, dst, norm.unsqueeze(1) * h[src])


def random_pairs(n: int, m: int, seed: int) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    pairs = np.unique(np.sort(rng.integers(0, n, (m, 2)), axis=1), axis=0)
    return torch.as_tensor(pairs[pairs[:, 0] != pairs[:, 1]])


@pytest.mark.parametrize("seed", [0, 1])
def test_the_csr_propagation_equals_gather_scatter_with_gradients(seed):
    n = 120
    pairs = random_pairs(n, 700, seed)
    gen = torch.Generator().manual_seed(seed)
    h = torch.randn(n, 7, dtype=torch.float64, generator=gen, requires_grad=True)
    w = torch.rand(len(pairs), dtype=torch.float64, generator=gen)
    w[::5] = 0.0  # pairs the learner deleted: in the pattern with weight 0
    w.requires_grad_(True)
    prop = pg.Propagation(pairs, n)
    ref = reference_propagation(pairs, n, h, w)
    out = prop(h, w)
    fixed = prop.fixed(w)(h, w)
    g = torch.randn(ref.shape, dtype=torch.float64, generator=gen)
    ref_h, ref_w = torch.autograd.grad(ref, (h, w), g)
    out_h, out_w = torch.autograd.grad(out, (h, w), g)
    (fix_h,) = torch.autograd.grad(fixed, (h,), g)
    for a, b in ((out, ref), (fixed, ref), (out_h, ref_h), (out_w, ref_w), (fix_h, ref_h)):
        assert torch.allclose(a, b, rtol=0, atol=1e-12)
    assert out_w.abs().sum() > 0  # the path from L_priv to θ exists


def test_the_feature_product_and_its_gradient_equal_the_dense_product():
    rng = np.random.default_rng(3)
    x = (rng.random((40, 25)) < 0.05).astype(np.float32)
    xs = pg.feature_matrix(x, "cpu")
    assert xs.shape == (40, 25)
    w = torch.randn(25, 6, requires_grad=True)
    out = pg._mm(xs, w)
    ref = torch.as_tensor(x) @ w
    g = torch.randn(40, 6)
    assert torch.allclose(out, ref, atol=1e-6)
    assert torch.allclose(
        torch.autograd.grad(out, w, g)[0], torch.autograd.grad(ref, w, g)[0], atol=1e-5
    )
    ident = pg.feature_matrix(np.zeros((9, 0), dtype=np.float32), "cpu")  # no features: I
    v = torch.randn(9, 4)
    assert torch.equal(pg._mm(ident, v), v)


def test_an_asymmetric_pattern_is_refused():
    with pytest.raises(ValueError, match="not symmetric"):
        CsrPattern(torch.tensor([0, 1]), torch.tensor([1, 2]), 3)


@pytest.mark.parametrize(
    "n, count, taken_count, seed",
    [
        (2995, 14684, 14684, 0),
        (200, 4000, 2000, 1),
        (30, 100, 120, 2),
        (2000, 5, 0, 3),
        (12, 20, 10, 4),
    ],
)
def test_the_negatives_are_the_shared_samplers_draw_for_draw(n, count, taken_count, seed):
    rng0 = np.random.default_rng(seed + 100)
    taken = np.unique(np.sort(rng0.integers(0, n, (taken_count, 2)), axis=1) @ np.array([n, 1]))
    taken = taken[taken // n != taken % n] if taken_count else np.zeros(0, np.int64)
    a, b, c = (np.random.default_rng(seed) for _ in range(3))
    table = pg.PairTable(n).reset(taken)
    for _ in range(5):
        want = sample_free_pairs(n, count, taken, a)
        assert np.array_equal(want, pg.fresh_negatives(n, count, taken, b))
        assert np.array_equal(want, pg.fresh_negatives(n, count, taken, c, table))
    # the streams are where the shared one left them
    assert a.integers(1 << 30) == b.integers(1 << 30) == c.integers(1 << 30)


def test_the_negatives_continue_exactly_when_the_first_batch_falls_short():
    """20 nodes, 150 of 190 pairs taken, 10 wanted: the first batch of 36 draws holds about 8
    free pairs, so the later batches run (in most seeds)."""
    n = 20
    iu, iv = np.triu_indices(n, 1)
    keys = iu * n + iv
    table = pg.PairTable(n)
    for seed in range(40):
        taken = np.sort(np.random.default_rng(seed).choice(keys, 150, replace=False))
        a, b, c = (np.random.default_rng(seed) for _ in range(3))
        want = sample_free_pairs(n, 10, taken, a)
        assert np.array_equal(want, pg.fresh_negatives(n, 10, taken, b))
        assert np.array_equal(want, pg.fresh_negatives(n, 10, taken, c, table.reset(taken)))
        assert a.integers(1 << 30) == b.integers(1 << 30) == c.integers(1 << 30)


def test_the_learner_says_its_retrains_to_a_listener_and_nothing_otherwise():
    rng = np.random.default_rng(0)
    n = 60
    edges = random_pairs(n, 300, 5).numpy()
    public, sensitive = pg.split_sensitive(edges, 0.1, 0)
    x = (rng.random((n, 6)) < 0.3).astype(np.float32)
    p = Params({**{q.name: q.default for q in pg.PARAMS}, "ppgsl_epochs": 6, "ppgsl_mu": 3,
                "ppgsl_attack_epochs": 4})  # fmt: skip
    lines: list[str] = []
    with progress.listening(lines.append):
        heard = pg.learn(public, sensitive, x, n, p, 0)
    silent = pg.learn(public, sensitive, x, n, p, 0)
    assert [s for s in lines if s.endswith(": 4 epochs")] == [
        "PPGSL surrogate 1/2: 4 epochs",
        "PPGSL surrogate 2/2: 4 epochs",
    ]
    assert lines[0].startswith("PPGSL: ") and lines[0].endswith(" sensitive links")
    assert "PPGSL surrogate epoch 4/4" in lines and lines[-1] == "PPGSL learner step 6/6"
    assert np.array_equal(heard.weights, silent.weights)  # listening changes nothing
