"""The pieces of DPGGAN / DPGVAE (Yang et al., IJCAI 2021) that the graph-by-graph
reference (:mod:`.dpggan`) and the lanes (:mod:`.dpggan_lanes`) share: layer sizes, the run's
plan, the GCN normalisation, the generator, the soft adjacency, parameter initialisation and the
edge selection of a generated graph. Both import them from here, so neither imports the other's
module back.

torch is imported inside functions (the registry lists these modules without importing torch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..graph import canonical_edges
from ..laplace import DiscreteLaplace
from ..params import Params

#: Layer sizes [P App. C, R]: encoder 32 → 16, generator 16 → 16 → 32, discriminator
#: GCN 32 → 16 and MLP 16 → 32 → 1.
ENC_HIDDEN, LATENT, GEN_HIDDEN, GEN_OUT, DISC_HIDDEN, DISC_OUT, DISC_MLP = (
    32,
    16,
    16,
    32,
    32,
    16,
    32,
)
#: The generator's parameter names (the DP noise vector has 16·16 + 16 + 32·16 + 32 = 816
#: coordinates).
GEN_KEYS = ("w1", "b1", "w2", "b2")
EPS_LOG = 1e-7


@dataclass(frozen=True)
class Plan:
    """σ, T and the ε split of one run (the same for every graph: q does not depend on N)."""

    sigma: float
    steps: int
    epsilon_train: float
    epsilon_count: float
    epsilon_paper: float
    delta: float


def _normalised(adj: Any) -> Any:
    """D̂^{-1/2}(A + I)D̂^{-1/2} of a dense (soft) adjacency, or of each of a stack of them
    (leading dims: the lanes of :mod:`.dpggan_lanes`)."""
    import torch

    a = adj + torch.eye(adj.shape[-1], dtype=adj.dtype)
    d = a.sum(-1).rsqrt()
    return d[..., :, None] * a * d[..., None, :]


def generator(z: Any, theta: dict[str, Any]) -> Any:
    """f(z) = W2·ReLU(W1 z + b1) + b2 with per-row parameter copies (leading dim = rows) or
    shared parameters (no leading dim)."""
    import torch

    if theta["w1"].dim() == 3:
        h = torch.relu(torch.einsum("bij,bj->bi", theta["w1"], z) + theta["b1"])
        return torch.einsum("bij,bj->bi", theta["w2"], h) + theta["b2"]
    h = torch.relu(z @ theta["w1"].T + theta["b1"])
    return h @ theta["w2"].T + theta["b2"]


def soft_adjacency(f: Any) -> Any:
    """sigmoid(F Fᵀ) with a zero diagonal."""
    import torch

    p = torch.sigmoid(f @ f.T)
    return p * (1.0 - torch.eye(p.shape[0], dtype=p.dtype))


def init_params(n: int, gen: Any) -> tuple[dict, dict, dict, dict]:
    """Encoder, generator, discriminator GCN and discriminator MLP parameters (Glorot for the
    GCN weights, PyTorch's Linear default for the MLPs) [R §4]."""
    import torch

    def glorot(rows: int, cols: int) -> Any:
        bound = math.sqrt(6.0 / (rows + cols))
        return (torch.rand(rows, cols, generator=gen) * 2 - 1) * bound

    def linear(out: int, inp: int) -> tuple[Any, Any]:
        bound = 1.0 / math.sqrt(inp)
        w = (torch.rand(out, inp, generator=gen) * 2 - 1) * bound
        b = (torch.rand(out, generator=gen) * 2 - 1) * bound
        return w, b

    enc = {"w0": glorot(n, ENC_HIDDEN), "w_mu": glorot(ENC_HIDDEN, LATENT),
           "w_ls": glorot(ENC_HIDDEN, LATENT)}  # fmt: skip
    w1, b1 = linear(GEN_HIDDEN, LATENT)
    w2, b2 = linear(GEN_OUT, GEN_HIDDEN)
    gen_p = {"w1": w1, "b1": b1, "w2": w2, "b2": b2}
    disc_g = {"w0": glorot(n, DISC_HIDDEN), "w1": glorot(DISC_HIDDEN, DISC_OUT)}
    v1, c1 = linear(DISC_MLP, DISC_OUT)
    v2, c2 = linear(1, DISC_MLP)
    disc_f = {"v1": v1, "c1": c1, "v2": v2, "c2": c2}
    return enc, gen_p, disc_g, disc_f


def select_edges(
    probs: np.ndarray, true_m: int, plan: Plan, p: Params, rng: np.random.Generator
) -> np.ndarray:
    """The generated graph's edges (u < v) from the pair probabilities."""
    n = probs.shape[0]
    iu, ju = np.triu_indices(n, k=1)
    scores = probs[iu, ju]
    how = p.dpg_edge_selection
    if how in ("topk_dp", "topk_true"):
        m = true_m
        if how == "topk_dp":
            m = DiscreteLaplace(plan.epsilon_count).perturb(int(true_m), rng)
        m = min(max(m, 0), scores.size)
        keep = np.argsort(-scores, kind="stable")[:m]
    elif how == "bernoulli":
        keep = np.flatnonzero(rng.random(scores.size) < scores)
    else:
        keep = np.flatnonzero(scores > 0.5)
    return canonical_edges(np.stack([iu[keep], ju[keep]], axis=1), n)
