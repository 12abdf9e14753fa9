"""HoGS's torch curator against the numpy one: on the CPU everywhere, on CUDA where there is one.

0/1 feature rows (the 1-bit mechanism's reports) give bit-identical posteriors and edges; real
rows the same edges with posteriors equal to 1e-12; the reconstructed features agree to within
one float32 rounding. The server step hands the work to the torch curator only on CUDA.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ldpgraph.protocols.base import CuratorView
from ldpgraph.protocols.ldp import hogs_torch
from ldpgraph.protocols.ldp.assemble import adjacency_reports, feature_reports
from ldpgraph.protocols.ldp.hogs import reconstruct_features, reconstruct_topology
from ldpgraph.protocols.ldp.hogs_torch import TorchCurator, curator_device
from ldpgraph.protocols.ldp.similarity import FeatureRows
from ldpgraph.protocols.mechanisms import flip_probability
from ldpgraph.protocols.registry import make_protocol

from ..reference.hogs import dense_hogs
from .test_hogs import collect, dense_inputs, random_graph

#: One float32 rounding of values in [0, 1] (the features leave both paths as float32).
F32 = 2.0**-23


def _numpy_and_torch(reported, observed, x, p, threshold, curator):
    rows = FeatureRows(x)
    a = reconstruct_topology(reported, observed, rows, p, threshold)
    i, j, prob, stats = curator.topology(reported, observed, rows, x, p, threshold)
    return a, (i, j, prob, stats)


def _force_blockwise(monkeypatch) -> None:
    """Dense-row joins in both paths (what 1-bit-perturbed features at scale take), in blocks
    of 16 rows on the numpy side."""
    from ldpgraph.protocols.ldp import similarity

    monkeypatch.setattr(similarity, "PREFIX_PAIR_BUDGET", 0)
    monkeypatch.setattr(similarity, "JOIN_BLOCK_ROWS", 16)


@pytest.mark.parametrize("eps", [0.5, 1.5, 4.0, 8.0])
@pytest.mark.parametrize("drop", [(), (3, 7, 11)])
@pytest.mark.parametrize("blockwise", [False, True])
def test_binary_reports_give_bit_identical_posteriors(eps, drop, blockwise, monkeypatch):
    """1-bit-perturbed features: same pairs, same posteriors to the bit, same counts; small
    blocks and gathers so that block and chunk offsets are exercised."""
    if blockwise:
        _force_blockwise(monkeypatch)
    g = random_graph(70, 24, seed=int(eps * 10) + len(drop))
    params = make_protocol("hogs", epsilon=eps, feature_share=0.5)
    result = collect(params, g, seed=5, drop=drop)
    reported, observed = adjacency_reports(result.reports, 70)
    x, _ = feature_reports(result.reports, 70, 24)
    p = flip_probability(params.eps_adjacency)
    curator = TorchCurator("cpu", block_entries=70 * 9, gather_entries=24 * 5)
    for threshold in (0.3, 0.5, 0.9):
        a, (i, j, prob, stats) = _numpy_and_torch(reported, observed, x, p, threshold, curator)
        np.testing.assert_array_equal(i, a.i)
        np.testing.assert_array_equal(j, a.j)
        np.testing.assert_array_equal(prob, a.prob)  # bit for bit
        assert stats.pop("curator_device") == "cpu"
        assert stats == a.stats


def real_features(n: int, d: int, seed: int) -> np.ndarray:
    """Non-negative real rows around three centres (high cosines, so the (0,0) join finds
    pairs), with exact duplicates, a near-duplicate and an all-zero row."""
    rng = np.random.default_rng(seed)
    centres = rng.random((3, d))
    x = centres[rng.integers(0, 3, n)] + 0.3 * rng.random((n, d))
    x[:4] = x[4:8]
    x[10] = x[11] * (1 + 1e-9)
    x[-1] = 0.0
    return x.astype(np.float32)


@pytest.mark.parametrize("eps", [0.5, 2.0, 6.0])
@pytest.mark.parametrize("drop", [(), (0, 1, 2, 9)])
def test_real_features_give_the_same_edges(eps, drop):
    """hogs-edge with real public features: the edges the numpy path and the dense reference
    find, posteriors equal to 1e-12 (the reported pairs' dot products are summed in another
    order); the joined pairs are scored on the CPU, exactly."""
    g = random_graph(60, 16, seed=int(eps * 7))
    x = real_features(60, 16, seed=int(eps))
    proto = make_protocol("hogs-edge", epsilon=eps, tau=0.5)
    result = collect(proto, g, seed=1, drop=drop)
    reported, observed = adjacency_reports(result.reports, 60)
    p = flip_probability(eps)
    curator = TorchCurator("cpu", block_entries=60 * 7, gather_entries=16 * 3)
    for threshold in (0.5, 0.8):
        a, (i, j, prob, stats) = _numpy_and_torch(reported, observed, x, p, threshold, curator)
        np.testing.assert_array_equal(i, a.i)
        np.testing.assert_array_equal(j, a.j)
        np.testing.assert_allclose(prob, a.prob, rtol=1e-12, atol=0)
        stats.pop("curator_device")
        assert stats == a.stats
        bits, obs, _ = dense_inputs(result, 60, 16, x)
        _, edges, _ = dense_hogs(bits, obs, x, p, threshold, 0)
        np.testing.assert_array_equal(np.stack([i, j], 1), edges)
    assert a.stats["joined_pairs"] > 0  # the (0,0) join found pairs (at the last threshold)


@pytest.mark.parametrize("steps", [1, 3])
def test_features_agree_within_one_float32_rounding(steps):
    g = random_graph(80, 20, seed=9)
    params = make_protocol("hogs", epsilon=2.0, feature_share=0.5, steps=steps)
    result = collect(params, g, seed=4, drop=(5,))
    reported, observed = adjacency_reports(result.reports, 80)
    x, _ = feature_reports(result.reports, 80, 20)
    topo = reconstruct_topology(
        reported, observed, FeatureRows(x), flip_probability(params.eps_adjacency), 0.3
    )
    want = reconstruct_features(x, topo.i, topo.j, topo.prob, steps)
    for gather in (20 * 3, 1 << 20):  # many row spans, one
        got = TorchCurator("cpu", gather_entries=gather).features(
            x, topo.i, topo.j, topo.prob, steps, 0.5
        )
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=2 * F32, atol=1e-30)
    # Rows without a neighbour at P >= 0.5 keep their reports exactly.
    sel = topo.prob >= 0.5
    lonely = np.setdiff1d(np.arange(80), np.union1d(topo.i[sel], topo.j[sel]))
    assert lonely.size
    np.testing.assert_array_equal(got[lonely], x[lonely].astype(np.float32))
    none = TorchCurator("cpu").features(x, topo.i, topo.j, topo.prob, 0, 0.5)
    np.testing.assert_array_equal(none, x.astype(np.float32))


def test_the_server_step_uses_the_torch_curator_only_on_a_gpu(monkeypatch):
    """With the device resolving to the CPU the numpy path runs and torch's curator is never
    built; with it resolving to a torch device (here the CPU standing in for CUDA) the release
    has the numpy release's edges and its features to one float32 rounding."""
    g = random_graph(70, 24, seed=3)
    proto = make_protocol("hogs", epsilon=1.5, feature_share=0.5, steps=2)
    result = collect(proto, g, seed=8)

    def refuse(device):
        raise AssertionError("the torch curator was asked for on the CPU")

    monkeypatch.setattr(TorchCurator, "for_run", classmethod(lambda cls, d: refuse(d)))
    numpy_release = proto.server_step(0, result, CuratorView(70, 24, device="cpu"), seed=8)
    assert "curator_device" not in numpy_release.stats
    monkeypatch.undo()

    monkeypatch.setattr(hogs_torch, "curator_device", lambda device: torch.device("cpu"))
    torch_release = proto.server_step(0, result, CuratorView(70, 24, device="auto"), seed=8)
    assert torch_release.stats["curator_device"] == "cpu"
    np.testing.assert_array_equal(torch_release.edges, numpy_release.edges)
    np.testing.assert_allclose(torch_release.x, numpy_release.x, rtol=2 * F32, atol=1e-30)
    assert torch_release.privacy == numpy_release.privacy


