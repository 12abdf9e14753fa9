"""DPGGAN / DPGVAE on many graphs at once: the per-graph training of :mod:`.dpggan` run in
*lanes*, one lane per graph, every step of every lane in one batched forward and backward.

Why: the paper trains one model per graph and a model is tiny (816 generator
parameters; at q = 0.01 a step samples about 2 nodes of a DBLP graph and 0.13 of an IMDB one),
so graph by graph the time goes to Python and autograd overhead, not arithmetic: 69 DBLP graphs
× 2,000 steps took about 8 minutes on one core, 1,500 IMDB graphs over an hour. Batched, the
per-step overhead is paid once per chunk of graphs.

Nothing about the mechanism changes. Every lane keeps its own parameters, its own Adam state
(a lane whose Poisson sample is empty steps only its generator, with the noise, exactly as the
per-graph loop does) and its own random streams — the same ``stage_seed`` streams and the same
draws in the same order as :func:`.dpggan.fit_and_generate`, which stays as the reference: a
test holds the two to agree on every released edge and on the trained parameters to float64
rounding. Graphs are padded to the chunk's largest sample; a padded row has zero features, no
edges and is masked out of every loss, so it adds nothing to any sum and no gradient to any
copy of θ (its clipped per-node gradient is zero).

The adjacency of a sample is looked up in the sorted keys of the chunk's edges (no dense
N × N per graph while training); chunks are formed by size so that padding stays small.

torch is imported inside functions (the registry lists this module without importing torch).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import progress
from ..params import Params
from ..rng import stage_rng, stage_seed
from .dpggan_batched import (  # noqa: F401  (_MaskedAdam re-exported: tests)
    _batched_generator,
    _disc_features,
    _disc_logit,
    _MaskedAdam,
    _stack,
)
from .dpggan_model import (
    EPS_LOG,
    LATENT,
    Plan,
    _normalised,
    generator,
    init_params,
    select_edges,
    soft_adjacency,
)

#: Padded node slots of one chunk (lanes × the chunk's largest graph): bounds the chunk's
#: stacked first-layer weights (2 × slots × 32 float64 values with their Adam state).
CHUNK_SLOTS = 1 << 16
#: A chunk's largest graph at most this × its smallest (2.0: fastest on DBLP and IMDB) ...
CHUNK_SPREAD = 2.0
#: ... except below this many nodes, where the per-chunk cost of a step outweighs padding.
CHUNK_FLOOR = 64


def chunks_by_size(
    sizes: Sequence[int], slots: int = CHUNK_SLOTS, spread: float = CHUNK_SPREAD
) -> list[list[int]]:
    """Graph indices grouped into chunks, smallest graphs first. A chunk pads every graph to
    its largest, so a chunk takes graphs up to ``spread`` × its smallest (at least
    ``CHUNK_FLOOR`` nodes: tiny graphs go together) and (count × largest) ≤ ``slots``; a graph
    larger than ``slots`` is a chunk alone."""
    order = sorted(range(len(sizes)), key=lambda i: (sizes[i], i))
    out: list[list[int]] = []
    current: list[int] = []
    for i in order:
        size = max(sizes[i], 1)
        if current and (
            (len(current) + 1) * size > slots
            or size > max(CHUNK_FLOOR, spread * max(sizes[current[0]], 1))
        ):
            out.append(current)
            current = []
        current.append(i)
    if current:
        out.append(current)
    return out


def fit_and_generate_many(
    parts: Sequence[tuple[np.ndarray, int]],
    plan: Plan,
    p: Params,
    gan: bool,
    seed: int,
    slots: int = CHUNK_SLOTS,
) -> list[tuple[np.ndarray, dict[str, Any]]]:
    """:func:`.dpggan.fit_and_generate` for every graph ``k`` of ``parts`` (local edges u < v,
    node count), trained in lanes; returns, in ``parts`` order, each graph's generated edges
    and training figures."""
    out: list[tuple[np.ndarray, dict[str, Any]] | None] = [None] * len(parts)
    chunks = chunks_by_size([n for _, n in parts], slots)
    for number, chunk in enumerate(chunks, 1):
        progress.stage(f"lane chunk {number}/{len(chunks)}: {len(chunk)} graphs")
        lanes = _Lanes([(parts[k][0], parts[k][1], k) for k in chunk], p, gan, seed)
        lanes.train(plan, f"DP step (chunk {number}/{len(chunks)})")
        for k, result in zip(chunk, lanes.generate(plan), strict=True):
            out[k] = result
    assert all(r is not None for r in out)  # the chunks cover every graph once
    return out  # type: ignore[return-value]


class _Lanes:
    """One chunk of graphs trained together (see the module docstring)."""

    def __init__(
        self, graphs: list[tuple[np.ndarray, int, int]], p: Params, gan: bool, seed: int
    ) -> None:
        import torch

        self.p, self.gan, self.seed = p, gan, seed
        self.edges = [e for e, _, _ in graphs]
        self.sizes = [int(n) for _, n, _ in graphs]
        self.rows = max(max(self.sizes), 1)
        streams = [f"dpggan/graph{k}" for _, _, k in graphs]
        self.streams = streams

        def gen(stream: str, what: str) -> Any:
            return torch.Generator().manual_seed(stage_seed(seed, f"{stream}/{what}"))

        self.g_sample = [gen(s, "sample") for s in streams]
        self.g_noise = [gen(s, "noise") for s in streams]
        inits = [init_params(n, gen(s, "init")) for n, s in zip(self.sizes, streams, strict=True)]
        self.enc = _stack([i[0] for i in inits], self.rows)
        self.theta = _stack([i[1] for i in inits])
        self.disc_g = _stack([i[2] for i in inits], self.rows)
        self.disc_f = _stack([i[3] for i in inits])
        lr = p.dpg_lr
        self.opt_f = _MaskedAdam(self.theta, lr)
        self.opt_e = _MaskedAdam(self.enc, lr)
        self.opt_d = _MaskedAdam({**self.disc_g, **self.disc_f}, lr)
        # both directions of every edge as one sorted key lane·rows² + u·rows + v
        keys = [
            lane * self.rows**2 + np.concatenate([e[:, 0] * self.rows + e[:, 1],
                                                  e[:, 1] * self.rows + e[:, 0]])
            for lane, e in enumerate(self.edges) if e.size
        ]  # fmt: skip
        self.keys = torch.as_tensor(
            np.sort(np.concatenate(keys)) if keys else np.zeros(0, np.int64), dtype=torch.long
        )
        self.empty = np.zeros(len(graphs), dtype=np.int64)
        self.clip = p.dpg_clip

    def _adjacency(self, lanes: Any, idx: Any, mask: Any) -> Any:
        """The sampled subgraphs' adjacency (lanes × rows × rows, padded pairs 0)."""
        import torch

        if self.keys.numel() == 0:
            return torch.zeros(idx.shape[0], idx.shape[1], idx.shape[1], dtype=torch.float64)
        key = (lanes[:, None, None] * self.rows**2 + idx[:, :, None] * self.rows
               + idx[:, None, :])  # fmt: skip
        pos = torch.searchsorted(self.keys, key).clamp(max=self.keys.numel() - 1)
        hit = self.keys[pos] == key
        pair = mask[:, :, None] * mask[:, None, :]
        return hit.to(torch.float64) * pair

    def train(self, plan: Plan, label: str = "DP step") -> None:
        import torch

        p = self.p
        q = p.dpg_q
        per_epoch = math.ceil(1.0 / q)
        n_lanes = len(self.sizes)
        divisor = torch.tensor([q * n for n in self.sizes], dtype=torch.float64)[:, None]
        shapes = {k: tuple(v.shape[1:]) for k, v in self.theta.items()}
        widths = [math.prod(s) for s in shapes.values()]
        # each lane's draws land in a row of a buffer: the same numbers as the reference's
        # torch.rand(n) and add_noise_flat's torch.randn(816) from the lane's own generator
        uniform = torch.ones(n_lanes, self.rows)
        noise = torch.zeros(n_lanes, sum(widths), dtype=torch.float64)
        for step in progress.steps(range(plan.steps), label, plan.steps):
            std = plan.sigma * self.clip * p.dpg_sensitivity_multiplier
            for lane, (n, g) in enumerate(zip(self.sizes, self.g_sample, strict=True)):
                torch.rand(n, generator=g, out=uniform[lane, :n])
            picked = uniform < q
            counts = picked.sum(1)
            self.empty += (counts == 0).numpy()
            busy = torch.nonzero(counts, as_tuple=False).flatten()
            summed = torch.zeros(n_lanes, sum(widths), dtype=torch.float64)
            grads_e = grads_d = None
            if busy.numel():
                clipped, grads_e, grads_d = self._step(busy, picked, counts, std)
                summed[busy] = torch.cat([clipped[k].reshape(busy.numel(), -1) for k in shapes],
                                         dim=1)  # fmt: skip
            if std > 0:
                for lane in range(n_lanes):
                    torch.randn(noise.shape[1], generator=self.g_noise[lane],
                                dtype=torch.float64, out=noise[lane])  # fmt: skip
                summed = summed + std * noise
            flat = summed / divisor
            grads, start = {}, 0
            for (k, s), w in zip(shapes.items(), widths, strict=True):
                grads[k] = flat[:, start : start + w].reshape(n_lanes, *s)
                start += w
            self.opt_f.step(grads)
            if busy.numel():
                which = None if busy.numel() == n_lanes else busy  # all: no gather, no scatter
                self.opt_e.step(grads_e, which)
                if grads_d is not None:
                    self.opt_d.step(grads_d, which)
            if (step + 1) % per_epoch == 0:
                self.clip *= p.dpg_clip_decay

    def _step(self, lanes: Any, picked: Any, counts: Any, std: float) -> tuple[dict, dict, Any]:
        """The forward and the three gradients of one step (as
        :func:`.dpggan_train._train_step`) for the lanes with a sample (``picked``: the lanes'
        Poisson samples as a lanes × rows mask): Σ_i clip_C(g_i) per lane, the encoder's and
        the discriminator's gradients."""
        # Long on purpose: the forward pass and the three gradients share every intermediate
        # tensor, and the draws must run in this order (the seeded tests hold it).
        import torch
        import torch.nn.functional as fn

        p, gan = self.p, self.gan
        lam1, lam2 = p.dpg_lambda1, p.dpg_lambda2
        sizes = counts[lanes]
        width = int(sizes.max())
        mask = (torch.arange(width)[None, :] < sizes[:, None]).to(torch.float64)
        # the sampled node ids, in order, left-aligned in each lane's row
        rows_picked = picked[lanes]
        order = torch.argsort((~rows_picked).to(torch.int8), dim=1, stable=True)[:, :width]
        idx = order * mask.to(torch.long)
        eps = torch.zeros(lanes.numel(), width, LATENT, dtype=torch.float64)
        for row, (lane, b) in enumerate(zip(lanes.tolist(), sizes.tolist(), strict=True)):
            torch.randn(b, LATENT, generator=self.g_sample[lane], dtype=torch.float64,
                        out=eps[row, :b])  # fmt: skip
        a_s = self._adjacency(lanes, idx, mask)
        norm = _normalised(a_s)
        off = mask[:, :, None] * mask[:, None, :] * (1.0 - torch.eye(width, dtype=torch.float64))
        rowmask = mask[:, :, None]
        enc_w0 = self.enc["w0"][lanes[:, None], idx] * rowmask
        h = torch.relu(norm @ enc_w0)
        mu = norm @ h @ self.enc["w_mu"][lanes]
        log_sigma = norm @ h @ self.enc["w_ls"][lanes]
        z = mu + torch.exp(log_sigma) * eps
        kl = 0.5 * (mu.pow(2) + torch.exp(2 * log_sigma) - 1 - 2 * log_sigma).sum()
        frozen_w0 = self.disc_g["w0"].detach()[lanes[:, None], idx] * rowmask
        frozen_w1 = self.disc_g["w1"].detach()[lanes]
        frozen_f = {k: v.detach()[lanes] for k, v in self.disc_f.items()}
        real_r = _disc_features(norm, frozen_w0, frozen_w1)
        balanced = p.dpg_pos_weight == "batch_balanced"

        def soft(f_rows: Any) -> Any:
            return torch.sigmoid(f_rows @ f_rows.transpose(-1, -2)) * off

        def rec_and_gan(f_rows: Any) -> tuple[Any, Any]:
            p_soft = soft(f_rows)
            if not gan:
                bce = fn.binary_cross_entropy(
                    p_soft.clamp(EPS_LOG, 1 - EPS_LOG), a_s, reduction="none"
                )
                if balanced:  # Kipf's pos_weight per lane: #non-edges / #edges of its sample
                    pos = a_s.sum((1, 2))
                    pairs = off.sum((1, 2))
                    weight = torch.where(pos > 0, (pairs - pos) / pos.clamp(min=1.0),
                                         torch.ones_like(pos))  # fmt: skip
                    bce = bce * torch.where(a_s > 0, weight[:, None, None], torch.ones_like(a_s))
                return (bce * off).sum((1, 2)), torch.zeros(lanes.numel(), dtype=torch.float64)
            fake_r = _disc_features(_normalised(p_soft), frozen_w0, frozen_w1)
            rec = (real_r - fake_r).pow(2).sum(-1)
            g_loss = -fn.logsigmoid(_disc_logit(fake_r, frozen_f))
            return rec, g_loss

        # per-node copies θ_{l,i} of each lane's generator
        copies = {
            k: v.detach()[lanes][:, None].expand(-1, width, *v.shape[1:]).clone().requires_grad_()
            for k, v in self.theta.items()
        }
        f_rows = _batched_generator(z.detach(), copies) * rowmask
        rec, g_loss = rec_and_gan(f_rows)
        per_node = torch.autograd.grad((rec + lam2 * g_loss).sum(), list(copies.values()),
                                       allow_unused=True)  # fmt: skip
        per_node = {k: (g if g is not None else torch.zeros_like(copies[k]))
                    for k, g in zip(copies, per_node, strict=True)}  # fmt: skip
        squares = sum(g.reshape(*g.shape[:2], -1).pow(2).sum(-1) for g in per_node.values())
        factor = 1.0 / torch.clamp(squares.sqrt() / self.clip, min=1.0)
        clipped = {k: (g * factor.reshape(*factor.shape, *([1] * (g.dim() - 2)))).sum(1)
                   for k, g in per_node.items()}  # fmt: skip
        # the encoder: L_rec + λ1·KL through f (θ before the update) and the frozen g′
        shared = {k: v.detach()[lanes] for k, v in self.theta.items()}
        rec_e, _ = rec_and_gan(_batched_generator(z, shared) * rowmask)
        enc_params = list(self.enc.values())
        grads = torch.autograd.grad(rec_e.sum() + lam1 * kl, enc_params, allow_unused=True)
        grads_e = {k: (g[lanes] if g is not None else torch.zeros_like(v[lanes]))
                   for (k, v), g in zip(self.enc.items(), grads, strict=True)}  # fmt: skip
        grads_d = None
        if gan:
            with torch.no_grad():
                p_fake = soft(_batched_generator(z, shared) * rowmask)
            w0_rows = self.disc_g["w0"][lanes[:, None], idx] * rowmask
            w1 = self.disc_g["w1"][lanes]
            f_now = {k: v[lanes] for k, v in self.disc_f.items()}
            real = _disc_logit(_disc_features(norm, w0_rows, w1), f_now)
            fake = _disc_logit(_disc_features(_normalised(p_fake), w0_rows, w1), f_now)
            ones = torch.ones_like(real)
            d_loss = lam2 * (fn.binary_cross_entropy_with_logits(real, ones, reduction="sum")
                             + fn.binary_cross_entropy_with_logits(fake, 0 * ones,
                                                                   reduction="sum"))  # fmt: skip
            d_all = {**self.disc_g, **self.disc_f}
            grads = torch.autograd.grad(d_loss, list(d_all.values()), allow_unused=True)
            grads_d = {k: (g[lanes] if g is not None else torch.zeros_like(v[lanes]))
                       for (k, v), g in zip(d_all.items(), grads, strict=True)}  # fmt: skip
        return clipped, grads_e, grads_d

    def generate(self, plan: Plan) -> list[tuple[np.ndarray, dict[str, Any]]]:
        """One graph per lane from the prior (or the encoder ablation), as the reference."""
        import torch

        out = []
        for lane, (edges, n, stream) in enumerate(
            zip(self.edges, self.sizes, self.streams, strict=True)
        ):
            g_gen = torch.Generator().manual_seed(stage_seed(self.seed, f"{stream}/generate"))
            theta = {k: v.detach()[lane] for k, v in self.theta.items()}
            with torch.no_grad():
                if self.p.dpg_generation == "encoder":  # not private: the ablation
                    adj = torch.zeros(n, n, dtype=torch.float64)
                    if edges.size:
                        e = torch.as_tensor(edges, dtype=torch.long)
                        adj[e[:, 0], e[:, 1]] = 1.0
                        adj[e[:, 1], e[:, 0]] = 1.0
                    norm = _normalised(adj)
                    w0 = self.enc["w0"].detach()[lane, :n]
                    z = norm @ torch.relu(norm @ w0) @ self.enc["w_mu"].detach()[lane]
                else:
                    z = torch.randn(n, LATENT, generator=g_gen, dtype=torch.float64)
                probs = soft_adjacency(generator(z, theta))
            chosen = select_edges(probs.numpy(), int(edges.shape[0]), plan, self.p,
                                  stage_rng(self.seed, f"{stream}/edges"))  # fmt: skip
            out.append((chosen, {"edges_generated": int(chosen.shape[0]),
                                 "empty_steps": int(self.empty[lane]),
                                 "clip_final": self.clip}))  # fmt: skip
        return out
