"""LDPGen's server-side maths (Qin et al., CCS'17, as Blink_GNN implements it:
github.com/zhxchd/Blink_GNN): the number of clusters k1, k-means over the noisy degree vectors,
and phase 3, the block generator. All of it is post-processing of the nodes' reports; the
protocol itself (rounds, budget, messages) is :mod:`.ldpgen`. numpy only.

The generator (phase 3), after k-means with k1 clusters of the n × k1 noisy matrix gave the
final partition ξ2 (C_i):
  1. δ1 rounded and clipped to integers in [0, n−1];
  2. δ̂_u[i] = Σ_j δ1_u[j]·|B_j ∩ C_i|/|B_j| (B_j = ξ1 groups; an empty B_j contributes 0);
  3. ``generator="blinkgnn"`` (default, Blink_GNN's): M[a][b] = (S_b/|C_b|)/(S_b + T_ab) with
     S_b = Σ_u δ̂_u[b], T_ab = Σ_{u∈C_a} δ̂_u[b]; p_uv = clip(δ̂_u[c(v)]·M[c(u)][c(v)], 0, 1) for
     every ordered pair u ≠ v, sampled independently. p_uv depends on (u, c(v)) only, so node u's
     number of out-edges into C_b is Binomial(|C_b \\ {u}|, q_ub) and their heads are uniform
     without replacement in C_b \\ {u}: exact and O(n·k1 + |E|), never n × n. The directed graph
     is symmetrised by OR (Release edges are undirected); both counts are in the stats.
     ``generator="chunglu"`` (a symmetric alternative, ours): for the block pair
     (a, b), p_uv = δ̂_u[b]·δ̂_v[a]/Ê_ab with Ê_ab = ½(Σ_{u∈C_a} δ̂_u[b] + Σ_{v∈C_b} δ̂_v[a]);
     sampled as a Poisson number of endpoint pairs with mean Σ p_uv per block pair
     (unordered pairs within a block), endpoints drawn ∝ δ̂, self-pairs and duplicates dropped.
"""

from __future__ import annotations

import math

import numpy as np

from ..sorting import union_ints

KMEANS_RESTARTS = 4
KMEANS_MAX_ITER = 300
F_COEF = 2.0 * (1.0 + math.sqrt(5.0))  # the 2(1+√5) of f(D)


def choose_k1(noisy0: np.ndarray, eps2: float, n: int) -> tuple[int, float]:
    """Blink_GNN's rule: k1 = clip(⌈Σ_η (N_η/n')·f(η/2)⌉, 1, n), η = round(Σ_g δ0[g]) clipped to
    [1, n−1], f(D) = D + (D² − 2(1+√5)D + 1)/ε2, over the n' nodes that reported. Returns k1 and
    the unclipped mean."""
    if noisy0.shape[0] == 0:
        return 1, 0.0
    eta = np.clip(np.round(noisy0.sum(axis=1)), 1, max(1, n - 1))
    d = eta / 2.0
    value = float(np.mean(d + (d * d - F_COEF * d + 1.0) / eps2))
    return int(min(max(math.ceil(value), 1), n)), value


def kmeans(
    data: np.ndarray, k: int, rng: np.random.Generator, restarts: int = KMEANS_RESTARTS
) -> np.ndarray:
    """Labels of k-means (k-means++ seeding, Lloyd until the labels stop changing or
    ``KMEANS_MAX_ITER``), the best of ``restarts`` by inertia; deterministic given ``rng``.
    An emptied cluster is re-seeded with the point farthest from its centre."""
    x = np.asarray(data, dtype=np.float64)
    n = x.shape[0]
    k = int(min(max(k, 1), n))
    if k == 1 or n == 0:
        return np.zeros(n, dtype=np.int64)
    sq = (x * x).sum(axis=1)
    best, best_inertia = None, math.inf
    for _ in range(max(1, restarts)):
        centres = np.empty((k, x.shape[1]))
        centres[0] = x[rng.integers(n)]
        dmin = ((x - centres[0]) ** 2).sum(axis=1)
        for c in range(1, k):
            total = dmin.sum()
            idx = int(rng.choice(n, p=dmin / total)) if total > 0 else int(rng.integers(n))
            centres[c] = x[idx]
            dmin = np.minimum(dmin, ((x - centres[c]) ** 2).sum(axis=1))
        labels = np.full(n, -1, dtype=np.int64)
        for _ in range(KMEANS_MAX_ITER):
            dist = sq[:, None] - 2.0 * x @ centres.T + (centres * centres).sum(axis=1)[None, :]
            new = dist.argmin(axis=1)
            if np.array_equal(new, labels):
                break
            labels = new
            counts = np.bincount(labels, minlength=k)
            for c in np.flatnonzero(counts == 0):
                far = int(dist[np.arange(n), labels].argmax())
                labels[far] = c
                counts = np.bincount(labels, minlength=k)
            sums = np.zeros((k, x.shape[1]))
            np.add.at(sums, labels, x)
            centres = sums / counts[:, None]
        inertia = float(((x - centres[labels]) ** 2).sum())
        if inertia < best_inertia:
            best, best_inertia = labels.copy(), inertia
    return best


