"""PrivDPR: a synthetic graph from deep PageRank under node-level DP (central DP; spec
shared/specs/000-privdpr.md, Zhang et al., KDD '25). Provenance tags as in the spec: [P] paper,
[C] official code (evidence of intent only), [A] the spec author's analysis, [I] the spec's
recommendation where the paper is silent.

The curator trains the deep PageRank model on the uploaded graph and releases a graph:

1. **Model (Eq. 4).** A free embedding table V ∈ R^{N×r} (Xavier normal [I A14]) and an MLP of
   K = L+1 weight matrices W_1 (r×d), W_2..W_{K−1} (d×d), W_K (d×1) with zero biases, each
   weight-normalised to W/(s·‖W‖₂) with the **exact** spectral norm [I A5] and a sigmoid on
   every layer, output included [P, §3.4.3]. f(v) ∈ (0, 1).
2. **Pairs [C A1].** Step t takes the start nodes of block t mod ⌊N/♭⌋ in node-id order [C A16]
   (the last N mod ♭ nodes never start); each runs R_wn walks of up to R_wl uniform steps to a
   neighbour (stopping at a node without one); every visited node t gives the pair (start, t).
3. **Loss (Eq. 5)** on every pair with γ, N, d^out(head) and d^in(tail); the graphs here are
   undirected, so both degrees are the node's degree [I A2].
4. **Noise only on V (Eq. 7).** One backward pass of the summed loss; W and the biases take
   their clean gradient (Adam, η), V takes (Σ∇_V + N(0, σ²·I_{N×r}))/B with B = ♭·R_wn·R_wl
   [I A3, A6]: every one of the N·r entries at every one of the T = n_epochs·⌊N/♭⌋ steps, a
   step without pairs included [I A15].
5. **Transition counts (Alg. 2 line 13) [C A7].** After every step each node i draws one
   j ~ softmax_j(V_i·V_j) (the law of the spec's hard Gumbel sample), S[i, j] += 1. Drawn by
   rejection from the uniform proposal under the bound V_i·V_j ≤ ‖V_i‖·max‖V‖ (exact; rows
   still pending after a few rounds take the Gumbel-max over their full row), so a step costs
   O(N·r) instead of the dense O(N²·r).
6. **Assembly (App. A) [P A9, A10, A8].** S† = max(S, Sᵀ) (``symmetrize=sum``: S + Sᵀ, the
   code's), zero diagonal; each node in id order gets one new edge j ∝ s†_ij among its
   non-neighbours (``first_stage=code``: the code's draw over the whole row, a repeat adds
   nothing); then edges without replacement ∝ s†_ij up to the edge budget
   round(#{i<j : s†_ij > 0} / divisor) [C], post-processing like the rest (the true |E| is
   never used).

**Privacy (spec §3).** Node-level, bounded (replace one node with its edges; N public). No
clipping: with ‖W_WN‖₂ = 1/s and 1-Lipschitz activations a pair's ‖∇_V𝓛‖ ≤ M·s^{−K} with
M = (2(N−1)γ² + 2γ + 2γ(1−γ)/N)(1 + 1/γ) (Thm 4.2), so one step's sum over ≤ B pairs is within
B·M·s^{−K} of 0 whatever W and the walks are. The paper requires B·M·s^{−K} ≤ S_∇/T (Eq. 13)
and calibrates σ = S_∇·√(2 ln(1.25T/δ))/ε: T classical (ε/T, δ/T) Gaussian steps composed
sequentially (Thm 5.1). Replacing a node moves *both* sums, so the sensitivity that holds is
2·B·M·s^{−K} (§3.4.1); ``strict_sensitivity`` (default, [I A4]) takes K with that factor (at
most one more layer). The report's ε is dp-accounting's (RDP or PLD) for the T Gaussian steps
with that sensitivity; the paper's sequential-composition figure is beside it.
``noise_calibration``: ``paper`` finds σ through the paper's accounting (its ε is the target: the
published mechanism, far more noise than the accountant needs), ``accountant`` through
dp-accounting (its ε is the target). Either way the noise swamps the V-gradient: the learned V
does not depend on the graph (spec §9.3); ``release.stats["diagnostics"]`` shows it with a
control (the same initialisation and noise on the empty graph).

The release is a ``graph``: the synthetic edges on the same N node ids and, as features, the
final V (``dpr_features=embedding``: DP by the same argument, Thm 5.1's proof) or nothing
(``none``, N×0). The original features are never read. W is never released.

torch is imported inside functions (the registry lists this module without importing torch).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..base import EPSILON, CuratorView
from ..graph import canonical_edges
from ..params import Param, ProtocolParameterError
from ..registry import register
from ..rng import stage_rng, stage_seed
from ..types import PrivacyReport, Release
from .base import CentralStrategy, UploadedGraph
from .dpar import ACCOUNTANT_PARAM, DELTA

DPR_EPSILON = EPSILON.but(
    help="total node-level ε: the target of the noise calibration (noise-calibration paper: "
    "the paper's sequential composition; accountant: dp-accounting's figure)"
)
DPR_DELTA = DELTA.but(
    default=1e-5, help="node-level δ; 0 or unset: 1e-5 (the paper's; below 1/N on its graphs)"
)
DPR_ACCOUNTANT = ACCOUNTANT_PARAM.but(
    help="dp-accounting accountant of the reported ε (and of noise-calibration accountant): "
    "rdp or pld"
)
NOISE_CALIBRATION = Param(
    "noise_calibration", str, "paper",
    "paper: σ whose ε under the paper's sequential composition is the target (the published "
    "mechanism); accountant: σ whose dp-accounting ε (sound sensitivity) is the target",
    choices=("paper", "accountant"),
)  # fmt: skip
STRICT_SENSITIVITY = Param(
    "strict_sensitivity", bool, True,
    "choose the layer count K for the replace-one sensitivity 2·B·M·s^-K (true) or the "
    "paper's B·M·s^-K (false; the report's ε always uses the factor 2)",
)  # fmt: skip
DPR_EPOCHS = Param("dpr_epochs", int, 5, "n_epochs: T = n_epochs·⌊N/♭⌋ steps (paper: 5)", low=1)
DPR_NODE_BATCH = Param("dpr_node_batch", int, 16, "♭: start nodes per step (paper: 16)", low=1)
DPR_WALKS = Param("dpr_walks", int, 2, "R_wn: random walks per start node (paper: 2)", low=1)
DPR_WALK_LENGTH = Param(
    "dpr_walk_length", int, 16, "R_wl: steps per random walk (paper: 16)", low=1
)
DPR_DIM = Param("dpr_dim", int, 128, "r: embedding dimension of V (paper: 128)", low=1)
DPR_HIDDEN = Param("dpr_hidden", int, 64, "d: hidden width of the MLP (paper: 64)", low=1)
WN_SCALE = Param(
    "wn_scale", float, 8.0, "s: weight normalisation W/(s·‖W‖₂) (paper: 8)",
    low=1.0, low_open=True,
)  # fmt: skip
PRESET_SENSITIVITY = Param(
    "preset_sensitivity", float, 5.0, "S_∇: the preset sensitivity of Eq. 13 (paper: 5)",
    low=0.0, low_open=True,
)  # fmt: skip
DAMPING = Param(
    "damping", float, 0.85, "γ: PageRank damping factor (paper: 0.85)",
    low=0.0, high=1.0, low_open=True, high_open=True,
)  # fmt: skip
DPR_LR = Param(
    "dpr_lr", float, 1e-3, "η: Adam learning rate of V and W (paper: 1e-3)",
    low=0.0, low_open=True,
)  # fmt: skip
SYMMETRIZE = Param(
    "symmetrize", str, "max",
    "transition counts to scores: max(S, Sᵀ) (paper) or S + Sᵀ (official code)",
    choices=("max", "sum"),
)  # fmt: skip
FIRST_STAGE = Param(
    "first_stage", str, "paper",
    "one edge per node: paper (a new neighbour ∝ its scores) or code (a draw over the whole "
    "row; a repeat adds nothing)",
    choices=("paper", "code"),
)  # fmt: skip
EDGE_BUDGET_DIVISOR = Param(
    "edge_budget_divisor", float, 250.0,
    "edges = round(#{i<j: score > 0} / divisor) (official code: 250; post-processing)",
    low=0.0, low_open=True,
)  # fmt: skip
DPR_FEATURES = Param(
    "dpr_features", str, "embedding",
    "the release's features: embedding (the private V, r columns) or none (N×0)",
    choices=("embedding", "none"),
)  # fmt: skip

DPR_DIAGNOSTICS = Param(
    "dpr_diagnostics", bool, False,
    "add non-private diagnostics to the run record (walk pairs, steps without pairs, gradient "
    "norms, f's spread, V against an empty-graph control, edge-score z): computed from the "
    "graph and W, for the experimenter (spec §9.3), never part of a release you publish",
)  # fmt: skip

_MODEL = (
    DPR_DIAGNOSTICS,
    DPR_EPOCHS, DPR_NODE_BATCH, DPR_WALKS, DPR_WALK_LENGTH, DPR_DIM, DPR_HIDDEN, WN_SCALE,
    PRESET_SENSITIVITY, DAMPING, DPR_LR, STRICT_SENSITIVITY, SYMMETRIZE, FIRST_STAGE,
    EDGE_BUDGET_DIVISOR, DPR_FEATURES,
)  # fmt: skip
_DP = (DPR_EPSILON, DPR_DELTA, NOISE_CALIBRATION, DPR_ACCOUNTANT)

#: The registered names and whether each adds noise.
VARIANTS = {"privdpr": True, "dpr-nodp": False}
#: The stage-stream prefix of every random draw (both variants: the same seed gives dpr-nodp
#: and privdpr the same initialisation, walks and draws).
STREAM = "privdpr"
#: Rejection rounds of the transition sampler before the exact fallback.
REJECTION_ROUNDS = 8
#: The noise multipliers (per unit of the whole run's sensitivity) the calibration searches.
MU_MIN, MU_MAX = 1e-9, 1e3


# --- the plan: everything that depends on N and the parameters only ------------------------


def m_constant(n: int, gamma: float) -> float:
    """M of Theorem 4.2: a pair's ‖∂𝓛/∂V‖₂ ≤ M·Π‖W_l‖₂ (d^in ≤ N−1, d^out, d^in ≥ 1, f < 1)."""
    return (2 * (n - 1) * gamma**2 + 2 * gamma + 2 * gamma * (1 - gamma) / n) * (1 + 1 / gamma)


