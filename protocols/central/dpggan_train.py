"""DPGGAN / DPGVAE trained graph by graph (Yang et al., IJCAI 2021, Alg. 1): the discriminator
pieces, the DP-SGD step on the generator (Eq. 5) with per-node parameter copies, one training
step and one graph's fit-and-generate. The lanes (:mod:`.dpggan_lanes`) train every graph at
once and are tested against this reference; the strategy is :mod:`.dpggan`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..params import Params
from ..rng import stage_rng, stage_seed
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


def _disc_features(norm: Any, w0_rows: Any, g: dict) -> Any:
    """g′: Σ_rows Â ReLU(Â X W′0) W′1 (X one-hot rows: X W′0 = the rows of W′0)."""
    import torch

    return (norm @ torch.relu(norm @ w0_rows) @ g["w1"]).sum(0)


def _disc_logit(r: Any, f: dict) -> Any:
    import torch

    return (torch.relu(r @ f["v1"].T + f["c1"]) @ f["v2"].T + f["c2"]).reshape(())


def dp_generator_gradient(
    per_node: dict[str, Any], clip: float, std: float, divisor: float, gen: Any
) -> dict[str, Any]:
    """Eq. 5 with Algorithm 1's batch normaliser: (Σ_i clip_C(g_i) + N(0, std²·I)) / divisor,
    the clipping and noise of :mod:`.dpsgd` (whole-vector ℓ2 clip over all of f's
    parameters; one Gaussian draw per coordinate, all of f's coordinates in one call)."""
    from .dpsgd import add_noise_flat, clip_per_example

    clipped, _ = clip_per_example(per_node, clip)
    summed = add_noise_flat({k: g.sum(0) for k, g in clipped.items()}, std, gen)
    return {k: v / divisor for k, v in summed.items()}


def per_node_generator_grads(
    loss_of: Any, z: Any, theta: dict[str, Any]
) -> tuple[dict[str, Any], Any]:
    """The per-node gradients g_i = ∂L/∂θ_i of ``loss_of(F)`` (F_i = f(z_i; θ_i), every θ_i a
    copy of θ): returns them (leading dim = nodes) and the loss."""
    import torch

    b = z.shape[0]
    copies = {
        k: v.detach().expand(b, *v.shape).clone().requires_grad_(True) for k, v in theta.items()
    }
    loss = loss_of(generator(z, copies))
    grads = torch.autograd.grad(loss, list(copies.values()), allow_unused=True)
    out = {
        k: (g if g is not None else torch.zeros_like(copies[k]))
        for k, g in zip(copies, grads, strict=True)
    }
    return out, loss


def fit_and_generate(
    edges: np.ndarray,
    n: int,
    plan: Plan,
    p: Params,
    gan: bool,
    seed: int,
    k: int,
    trained: dict[str, Any] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Train one model on graph ``k`` (``edges`` local, u < v; ``n`` nodes) and generate one
    graph from the prior; returns its edges and training figures. The graph-by-graph
    reference of :func:`.dpggan_lanes.fit_and_generate_many` (which releases use); ``trained``,
    when given, receives the final parameters (``enc``, ``theta``, ``disc_g``, ``disc_f``)."""
    # Long on purpose: one training loop whose random draws must run in this order (the
    # seeded fingerprint tests hold it); helpers would only pass its state around.
    import torch

    stream = f"dpggan/graph{k}"
    g_init = torch.Generator().manual_seed(stage_seed(seed, f"{stream}/init"))
    g_sample = torch.Generator().manual_seed(stage_seed(seed, f"{stream}/sample"))
    g_noise = torch.Generator().manual_seed(stage_seed(seed, f"{stream}/noise"))
    g_gen = torch.Generator().manual_seed(stage_seed(seed, f"{stream}/generate"))
    dtype = torch.float64
    enc, theta, disc_g, disc_f = (
        {k_: v.to(dtype).requires_grad_(True) for k_, v in d.items()}
        for d in init_params(n, g_init)
    )
    adj = torch.zeros(n, n, dtype=dtype)
    if edges.size:
        e = torch.as_tensor(edges, dtype=torch.long)
        adj[e[:, 0], e[:, 1]] = 1.0
        adj[e[:, 1], e[:, 0]] = 1.0
    q, lr = p.dpg_q, p.dpg_lr
    lam1, lam2 = p.dpg_lambda1, p.dpg_lambda2
    opt_f = torch.optim.Adam(theta.values(), lr=lr)
    opt_e = torch.optim.Adam(enc.values(), lr=lr)
    opt_d = torch.optim.Adam([*disc_g.values(), *disc_f.values()], lr=lr)
    divisor = q * n
    clip = p.dpg_clip
    per_epoch = math.ceil(1.0 / q)
    empty = 0
    from .dpsgd import poisson_sample

    for step in range(plan.steps):
        std = plan.sigma * clip * p.dpg_sensitivity_multiplier
        idx = poisson_sample(n, q, g_sample, "cpu")
        if idx.numel() == 0:  # an empty sample is still a DP step: it releases its noise
            empty += 1
            zero = {k_: torch.zeros((1, *v.shape), dtype=dtype) for k_, v in theta.items()}
            noisy = dp_generator_gradient(zero, clip, std, divisor, g_noise)
            for k_, v in theta.items():
                v.grad = noisy[k_]
            opt_f.step()
        else:
            _train_step(idx, adj, enc, theta, disc_g, disc_f, gan, lam1, lam2, clip, std,
                        divisor, g_sample, g_noise, (opt_f, opt_e, opt_d),
                        p.dpg_pos_weight == "batch_balanced")  # fmt: skip
        if (step + 1) % per_epoch == 0:
            clip *= p.dpg_clip_decay
    if trained is not None:
        trained.update(enc=enc, theta=theta, disc_g=disc_g, disc_f=disc_f)
    with torch.no_grad():
        if p.dpg_generation == "encoder":  # the official code's evaluation: not private
            norm = _normalised(adj)
            z = norm @ torch.relu(norm @ enc["w0"]) @ enc["w_mu"]
        else:
            z = torch.randn(n, LATENT, generator=g_gen, dtype=dtype)
        probs = soft_adjacency(generator(z, theta))
    out = select_edges(
        probs.numpy(), int(edges.shape[0]), plan, p, stage_rng(seed, f"{stream}/edges")
    )
    return out, {
        "edges_generated": int(out.shape[0]),
        "empty_steps": empty,
        "clip_final": clip,
    }


def _train_step(
    idx: Any, adj: Any, enc: dict, theta: dict, disc_g: dict, disc_f: dict, gan: bool,
    lam1: float, lam2: float, clip: float, std: float, divisor: float, g_sample: Any,
    g_noise: Any, opts: tuple, balanced: bool = False,
) -> None:  # fmt: skip
    """One step of Alg. 1: one forward pass; f by the DP aggregate of the per-node
    gradients, the discriminator and the encoder by their clean gradients, all together."""
    # Long on purpose: the forward pass and the three gradients share every intermediate
    # tensor, and the draws must run in this order (the seeded tests hold it).
    import torch
    import torch.nn.functional as fn

    a_s = adj[idx][:, idx]
    norm = _normalised(a_s)
    h = torch.relu(norm @ enc["w0"][idx])
    mu = norm @ h @ enc["w_mu"]
    log_sigma = norm @ h @ enc["w_ls"]
    eps = torch.randn(mu.shape, generator=g_sample, dtype=mu.dtype)
    z = mu + torch.exp(log_sigma) * eps
    kl = 0.5 * (mu.pow(2) + torch.exp(2 * log_sigma) - 1 - 2 * log_sigma).sum()
    off = 1.0 - torch.eye(a_s.shape[0], dtype=a_s.dtype)
    frozen_g = {k: v.detach() for k, v in disc_g.items()}
    frozen_f = {k: v.detach() for k, v in disc_f.items()}
    w0_rows = frozen_g["w0"][idx]
    real_r = _disc_features(norm, w0_rows, frozen_g)

    def rec_and_gan(f_rows: Any) -> tuple[Any, Any]:
        p_soft = soft_adjacency(f_rows)
        if not gan:
            bce = fn.binary_cross_entropy(p_soft.clamp(EPS_LOG, 1 - EPS_LOG), a_s, reduction="none")
            if balanced:  # Kipf's pos_weight on the batch: #non-edges / #edges (data of S)
                pos = a_s.sum()
                weight = ((off.sum() - pos) / pos) if pos > 0 else torch.ones((), dtype=a_s.dtype)
                bce = bce * torch.where(a_s > 0, weight, torch.ones_like(a_s))
            return (bce * off).sum(), torch.zeros((), dtype=a_s.dtype)
        fake_r = _disc_features(_normalised(p_soft), w0_rows, frozen_g)
        rec = (real_r - fake_r).pow(2).sum()
        g_loss = -fn.logsigmoid(_disc_logit(fake_r, frozen_f))  # −log D(A′), non-saturating
        return rec, g_loss

    def generator_loss(f_rows: Any) -> Any:
        rec, g_loss = rec_and_gan(f_rows)
        return rec + lam2 * g_loss

    per_node, _ = per_node_generator_grads(generator_loss, z.detach(), theta)
    noisy = dp_generator_gradient(per_node, clip, std, divisor, g_noise)
    # the encoder: L_rec + λ1·KL through f (θ before the update) and the frozen g′
    rec, _ = rec_and_gan(generator(z, {k: v.detach() for k, v in theta.items()}))
    enc_grads = torch.autograd.grad(rec + lam1 * kl, list(enc.values()), allow_unused=True)
    disc_grads = None
    d_params = [*disc_g.values(), *disc_f.values()]
    if gan:
        with torch.no_grad():
            p_fake = soft_adjacency(generator(z, theta))
        real = _disc_logit(_disc_features(norm, disc_g["w0"][idx], disc_g), disc_f)
        fake = _disc_logit(_disc_features(_normalised(p_fake), disc_g["w0"][idx], disc_g), disc_f)
        one = torch.ones((), dtype=real.dtype)
        d_loss = lam2 * (fn.binary_cross_entropy_with_logits(real, one)
                         + fn.binary_cross_entropy_with_logits(fake, 0 * one))  # fmt: skip
        disc_grads = torch.autograd.grad(d_loss, d_params, allow_unused=True)
    opt_f, opt_e, opt_d = opts
    for k, v in theta.items():
        v.grad = noisy[k]
    for v, g in zip(enc.values(), enc_grads, strict=True):
        v.grad = g if g is not None else torch.zeros_like(v)
    opt_f.step()
    opt_e.step()
    if disc_grads is not None:
        for v, g in zip(d_params, disc_grads, strict=True):
            v.grad = g if g is not None else torch.zeros_like(v)
        opt_d.step()