def reexpress(
    delta1: np.ndarray, old_groups: np.ndarray, new_groups: np.ndarray, k_old: int, k_new: int
) -> np.ndarray:
    """δ̂_u[i] = Σ_j δ1_u[j]·|B_j ∩ C_i|/|B_j| (B_j = old groups, C_i = new ones)."""
    overlap = np.zeros((k_old, k_new))
    np.add.at(overlap, (old_groups, new_groups), 1.0)
    size = overlap.sum(axis=1)
    w = np.divide(overlap, size[:, None], out=np.zeros_like(overlap), where=size[:, None] > 0)
    return np.asarray(delta1, dtype=np.float64) @ w


def block_factors(dhat: np.ndarray, groups: np.ndarray, k: int) -> np.ndarray:
    """Blink_GNN's M[a][b] = (S_b/|C_b|)/(S_b + T_ab); 0 where |C_b| = 0 or S_b + T_ab = 0."""
    sizes = np.bincount(groups, minlength=k).astype(np.float64)
    t = np.zeros((k, k))
    np.add.at(t, groups, dhat)  # t[a, b] = T_ab
    s = dhat.sum(axis=0)  # S_b
    num = np.divide(s, sizes, out=np.zeros(k), where=sizes > 0)[None, :]
    den = s[None, :] + t
    return np.divide(np.broadcast_to(num, den.shape), den, out=np.zeros((k, k)), where=den > 0)


def out_probabilities(dhat: np.ndarray, groups: np.ndarray, m: np.ndarray) -> np.ndarray:
    """q[u, b] = clip(δ̂_u[b]·M[c(u)][b], 0, 1): p_uv for every v ∈ C_b, v ≠ u."""
    return np.clip(dhat * m[groups], 0.0, 1.0)