def test_the_device_setting_resolves_like_training(monkeypatch):
    assert curator_device("cpu") is None
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert curator_device("auto") is None
    with pytest.raises(ValueError, match="CUDA is not available"):
        curator_device("cuda")
    with pytest.raises(ValueError, match="CUDA is not available"):
        curator_device("cuda:1")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert curator_device("auto") == torch.device("cuda")
    assert curator_device("cuda:1") == torch.device("cuda:1")
    assert TorchCurator.for_run("cpu") is None


def test_popcount_of_int64_words_counts_the_sign_bit_too():
    from ldpgraph.protocols.ldp.hogs_torch_ops import popcount as _popcount

    info = np.iinfo(np.int64)
    w = np.random.default_rng(0).integers(info.min, info.max, 10_000, dtype=np.int64)
    w[:4] = [-1, 0, info.min, info.max]
    got = _popcount(torch.from_numpy(w)[:, None]).numpy()
    np.testing.assert_array_equal(got, np.bitwise_count(w.view(np.uint64)))
    assert got[:4].tolist() == [64, 0, 1, 63]
    rows = torch.from_numpy(w[:9_999].reshape(-1, 3))  # a row's words are summed
    want = np.bitwise_count(w[:9_999].view(np.uint64)).reshape(-1, 3).sum(axis=1)
    np.testing.assert_array_equal(_popcount(rows).numpy(), want)


def test_no_reports_and_no_pairs():
    """An empty round (every node dropped) and a graph whose reports hold no 1-bit."""
    n, d = 6, 5
    x = np.zeros((n, d), np.uint8)
    x[0] = x[1] = 1
    empty = adjacency_reports({}, n)[0]
    curator = TorchCurator("cpu")
    for observed in (np.zeros(n, bool), np.ones(n, bool)):
        a, (i, j, prob, _) = _numpy_and_torch(empty, observed, x, 0.3, 0.5, curator)
        np.testing.assert_array_equal(i, a.i)
        np.testing.assert_array_equal(j, a.j)
        np.testing.assert_array_equal(prob, a.prob)
        assert (0, 1) in set(zip(i.tolist(), j.tolist(), strict=True))


