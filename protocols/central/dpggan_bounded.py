"""DPGGAN / DPGVAE with a proven edge-level bound (``dpg_training bounded``, the default): the
degree-bounded sampled graph, the per-node ego records and the accounting. The training itself
is :mod:`.dpggan_bounded_train`; the argument is docs/privacy/dpggan.md.

Why: the paper's training (Yang et al., IJCAI 2021, Alg. 1) has no finite bound — one edge
reaches every record of a batch through the 2-hop encoder and the sum-pooled discriminator, and
the encoder and discriminator see the graph without noise. Here every data-touching part reads
the graph only through **records** whose reach is bounded by construction (the technique of
Daigavane et al., "Node-Level Differentially Private Graph Neural Networks", 2021, and of GAP,
Sajadmanesh et al., USENIX Security 2023, §4.3):

1. **Degree bound by neighbour sampling, fixed before training.** Every pair {i, j}
   gets a priority π(i, j) = π(j, i), a hash of the run's salt and the pair alone (never
   of the data).
   Node i keeps T(i): its ≤ D neighbours of smallest π(i, ·); the sampled graph G̃ keeps an
   edge iff each endpoint keeps the other (``bounded_graph``). Every degree of G̃ is ≤ D, and
   adding or removing edge (u, v) changes only T(u) and T(v), each by at most one entry in and
   one out: G̃ changes in at most 3 edges, each incident to u or v.
2. **Records.** Node i's record is its ego graph in G̃: i, its sampled neighbours (ordered by
   π(i, ·)) and the G̃-edges among them, padded to S = D + 1 slots (``ego_records``). A record
   changes only if a changed G̃-edge lies inside it, i.e. only for i ∈ {u, v} ∪ Ñ(u) ∪ Ñ(v):
   at most k = 2D + 2 records (:func:`group_size`; a test checks it on every edge of random
   graphs).
3. **One mechanism for every part.** Each step Poisson-samples records at rate q; each sampled
   record's gradient of the encoder, the generator *and* the discriminator (one vector) is
   clipped to C; one Gaussian N(0, σ²C²·I) is added to the sum. One edge changes ≤ k records,
   so a step is dominated by the Poisson-subsampled Gaussian of rate q_k = 1 − (1 − q)^k and
   multiplier σ/k between the real data and the data with those k records zeroed; the edge's
   two worlds are two such hops apart (group privacy: (2ε₁, (1 + e^{ε₁})δ₁)). dp-accounting
   (RDP or PLD) accounts the T steps of one hop (:func:`bounded_plan`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..laplace import MIN_EPSILON
from ..params import Params, ProtocolParameterError

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def group_size(degree_bound: int) -> int:
    """k = 2D + 2: the most ego records one edge can change (module doc, point 2)."""
    return 2 * int(degree_bound) + 2


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser (a bijection of uint64 with full avalanche)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def priorities(a: np.ndarray, b: np.ndarray, salt: int) -> np.ndarray:
    """π(a, b) = π(b, a): a hash of the salt and the unordered pair only (so one pair's
    priority never depends on the graph; symmetric, so that the endpoints of a low-priority
    edge both keep it and the mutual rule loses fewer edges)."""
    a, b = np.minimum(a, b), np.maximum(a, b)
    with np.errstate(over="ignore"):
        key = a.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + _mix(
            b.astype(np.uint64) ^ np.uint64(salt & 0xFFFFFFFFFFFFFFFF)
        )
    return _mix(key & _MASK64)


def kept_neighbours(edges: np.ndarray, n: int, degree_bound: int, salt: int) -> np.ndarray:
    """The directed pairs (i, j), j ∈ T(i): each node's ≤ D neighbours of smallest π(i, ·),
    sorted by (i, π(i, j))."""
    if edges.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    directed = np.concatenate([edges, edges[:, ::-1]]).astype(np.int64)
    pr = priorities(directed[:, 0], directed[:, 1], salt)
    directed = directed[np.lexsort((directed[:, 1], pr, directed[:, 0]))]
    src = directed[:, 0]
    first = np.r_[0, np.flatnonzero(np.diff(src)) + 1]
    counts = np.diff(np.r_[first, src.size])
    rank = np.arange(src.size) - np.repeat(first, counts)
    return directed[rank < degree_bound]


def bounded_graph(edges: np.ndarray, n: int, degree_bound: int, salt: int) -> np.ndarray:
    """G̃: the edges (u < v) kept by both endpoints (every degree ≤ D)."""
    kept = kept_neighbours(edges, n, degree_bound, salt)
    if kept.size == 0:
        return np.zeros((0, 2), dtype=np.int64)
    lo, hi = kept.min(1), kept.max(1)
    key, count = np.unique(lo * n + hi, return_counts=True)
    mutual = key[count == 2]
    return np.stack([mutual // n, mutual % n], axis=1)


def ego_records(
    edges: np.ndarray, n: int, degree_bound: int, salt: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every node's ego record in G̃: ``slots`` (n × S node ids, −1 padded; slot 0 the node,
    then its sampled neighbours by π(i, ·)) and ``adj`` (n × S × S, 0/1 float32)."""
    s = degree_bound + 1
    tilde = bounded_graph(edges, n, degree_bound, salt)
    slots = np.full((n, s), -1, dtype=np.int64)
    slots[:, 0] = np.arange(n)
    adj = np.zeros((n, s, s), dtype=np.float32)
    if tilde.size == 0:
        return slots, adj
    directed = np.concatenate([tilde, tilde[:, ::-1]])
    pr = priorities(directed[:, 0], directed[:, 1], salt)
    directed = directed[np.lexsort((directed[:, 1], pr, directed[:, 0]))]
    src = directed[:, 0]
    first = np.r_[0, np.flatnonzero(np.diff(src)) + 1]
    rank = np.arange(src.size) - np.repeat(first, np.diff(np.r_[first, src.size]))
    slots[src, rank + 1] = directed[:, 1]
    keys = np.sort(np.concatenate([tilde[:, 0] * n + tilde[:, 1], tilde[:, 1] * n + tilde[:, 0]]))
    a, b = slots[:, :, None], slots[:, None, :]
    pair = (a >= 0) & (b >= 0)
    key = np.where(pair, a * n + b, -1)
    pos = np.clip(np.searchsorted(keys, key), 0, keys.size - 1)
    adj[(keys[pos] == key) & pair] = 1.0
    return slots, adj