def layer_count(
    n: int, gamma: float, pairs: int, steps: int, scale: float, preset: float, strict: bool
) -> int:
    """K = L+1 weight matrices: the smallest K with c·B·M·s^{−K} ≤ S_∇/T (Eq. 13; c = 2 when
    ``strict``, the replace-one factor of spec §3.4.1), at least 1."""
    factor = 2.0 if strict else 1.0
    need = factor * pairs * m_constant(n, gamma) * steps / preset
    k = max(1, math.ceil(math.log(need) / math.log(scale)))
    while factor * pairs * m_constant(n, gamma) * scale ** (-k) * steps > preset:
        k += 1  # guard the ceiling against rounding
    return k


def paper_epsilon(sigma: float, steps: int, delta: float, preset: float) -> float:
    """The paper's ε for noise std ``sigma`` on the summed V-gradient: T classical Gaussian
    steps (Dwork–Roth Thm A.1) of sensitivity S_∇/T at δ/T each, composed sequentially
    (Thm 2.4, 5.1): T·√(2 ln(1.25T/δ))·(S_∇/T)/σ."""
    return preset * math.sqrt(2.0 * math.log(1.25 * steps / delta)) / sigma


def gaussian_epsilon(mu: float, delta: float, accountant: str) -> float:
    """ε at δ of the Gaussian mechanism whose noise std is 1/``mu`` of its ℓ2 sensitivity, by
    dp-accounting. ``GaussianDpEvent(z)`` under ADD_OR_REMOVE_ONE is exactly that mechanism
    with sensitivity 1 and std z (under REPLACE_ONE dp-accounting's PLD would double the
    sensitivity again; ours is already the replace-one bound)."""
    from dp_accounting import NeighboringRelation, dp_event, pld, rdp

    event = dp_event.GaussianDpEvent(1.0 / mu)
    if accountant == "rdp":
        acc = rdp.RdpAccountant(neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE)
    elif accountant == "pld":
        # PLD rounds losses up to its grid: keep the grid far below the ε it reports.
        interval = min(1e-4, max(1e-9, 1e-3 * mu))
        acc = pld.PLDAccountant(
            neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE,
            value_discretization_interval=interval,
        )
    else:
        raise ValueError(f"unknown accountant {accountant!r}; rdp or pld")
    acc.compose(event)
    return float(acc.get_epsilon(delta))


