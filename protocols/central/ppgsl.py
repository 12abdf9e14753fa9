"""PPGSL: a learned graph that hides known sensitive links from link-inference attacks
(central, trusted curator, **empirical protection, no DP guarantee**; spec
shared/specs/004-ppgsl.md, Wu et al. 2025). Tags as in the spec: [P] paper, [R] the spec's
recommendation where the paper is silent.

The curator holds the uploaded graph E₀ and the features X. A seeded share (``sensitive_share``,
10 % [P §4.2]) of the uploaded edges is the set E_s of **sensitive links** the defender knows and
protects; the public graph is E = E₀ \\ E_s (E_s ∩ E = ∅, Definition 1). Then (Algorithm 1):

1. **Learnable adjacency (Eq. 6).** One parameter θ per parameterised unordered pair, A′ =
   clamp(θ, 0, 1) (symmetric by construction, the diagonal never parameterised [R A10]),
   initialised at A (1 on E, 0 elsewhere [R A1]). *Sparse* (default): the pairs are E plus
   k·|E| non-edges drawn once, uniformly, outside E ∪ E_s [P §2.5, R A9]; k = 0 can only delete.
   *FGP* (``ppgsl_fgp``): every pair outside E_s is parameterised (one per unordered pair: the
   (θ+θᵀ)/2 form's symmetric part, which under Adam's sign-like steps moves the same way);
   O(N²), refused above :data:`FGP_MAX_NODES` nodes. Deviation: E_s itself is never
   parameterised, in FGP either, so the release can never contain a sensitive link.
2. **Surrogate attacker (Eq. 5)** re-initialised from scratch every μ learner steps, including
   step 0 (SITP [P §2.4, R A14]), with a fresh Adam (lr η₁, [R A2]) and trained N₁ epochs on the
   *current* A′ (detached): a 2-layer edge-weighted GCN [128, 64] (ReLU between, self-loops of
   weight 1, symmetric normalisation recomputed from A′ [P, R]) and the head σ(cos(z_i, z_j)) [P]
   (literal τ = 1 [R A4]). Positives: every pair with w′ > 0, soft targets w′ [R A5, A27];
   negatives: as many uniform pairs outside A′'s support, fresh each epoch (they may include
   E_s: the attacker does not know it [R A5]). Mean + mean cross-entropy [R A6]. It never sees
   E_s labels.
3. **Learner step (Eq. 9)** through the frozen surrogate on the current A′ (the gradient reaches
   θ through the GCN's edge weights and degree normalisation [R A13]): L = L_priv + α·L_util,
   L_priv = Σ_{E_s} −log(1 − p) (Eq. 7's cross-entropy, summed as Eq. 39 writes it;
   ``ppgsl_priv_reduction = mean``: Eq. 7's expectation, spec A7), L_util = ‖A − A′‖²_F
   summed over the full symmetric matrix = 2·Σ_{i<j} [R A8]. One persistent Adam(lr η₂ = 0.5
   [P]) over N₂ steps. No projection of θ: entries pushed out of [0, 1] freeze there, as Eq. 6
   implies [R A11] (on Cora at α = 0, 251 of 7,602 entries are still inside after 5 steps).

   **Why the sum (deviation from spec A7, issue 17).** Adam's first step moves every entry with
   a privacy gradient by 0.5; there the utility term pulls back with α·4·|A − A′| = 2α, so an
   entry stays moved only where |∂L_priv/∂θ| > 2α. With the mean over E_s, Cora's largest
   per-entry gradient at θ = A is 1.7e-3 (median 9.6e-6): no α ≥ 1e-3 moves an entry past 0.5
   (α = 0.005 released the uploaded graph unchanged), so the paper's α ∈ [0, 0.01] (App. B:
   "typically [0.001, 0.01]", for graphs of 1.5k to 28k nodes) cannot be the mean's scale.
   Summed, the gradient is |E_s| times larger (Cora: 422, max 0.72, median 4.1e-3) and that
   range spans the trade-off. α_sum = |E_s|·α_mean.
4. **Release (line 20).** One Bernoulli(A′_ij) draw per parameterised pair [P, R A12]; pairs
   never parameterised stay 0. The features are released unchanged [P fn. 3].

**Privacy.** None in the DP sense: no ε, no δ (spec §1.5). The report's unit is "empirical":
protection against link inference on E_s is measured, not proved, by the ``attack`` metric,
which scores the release's declared ``protected`` pairs (E_s) against true non-links beside
the links hidden before collection.

torch is imported inside functions (the registry lists this module without importing torch).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..base import CuratorView
from ..graph import canonical_edges
from ..params import Param, Params, ProtocolParameterError
from ..registry import register
from ..rng import stage_rng, stage_seed
from ..torch_env import auto_device
from ..types import PrivacyReport, Release
from .base import CentralStrategy, UploadedGraph
from .baselines import pair_keys, sample_free_pairs, uploaded_edges

PPGSL_ALPHA = Param(
    "ppgsl_alpha", float, 0.005,
    "α: weight of the utility loss ‖A − A′‖²_F against L_priv summed over the sensitive links "
    "(paper: swept in [0, 0.01]; smaller: more privacy, less utility)",
    low=0.0,
)  # fmt: skip
PPGSL_K = Param(
    "ppgsl_k", int, 1,
    "k: non-edge candidates k·|E| (PPGSL-sparse; 0: deletion only; paper default 1)", low=0,
)  # fmt: skip
PPGSL_MU = Param(
    "ppgsl_mu", int, 50,
    "μ: re-initialise and retrain the surrogate attacker every μ learner steps (paper: 50)",
    low=1,
)  # fmt: skip
PPGSL_FGP = Param(
    "ppgsl_fgp", bool, False,
    "full graph parameterisation (every pair learnable, O(N²); small graphs only) instead of "
    "PPGSL-sparse",
)  # fmt: skip
PPGSL_ATTACK_EPOCHS = Param(
    "ppgsl_attack_epochs", int, 500, "N₁: surrogate training epochs per retrain (paper: 500)",
    low=1,
)  # fmt: skip
PPGSL_EPOCHS = Param("ppgsl_epochs", int, 500, "N₂: learner steps (paper: 500)", low=1)
PPGSL_LR = Param(
    "ppgsl_lr", float, 0.5, "η₂: Adam learning rate of θ (paper: 0.5)", low=0.0, low_open=True
)
PPGSL_ATTACK_LR = Param(
    "ppgsl_attack_lr", float, 0.01, "η₁: Adam learning rate of the surrogate (spec: 0.01)",
    low=0.0, low_open=True,
)  # fmt: skip
PPGSL_PRIV_REDUCTION = Param(
    "ppgsl_priv_reduction", str, "sum",
    "L_priv over the sensitive links: sum (Eq. 39's Σ; the paper's α ∈ [0, 0.01] then spans "
    "the trade-off) or mean (Eq. 7's expectation, spec A7: α acts |E_s| times more strongly, "
    "α = 0.005 leaves Cora untouched)",
    choices=("sum", "mean"),
)  # fmt: skip
SENSITIVE_SHARE = Param(
    "sensitive_share", float, 0.1,
    "share of the uploaded edges the defender marks sensitive and protects (seeded; paper: 0.1)",
    low=0.0, high=1.0, low_open=True, high_open=True,
)  # fmt: skip

PARAMS = (
    PPGSL_ALPHA, PPGSL_K, PPGSL_MU, PPGSL_FGP, PPGSL_ATTACK_EPOCHS, PPGSL_EPOCHS, PPGSL_LR,
    PPGSL_ATTACK_LR, PPGSL_PRIV_REDUCTION, SENSITIVE_SHARE,
)  # fmt: skip

#: The surrogate's GCN widths [P §V-A6].
HIDDEN = (128, 64)
#: FGP parameterises n(n−1)/2 pairs: refused above this many nodes (8 M pairs).
FGP_MAX_NODES = 4000
STREAM = "ppgsl"


@dataclass
class Learned:
    """What training leaves: the parameterised pairs ``[p, 2]``, their original adjacency and
    learned weights A′ (clamped), and the logs."""

    pairs: np.ndarray
    original: np.ndarray
    weights: np.ndarray
    log: dict[str, Any] = field(default_factory=dict)


@register(
    "ppgsl",
    label="PPGSL",
    params=PARAMS,
    summary="PPGSL (central, empirical, no DP): a learned graph that hides the defender's "
    "sensitive links from a re-initialised surrogate link-inference attacker",
)
class Ppgsl(CentralStrategy):
    """PPGSL-sparse / PPGSL-FGP with SITP (spec 004 §2)."""

    kind = "graph"
    name = "ppgsl"
    privacy_model = "empirical"

    def __init__(self, **params: Any) -> None:
        p = {param.name: param.default for param in PARAMS}
        p.update(params)
        self.p = Params(p)

    @classmethod
    def from_params(cls, name: str, **params: Any) -> Ppgsl:
        return cls(**params)

    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        report = PrivacyReport.no_privacy(
            self.name,
            "empirical: raw graph to a trusted curator",
            "empirical protection against link inference, no DP guarantee: no ε is claimed; "
            "the attack AUC on the protected links measures it",
            ("edge",),
            "PPGSL: the defender learns a graph on which a surrogate link-inference attacker "
            "fails on the sensitive links it knows (spec 004). The paper's Theorem 3 (Fano) is "
            "not a certificate. Protection is empirical only: read the `attack` metric's "
            "`protected` section, never an ε axis.",
        )
        report.unit = "empirical (no DP; raw graph to a trusted curator)"
        report.accountant = "none (empirical attack AUC)"
        return report

    def release(self, graph: UploadedGraph, curator: CuratorView, seed: int) -> Release:
        n = graph.num_nodes
        p = self.p
        if p.ppgsl_fgp and n > FGP_MAX_NODES:
            raise ProtocolParameterError(
                f"ppgsl: ppgsl_fgp parameterises all n(n-1)/2 pairs; refused for n = {n} > "
                f"{FGP_MAX_NODES} nodes (use the sparse variant, ppgsl_k)"
            )
        edges0 = uploaded_edges(graph, self.name)
        public, sensitive = split_sensitive(edges0, p.sensitive_share, seed)
        x = np.asarray(graph.x)
        learned = learn(public, sensitive, x, n, p, seed, device=auto_device(curator.device))
        draw = stage_rng(seed, f"{STREAM}/bernoulli").random(len(learned.weights))
        out = canonical_edges(learned.pairs[draw < learned.weights], n)
        before = pair_keys(public, n)
        kept = int(np.isin(pair_keys(out, n), before).sum())
        stats = {
            "uploaded_edges": len(edges0),
            "sensitive_links": len(sensitive),
            "public_edges": len(public),
            "parameterised_pairs": len(learned.pairs),
            "variant": "fgp" if p.ppgsl_fgp else f"sparse k={p.ppgsl_k}",
            "released_edges": len(out),
            "kept_edges": kept,
            "deleted_edges": len(public) - kept,
            "added_edges": len(out) - kept,
            "expected_edges": float(learned.weights.sum()),
            **learned.log,
        }
        return Release(
            edges=out, x=x, privacy=self.privacy_report(), stats=stats, protected=sensitive
        )


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
    """σ(cos(z_i, z_j)) per pair (τ = 1, literal [R A4])."""
    import torch
    import torch.nn.functional as F

    return torch.sigmoid(F.cosine_similarity(z[pairs[:, 0]], z[pairs[:, 1]], dim=1, eps=1e-8))


def feature_matrix(x: np.ndarray, device: Any) -> Any:
    """X as a torch tensor: sparse (COO) when mostly zeros, the identity when the graph has
    no features (PolBlogs [R A22])."""
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
        project: clamp θ into [0, 1] after every step (spec §8.2's projection variant, an
            ablation: entries then never freeze; not the default, A11).
        on_retrain: diagnostics hook, called after each retrain as ``on_retrain(step, model,
            xw1, prop, w_fix)`` (the frozen surrogate, X·W₁, the propagation, A′ detached).
    """
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
                # θ entries inside [0, 1]: the only ones this surrogate can still move (A11)
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