@dataclass(frozen=True)
class BoundedPlan:
    """σ, T and the proven ε of one bounded run (data-independent: q, D and T are parameters).

    ``epsilon_train`` = 2·``epsilon_hop`` at δ_train = (1 + e^{ε_hop})·``delta_hop``; the
    release's ε is ``epsilon_train`` + ``epsilon_count``, its δ ``delta`` (≥ δ_train)."""

    sigma: float
    steps: int
    epsilon_train: float
    epsilon_count: float
    delta: float
    group: int
    q_group: float
    epsilon_hop: float
    delta_hop: float
    epsilon_paper: float = math.nan  # no paper figure: the paper has no such training


def hop_epsilon(
    sigma: float, q: float, group: int, steps: int, delta_hop: float, acc: str
) -> float:
    """ε of one hop (≤ ``group`` records zeroed) over T steps: dp-accounting's Poisson-subsampled
    Gaussian of rate 1 − (1 − q)^group and multiplier σ/group (docs/privacy/dpggan.md)."""
    from .dpsgd import sgd_epsilon

    return sgd_epsilon(sigma / group, 1.0 - (1.0 - q) ** group, steps, delta_hop, acc)


def bounded_plan(p: Params, name: str) -> BoundedPlan:
    """σ (``dpg_calibration sigma``) or T (``steps``) such that the proven ε of the training is
    within ε_train = ε − ε_M; a one-line error if unreachable."""
    from .dpsgd import calibrate_noise_multiplier

    eps, delta, q, acc = p.epsilon, p.delta, p.dpg_q, p.accountant
    share = p.dpg_edge_count_share if p.dpg_edge_selection == "topk_dp" else 0.0
    eps_count = share * eps
    eps_train = eps - eps_count
    if share and eps_count < MIN_EPSILON:
        raise ProtocolParameterError(
            f"{name}: the edge count's ε_M = {eps_count:.3g} (dpg_edge_count_share × ε) is "
            f"below the discrete Laplace mechanism's minimum {MIN_EPSILON:g}: raise epsilon"
        )
    k = group_size(p.dpg_degree_bound)
    q_k = 1.0 - (1.0 - q) ** k
    # δ of one hop fixed from the target so that the two hops' δ stays within δ
    delta_hop = delta / (1.0 + math.exp(eps_train / 2.0))
    if p.dpg_calibration == "sigma":
        steps = p.dpg_steps
        try:
            z = calibrate_noise_multiplier(eps_train / 2.0, delta_hop, q_k, steps, acc)
        except ProtocolParameterError as err:
            raise ProtocolParameterError(f"{name} (bounded, group k = {k}): {err}") from None
        sigma = z * k
    else:
        sigma = p.dpg_sigma

        def fits(t: int) -> bool:
            return hop_epsilon(sigma, q, k, t, delta_hop, acc) <= eps_train / 2.0

        if not fits(1):
            raise ProtocolParameterError(
                f"{name}: ε_train = {eps_train:.4g} is unreachable with σ = {sigma:g} and "
                f"group k = {k} (D = {p.dpg_degree_bound}): raise dpg_sigma or epsilon, or use "
                "dpg_calibration sigma"
            )
        lo, hi = 1, p.dpg_steps
        if fits(hi):
            lo = hi
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
        steps = lo
    eps_hop = hop_epsilon(sigma, q, k, steps, delta_hop, acc)
    return BoundedPlan(
        sigma=float(sigma), steps=int(steps), epsilon_train=2.0 * eps_hop,
        epsilon_count=float(eps_count), delta=float(delta), group=k, q_group=q_k,
        epsilon_hop=float(eps_hop), delta_hop=float(delta_hop),
    )  # fmt: skip
