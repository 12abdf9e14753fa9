"""References for LDPGen's server (Qin et al., ACM CCS 2017, graph generation as Blink_GNN
re-implements it: https://github.com/zhxchd/Blink_GNN): literal dense n × n edge probabilities
and per-group sums computed by loops over nodes and sets (small graphs only), and the
closed-form expected edge counts the sampling tests hold the generators to."""

from __future__ import annotations

import numpy as np


def dense_group_degrees(adj: np.ndarray, groups: np.ndarray, k: int) -> np.ndarray:
    """δ[u, g] = Σ_v A[u, v]·[groups[v] = g], by loops."""
    n = adj.shape[0]
    out = np.zeros((n, k), dtype=np.int64)
    for u in range(n):
        for v in range(n):
            if adj[u, v]:
                out[u, groups[v]] += 1
    return out


def dense_reexpress(delta1, old, new, k_old, k_new) -> np.ndarray:
    """δ̂_u[i] = Σ_j δ1_u[j]·|B_j ∩ C_i|/|B_j|, with the sets built explicitly."""
    n = delta1.shape[0]
    b_sets = [set(np.flatnonzero(old == j).tolist()) for j in range(k_old)]
    c_sets = [set(np.flatnonzero(new == i).tolist()) for i in range(k_new)]
    out = np.zeros((n, k_new))
    for u in range(n):
        for i in range(k_new):
            total = 0.0
            for j in range(k_old):
                if b_sets[j]:
                    total += delta1[u, j] * len(b_sets[j] & c_sets[i]) / len(b_sets[j])
            out[u, i] = total
    return out


def dense_block_factors(dhat, groups, k) -> np.ndarray:
    """M[a][b] = (S_b/|C_b|)/(S_b + T_ab)."""
    n = dhat.shape[0]
    m = np.zeros((k, k))
    for a in range(k):
        for b in range(k):
            size_b = sum(1 for v in range(n) if groups[v] == b)
            s_b = sum(dhat[u, b] for u in range(n))
            t_ab = sum(dhat[u, b] for u in range(n) if groups[u] == a)
            if size_b and s_b + t_ab > 0:
                m[a, b] = (s_b / size_b) / (s_b + t_ab)
    return m


def dense_probabilities(dhat, groups, m) -> np.ndarray:
    """p_uv = clip(δ̂_u[c(v)]·M[c(u)][c(v)], 0, 1) for u ≠ v, p_uu = 0: the n × n matrix."""
    n = dhat.shape[0]
    p = np.zeros((n, n))
    for u in range(n):
        for v in range(n):
            if u != v:
                p[u, v] = min(max(dhat[u, groups[v]] * m[groups[u], groups[v]], 0.0), 1.0)
    return p


def block_sums(p: np.ndarray, groups: np.ndarray, k: int) -> np.ndarray:
    """Σ_{u∈C_a, v∈C_b} p_uv."""
    out = np.zeros((k, k))
    for u in range(p.shape[0]):
        for v in range(p.shape[0]):
            out[groups[u], groups[v]] += p[u, v]
    return out


def dense_chung_lu_expected(dhat, groups, k) -> np.ndarray:
    """Σ p_uv of the symmetric generator per block pair a ≤ b, unordered pairs counted once:
    p_uv = δ̂_u[c(v)]·δ̂_v[c(u)]/Ê_{c(u)c(v)}, Ê_ab = ½(Σ_{u∈C_a} δ̂_u[b] + Σ_{v∈C_b} δ̂_v[a])."""
    n = dhat.shape[0]
    e = np.zeros((k, k))
    for a in range(k):
        for b in range(k):
            e[a, b] = 0.5 * (
                sum(dhat[u, b] for u in range(n) if groups[u] == a)
                + sum(dhat[v, a] for v in range(n) if groups[v] == b)
            )
    out = np.zeros((k, k))
    for u in range(n):
        for v in range(u + 1, n):
            a, b = sorted((groups[u], groups[v]))
            if e[a, b] > 0:
                out[a, b] += dhat[u, groups[v]] * dhat[v, groups[u]] / e[a, b]
    return out


def expected_directed_counts(q: np.ndarray, groups: np.ndarray, k: int) -> np.ndarray:
    """E[#sampled ordered edges from C_a to C_b] = Σ_{u∈C_a} q_ub·|C_b \\ {u}|."""
    sizes = np.bincount(groups, minlength=k).astype(np.float64)
    pool = sizes[None, :] - (groups[:, None] == np.arange(k)[None, :])
    out = np.zeros((k, k))
    np.add.at(out, groups, q * pool)
    return out


def chung_lu_expected(dhat: np.ndarray, groups: np.ndarray, k: int) -> np.ndarray:
    """Expected number of endpoint pairs per block pair a ≤ b of the symmetric generator (before
    duplicates collapse): W_a·W_b/Ê_ab for a < b (W_a = Σ_{u∈C_a} δ̂_u[b], W_b = Σ_{v∈C_b} δ̂_v[a],
    Ê_ab = (W_a + W_b)/2) and (W_a² − Σ_u δ̂_u[a]²)/(2W_a) within C_a. Upper triangle only."""
    t = np.zeros((k, k))
    np.add.at(t, groups, dhat)  # t[a, b] = Σ_{u∈C_a} δ̂_u[b]
    sq = np.zeros(k)
    np.add.at(sq, groups, dhat[np.arange(groups.shape[0]), groups] ** 2)
    out = np.zeros((k, k))
    for a in range(k):
        for b in range(a, k):
            if a == b:
                w = t[a, a]
                out[a, a] = (w * w - sq[a]) / (2.0 * w) if w > 0 else 0.0
            else:
                wa, wb = t[a, b], t[b, a]
                out[a, b] = 2.0 * wa * wb / (wa + wb) if wa + wb > 0 else 0.0
    return out
