"""PPGSL's written-out surrogate epoch (protocols/central/ppgsl_surrogate.py, issue 35): its
loss and gradients equal autograd's through the learner's own encoder, head and loss, in
float64 to 1e-10, for sparse (valued), identity and dense features; one epoch takes the
optimizer's step on those gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ldpgraph.protocols.central import ppgsl as pg
from ldpgraph.protocols.central.ppgsl_surrogate import SurrogateTrainer


def _setting(features: str, seed: int):
    rng = np.random.default_rng(seed)
    n = 90
    pairs = np.unique(np.sort(rng.integers(0, n, (400, 2)), axis=1), axis=0)
    pairs = torch.as_tensor(pairs[pairs[:, 0] != pairs[:, 1]])
    w = torch.as_tensor(rng.random(len(pairs)), dtype=torch.float64)
    w[::4] = 0.0  # deleted pairs: not in the fixed propagation's pattern
    if features == "sparse":
        x = (rng.random((n, 30)) < 0.1).astype(np.float32) * rng.integers(1, 3, (n, 30))
    elif features == "identity":
        x = np.zeros((n, 0), dtype=np.float32)
    else:
        x = rng.random((n, 12)).astype(np.float32)
    xt = pg.feature_matrix(x, "cpu")
    if not isinstance(xt, torch.Tensor):
        for lists in (xt.rows, xt.cols):
            if lists.values is not None:
                lists.values = lists.values.double()
    else:
        xt = xt.double()
    gen = torch.Generator().manual_seed(seed)
    model = pg.Surrogate(xt.shape[1], gen, "cpu")
    model.weights = [t.detach().double().requires_grad_(True) for t in model.weights]
    prop = pg.Propagation(pairs, n)
    support = w > 0
    pos, target = pairs[support], w[support]
    neg = torch.as_tensor(rng.integers(0, n, (len(pos), 2)))
    return model, xt, prop, w, pos, target, neg


def _autograd(model, xt, prop, w, pos, target, neg):
    fixed = prop.fixed(w)
    z = pg.encode(model, pg._mm(xt, model.weights[0]), fixed, w)
    prob = pg.link_prob(z, torch.cat([pos, neg])).clamp(1e-7, 1 - 1e-7)
    k = len(pos)
    loss = F.binary_cross_entropy(prob[:k], target) + F.binary_cross_entropy(
        prob[k:], torch.zeros_like(prob[k:])
    )
    return loss, torch.autograd.grad(loss, model.weights)


@pytest.mark.parametrize("features", ["sparse", "identity", "dense"])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_written_out_epoch_has_autograds_loss_and_gradients(features, seed):
    model, xt, prop, w, pos, target, neg = _setting(features, seed)
    ref_loss, ref_grads = _autograd(model, xt, prop, w, pos, target, neg)
    trainer = SurrogateTrainer(model.weights, xt, prop.fixed(w), pos, target, opt=None)
    loss, grads = trainer.forward_backward(neg)
    assert torch.allclose(loss, ref_loss, rtol=0, atol=1e-12)
    for g, r in zip(grads, ref_grads, strict=True):
        assert g.shape == r.shape and r.abs().max() > 0
        assert torch.allclose(g, r, rtol=0, atol=1e-10)


def test_an_epoch_steps_the_optimizer_on_those_gradients():
    model, xt, prop, w, pos, target, neg = _setting("sparse", 3)
    before = [t.detach().clone() for t in model.weights]
    opt = torch.optim.SGD(model.weights, lr=0.1)
    trainer = SurrogateTrainer(model.weights, xt, prop.fixed(w), pos, target, opt)
    _, grads = trainer.forward_backward(neg)
    trainer.epoch(neg)
    for b, g, a in zip(before, grads, model.weights, strict=True):
        assert torch.allclose(a.detach(), b - 0.1 * g, rtol=0, atol=1e-12)
