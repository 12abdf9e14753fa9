"""DPAR's sparse DP-SGD batch (protocols/central/dpar_model.py): the clipped per-target sum over
the nonzero inputs equals the dense closed form (itself held to the vmap reference in
test_dpsgd.py) for the same dropout, and its input dropout has the dense mask's rate."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from ldpgraph.protocols.central.dpar_model import (
    SparseFeatures,
    _init_mlp,
    sparse_clipped_sum,
    sparse_target_batch,
    target_clipped_sum,
)


def _dense_twin(feats_x, nbr, w, y, batch, hidden):
    """The dense batch of :func:`target_clipped_sum` with the sparse batch's masks: kept
    nonzeros scaled as drawn, every other input entry kept (a zero stays zero)."""
    target, slot, feat, val, weights, _, keep_h, _ = batch
    b, k = nbr.shape
    x = torch.as_tensor(feats_x)
    xi = x[nbr]  # [B, K, d]
    keep_in = torch.ones_like(xi)
    live = torch.nonzero(w != 0)  # (target, position) of every slot, in slot order
    pos_of_slot = live[:, 1]
    src = xi[target[slot], pos_of_slot[slot], feat]
    keep_in[target[slot], pos_of_slot[slot], feat] = torch.where(src != 0, val / src, 0.0)
    kh = torch.ones(b, k, hidden)
    kh[live[:, 0], live[:, 1]] = keep_h
    return xi, w, y, keep_in, kh


@pytest.mark.parametrize("clip", [0.05, 1e6, math.inf])
def test_sparse_clipped_sum_equals_the_dense_one(clip):
    rng = np.random.default_rng(4)
    n, d, h, c, b, k = 30, 40, 6, 5, 12, 3
    x = (rng.random((n, d)) < 0.15).astype(np.float32) * rng.random((n, d)).astype(np.float32)
    x[3] = 0.0  # a row with no nonzero feature
    feats = SparseFeatures.of(x, "cpu")
    gen = torch.Generator().manual_seed(2)
    params = _init_mlp(d, h, c, gen, "cpu")
    nbr = torch.as_tensor(rng.integers(0, n, (b, k)))
    nbr[0, 0] = 3
    w = torch.as_tensor(rng.random((b, k)), dtype=torch.float32)
    w[1, 2] = w[4, 1] = 0.0  # padding
    y = torch.as_tensor(rng.integers(0, c, b))
    batch = sparse_target_batch(feats, nbr, w, y, 0.3, h, gen)
    got, norms = sparse_clipped_sum(params, batch, clip)
    want, want_norms = target_clipped_sum(params, _dense_twin(x, nbr, w, y, batch, h), clip)
    torch.testing.assert_close(norms, want_norms, rtol=1e-5, atol=1e-6)
    for key in want:
        torch.testing.assert_close(got[key], want[key], rtol=1e-5, atol=1e-6)
    if clip == 0.05:
        assert (norms > clip).any()


def test_csr_gather_returns_each_nodes_nonzeros():
    x = sp.random(20, 15, density=0.2, random_state=3, format="csr", dtype=np.float32).toarray()
    feats = SparseFeatures.of(x, "cpu")
    nodes = torch.tensor([4, 0, 4, 19])
    slot, feat, val = feats.gather(nodes)
    dense = np.zeros((4, 15), dtype=np.float32)
    dense[slot.numpy(), feat.numpy()] = val.numpy()
    np.testing.assert_array_equal(dense, x[nodes.numpy()])


def test_input_dropout_keeps_nonzeros_at_the_stated_rate():
    """Each nonzero input survives with probability 1 − rate, scaled by 1/(1 − rate): over
    200 000 draws the kept share lies within 5 standard errors of 0.7."""
    x = np.ones((1, 2000), dtype=np.float32)
    feats = SparseFeatures.of(x, "cpu")
    gen = torch.Generator().manual_seed(0)
    nbr = torch.zeros((100, 1), dtype=torch.int64)
    w = torch.ones((100, 1))
    y = torch.zeros(100, dtype=torch.int64)
    val = sparse_target_batch(feats, nbr, w, y, 0.3, 4, gen)[3]
    kept = (val > 0).float().mean().item()
    assert abs(kept - 0.7) < 5 * math.sqrt(0.7 * 0.3 / val.numel())
    assert torch.allclose(val[val > 0], torch.tensor(1 / 0.7))