def composed_mu(noise_multiplier: float, steps: int) -> float:
    """T compositions of the Gaussian of multiplier z (std/sensitivity) are one Gaussian of
    multiplier z/√T, exactly (their privacy-loss distributions are the same; RDP adds up to
    the same figure, a test holds the two together): μ = √T/z."""
    return math.sqrt(steps) / noise_multiplier


def _invert_decreasing(fn: Callable[[float], float], target: float, lo: float, hi: float) -> float:
    """The smallest x in [lo, hi] with fn(x) ≤ target, for fn decreasing (bisection in log x,
    to 1e-10 relative); the side returned never exceeds the target."""
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if fn(mid) <= target:
            hi = mid
        else:
            lo = mid
        if hi / lo - 1.0 < 1e-10:
            break
    return hi


@dataclass(frozen=True)
class Plan:
    """One run's data-independent settings (N is public under bounded DP): T steps, B pairs
    per step, M, K weight matrices, the sensitivities, σ on the summed V-gradient and the ε
    each accounting gives for it."""

    n: int
    steps: int
    pairs: int
    m: float
    layers: int
    layers_paper: int
    sensitivity_paper: float  # S_∇/T: the paper's per-step sensitivity (Eq. 13)
    sensitivity: float  # 2·B·M·s^{−K}: what one replaced node can move the summed gradient by
    sigma: float  # noise std on Σ∇_V (0: no noise)
    epsilon: float  # dp-accounting's, with ``sensitivity``
    epsilon_rdp: float
    epsilon_pld: float
    epsilon_paper: float  # the paper's sequential composition (sensitivity S_∇/T)
    epsilon_basic: float  # the paper's composition with ``sensitivity``
    delta: float

    @property
    def noise_multiplier(self) -> float:
        return self.sigma / self.sensitivity if self.sigma > 0 else 0.0