def sample_distinct(
    counts: np.ndarray, pools: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """For every row r, ``counts[r]`` distinct ranks uniform in [0, pools[r]). Returns (row,
    rank) pairs sorted by row then rank. Rows asking for more than half their pool sample the
    ranks they leave out instead, so every redraw loop keeps collision odds ≤ ½."""
    counts = np.asarray(counts, dtype=np.int64)
    pools = np.asarray(pools, dtype=np.int64)
    if (counts > pools).any() or (counts < 0).any():
        raise ValueError("cannot draw more distinct ranks than the pool holds")
    big = 2 * counts > pools
    rows_out: list[np.ndarray] = []
    ranks_out: list[np.ndarray] = []
    want = np.where(big, pools - counts, counts)
    have_rows = np.zeros(0, dtype=np.int64)
    have_ranks = np.zeros(0, dtype=np.int64)
    deficit = want.copy()
    width = int(pools.max()) + 1 if pools.size else 1
    while deficit.sum() > 0:
        rows = np.repeat(np.arange(counts.shape[0]), deficit)
        ranks = (rng.random(rows.shape[0]) * pools[rows]).astype(np.int64)
        ranks = np.minimum(ranks, pools[rows] - 1)
        keys = union_ints(have_rows * width + have_ranks, rows * width + ranks)
        have_rows, have_ranks = keys // width, keys % width
        got = np.bincount(have_rows, minlength=counts.shape[0])
        # A row draws only its deficit, so it never passes ``want``; the distinct ranks kept so
        # far are a uniform subset (by symmetry), so the final set is uniform too.
        deficit = want - got
    small = ~big[have_rows]
    rows_out.append(have_rows[small])
    ranks_out.append(have_ranks[small])
    big_rows = np.flatnonzero(big)
    if big_rows.size:
        sizes = pools[big_rows]
        r = np.repeat(big_rows, sizes)
        offsets = np.repeat(np.cumsum(sizes) - sizes, sizes)
        rk = np.arange(r.shape[0]) - offsets
        excluded = have_rows[~small] * width + have_ranks[~small]
        keep = ~np.isin(r * width + rk, excluded)
        rows_out.append(r[keep])
        ranks_out.append(rk[keep])
    rows = np.concatenate(rows_out)
    ranks = np.concatenate(ranks_out)
    o = np.lexsort((ranks, rows))
    return rows[o], ranks[o]


def sample_directed(
    q: np.ndarray, groups: np.ndarray, k: int, rng: np.random.Generator
) -> np.ndarray:
    """Every ordered pair u ≠ v independently with probability q[u, c(v)]: per (u, b) a
    Binomial(|C_b \\ {u}|, q_ub) count of heads, uniform without replacement in C_b \\ {u}.
    Returns the directed edges as an int64 [m, 2] array (tail, head)."""
    n = groups.shape[0]
    order = np.argsort(groups, kind="stable")  # members of C_b: order[start[b]:start[b+1]]
    sizes = np.bincount(groups, minlength=k)
    start = np.concatenate([[0], np.cumsum(sizes)])
    pos_in_group = np.empty(n, dtype=np.int64)
    pos_in_group[order] = np.arange(n) - start[groups[order]]
    parts = []
    for b in range(k):
        if sizes[b] == 0:
            continue
        own = groups == b
        pools = sizes[b] - own.astype(np.int64)
        counts = rng.binomial(pools, q[:, b])
        rows, ranks = sample_distinct(counts, pools, rng)
        skip = own[rows] & (ranks >= pos_in_group[rows])
        heads = order[start[b] + ranks + skip]
        parts.append(np.stack([rows, heads], axis=1))
    if not parts:
        return np.zeros((0, 2), dtype=np.int64)
    return np.concatenate(parts).astype(np.int64)


def sample_chung_lu(
    dhat: np.ndarray, groups: np.ndarray, k: int, rng: np.random.Generator
) -> np.ndarray:
    """The symmetric block Chung–Lu sample: per block pair a ≤ b a Poisson number of endpoint
    pairs (u ∈ C_a drawn ∝ δ̂_u[b], v ∈ C_b ∝ δ̂_v[a]; within a block, Poisson(W_a/2) pairs
    with self-pairs dropped). Returns the raw pairs (duplicates kept; no self-pairs)."""
    order = np.argsort(groups, kind="stable")
    sizes = np.bincount(groups, minlength=k)
    start = np.concatenate([[0], np.cumsum(sizes)])
    parts = []

    def draw(members: np.ndarray, weights: np.ndarray, count: int) -> np.ndarray:
        cum = np.cumsum(weights)
        idx = np.searchsorted(cum, rng.random(count) * cum[-1], side="right")
        return members[np.minimum(idx, members.shape[0] - 1)]

    for a in range(k):
        ma = order[start[a] : start[a + 1]]
        for b in range(a, k):
            mb = order[start[b] : start[b + 1]]
            if ma.size == 0 or mb.size == 0:
                continue
            wa, wb = dhat[ma, b], dhat[mb, a]
            sa, sb = float(wa.sum()), float(wb.sum())
            if sa <= 0 or sb <= 0:
                continue
            mean = sa / 2.0 if a == b else 2.0 * sa * sb / (sa + sb)
            count = int(rng.poisson(mean))
            if count == 0:
                continue
            u, v = draw(ma, wa, count), draw(mb, wb, count)
            keep = u != v
            parts.append(np.stack([u[keep], v[keep]], axis=1))
    if not parts:
        return np.zeros((0, 2), dtype=np.int64)
    return np.concatenate(parts).astype(np.int64)
