"""PPGSL's learner and its pieces (Wu et al. 2025; the strategy is :mod:`.ppgsl`): the sensitive
links, the parameterised pairs, the GCN surrogate link-inference attacker (SITP), the
propagation over the learned weights, and the learning loop (L = L_priv + α·L_util). torch is
imported inside functions."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..params import Params, ProtocolParameterError
from ..rng import stage_rng, stage_seed
from .baselines import pair_keys, sample_free_pairs

#: The surrogate's GCN widths [P §V-A6].
HIDDEN = (128, 64)
#: The stage-stream prefix of every random draw.
STREAM = "ppgsl"


@dataclass
class Learned:
    """What training leaves: the parameterised pairs ``[p, 2]``, their original adjacency and
    learned weights A′ (clamped), and the logs."""

    pairs: np.ndarray
    original: np.ndarray
    weights: np.ndarray
    log: dict[str, Any] = field(default_factory=dict)


def split_sensitive(edges: np.ndarray, share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(public E, sensitive E_s): a seeded round(share·m) of the canonical ``edges`` (at least
    one) are sensitive; a one-line error when that leaves no public edge or none at all."""
    m = len(edges)
    count = max(1, int(round(share * m)))
    if m < 2 or count >= m:
        raise ProtocolParameterError(
            f"ppgsl: sensitive_share = {share:g} of {m} uploaded edges leaves no public edge or "
            "no sensitive link; a graph with more edges is needed"
        )
    pick = np.zeros(m, dtype=bool)
    pick[stage_rng(seed, f"{STREAM}/sensitive").choice(m, size=count, replace=False)] = True
    return edges[~pick].copy(), edges[pick].copy()


