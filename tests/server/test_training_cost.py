"""The training estimate: said only for large releases, of the right size, and close enough to
a measured epoch; a run says it before training, and on a GPU only when it may not fit."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from ldpgraph.server import training_cost
from ldpgraph.server.training import TrainConfig
from ldpgraph.server.training_cost import estimate, is_large, notice


def _graph(n: int, d: int, degree: int, density: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    e = rng.integers(0, n, (n * degree // 2, 2))
    e = e[e[:, 0] != e[:, 1]]
    e.sort(axis=1)
    edges = np.unique(e, axis=0)
    x = (rng.random((n, d)) < density).astype(np.uint8)
    y = rng.integers(0, 4, n)
    perm = rng.permutation(n)
    split = SimpleNamespace(train=perm[: n // 2], val=perm[n // 2 : 3 * n // 4],
                            test=perm[3 * n // 4 :])  # fmt: skip
    return edges, x, y, split


def test_only_large_releases_get_a_notice():
    assert not is_large(2708, 5278, 49216)  # Cora
    assert is_large(training_cost.LARGE_NODES, 0, 0)
    assert is_large(10, training_cost.LARGE_ENTRIES // 2, 0)
    assert is_large(10, 0, training_cost.LARGE_ENTRIES)
    x = np.ones((50, 4), np.float32)
    assert notice(50, 100, x, TrainConfig(), 3) is None


def test_memory_grows_with_the_release_and_sparse_inputs_cost_less():
    cfg = TrainConfig(model="gcn", epochs=300)
    dense = np.ones((1000, 500), np.uint8)
    sparse = np.zeros((1000, 500), np.uint8)
    sparse[:, :5] = 1  # 1 % non-zero: goes to the model as CSR
    small = estimate(1000, 5000, dense, cfg, 5)
    assert estimate(1000, 50_000, dense, cfg, 5).memory_bytes > small.memory_bytes
    assert estimate(1000, 5000, sparse, cfg, 5).memory_bytes < small.memory_bytes
    gat = estimate(1000, 5000, dense, TrainConfig(model="gat"), 5)
    assert gat.memory_bytes > small.memory_bytes
    assert small.seconds == pytest.approx(300 * small.seconds_per_epoch)
    text = small.describe()
    assert "gcn on 1,000 nodes / 5,000 edges on the CPU" in text and "300 epochs" in text


def test_the_estimate_is_the_counted_work_over_the_measured_rates(monkeypatch):
    """Deterministic: with the machine's rates fixed, doubling every rate halves the time an
    epoch is estimated to take, and more edges never take less. (How close the estimate comes
    to a measured epoch depends on the machine and its load: benchmarks/bench_training_cost.py
    measures it.)"""
    _, x, _, _ = _graph(2000, 64, 10, 0.4)
    cfg = TrainConfig(model="gcn", epochs=6)
    monkeypatch.setattr(training_cost, "_rates", lambda *a: (1e9, 1e8, 1e9))
    slow = estimate(2000, 10_000, x, cfg, 4, "cpu")
    more = estimate(2000, 40_000, x, cfg, 4, "cpu")
    monkeypatch.setattr(training_cost, "_rates", lambda *a: (2e9, 2e8, 2e9))
    fast = estimate(2000, 10_000, x, cfg, 4, "cpu")
    assert fast.seconds_per_epoch == pytest.approx(slow.seconds_per_epoch / 2)
    assert more.seconds_per_epoch > slow.seconds_per_epoch
    assert fast.memory_bytes == slow.memory_bytes  # memory is counted, not timed


def test_a_gpu_is_warned_only_when_the_release_may_not_fit(monkeypatch):
    """No GPU needed: the device's memory and the measured rates are stood in for."""
    monkeypatch.setattr(training_cost, "_rates", lambda kind, threads: (1e12, 1e11, 1e11))
    props = SimpleNamespace(total_memory=80 * 2**30)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda dev: props)
    x = np.ones((training_cost.LARGE_NODES, 8), np.uint8)
    cfg = TrainConfig()
    assert notice(training_cost.LARGE_NODES, 10**6, x, cfg, 5, "cuda") is None
    props.total_memory = 2**20
    warned = notice(training_cost.LARGE_NODES, 10**6, x, cfg, 5, "cuda")
    assert warned is not None and "may run out of GPU memory" in warned


def test_a_run_says_the_estimate_before_training(monkeypatch):
    from ldpgraph.simulation.config import RunConfig
    from ldpgraph.simulation.pipeline import run

    monkeypatch.setattr(training_cost, "LARGE_NODES", 1)
    said: list[str] = []
    config = RunConfig(
        dataset="synthetic:n=200,classes=2,d=8", protocol="hogs", epochs=2, backend="local",
        device="cpu",
    )  # fmt: skip
    run(config, stage=said.append)
    at = next(k for k, m in enumerate(said) if m.startswith("training gcn on 200 nodes"))
    assert said[at + 1].startswith("training: full-batch gcn on 200 nodes")
    assert "per epoch" in said[at + 1] and "for 2 epochs" in said[at + 1]
