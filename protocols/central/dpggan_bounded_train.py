"""DPGGAN / DPGVAE's bounded training (``dpg_training bounded``): one model for the collection,
every part trained by one DP-SGD on the ego records of :mod:`.dpggan_bounded`.

The model is the paper's (Yang et al., IJCAI 2021, §3 and App. C: a 2-layer GCN encoder
32 → 16, the generator MLP 16 → 16 → 32 with edge probability sigmoid(f(z_i)ᵀf(z_j)), and for
DPGGAN the GCN discriminator 32 → 16 with a sum readout and its MLP 16 → 32 → 1), run on each
record's ego graph instead of a whole graph: the nodes' one-hot features are the record's slots
(slot 0 the centre, then its sampled neighbours), so the model is shared across the graphs of
the collection, and a record's losses read that record alone. Per record: L_G = L_rec + λ2·(−log
D(A′)) + λ1·KL for the encoder and the generator (L_rec DPGVAE's summed BCE over the ego's
pairs, or DPGGAN's ‖g′(A) − g′(A′)‖² with g′ held fixed), L_D = λ2·[BCE(D(A), 1) + BCE(D(A′),
0)] for the discriminator. The two gradients of a record form one vector, clipped to C as a
whole; one Gaussian draw N(0, σ²C²) per coordinate is added to the sum of the sampled records,
which is divided by the expected batch q·R (Abadi et al. 2016, Alg. 1). C decays by γ after
every epoch of ⌈1/q⌉ steps, as the paper's; the noise follows C, so the accounting is the same.

Generation is the paper's (§2.10): Z ~ N(0, I) for each graph's N_k nodes, P = sigmoid(FFᵀ),
the edges by ``dpg_edge_selection``. torch is imported inside functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import progress
from ..params import Params
from ..rng import stage_rng, stage_seed
from .dpggan_bounded import BoundedPlan, ego_records
from .dpggan_model import (
    DISC_HIDDEN,
    DISC_MLP,
    DISC_OUT,
    ENC_HIDDEN,
    EPS_LOG,
    GEN_HIDDEN,
    GEN_OUT,
    LATENT,
    generator,
    select_edges,
    soft_adjacency,
)

STREAM = "dpggan-bounded"


def init_bounded(slots: int, gen: Any) -> dict[str, Any]:
    """Every parameter, flat by name (``enc_*``, ``gen_*``, ``disc_*``): Glorot for the GCN
    weights, PyTorch's Linear default for the MLPs."""
    import torch

    def glorot(rows: int, cols: int) -> Any:
        bound = math.sqrt(6.0 / (rows + cols))
        return (torch.rand(rows, cols, generator=gen) * 2 - 1) * bound

    def linear(out: int, inp: int) -> tuple[Any, Any]:
        bound = 1.0 / math.sqrt(inp)
        return ((torch.rand(out, inp, generator=gen) * 2 - 1) * bound,
                (torch.rand(out, generator=gen) * 2 - 1) * bound)  # fmt: skip

    w1, b1 = linear(GEN_HIDDEN, LATENT)
    w2, b2 = linear(GEN_OUT, GEN_HIDDEN)
    v1, c1 = linear(DISC_MLP, DISC_OUT)
    v2, c2 = linear(1, DISC_MLP)
    return {
        "enc_w0": glorot(slots, ENC_HIDDEN), "enc_mu": glorot(ENC_HIDDEN, LATENT),
        "enc_ls": glorot(ENC_HIDDEN, LATENT),
        "gen_w1": w1, "gen_b1": b1, "gen_w2": w2, "gen_b2": b2,
        "disc_w0": glorot(slots, DISC_HIDDEN), "disc_w1": glorot(DISC_HIDDEN, DISC_OUT),
        "disc_v1": v1, "disc_c1": c1, "disc_v2": v2, "disc_c2": c2,
    }  # fmt: skip


def _norm(adj: Any, mask: Any) -> Any:
    """D̂^{-1/2}(A + I)D̂^{-1/2} over the record's real slots (padded rows and columns 0)."""
    import torch

    a = adj + torch.diag(mask)
    deg = a.sum(-1)
    d = torch.where(deg > 0, deg.clamp(min=1e-12).rsqrt(), torch.zeros_like(deg))
    return d[:, None] * a * d[None, :]