def parameterised_pairs(
    public: np.ndarray, sensitive: np.ndarray, n: int, k: int, fgp: bool, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The learnable pairs (E first, then the candidates) and A on them: sparse, k·|E|
    uniform pairs outside E ∪ E_s (all of them when fewer are free); FGP, every pair i < j
    outside E_s."""
    taken = np.sort(np.concatenate([pair_keys(public, n), pair_keys(sensitive, n)]))
    if fgp:
        iu, iv = np.triu_indices(n, 1)
        keys = np.setdiff1d(iu.astype(np.int64) * n + iv, taken, assume_unique=True)
        cand = np.stack([keys // n, keys % n], axis=1)
    else:
        free = n * (n - 1) // 2 - len(taken)
        want = min(k * len(public), free)
        cand = sample_free_pairs(n, want, taken, stage_rng(seed, f"{STREAM}/candidates"))
    pairs = np.concatenate([public, cand]).astype(np.int64)
    original = np.concatenate([np.ones(len(public)), np.zeros(len(cand))]).astype(np.float32)
    return pairs, original


class Surrogate:
    """The 2-layer edge-weighted GCN + σ(cos) head, its weights drawn Glorot-uniform from
    ``gen`` (PyG's GCNConv initialisation; biases zero)."""

    def __init__(self, in_dim: int, gen: Any, device: Any) -> None:
        import torch

        dims = (in_dim, *HIDDEN)
        self.weights = []
        for a, b in zip(dims[:-1], dims[1:], strict=True):
            bound = math.sqrt(6.0 / (a + b))
            w = (torch.rand(a, b, generator=gen) * 2.0 - 1.0) * bound
            self.weights.append(w.to(device).requires_grad_(True))
            self.weights.append(torch.zeros(b, device=device, requires_grad=True))

    def parameters(self) -> list:
        return self.weights

    def freeze(self) -> None:
        for w in self.weights:
            w.requires_grad_(False)


class Propagation:
    """Â = D^-1/2 (A′ + I) D^-1/2 applied to node rows, A′ given per parameterised pair (both
    directions), differentiable in the weights."""

    def __init__(self, pairs: Any, n: int) -> None:
        import torch

        self.src = torch.cat([pairs[:, 0], pairs[:, 1]])
        self.dst = torch.cat([pairs[:, 1], pairs[:, 0]])
        self.n = n

    def __call__(self, h: Any, w: Any) -> Any:
        import torch

        w2 = torch.cat([w, w])
        deg = torch.ones(self.n, dtype=h.dtype, device=h.device).index_add(0, self.dst, w2)
        dinv = deg.rsqrt()
        norm = w2 * dinv[self.src] * dinv[self.dst]
        out = h * (dinv * dinv).unsqueeze(1)
        return out.index_add(0, self.dst, norm.unsqueeze(1) * h[self.src])


def encode(model: Surrogate, xw1: Any, prop: Propagation, w: Any) -> Any:
    """z = Â·relu(Â·X W₁ + b₁) W₂ + b₂, with X W₁ given (it does not depend on A′)."""
    w1, b1, w2, b2 = model.weights
    h = (prop(xw1, w) + b1).relu()
    return prop(h @ w2, w) + b2


def link_prob(z: Any, pairs: Any) -> Any:
    """σ(cos(z_i, z_j)) per pair (τ = 1, literal [R])."""
    import torch
    import torch.nn.functional as F

    return torch.sigmoid(F.cosine_similarity(z[pairs[:, 0]], z[pairs[:, 1]], dim=1, eps=1e-8))


def feature_matrix(x: np.ndarray, device: Any) -> Any:
    """X as a torch tensor: sparse (COO) when mostly zeros, the identity when the graph has
    no features (PolBlogs [R])."""
    import torch

    n = x.shape[0]
    if x.shape[1] == 0:
        idx = torch.arange(n)
        return torch.sparse_coo_tensor(
            torch.stack([idx, idx]), torch.ones(n), (n, n), device=device, check_invariants=True
        ).coalesce()
    x = np.asarray(x, dtype=np.float32)
    if np.count_nonzero(x) < 0.1 * x.size:
        rows, cols = np.nonzero(x)
        idx = torch.as_tensor(np.stack([rows, cols]), dtype=torch.int64)
        return torch.sparse_coo_tensor(
            idx, torch.as_tensor(x[rows, cols]), x.shape, device=device, check_invariants=True
        ).coalesce()
    return torch.as_tensor(x, device=device)


def learn(
    public: np.ndarray,
    sensitive: np.ndarray,
    x: np.ndarray,
    n: int,
    p: Params,
    seed: int,
    device: str = "cpu",
    num_threads: int | None = 1,
    project: bool = False,
    on_retrain: Callable[..., None] | None = None,
) -> Learned:
    """Algorithm 1 lines 3–19: the learned A′ on the parameterised pairs.

    Args:
        project: clamp θ into [0, 1] after every step (a projection variant, an ablation:
            entries then never freeze; not the default).
        on_retrain: diagnostics hook, called after each retrain as ``on_retrain(step, model,
            xw1, prop, w_fix)`` (the frozen surrogate, X·W₁, the propagation, A′ detached).
    """
    # Long on purpose: one training loop whose random draws must run in this order (the
    # seeded fingerprint tests hold it); helpers would only pass its state around.
    import torch
    import torch.nn.functional as F

    from ..torch_env import cpu_threads

    dev = torch.device(device)
    pairs_np, original_np = parameterised_pairs(public, sensitive, n, p.ppgsl_k, p.ppgsl_fgp, seed)
    with cpu_threads(num_threads if dev.type == "cpu" else None):
        pairs = torch.as_tensor(pairs_np, device=dev)
        sens = torch.as_tensor(sensitive, device=dev)
        original = torch.as_tensor(original_np, device=dev)
        theta = torch.nn.Parameter(original.clone())
        opt_theta = torch.optim.Adam([theta], lr=p.ppgsl_lr)
        prop = Propagation(pairs, n)
        xt = feature_matrix(x, dev)
        gen = torch.Generator().manual_seed(stage_seed(seed, f"{STREAM}/surrogate"))
        neg_rng = stage_rng(seed, f"{STREAM}/negatives")
        alpha, mu = p.ppgsl_alpha, p.ppgsl_mu
        summed = p.ppgsl_priv_reduction == "sum"
        log: dict[str, Any] = {
            "retrains": 0,
            "attack_loss": [],
            "priv_loss": [],
            "util_loss": [],
            "movable": [],
        }
        model: Surrogate | None = None
        for step in range(p.ppgsl_epochs):
            if step % mu == 0:  # SITP: a fresh surrogate, trained on the current A′ (detached)
                model = Surrogate(xt.shape[1], gen, dev)
                opt = torch.optim.Adam(model.parameters(), lr=p.ppgsl_attack_lr)
                w_fix = theta.detach().clamp(0.0, 1.0)
                support = w_fix > 0
                pos, w_pos = pairs[support], w_fix[support]
                taken = np.sort(pair_keys(pairs_np[support.cpu().numpy()], n))
                target = torch.cat([w_pos, torch.zeros(len(pos), device=dev)])
                loss = torch.zeros(())
                for _ in range(p.ppgsl_attack_epochs):
                    neg = torch.as_tensor(
                        sample_free_pairs(n, len(pos), taken, neg_rng), device=dev
                    )
                    z = encode(model, _mm(xt, model.weights[0]), prop, w_fix)
                    prob = link_prob(z, torch.cat([pos, neg])).clamp(1e-7, 1 - 1e-7)
                    half = len(pos)
                    loss = F.binary_cross_entropy(prob[:half], target[:half]) + (
                        F.binary_cross_entropy(prob[half:], target[half:])
                    )
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                model.freeze()
                xw1 = _mm(xt, model.weights[0]).detach()
                log["retrains"] += 1
                # θ entries inside [0, 1]: the only ones this surrogate can still move
                log["movable"].append(int(((theta >= 0) & (theta <= 1)).sum()))
                if on_retrain is not None:
                    on_retrain(step, model, xw1, prop, w_fix)
                log["attack_loss"].append(float(loss.detach()))
            assert model is not None
            w = theta.clamp(0.0, 1.0)
            z = encode(model, xw1, prop, w)
            p_s = link_prob(z, sens).clamp(max=1 - 1e-7)
            ce = -torch.log1p(-p_s)  # Eq. 7: CE(p, 0) per sensitive link
            priv = ce.sum() if summed else ce.mean()
            util = 2.0 * ((original - w) ** 2).sum()  # Eq. 8 over the full symmetric matrix
            total = priv + alpha * util
            opt_theta.zero_grad(set_to_none=True)
            total.backward()
            opt_theta.step()
            if project:
                with torch.no_grad():
                    theta.clamp_(0.0, 1.0)
            if step % mu == 0 or step == p.ppgsl_epochs - 1:
                log["priv_loss"].append(float(priv.detach()))
                log["util_loss"].append(float(util.detach()))
        weights = theta.detach().clamp(0.0, 1.0).cpu().numpy().astype(np.float64)
    return Learned(pairs_np, original_np, weights, log)


def _mm(x: Any, w: Any) -> Any:
    import torch

    return torch.sparse.mm(x, w) if x.is_sparse else x @ w
