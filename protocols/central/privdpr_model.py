"""PrivDPR's model and graph pieces (Zhang et al., KDD 2025): the deep PageRank network
(Eq. 4) with spectral weight normalisation, the walk pairs and loss (Eq. 5), the noisy
V-gradient (Eq. 7), the transition sampler and the training loop (Alg. 2); the graph
assembly (App. A) is :mod:`.privdpr_graph`. The strategy is :mod:`.privdpr`; torch is imported
inside functions."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..params import Params
from ..rng import stage_rng, stage_seed
from ..torch_env import one_cpu_thread
from .privdpr_graph import (  # noqa: F401  (re-exported: privdpr imports them from here)
    assemble,
    consenting_adjacency,
    edge_budget,
    symmetrised_scores,
    transition_counts,
    weighted_without_replacement,
)
from .privdpr_privacy import Plan

#: The stage-stream prefix of every random draw (both variants: the same seed gives dpr-nodp
#: and privdpr the same initialisation, walks and draws).
STREAM = "privdpr"
#: Rejection rounds of the transition sampler before the exact fallback.
REJECTION_ROUNDS = 8


def init_params(n: int, r: int, d: int, layers: int, gen: Any) -> tuple[Any, list, list]:
    """V (N×r) and W_1..W_K Xavier normal (std √(2/(fan_in+fan_out))) [I], zero biases."""
    import torch

    def xavier(rows: int, cols: int) -> torch.Tensor:
        std = math.sqrt(2.0 / (rows + cols))
        return torch.randn(rows, cols, generator=gen, dtype=torch.float64) * std

    dims = [r] + [d] * (layers - 1) + [1]
    v = xavier(n, r)
    ws = [xavier(dims[k], dims[k + 1]) for k in range(layers)]
    bs = [torch.zeros(dims[k + 1], dtype=torch.float64) for k in range(layers)]
    return v, ws, bs


#: Relative margin on the spectral norm: W/(s·‖W‖₂·(1 + margin)) keeps ‖·‖₂ ≤ 1/s under rounding.
NORM_MARGIN = 1e-12


def spectral_norms(ws: list) -> Any:
    """‖W_l‖₂ of every layer, exactly and differentiably: √λ_max(WᵀW) by one batched
    symmetric eigensolve of the d×d Gram matrices (W_1 … W_{K−1}), the vector norm for the
    d×1 output layer (not a power-iteration estimate, which can fall short of ‖W‖₂)."""
    import torch

    *square, last = ws
    norms = []
    if square:
        grams = torch.stack([w.T @ w for w in square])
        norms.append(torch.linalg.eigvalsh(grams)[:, -1].clamp(min=0.0).sqrt())
    norms.append(torch.linalg.vector_norm(last).reshape(1))
    return torch.cat(norms)


def normalised(ws: list, scale: float) -> list:
    """W_WN(W) = W/(s·‖W‖₂) for every layer [P Thm 4.2]: ‖W_WN‖₂ = 1/s (to NORM_MARGIN)."""
    norms = spectral_norms(ws) * (scale * (1.0 + NORM_MARGIN))
    return [w / norms[k] for k, w in enumerate(ws)]


def pagerank_net(x: Any, weights: list, bs: list) -> Any:
    """f(x) of Eq. 4: sigmoid(x·W + b) through every (normalised) layer, output included;
    ``x`` [P, r] → [P] in (0, 1)."""
    import torch

    for w, b in zip(weights, bs, strict=True):
        x = torch.sigmoid(x @ w + b)
    return x.squeeze(-1)


def pair_loss(fi: Any, fj: Any, d_out: Any, d_in: Any, gamma: float, n: int) -> Any:
    """Eq. 5 per pair: d_in·γ²·u² + u·2γ(1−γ)/N + (1−γ)²/(d_in·N²), u = f_i/d_out − f_j/(d_in·γ)."""
    u = fi / d_out - fj / (d_in * gamma)
    return (
        d_in * gamma**2 * u**2 + u * 2 * gamma * (1 - gamma) / n + (1 - gamma) ** 2 / (d_in * n**2)
    )


def walk_pairs(
    indptr: np.ndarray,
    indices: np.ndarray,
    starts: np.ndarray,
    walks: int,
    length: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random-walk pairs [C] for starts of shape [T, ♭]: ``walks`` walks of up to
    ``length`` uniform steps from every start (a walk stops at a node without neighbours);
    returns heads, tails [T, ♭·walks, length] and the mask of the steps taken."""
    steps, batch = starts.shape
    deg = np.diff(indptr)
    cur = np.repeat(starts, walks, axis=1)  # [T, ♭·walks]
    heads = np.broadcast_to(cur[..., None], (*cur.shape, length))
    tails = np.zeros((*cur.shape, length), dtype=np.int64)
    taken = np.zeros((*cur.shape, length), dtype=bool)
    alive = np.ones(cur.shape, dtype=bool)
    draws = rng.random((*cur.shape, length))
    for k in range(length):
        d = deg[cur]
        alive &= d > 0
        pick = indptr[cur] + np.minimum((draws[..., k] * d).astype(np.int64), np.maximum(d - 1, 0))
        nxt = np.where(alive, indices[np.where(alive, pick, 0)] if indices.size else 0, cur)
        tails[..., k] = nxt
        taken[..., k] = alive
        cur = nxt
    return heads, tails, taken


