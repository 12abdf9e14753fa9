"""PPGSL's surrogate epoch on two lanes (protocols/central/ppgsl_lanes.py and the scripted
epoch, ppgsl_script.py, issue 35): every epoch's loss, gradients and the weights after the
optimizer's steps equal the one-core trainer's bit for bit (``torch.equal``), with one lane or
two, for sparse (valued; narrow, and wide enough that the last piece's cut by cost falls
mid-way), identity and dense features, with torch's fused Adam stepped by row ranges on the
lanes and with another optimizer stepped whole; a lane's error reaches the caller."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
import torch

from ldpgraph.protocols.central import ppgsl as pg
from ldpgraph.protocols.central.ppgsl_lanes import Lanes, LaneTrainer, default_lanes
from ldpgraph.protocols.central.ppgsl_sparse import SparseFeatures
from ldpgraph.protocols.central.ppgsl_surrogate import SurrogateTrainer


def _setting(features: str, seed: int):
    rng = np.random.default_rng(seed)
    n = 300
    pairs = np.unique(np.sort(rng.integers(0, n, (1500, 2)), axis=1), axis=0)
    pairs = torch.as_tensor(pairs[pairs[:, 0] != pairs[:, 1]])
    w = torch.as_tensor(rng.random(len(pairs)), dtype=torch.float32)
    w[::4] = 0.0  # deleted pairs: not in the fixed propagation's pattern
    if features in ("sparse", "wide"):  # wide: lane 0's share of Xᵀ's rows cut mid-way
        f = 70 if features == "sparse" else 1000
        x = (rng.random((n, f)) < 0.05).astype(np.float32) * rng.integers(1, 3, (n, f))
    elif features == "identity":
        x = np.zeros((n, 0), dtype=np.float32)
    else:
        x = rng.random((n, 33)).astype(np.float32)
    xt = pg.feature_matrix(x, "cpu")
    assert isinstance(xt, SparseFeatures) == (features != "dense")
    prop = pg.Propagation(pairs, n)
    support = w > 0
    pos, target = pairs[support], w[support]
    negs = [torch.as_tensor(rng.integers(0, n, (len(pos), 2))) for _ in range(4)]
    return xt, prop, w, pos, target, negs


def _train(trainer_cls, features, seed, fused=True, **kwargs):
    xt, prop, w, pos, target, negs = _setting(features, seed)
    gen = torch.Generator().manual_seed(seed)
    model = pg.Surrogate(xt.shape[1], gen, "cpu")
    opt = torch.optim.Adam(model.parameters(), lr=0.01, fused=fused)
    initial = [t.detach().clone() for t in model.weights]
    trainer = trainer_cls(model.weights, xt, prop.fixed(w), pos, target, opt, **kwargs)
    if trainer_cls is LaneTrainer:  # the lanes step W₁'s halves with torch's fused kernel
        assert (trainer.adam is not None) == fused
        (_, cut), (_, rows) = trainer.feature_halves
        if features in ("wide", "identity"):  # narrow X: lane 0's GEMM outweighs all of Xᵀ
            assert (0 < cut < rows) == (features == "wide")
    losses, grads = [], []
    for neg in negs:
        loss, g = trainer.forward_backward(neg)
        losses.append(loss)
        grads.append(g)
        trainer.epoch(neg, with_loss=False)
    # the steps moved every weight: the equality below is not between untouched tensors
    assert not any(torch.equal(a, t.detach()) for a, t in zip(initial, model.weights, strict=True))
    return losses, grads, [t.detach() for t in model.weights]


@pytest.mark.parametrize("features", ["sparse", "wide", "identity", "dense"])
@pytest.mark.parametrize("lanes", [1, 2])
def test_the_lanes_epoch_is_the_one_core_epoch_bit_for_bit(features, lanes):
    ref_losses, ref_grads, ref_weights = _train(SurrogateTrainer, features, 0)
    with Lanes(lanes) as lane_pool:
        losses, grads, weights = _train(LaneTrainer, features, 0, lanes=lane_pool)
    for a, b in zip(losses, ref_losses, strict=True):
        assert torch.equal(a, b)
    for gs, refs in zip(grads, ref_grads, strict=True):
        for g, r in zip(gs, refs, strict=True):
            assert r.abs().max() > 0 and torch.equal(g, r)
    for a, b in zip(weights, ref_weights, strict=True):
        assert torch.equal(a, b)


def test_without_the_fused_optimizer_the_lanes_step_it_whole_bit_for_bit():
    ref_losses, _, ref_weights = _train(SurrogateTrainer, "sparse", 1, fused=False)
    with Lanes(2) as lane_pool:
        losses, _, weights = _train(LaneTrainer, "sparse", 1, fused=False, lanes=lane_pool)
    assert all(torch.equal(a, b) for a, b in zip(losses, ref_losses, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(weights, ref_weights, strict=True))


def test_a_lanes_error_reaches_the_caller_and_lanes_are_checked():
    def fail(lane: int) -> None:
        if lane == 1:
            raise RuntimeError("lane 1 failed")

    def fail0(lane: int) -> None:
        if lane == 0:
            raise RuntimeError("lane 0 failed")

    for count in (1, 2):
        with Lanes(count) as lanes, pytest.raises(RuntimeError, match="lane 1 failed"):
            lanes.both(fail)
    with Lanes(2) as lanes:
        for broken, message in ((fail, "lane 1 failed"), (fail0, "lane 0 failed")):
            with pytest.raises(RuntimeError, match=message):
                lanes.both(broken)
            seen: list[int] = []
            lanes.both(seen.append)  # the same pool still serves after the error, both lanes
            assert sorted(seen) == [0, 1]
    for count in (1, 2):  # work handed to lane 1 while the caller runs the scripted epoch
        with Lanes(count) as lanes:
            lanes.submit(lambda: 7)
            assert lanes.result() == 7
            lanes.submit(lambda: 1 / 0)
            with pytest.raises(ZeroDivisionError):
                lanes.result()
    with pytest.raises(ValueError, match="lanes must be 1 or 2"):
        Lanes(3)
    assert default_lanes("cpu") in (1, 2) and default_lanes("meta") == 1


@pytest.mark.parametrize("chunk", [1, 4, 64])
@pytest.mark.parametrize("epochs", [1, 2, 10])
def test_training_in_scripted_chunks_is_the_one_core_training_bit_for_bit(chunk, epochs):
    """``train`` runs the epochs after the first ``chunk`` at a time in one scripted call each,
    drawing the next call's negatives meanwhile: the same draws in the same order, the same
    weights and the same last loss as one epoch after another on one core."""
    xt, prop, w, pos, target, negs = _setting("sparse", 5)
    rng = np.random.default_rng(5)
    negs = [torch.as_tensor(rng.integers(0, 300, (len(pos), 2))) for _ in range(epochs)]
    results = []
    for lanes in (None, 2):
        model = pg.Surrogate(xt.shape[1], torch.Generator().manual_seed(5), "cpu")
        opt = torch.optim.Adam(model.parameters(), lr=0.01, fused=True)
        drawn = iter(negs)
        with Lanes(lanes or 1) as pool:
            if lanes is None:
                trainer = SurrogateTrainer(model.weights, xt, prop.fixed(w), pos, target, opt)
            else:
                trainer = LaneTrainer(
                    model.weights, xt, prop.fixed(w), pos, target, opt, lanes=pool
                )
                trainer.chunk = chunk
            ticks: list[int] = []
            loss = trainer.train(partial(next, drawn), epochs, ticks.append)
        assert sum(ticks) == epochs and next(drawn, None) is None  # every draw, none more
        results.append((loss, [t.detach() for t in model.weights]))
    (loss1, weights1), (loss2, weights2) = results
    assert torch.equal(loss1, loss2)
    assert all(torch.equal(a, b) for a, b in zip(weights1, weights2, strict=True))


@pytest.mark.parametrize("chunk", [3, 64])
def test_the_learner_on_two_lanes_learns_the_one_lane_graph_bit_for_bit(chunk, monkeypatch):
    monkeypatch.setattr(LaneTrainer, "chunk", chunk)  # 20 epochs: 1 + 3·6 + 1 with 3
    rng = np.random.default_rng(4)
    n = 240
    iu, iv = np.triu_indices(n, 1)
    keep = rng.random(len(iu)) < np.where(iu // 60 == iv // 60, 0.2, 0.004)
    edges = np.stack([iu[keep], iv[keep]], axis=1)
    x = (rng.random((n, 40)) < 0.1).astype(np.float32)
    public, sensitive = pg.split_sensitive(edges, 0.1, 0)
    p = pg.Params(
        {q.name: q.default for q in pg.PARAMS}
        | dict(ppgsl_epochs=12, ppgsl_mu=6, ppgsl_attack_epochs=20)
    )
    one, two = (pg.learn(public, sensitive, x, n, p, 0, lanes=lanes) for lanes in (1, 2))
    assert np.array_equal(one.weights, two.weights) and one.log == two.log
    assert not np.array_equal(one.weights, one.original)  # it learned something


def test_without_torchscript_the_epoch_runs_eagerly_with_the_same_results(monkeypatch):
    def broken(module):
        raise RuntimeError("no TorchScript here")

    ref_losses, _, ref_weights = _train(SurrogateTrainer, "wide", 2)
    monkeypatch.setattr(torch.jit, "script", broken)
    with Lanes(2) as lane_pool, pytest.warns(RuntimeWarning, match="TorchScript failed"):
        losses, _, weights = _train(LaneTrainer, "wide", 2, lanes=lane_pool)
    assert all(torch.equal(a, b) for a, b in zip(losses, ref_losses, strict=True))
    assert all(torch.equal(a, b) for a, b in zip(weights, ref_weights, strict=True))


def test_a_chunk_is_sized_by_its_bytes_and_no_epochs_is_an_error():
    xt, prop, w, pos, target, _ = _setting("sparse", 6)
    model = pg.Surrogate(xt.shape[1], torch.Generator().manual_seed(6), "cpu")
    opt = torch.optim.Adam(model.parameters(), lr=0.01, fused=True)
    with Lanes(2) as pool:
        trainer = LaneTrainer(model.weights, xt, prop.fixed(w), pos, target, opt, lanes=pool)
        assert trainer.chunk_size() == trainer.chunk == 64  # a small graph: the cap
        trainer.chunk_bytes = 10 * 64 * len(pos)  # ten epochs' negatives and index
        assert trainer.chunk_size() == 10
        trainer.chunk_bytes = 0
        assert trainer.chunk_size() == 1
        for bad in (0, -1):
            with pytest.raises(ValueError, match="at least one epoch"):
                trainer.train(lambda: pos, bad)
            with pytest.raises(ValueError, match="at least one epoch"):
                SurrogateTrainer.train(trainer, lambda: pos, bad)