def record_loss(
    params: dict[str, Any], adj: Any, mask: Any, eps: Any, gan: bool, lam1: float, lam2: float,
    balanced: bool,
) -> Any:  # fmt: skip
    """L_G (gradients of the encoder and generator) + L_D (of the discriminator) of one
    record; each part's stop-gradients make the joint gradient the pair of the two."""
    import torch
    import torch.nn.functional as fn

    m = mask[:, None]
    norm = _norm(adj, mask)
    h = torch.relu(norm @ (params["enc_w0"] * m))
    mu = norm @ h @ params["enc_mu"]
    log_sigma = norm @ h @ params["enc_ls"]
    z = (mu + torch.exp(log_sigma) * eps) * m
    kl = 0.5 * (m * (mu.pow(2) + torch.exp(2 * log_sigma) - 1 - 2 * log_sigma)).sum()
    theta = {k: params[f"gen_{k}"] for k in ("w1", "b1", "w2", "b2")}
    f_rows = generator(z, theta) * m
    off = m * mask[None, :] * (1.0 - torch.eye(mask.shape[0], dtype=adj.dtype))
    p_soft = torch.sigmoid(f_rows @ f_rows.T) * off
    if not gan:
        bce = fn.binary_cross_entropy(p_soft.clamp(EPS_LOG, 1 - EPS_LOG), adj, reduction="none")
        if balanced:  # Kipf's pos_weight on the record's own pairs
            pos = (adj * off).sum()
            weight = torch.where(pos > 0, (off.sum() - pos) / pos.clamp(min=1.0), pos * 0 + 1)
            bce = bce * torch.where(adj > 0, weight, torch.ones_like(adj))
        return (bce * off).sum() + lam1 * kl

    def disc_feat(nrm: Any, w0: Any, w1: Any) -> Any:
        return (nrm @ torch.relu(nrm @ (w0 * m)) @ w1).sum(0)

    def disc_logit(r: Any, d: dict[str, Any]) -> Any:
        hid = torch.relu(r @ d["disc_v1"].T + d["disc_c1"])
        return (hid @ d["disc_v2"].T + d["disc_c2"]).reshape(())

    frozen = {k: v.detach() for k, v in params.items() if k.startswith("disc_")}
    real_r = disc_feat(norm, frozen["disc_w0"], frozen["disc_w1"])
    fake_r = disc_feat(_norm(p_soft, mask), frozen["disc_w0"], frozen["disc_w1"])
    rec = (real_r - fake_r).pow(2).sum()
    g_loss = -fn.logsigmoid(disc_logit(fake_r, frozen))
    loss_g = rec + lam2 * g_loss + lam1 * kl
    p_fixed = p_soft.detach()
    real = disc_logit(disc_feat(norm, params["disc_w0"], params["disc_w1"]), params)
    fake = disc_logit(disc_feat(_norm(p_fixed, mask), params["disc_w0"], params["disc_w1"]),
                      params)  # fmt: skip
    loss_d = lam2 * (fn.softplus(-real) + fn.softplus(fake))
    return loss_g + loss_d


def noisy_clipped_sum(flat: Any, clip: float, std: float, gen: Any) -> Any:
    """Σ_i clip_C(g_i) + N(0, std²·I): ``flat`` one record's whole gradient (every part) a
    row, clipped as one vector; one Gaussian draw per coordinate, drawn also for an empty
    batch (the step releases its noise either way)."""
    import torch

    total = torch.zeros(flat.shape[1], dtype=flat.dtype)
    if flat.shape[0]:
        factor = 1.0 / torch.clamp(flat.norm(dim=1) / clip, min=1.0)
        total = (flat * factor[:, None]).sum(0)
    return total + std * torch.randn(flat.shape[1], generator=gen, dtype=flat.dtype)