# --- on a GPU -------------------------------------------------------------------------------


def _facebook_like(n: int, d: int, seed: int):
    """A larger graph with dense 1-bit reports: the blockwise join on the device."""
    g = random_graph(n, d, seed=seed)
    proto = make_protocol("hogs", epsilon=4.0, feature_share=0.3, steps=2)
    return proto, collect(proto, g, seed=seed), g


@pytest.mark.gpu
@pytest.mark.parametrize("blockwise", [False, True])
def test_cuda_gives_the_numpy_release(blockwise, monkeypatch):
    if blockwise:
        _force_blockwise(monkeypatch)
    proto, result, g = _facebook_like(600, 64, seed=2)
    n, d = g.num_nodes, g.num_features
    cpu = proto.server_step(0, result, CuratorView(n, d, device="cpu"), seed=2)
    gpu = proto.server_step(0, result, CuratorView(n, d, device="cuda"), seed=2)
    assert gpu.stats["curator_device"].startswith("cuda")
    np.testing.assert_array_equal(gpu.edges, cpu.edges)
    np.testing.assert_allclose(gpu.x, cpu.x, rtol=2 * F32, atol=1e-30)
    again = proto.server_step(0, result, CuratorView(n, d, device="cuda"), seed=2)
    assert again.fingerprint() == gpu.fingerprint()  # deterministic on the device


@pytest.mark.gpu
def test_cuda_real_features_give_the_same_edges():
    g = random_graph(300, 16, seed=4)
    x = real_features(300, 16, seed=4)
    proto = make_protocol("hogs-edge", epsilon=1.0, tau=0.5)
    result = collect(proto, g, seed=4)
    reported, observed = adjacency_reports(result.reports, 300)
    a, (i, j, prob, _) = _numpy_and_torch(
        reported, observed, x, flip_probability(1.0), 0.5, TorchCurator("cuda")
    )
    np.testing.assert_array_equal(i, a.i)
    np.testing.assert_array_equal(j, a.j)
    np.testing.assert_allclose(prob, a.prob, rtol=1e-12, atol=0)


@pytest.mark.gpu
def test_a_cuda_run_reconstructs_and_trains_on_the_gpu():
    """``--device cuda`` end to end: the curator and training on the GPU, the release's edges
    those of the same run on the CPU."""
    from ldpgraph.simulation import pipeline
    from ldpgraph.simulation.config import RunConfig

    base = dict(
        dataset="synthetic:n=300,classes=3,d=40,seed=1", protocol="hogs", epsilon=6.0,
        backend="local", epochs=5, seed=2,
    )  # fmt: skip
    releases = {}
    for device in ("cpu", "cuda"):
        config = RunConfig(device=device, **base)
        releases[device], _ = pipeline.release(config, pipeline.prepare(config).graph)
    assert releases["cuda"].stats["curator_device"].startswith("cuda")
    np.testing.assert_array_equal(releases["cuda"].edges, releases["cpu"].edges)
    np.testing.assert_allclose(releases["cuda"].x, releases["cpu"].x, rtol=2 * F32, atol=1e-30)
    record = pipeline.run(RunConfig(device="cuda", **base))
    assert record["training"]["device"].startswith("cuda")
    assert record["fingerprint"] == releases["cuda"].fingerprint()


@pytest.mark.parametrize("silent", [0, 40])
def test_lsh_candidates_give_the_numpy_lsh_edges(silent):
    """join=lsh (what ``auto`` picks at 10^7 rows, where the device's all-pairs join overran a
    139 GiB GPU): the torch curator scores the LSH join's candidates, not all pairs, and keeps
    the numpy path's pairs and posteriors to the bit (hogs-arr's regime: μ = 0.02, the (0,0)
    threshold ≈ 0.51)."""

    from .test_similarity_lsh import onebit_sbm_rows, silent_reports

    n, mu, p = 1500, 0.02, flip_probability(8.0)
    x = onebit_sbm_rows(n, 8.0)
    rows = FeatureRows(x)
    r, observed = silent_reports(n, silent, seed=2)
    want = reconstruct_topology(r, observed, rows, p, 0.5, mu=mu, join="lsh", seed=3)
    curator = TorchCurator("cpu", block_entries=n * 9, gather_entries=64 * 5)
    i, j, prob, stats = curator.topology(r, observed, rows, x, p, 0.5, mu=mu, join="lsh", seed=3)
    assert stats["join"] == "lsh" and want.stats["joined_pairs"] > 5_000
    np.testing.assert_array_equal(i, want.i)
    np.testing.assert_array_equal(j, want.j)
    np.testing.assert_array_equal(prob, want.prob)
    assert stats["joined_pairs"] == want.stats["joined_pairs"]
    # And not the exact join's pairs: the LSH join is approximate here.
    exact = reconstruct_topology(r, observed, rows, p, 0.5, mu=mu, join="exact")
    assert exact.i.size > want.i.size
