"""DPGGAN / DPGVAE trained in lanes (protocols/central/dpggan_lanes.py) against the
graph-by-graph reference (dpggan.fit_and_generate): the same released edges, training figures
and trained parameters (float64 rounding) for both models, the balanced BCE and the encoder
ablation, over graphs of different sizes (an edgeless one and a single node among them) split
into several chunks; the chunking; and the per-lane Adam against torch's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ldpgraph.protocols.central import dpggan as dg
from ldpgraph.protocols.central import dpggan_lanes as dl
from ldpgraph.protocols.registry import make_protocol as _make_protocol
from ldpgraph.protocols.rng import stage_seed


def make_protocol(name: str, **params):
    """The registry's strategy with the paper's training (``dpg_training paper``): this file
    tests it; the bounded default is tests/protocols/central/test_dpggan_bounded.py."""
    return _make_protocol(name, **{"dpg_training": "paper", **params})


def _parts():
    rng = np.random.default_rng(4)
    parts = []
    for n, rate in ((12, 0.3), (9, 0.4), (15, 0.25), (6, 0.0), (1, 0.0), (20, 0.2)):
        pairs = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < rate]
        parts.append((np.array(pairs, dtype=np.int64).reshape(-1, 2), n))
    return parts


CASES = [
    ("dpgvae", {}),
    ("dpggan", {}),
    ("dpgvae", {"dpg_pos_weight": "batch_balanced", "dpg_edge_selection": "bernoulli"}),
    ("dpggan", {"dpg_generation": "encoder", "dpg_edge_selection": "topk_true"}),
]


@pytest.mark.parametrize(("name", "extra"), CASES)
def test_lanes_release_and_train_what_the_graph_by_graph_reference_does(name, extra):
    parts = _parts()
    strategy = make_protocol(name, epsilon=1.0, dpg_steps=40, dpg_q=0.25, dpg_clip=1.0,
                             dpg_clip_decay=0.9, **extra)  # fmt: skip
    plan = strategy.plan()
    reference, trained = [], []
    for k, (edges, n) in enumerate(parts):
        store: dict = {}
        reference.append(dg.fit_and_generate(edges, n, plan, strategy.p, strategy.gan, 7, k,
                                             trained=store))  # fmt: skip
        trained.append(store)
    # small chunks: the six graphs train in several chunks, each padded to its largest
    assert len(dl.chunks_by_size([n for _, n in parts], slots=40, spread=1.5)) > 2
    lanes = dl.fit_and_generate_many(parts, plan, strategy.p, strategy.gan, 7, slots=40)
    for (ref_edges, ref_info), (edges, info) in zip(reference, lanes, strict=True):
        np.testing.assert_array_equal(edges, ref_edges)
        assert info == ref_info
    assert sum(info["empty_steps"] for _, info in lanes) > 0  # empty samples were exercised
    # the trained parameters of one chunk holding every graph, lane by lane
    chunk = dl._Lanes([(e, n, k) for k, (e, n) in enumerate(parts)], strategy.p,
                      strategy.gan, 7)  # fmt: skip
    chunk.train(plan)
    groups = {"enc": chunk.enc, "theta": chunk.theta, "disc_g": chunk.disc_g,
              "disc_f": chunk.disc_f}  # fmt: skip
    moved = 0.0
    for lane, (store, (_, n)) in enumerate(zip(trained, parts, strict=True)):
        for group, stacked in groups.items():
            for key, want in store[group].items():
                got = stacked[key].detach()[lane]
                if key == "w0":
                    assert not got[n:].any()  # padding rows never move
                    got = got[:n]
                torch.testing.assert_close(got, want.detach(), rtol=0, atol=1e-12)
        init = torch.Generator().manual_seed(stage_seed(7, f"dpggan/graph{lane}/init"))
        start = dg.init_params(n, init)[1]["w1"].double()
        moved = max(moved, (store["theta"]["w1"].detach() - start).abs().max().item())
    assert moved > 1e-3  # training moved the generator: the comparison is not of initial values


def test_chunks_cover_every_graph_once_by_size_within_their_bounds():
    rng = np.random.default_rng(0)
    sizes = [int(s) for s in rng.integers(1, 400, 300)] + [5000]
    chunks = dl.chunks_by_size(sizes, slots=4096, spread=2.0)
    flat = [i for c in chunks for i in c]
    assert sorted(flat) == list(range(len(sizes)))
    assert [sizes[i] for i in flat] == sorted(sizes)
    for chunk in chunks:
        big, small = max(sizes[i] for i in chunk), min(sizes[i] for i in chunk)
        assert len(chunk) == 1 or (len(chunk) * big <= 4096
                                   and big <= max(dl.CHUNK_FLOOR, 2.0 * small))  # fmt: skip
    assert [5000] in [[sizes[i] for i in c] for c in chunks]  # too big for any chunk: alone


def test_masked_adam_is_one_torch_adam_per_lane():
    gen = torch.Generator().manual_seed(1)
    start = torch.randn(3, 4, 2, generator=gen, dtype=torch.float64)
    stacked = {"w": start.clone()}
    lanes_opt = dl._MaskedAdam(stacked, lr=0.05)
    singles = [start[i].clone().requires_grad_() for i in range(3)]
    torch_opts = [torch.optim.Adam([w], lr=0.05) for w in singles]
    for step in range(12):
        which = [0, 2] if step % 3 else [1]  # lanes step different numbers of times
        grads = torch.randn(len(which), 4, 2, generator=gen, dtype=torch.float64)
        lanes_opt.step({"w": grads}, torch.as_tensor(which))
        for row, lane in enumerate(which):
            singles[lane].grad = grads[row].clone()
            torch_opts[lane].step()
    for lane in range(3):
        torch.testing.assert_close(stacked["w"][lane], singles[lane].detach(), rtol=0,
                                   atol=1e-14)  # fmt: skip
    assert lanes_opt.t.tolist() == [8.0, 4.0, 8.0]