def sample_transitions(v: Any, gen: Any, rounds: int = REJECTION_ROUNDS) -> tuple[Any, int]:
    """One j ~ softmax_j(V_i·V_j) for every row i (the diagonal included), and how many rows
    took the exact fallback. Rejection from the uniform proposal: accept j with probability
    exp(V_i·V_j − b_i), b_i = ‖V_i‖·max_j‖V_j‖ ≥ max_j V_i·V_j (Cauchy–Schwarz), so an
    accepted j has exactly the softmax law; a row still pending after ``rounds`` takes the
    Gumbel-max of its full logit row (the same law), in chunks."""
    import torch

    n = v.shape[0]
    norms = torch.linalg.vector_norm(v, dim=1)
    bound = norms * norms.max()
    dev = v.device
    out = torch.full((n,), -1, dtype=torch.int64, device=dev)
    pending = torch.arange(n, device=dev)
    for _ in range(rounds):
        if pending.numel() == 0:
            break
        j = torch.randint(n, (pending.numel(),), generator=gen, device=dev)
        u = 1.0 - torch.rand(pending.numel(), generator=gen, dtype=v.dtype, device=dev)  # (0, 1]
        z = (v[pending] * v[j]).sum(1)
        ok = torch.log(u) <= z - bound[pending]
        out[pending[ok]] = j[ok]
        pending = pending[~ok]
    fallback = int(pending.numel())
    tiny = torch.finfo(v.dtype).tiny
    for chunk in pending.split(max(1, 2**22 // max(n, 1))):
        logits = v[chunk] @ v.T
        u = torch.rand(logits.shape, generator=gen, dtype=v.dtype, device=dev).clamp_(min=tiny)
        out[chunk] = (logits - torch.log(-torch.log(u))).argmax(1)
    return out, fallback


@dataclass
class Trained:
    """What training leaves: the final V (numpy), the transition samples [T, N], the number
    of walk pairs, of steps without pairs, of rows sampled exactly, the diagnostics, and the
    final W_1..W_K and biases (never released: for tests)."""

    v: np.ndarray
    samples: np.ndarray
    pairs: int
    empty_steps: int
    fallback_rows: int
    diagnostics: dict[str, Any]
    weights: list[np.ndarray]


def noisy_v_gradient(clean: Any, sigma: float, pairs: int, gen: Any) -> tuple[Any, Any]:
    """Eq. 7: (Σ∇_V + N(0, σ²·I_{N×r}))/B on every entry of V (rows no pair touched too
    [§3.4.5]), and the noise alone over B (the control's gradient: the empty graph's Σ∇_V is
    0). Standard normals are drawn in float32 (5x faster on CPU) and scaled in float64."""
    import torch

    if sigma <= 0:
        return clean / pairs, torch.zeros_like(clean)
    drawn = torch.randn(clean.shape, generator=gen, device=clean.device).to(clean.dtype) * sigma
    return (clean + drawn) / pairs, drawn / pairs


def start_blocks(n: int, batch: int, steps: int) -> np.ndarray:
    """The start nodes of every step [T, ♭]: block t mod ⌊N/♭⌋ of the node ids [C]."""
    blocks = n // batch
    return (np.arange(steps)[:, None] % blocks) * batch + np.arange(batch)[None, :]


def train(
    adj: sp.csr_matrix,
    plan: Plan,
    p: Params,
    seed: int,
    noise: bool = True,
    sample: bool = True,
    name: str = "",
    device: str = "cpu",
) -> Trained:
    """T steps of Algorithm 2 on ``adj``: W (and biases) by Adam on the clean gradient of the
    summed loss, V by Adam on (Σ∇_V + N(0, σ²))/B, then one transition draw per node from the
    updated V. Beside it, a control V with the same initialisation and the same noise but no
    pairs (the empty graph) gives the diagnostics. Streams: ``{name}/init``, ``/walks``,
    ``/noise``, ``/scores``, ``/diag`` (``name``: :data:`STREAM`, so privdpr and dpr-nodp
    start from the same V and walk the same walks for one seed)."""
    with one_cpu_thread(device):
        return _train(adj, plan, p, seed, noise, sample, name or STREAM, device)


def _train(
    adj: sp.csr_matrix,
    plan: Plan,
    p: Params,
    seed: int,
    noise: bool,
    sample: bool,
    name: str,
    device: str,
) -> Trained:
    # Long on purpose: one training loop whose random draws must run in this order (the
    # seeded fingerprint tests hold it); helpers would only pass its state around.
    import torch

    n = plan.n
    gamma, scale, lr = p.damping, p.wn_scale, p.dpr_lr
    sigma = plan.sigma if noise else 0.0
    gen_init = torch.Generator().manual_seed(stage_seed(seed, f"{name}/init"))
    gen_noise = torch.Generator(device=device).manual_seed(stage_seed(seed, f"{name}/noise"))
    gen_scores = torch.Generator(device=device).manual_seed(stage_seed(seed, f"{name}/scores"))
    v0, ws, bs = init_params(n, p.dpr_dim, p.dpr_hidden, plan.layers, gen_init)
    v0, ws, bs = v0.to(device), [w.to(device) for w in ws], [b.to(device) for b in bs]
    v = v0.clone().requires_grad_(True)
    control = v0.clone().requires_grad_(True)
    for t in (*ws, *bs):
        t.requires_grad_(True)
    # Adam with PyTorch's defaults (β = 0.9, 0.999; eps 1e-8); fused: the same update, faster.
    opt_w = torch.optim.Adam([*ws, *bs], lr=lr, fused=True)
    opt_v = torch.optim.Adam([v], lr=lr, fused=True)
    opt_c = torch.optim.Adam([control], lr=lr, fused=True)

    deg = np.diff(adj.indptr)
    starts = start_blocks(n, p.dpr_node_batch, plan.steps)
    heads, tails, taken = walk_pairs(
        adj.indptr, adj.indices, starts, p.dpr_walks, p.dpr_walk_length,
        stage_rng(seed, f"{name}/walks"),
    )  # fmt: skip
    # A tail is reached over an edge, so d_in(tail) > 0 and Eq. 5's division is safe.
    assert all((deg[tails[t][taken[t]]] > 0).all() for t in range(plan.steps))
    deg_t = torch.as_tensor(deg, dtype=torch.float64, device=device)
    samples = torch.zeros((plan.steps if sample else 0, n), dtype=torch.int32, device=device)
    grad_norms = torch.zeros(plan.steps, dtype=torch.float64, device=device)
    pairs_total = empty = fallback = 0
    for t in range(plan.steps):
        mask = taken[t]
        h = torch.as_tensor(heads[t][mask], device=device)
        tl = torch.as_tensor(tails[t][mask], device=device)
        opt_w.zero_grad(set_to_none=False)
        opt_v.zero_grad(set_to_none=False)
        pairs_total += int(h.numel())
        if h.numel():
            nodes, inverse = torch.unique(torch.cat([h, tl]), return_inverse=True)
            f = pagerank_net(v[nodes], normalised(ws, scale), bs)
            fi, fj = f[inverse[: h.numel()]], f[inverse[h.numel() :]]
            pair_loss(fi, fj, deg_t[h], deg_t[tl], gamma, n).sum().backward()
        else:
            empty += 1
        grad = v.grad if v.grad is not None else torch.zeros_like(v)
        grad_norms[t] = torch.linalg.vector_norm(grad)
        opt_w.step()
        v.grad, control.grad = noisy_v_gradient(grad, sigma, plan.pairs, gen_noise)
        opt_v.step()
        opt_c.step()
        if sample:
            with torch.no_grad():
                drawn_j, rows = sample_transitions(v.detach(), gen_scores)
            samples[t] = drawn_j.to(torch.int32)
            fallback += rows
    with torch.no_grad():
        f_all = pagerank_net(v.detach(), normalised(ws, scale), bs).cpu().numpy()
        v_np, v0_np = v.detach().cpu().numpy(), v0.cpu().numpy()
        c_np = control.detach().cpu().numpy()
        weights = [w.detach().cpu().numpy() for w in (*ws, *bs)]
    diagnostics = _diagnostics(
        adj, v_np, v0_np, c_np, f_all, grad_norms.cpu().numpy(), sigma,
        stage_rng(seed, f"{name}/diag"),
    )  # fmt: skip
    return Trained(v_np, samples.cpu().numpy(), pairs_total, empty, fallback, diagnostics, weights)


def _diagnostics(
    adj: sp.csr_matrix,
    v: np.ndarray,
    v0: np.ndarray,
    control: np.ndarray,
    f_all: np.ndarray,
    grad_norms: np.ndarray,
    sigma: float,
    rng: np.random.Generator,
) -> dict[str, Any]:
    """Whether V learned anything from the graph. Non-private: computed from the
    graph and from W, for the experimenter, not part of the DP release.

    ``v_graph_effect`` = ‖V(G) − V(∅)‖/‖V₀‖, V(∅) trained with the same initialisation and
    noise on the empty graph (no pairs): what the graph changed in V. ``v_moved`` =
    ‖V(G) − V₀‖/‖V₀‖. ``edge_score_z``: mean V_i·V_j over the graph's edges minus over as many
    uniform node pairs, in standard errors of the latter (≈ N(0, 1) when V ignores the graph).
    ``f_spread``: max − min of f over all nodes at the end (a constant network ignores V).
    """
    n, r = v.shape
    size = float(np.linalg.norm(v0)) or 1.0
    noise_norm = sigma * math.sqrt(n * r)
    coo = sp.triu(adj, k=1).tocoo()
    out: dict[str, Any] = {
        "grad_norm_max": float(grad_norms.max()) if grad_norms.size else 0.0,
        "grad_norm_mean": float(grad_norms.mean()) if grad_norms.size else 0.0,
        "noise_norm": noise_norm,
        "signal_to_noise": float(grad_norms.max()) / noise_norm if noise_norm > 0 else None,
        "v_moved": float(np.linalg.norm(v - v0)) / size,
        "v_graph_effect": float(np.linalg.norm(v - control)) / size,
        "f_spread": float(f_all.max() - f_all.min()),
        "edge_score_z": None,
    }
    if coo.nnz >= 2:
        on_edges = np.einsum("ij,ij->i", v[coo.row], v[coo.col])
        a, b = rng.integers(0, n, coo.nnz), rng.integers(0, n, coo.nnz)
        random = np.einsum("ij,ij->i", v[a], v[b])
        spread = float(random.std(ddof=1)) / math.sqrt(coo.nnz)
        if spread > 0:
            out["edge_score_z"] = float(on_edges.mean() - random.mean()) / spread
    return out