# --- the model (torch) ----------------------------------------------------------------------


def init_params(n: int, r: int, d: int, layers: int, gen: Any) -> tuple[Any, list, list]:
    """V (N×r) and W_1..W_K Xavier normal (std √(2/(fan_in+fan_out))) [I A14], zero biases."""
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
    d×1 output layer (not a power-iteration estimate, which can fall short of ‖W‖₂ [A5])."""
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
    """Random-walk pairs [C A1] for starts of shape [T, ♭]: ``walks`` walks of up to
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


def transition_counts(samples: np.ndarray, n: int) -> sp.csr_matrix:
    """S: S[i, j] = how often row i drew j, from ``samples`` [T, N] (row t: each node's draw
    at step t); every row sums to T."""
    steps = samples.shape[0]
    keys = np.arange(n, dtype=np.int64)[None, :] * n + samples.astype(np.int64)
    uniq, counts = np.unique(keys.ravel(), return_counts=True)
    s = sp.csr_matrix((counts.astype(np.float64), (uniq // n, uniq % n)), shape=(n, n))
    assert steps == 0 or np.all(np.asarray(s.sum(axis=1)).ravel() == steps)
    return s


def symmetrised_scores(s: sp.csr_matrix, how: str) -> sp.csr_matrix:
    """S† = max(S, Sᵀ) [P] or S + Sᵀ [C], with a zero diagonal."""
    sym = (s.maximum(s.T) if how == "max" else s + s.T).tocoo()
    off = sym.row != sym.col
    out = sp.csr_matrix((sym.data[off], (sym.row[off], sym.col[off])), shape=s.shape)
    out.eliminate_zeros()
    out.sort_indices()
    return out


def edge_budget(scores: sp.csr_matrix, divisor: float) -> int:
    """round(#{i<j : s†_ij > 0}/divisor): the official code's sigmoid-0.5 rule (sigmoid(s) >
    0.5 ⟺ s > 0 for counts) over its hard-coded 250 [C A8]."""
    return int(round(sp.triu(scores, k=1).nnz / divisor))


def weighted_without_replacement(
    weights: np.ndarray, k: int, rng: np.random.Generator
) -> np.ndarray:
    """``min(k, len)`` indices drawn without replacement, each draw ∝ the weights left (all
    positive): the top k of log w + Gumbel noise (Efraimidis–Spirakis), in one pass."""
    if k >= weights.size:
        return np.arange(weights.size)
    gumbel = -np.log(-np.log(np.clip(rng.random(weights.size), 1e-300, None)))
    return np.argpartition(-(np.log(weights) + gumbel), k - 1)[:k]


def assemble(
    scores: sp.csr_matrix, budget: int, rng: np.random.Generator, first_stage: str = "paper"
) -> tuple[np.ndarray, int]:
    """The synthetic graph from symmetric scores with a zero diagonal (App. A): one edge per
    node in id order (``paper``: a non-neighbour j ∝ s_ij, none if it has no such j;
    ``code``: j ∝ s_ij over the row, nothing new on a repeat), then edges without replacement
    ∝ s_ij (Gumbel top-k: the law of successive draws) until ``budget`` edges, or all pairs
    with a positive score. Returns canonical edges and the first stage's edge count."""
    n = scores.shape[0]
    indptr, indices, data = scores.indptr, scores.indices, scores.data
    nbrs: list[set[int]] = [set() for _ in range(n)]
    for i in range(n):
        cols, w = indices[indptr[i] : indptr[i + 1]], data[indptr[i] : indptr[i + 1]]
        if first_stage == "paper" and nbrs[i]:
            keep = ~np.isin(cols, np.fromiter(nbrs[i], dtype=np.int64, count=len(nbrs[i])))
            cols, w = cols[keep], w[keep]
        if cols.size == 0:
            continue
        cum = np.cumsum(w)
        j = int(cols[min(int(np.searchsorted(cum, rng.random() * cum[-1], side="right")),
                         cols.size - 1)])  # fmt: skip
        nbrs[i].add(j)
        nbrs[j].add(i)
    first = [(i, j) for i in range(n) for j in nbrs[i] if i < j]
    edges = np.asarray(first, dtype=np.int64).reshape(-1, 2)
    extra = budget - edges.shape[0]
    if extra > 0:
        upper = sp.triu(scores, k=1).tocoo()
        taken = set((edges[:, 0] * n + edges[:, 1]).tolist())
        key = upper.row.astype(np.int64) * n + upper.col
        free = ~np.isin(key, np.fromiter(taken, dtype=np.int64, count=len(taken)))
        key, w = key[free], upper.data[free]
        key = key[weighted_without_replacement(w, extra, rng)]
        edges = np.concatenate([edges, np.stack([key // n, key % n], axis=1)])
    return canonical_edges(edges, n), len(first)


# --- the strategy ----------------------------------------------------------------------------


# One class under two names; the name chooses whether noise is added (PrivDpr.from_params).
@register(
    "privdpr",
    label="PrivDPR",
    params=_DP + _MODEL,
    summary="PrivDPR (central, node DP): deep PageRank with Gaussian noise on V's "
    "gradient, NetGAN-style graph assembly from V's transition counts",
)
@register(
    "dpr-nodp",
    label="DPR (No DP)",
    params=_MODEL,
    summary="PrivDPR without noise (same model, layers and steps): the non-private "
    "reference, no guarantee",
)
class PrivDpr(CentralStrategy):
    """PrivDPR (one class; the registered name says whether the V-gradient is noised)."""

    kind = "graph"

    def __init__(self, private: bool = True, **params: Any) -> None:
        self.private = private
        self.name = "privdpr" if private else "dpr-nodp"
        self.privacy_model = "central" if private else "none"
        p = {param.name: param.default for param in _DP + _MODEL}
        p.update(params)
        self.p = p
        self._plans: dict[int, Plan] = {}

    @classmethod
    def from_params(cls, name: str, **params: Any) -> PrivDpr:
        return cls(VARIANTS[name], **params)

    # --- privacy ------------------------------------------------------------------------

    def plan(self, n: int) -> Plan:
        """The run's steps, layers, sensitivities and σ for a graph of ``n`` nodes; an ε the
        calibration cannot reach is a one-line error. Computed once per ``n``."""
        if n not in self._plans:
            self._plans[n] = self._plan(n)
        return self._plans[n]

    def _plan(self, n: int) -> Plan:
        p = self.p
        batch = p["dpr_node_batch"]
        steps = p["dpr_epochs"] * (n // batch)
        if steps == 0:
            raise ProtocolParameterError(
                f"{self.name}: the graph has {n} nodes, fewer than dpr_node_batch ♭ = {batch}: "
                "no training step (T = n_epochs·⌊N/♭⌋ = 0); lower dpr_node_batch"
            )
        pairs = batch * p["dpr_walks"] * p["dpr_walk_length"]
        gamma, scale, preset = p["damping"], p["wn_scale"], p["preset_sensitivity"]
        m = m_constant(n, gamma)
        k = layer_count(n, gamma, pairs, steps, scale, preset, p["strict_sensitivity"])
        k_paper = layer_count(n, gamma, pairs, steps, scale, preset, False)
        sens = 2.0 * pairs * m * scale ** (-k)
        sens_paper = preset / steps
        delta = p["delta"]
        if not self.private:
            inf = math.inf
            return Plan(n, steps, pairs, m, k, k_paper, sens_paper, sens, 0.0, inf, inf, inf,
                        inf, inf, 1.0)  # fmt: skip
        eps = p["epsilon"]
        if p["noise_calibration"] == "paper":
            # Dwork–Roth's bound needs each step's ε/T below 1.
            if eps / steps >= 1.0:
                raise ProtocolParameterError(
                    f"{self.name}: ε = {eps:g} is unreachable by the paper's calibration: its "
                    f"per-step Gaussian bound (Dwork–Roth Thm A.1) needs ε/T < 1, with T = "
                    f"{steps} steps; lower epsilon or use --noise-calibration accountant"
                )
            sigma = _invert_decreasing(
                lambda s: paper_epsilon(s, steps, delta, preset), eps, 1e-12, 1e12
            )
        else:
            acc = p["accountant"]

            def sound(mu: float) -> float:
                return gaussian_epsilon(mu, delta, acc)

            if sound(MU_MIN) > eps:
                raise ProtocolParameterError(
                    f"{self.name}: target ε = {eps:.4g} is unreachable by the {acc.upper()} "
                    f"accountant at δ = {delta:.3g}: even noise of {1 / MU_MIN:g}× the run's "
                    f"sensitivity costs ε = {sound(MU_MIN):.4g}"
                    + ("; try --accountant pld" if acc == "rdp" else "")
                )
            # the largest μ (least noise) whose ε is at most the target
            inv = _invert_decreasing(lambda x: sound(1.0 / x), eps, 1.0 / MU_MAX, 1.0 / MU_MIN)
            sigma = sens * math.sqrt(steps) * inv
        mu = composed_mu(sigma / sens, steps)
        eps_paper = paper_epsilon(sigma, steps, delta, preset)
        # The paper's composition with the corrected sensitivity: Dwork–Roth's bound scales
        # with the sensitivity only while each step's ε stays below 1 (else: no such bound).
        basic = eps_paper * sens / sens_paper
        if basic / steps >= 1.0:
            basic = math.inf
        eps_rdp = gaussian_epsilon(mu, delta, "rdp")
        eps_pld = gaussian_epsilon(mu, delta, "pld")
        return Plan(
            n=n, steps=steps, pairs=pairs, m=m, layers=k, layers_paper=k_paper,
            sensitivity_paper=sens_paper, sensitivity=sens, sigma=sigma,
            epsilon=eps_rdp if p["accountant"] == "rdp" else eps_pld,
            epsilon_rdp=eps_rdp, epsilon_pld=eps_pld,
            epsilon_paper=eps_paper,
            epsilon_basic=basic,
            delta=delta,
        )  # fmt: skip

    def privacy_report(
        self, num_features: int | None = None, n: int | None = None
    ) -> PrivacyReport:
        """Node-level (ε, δ): dp-accounting's figure with the replace-one sensitivity (the
        headline) and the paper's sequential composition beside it. Without ``n`` (before a
        release) the configured ε stands in: the accountant's figure needs N."""
        p = self.p
        if not self.private:
            return PrivacyReport.no_privacy(
                self.name,
                "non-private PrivDPR: raw data to a trusted curator",
                "no privacy: DPR without noise (ε = ∞ per node)",
                ("node",),
                "DPR (No DP): PrivDPR's model, layers and steps without noise; no guarantee.",
            )
        if n is None:
            loose = p["noise_calibration"] == "paper" and not p["strict_sensitivity"]
            bound = p["epsilon"] * (2.0 if loose else 1.0)
            # loose: the factor 2 doubles each step's classical ε, a bound while 2ε/T < 1
            caveat = " (indicative: holds while 2ε/T < 1)" if loose else ""
            return PrivacyReport(
                protocol=self.name, unit="node", epsilon=bound, delta=p["delta"],
                accountant=f"dp_accounting {p['accountant'].upper()} (computed at release)",
                paper_epsilon=p["epsilon"] if p["noise_calibration"] == "paper" else None,
                notes=["The accountant's ε needs N (T, K): it is computed at release."],
                headline=f"node-level ε ≤ {bound:.4g}{caveat} (δ = {p['delta']:.3g}); the "
                "accountant's figure is computed at release",
                unit_epsilons={"node": bound},
            )  # fmt: skip
        plan = self.plan(n)
        acc = p["accountant"].upper()
        part = {
            "part": "v-gradient", "unit": "node", "epsilon": plan.epsilon, "delta": plan.delta,
            "mechanism": "Gaussian on Σ∇_V over ≤ B walk pairs (no clipping: spectral weight "
            "normalisation bounds each pair)",
            "accountant": f"dp_accounting {acc}: T Gaussian steps as one of multiplier z/√T",
            "epsilon_rdp": plan.epsilon_rdp, "epsilon_pld": plan.epsilon_pld,
            "epsilon_paper": plan.epsilon_paper, "epsilon_basic_sound": plan.epsilon_basic,
            "noise_calibration": p["noise_calibration"], "sigma": plan.sigma,
            "noise_multiplier": plan.noise_multiplier, "sensitivity": plan.sensitivity,
            "sensitivity_paper": plan.sensitivity_paper, "T": plan.steps, "B": plan.pairs,
            "M": plan.m, "K": plan.layers, "K_paper_rule": plan.layers_paper,
            "s": p["wn_scale"], "S_grad": p["preset_sensitivity"],
            "strict_sensitivity": p["strict_sensitivity"],
        }  # fmt: skip
        calib = (
            "σ found through the paper's accounting (its ε is the configured one)"
            if p["noise_calibration"] == "paper"
            else f"σ found through the {acc} accountant (its ε is the configured one)"
        )
        notes = [
            f"ε = {plan.epsilon:.4g}: dp-accounting {acc} of T = {plan.steps} Gaussian steps "
            f"on Σ∇_V, noise std σ = {plan.sigma:.4g}, sensitivity 2·B·M·s^-K = "
            f"{plan.sensitivity:.4g} (replace one node: both sums move); RDP "
            f"{plan.epsilon_rdp:.4g}, PLD {plan.epsilon_pld:.4g}; {calib}.",
            f"paper's ε = {plan.epsilon_paper:.4g}: T sequentially composed classical "
            f"(ε/T, δ/T) Gaussian steps of sensitivity S_∇/T = {plan.sensitivity_paper:.4g} "
            "(Eq. 13, Thm 5.1).",
            f"Factor 2 (spec §3.4.1): the paper bounds one step's change by B·M·s^-K; with "
            f"replace-one neighbours it is 2·B·M·s^-K. K = {plan.layers} weight matrices "
            + (f"includes that factor (the paper's rule gives {plan.layers_paper})"
               if p["strict_sensitivity"] else "by the paper's rule (strict_sensitivity off)")
            + f"; the paper's own composition with the corrected sensitivity gives ε = "
            f"{plan.epsilon_basic:.4g}.",
            "W is trained on clean gradients and never released; the synthetic graph (and V "
            "when released as features) is post-processing of the noisy V trajectory; the "
            "edge budget is a count of positive scores, never the true |E|.",
            "The noise swamps the V-gradient: the learned V does not depend on the graph "
            "(spec §9.3); --dpr-diagnostics adds non-private diagnostics to the record (for "
            "the experimenter) that show it against the same initialisation and noise on the "
            "empty graph.",
            "N (all nodes, bounded DP) is public; the mechanism sees the subgraph induced by the "
            "consenting nodes. Hyper-parameters were not chosen privately.",
        ]  # fmt: skip
        return PrivacyReport(
            protocol=self.name,
            unit="node",
            epsilon=plan.epsilon,
            delta=plan.delta,
            accountant=f"dp_accounting {acc} (Gaussian, replace-one sensitivity 2·B·M·s^-K)",
            parts=[part],
            paper_epsilon=plan.epsilon_paper,
            notes=notes,
            headline=(
                f"node-level (ε = {plan.epsilon:.4g}, δ = {plan.delta:.3g}) by dp-accounting "
                f"{acc}; the paper's sequential composition states ε = {plan.epsilon_paper:.4g}"
            ),
            unit_epsilons={"node": plan.epsilon},
        )

    # --- the mechanism ------------------------------------------------------------------

    def release(self, graph: UploadedGraph, curator: CuratorView, seed: int) -> Release:
        n = graph.num_nodes
        if not graph.uploaded.any():
            raise ValueError(
                f"{self.name}: no node uploaded its graph (a node uploads only if it trusts "
                "the curator: --trust-curator)"
            )
        plan = self.plan(n)
        adj = consenting_adjacency(graph.edges, graph.uploaded, n)
        device = _device(curator.device)
        trained = train(adj, plan, self.p, seed, self.private, device=device)
        p = self.p
        scores = symmetrised_scores(transition_counts(trained.samples, n), p["symmetrize"])
        budget = edge_budget(scores, p["edge_budget_divisor"])
        edges, first = assemble(
            scores, budget, stage_rng(seed, f"{STREAM}/assemble"), p["first_stage"]
        )
        if p["dpr_features"] == "embedding":
            x = trained.v.astype(np.float32)
        else:
            x = np.zeros((n, 0), dtype=np.float32)
        stats = {
            "steps_T": plan.steps,
            "pair_batch_B": plan.pairs,
            "layers_K": plan.layers,
            "M": plan.m,
            "sigma": plan.sigma,
            "noise_multiplier": plan.noise_multiplier,
            "sensitivity": plan.sensitivity,
            "score_pairs": int(sp.triu(scores, k=1).nnz),
            "edge_budget": budget,
            "first_stage_edges": first,
            "exact_sampling_rows": trained.fallback_rows,
            "start_schedule": "consecutive node-id blocks of ♭ (paper Alg. 2 line 4)",
            "features": p["dpr_features"],
        }
        if p["dpr_diagnostics"]:  # computed from the graph and W: opt-in, never by default
            stats["diagnostics"] = {
                "non_private": True,
                "walk_pairs": trained.pairs,
                "empty_steps": trained.empty_steps,
                **trained.diagnostics,
            }
        report = self.privacy_report(n=n)
        return Release(edges=edges, x=x, privacy=report, stats=stats)


def consenting_adjacency(edges: np.ndarray, uploaded: np.ndarray, n: int) -> sp.csr_matrix:
    """The symmetric 0/1 adjacency of the subgraph induced by the nodes that uploaded (a
    refusing node's links, though its neighbours reported them, are not used)."""
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    edges = edges[uploaded[edges[:, 0]] & uploaded[edges[:, 1]]]
    edges = canonical_edges(edges, n)
    rows = np.concatenate([edges[:, 0], edges[:, 1]])
    cols = np.concatenate([edges[:, 1], edges[:, 0]])
    adj = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n))
    adj.sort_indices()
    return adj


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
    """The start nodes of every step [T, ♭]: block t mod ⌊N/♭⌋ of the node ids [C A16]."""
    blocks = n // batch
    return (np.arange(steps)[:, None] % blocks) * batch + np.arange(batch)[None, :]


@contextmanager
def _one_cpu_thread(device: str) -> Iterator[None]:
    """One torch CPU thread for the block (restored afterwards): the kernels here are small
    (d×d layers, N×r updates), so more threads only synchronise and, on a busy machine,
    spin-wait on each other (Cora on 2 loaded cores: 130 s with 2 threads, 31 s with 1)."""
    import torch

    previous = torch.get_num_threads()
    if device != "cpu" or previous == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _device(device: str) -> str:
    if device in ("auto", ""):
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def train(
    adj: sp.csr_matrix,
    plan: Plan,
    p: dict[str, Any],
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
    with _one_cpu_thread(device):
        return _train(adj, plan, p, seed, noise, sample, name or STREAM, device)


def _train(
    adj: sp.csr_matrix,
    plan: Plan,
    p: dict[str, Any],
    seed: int,
    noise: bool,
    sample: bool,
    name: str,
    device: str,
) -> Trained:
    import torch

    n = plan.n
    gamma, scale, lr = p["damping"], p["wn_scale"], p["dpr_lr"]
    sigma = plan.sigma if noise else 0.0
    gen_init = torch.Generator().manual_seed(stage_seed(seed, f"{name}/init"))
    gen_noise = torch.Generator(device=device).manual_seed(stage_seed(seed, f"{name}/noise"))
    gen_scores = torch.Generator(device=device).manual_seed(stage_seed(seed, f"{name}/scores"))
    v0, ws, bs = init_params(n, p["dpr_dim"], p["dpr_hidden"], plan.layers, gen_init)
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
    starts = start_blocks(n, p["dpr_node_batch"], plan.steps)
    heads, tails, taken = walk_pairs(
        adj.indptr, adj.indices, starts, p["dpr_walks"], p["dpr_walk_length"],
        stage_rng(seed, f"{name}/walks"),
    )  # fmt: skip
    # A tail is reached over an edge, so d_in(tail) > 0 and Eq. 5's division is safe (A21).
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
    """Whether V learned anything from the graph (spec §9.3). Non-private: computed from the
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