def fit_and_generate_bounded(
    parts: Sequence[tuple[np.ndarray, int]], plan: BoundedPlan, p: Params, gan: bool, seed: int
) -> tuple[list[tuple[np.ndarray, dict[str, Any]]], dict[str, Any]]:
    """Train one model on the ego records of every graph of ``parts`` (local edges u < v, node
    count) and generate one graph per part; returns each graph's edges and figures, and the
    training's figures."""
    import torch
    from torch.func import grad, vmap

    d = p.dpg_degree_bound
    salt = stage_seed(seed, f"{STREAM}/priorities")
    offsets = np.cumsum([0] + [n for _, n in parts])
    n_total = int(offsets[-1])
    edges = np.concatenate(
        [e.astype(np.int64) + off for (e, _), off in zip(parts, offsets[:-1], strict=True)]
        + [np.zeros((0, 2), np.int64)]
    )
    progress.stage(f"ego records of {n_total} nodes (degree bound {d})")
    slots, adj_np = ego_records(edges, n_total, d, salt)
    dtype = torch.float32
    adj_all = torch.as_tensor(adj_np, dtype=dtype)
    mask_all = torch.as_tensor(slots >= 0, dtype=dtype)
    s = d + 1
    g_init = torch.Generator().manual_seed(stage_seed(seed, f"{STREAM}/init"))
    g_sample = torch.Generator().manual_seed(stage_seed(seed, f"{STREAM}/sample"))
    g_noise = torch.Generator().manual_seed(stage_seed(seed, f"{STREAM}/noise"))
    params = {k: v.to(dtype).requires_grad_(True) for k, v in init_bounded(s, g_init).items()}
    opt = torch.optim.Adam(params.values(), lr=p.dpg_lr)
    lam1, lam2 = p.dpg_lambda1, p.dpg_lambda2
    balanced = p.dpg_pos_weight == "batch_balanced"

    def loss_of(prm: dict[str, Any], a: Any, msk: Any, e: Any) -> Any:
        return record_loss(prm, a, msk, e, gan, lam1, lam2, balanced)

    per_record = vmap(grad(loss_of), in_dims=(None, 0, 0, 0))
    q = p.dpg_q
    divisor = q * max(n_total, 1)
    clip = p.dpg_clip
    per_epoch = math.ceil(1.0 / q)
    empty, batch_total = 0, 0
    names = list(params)
    width = sum(v.numel() for v in params.values())
    for step in progress.steps(range(plan.steps), "DP-SGD step (all parts)", plan.steps):
        std = plan.sigma * clip * p.dpg_sensitivity_multiplier
        picked = torch.nonzero(torch.rand(n_total, generator=g_sample) < q).flatten()
        eps = torch.randn(picked.numel(), s, LATENT, generator=g_sample, dtype=dtype)
        flat = torch.zeros(0, width, dtype=dtype)
        if picked.numel():
            batch_total += picked.numel()
            detached = {k: v.detach() for k, v in params.items()}
            grads = per_record(detached, adj_all[picked], mask_all[picked], eps)
            flat = torch.cat([grads[k].reshape(picked.numel(), -1) for k in names], dim=1)
        else:
            empty += 1
        summed = noisy_clipped_sum(flat, clip, std, g_noise) / divisor
        start = 0
        for k in names:
            v = params[k]
            v.grad = summed[start : start + v.numel()].reshape(v.shape)
            start += v.numel()
        opt.step()
        if (step + 1) % per_epoch == 0:
            clip *= p.dpg_clip_decay
    theta = {k: params[f"gen_{k}"].detach().to(torch.float64) for k in ("w1", "b1", "w2", "b2")}
    out = []
    for k, (e, n) in progress.steps(list(enumerate(parts)), "generated graph", len(parts)):
        g_gen = torch.Generator().manual_seed(stage_seed(seed, f"{STREAM}/graph{k}/generate"))
        with torch.no_grad():
            z = torch.randn(n, LATENT, generator=g_gen, dtype=torch.float64)
            probs = soft_adjacency(generator(z, theta))
        chosen = select_edges(probs.numpy(), int(e.shape[0]), plan, p,  # type: ignore[arg-type]
                              stage_rng(seed, f"{STREAM}/graph{k}/edges"))  # fmt: skip
        out.append((chosen, {"edges_generated": int(chosen.shape[0])}))
    info = {
        "records": n_total,
        "empty_steps": empty,
        "mean_batch": batch_total / max(plan.steps, 1),
        "clip_final": clip,
        "bounded_edges": int(adj_np[:, 0, :].sum() // 2),
    }
    return out, info
