"""Literal O(n²) Blink (Blink_GNN's server, in float64) and plain RR, used only to check the
sparse implementations; and the node-by-node series row sums the grouped fit must reproduce
bit for bit."""

from __future__ import annotations

import math

import numpy as np

from ldpgraph.protocols.ldp.blink_beta import (
    SERIES_CUT,
    SERIES_MAX_ABS,
    SERIES_TERMS,
    sigmoid,
    sigmoid_row_sums_exact,
)


def dense_beta(degrees: np.ndarray, max_iter: int = 200, tol: float = 1e-6) -> np.ndarray:
    """Blink_GNN's fixed point as written there: r = 1/(e^{β_i} + e^{−β_j}),
    β ← log d − log(Σ_j r_ij − r_ii), from β = 0 (stopping once max|Δβ| < tol)."""
    d = np.asarray(degrees, dtype=np.float64)
    beta = np.zeros(d.shape[0])
    for _ in range(max_iter):
        r = 1.0 / (np.exp(beta)[:, None] + np.exp(-beta)[None, :])
        new = np.log(d) - np.log(r.sum(axis=1) - np.diag(r))
        change = np.abs(new - beta).max()
        beta = new
        if change < tol:
            break
    return beta


def clamp_and_impute(noisy: np.ndarray, has_degree: np.ndarray) -> np.ndarray:
    n = noisy.shape[0]
    d = np.clip(noisy, 1.0, n - 2.0)
    return np.where(has_degree, d, d[has_degree].mean())


def dense_posterior(
    beta: np.ndarray, bits: np.ndarray, observed: np.ndarray, eps_a: float
) -> np.ndarray:
    """P_ij = σ(γ_i + γ_j + 2ε_a k_ij), γ = β − ε_a·o, k = number of reported ones (rows of
    nodes that did not reply are ignored). Diagonal 0."""
    obs = observed.astype(np.float64)
    b = bits * observed[:, None]
    k = b + b.T
    gamma = beta - eps_a * obs
    z = (gamma[:, None] + gamma[None, :]) + 2.0 * eps_a * k
    with np.errstate(over="ignore"):
        prob = 1.0 / (1.0 + np.exp(-z))
    np.fill_diagonal(prob, 0.0)
    return prob


def bayes_posterior(
    beta: np.ndarray, bits: np.ndarray, observed: np.ndarray, eps_a: float
) -> np.ndarray:
    """The Bayes rule itself: π = σ(β_i + β_j), each observed bit contributes (1−p or p) under
    an edge and (p or 1−p) under no edge (Blink's pr_y_edge / pr_y_no_edge when both are)."""
    p = 1.0 / (math.exp(eps_a) + 1.0)
    s = beta[:, None] + beta[None, :]
    prior = np.exp(s) / (1.0 + np.exp(s))
    l_edge = np.ones_like(prior)
    l_none = np.ones_like(prior)
    for a, seen in ((bits, observed[:, None]), (bits.T, observed[None, :])):
        l_edge = np.where(seen, l_edge * np.where(a == 1, 1 - p, p), l_edge)
        l_none = np.where(seen, l_none * np.where(a == 1, p, 1 - p), l_none)
    prob = l_edge * prior / (l_edge * prior + l_none * (1 - prior))
    np.fill_diagonal(prob, 0.0)
    return prob


def dense_blink(
    noisy: np.ndarray,
    has_degree: np.ndarray,
    bits: np.ndarray,
    observed: np.ndarray,
    eps_a: float,
    variant: str,
    min_weight: float = 1e-3,
) -> dict:
    """Blink's release: edges i < j (and weights) of the variant, P, β, K and t (hybrid)."""
    beta = dense_beta(clamp_and_impute(noisy, has_degree))
    prob = dense_posterior(beta, bits, observed, eps_a)
    out = {"beta": beta, "prob": prob}
    if variant == "hard":
        keep = prob > 0.5
    elif variant == "soft":
        keep = prob >= min_weight
    else:
        big_k = int(math.floor(prob.sum()))
        flat = np.sort(prob.ravel())[::-1]
        t = flat[big_k - 1] if big_k > 0 else math.inf
        keep = prob >= t
        out["K"], out["t"] = big_k, t
    iu, ju = np.nonzero(np.triu(keep, k=1))
    out["edges"] = np.stack([iu, ju], axis=1).astype(np.int64)
    out["weight"] = prob[iu, ju]
    return out


def dense_fr(x: np.ndarray, prob: np.ndarray, feat_obs: np.ndarray, steps: int) -> np.ndarray:
    """HoGS Algorithm 3 on Blink's P: V_i = {j : P_ij ≥ 0.5}, among nodes with features."""
    both = feat_obs[:, None] & feat_obs[None, :]
    w = np.where((prob >= 0.5) & both, prob, 0.0)
    total = w.sum(axis=1)
    out = np.asarray(x, dtype=np.float64).copy()
    for _ in range(steps):
        agg = w @ out
        out = np.where(total[:, None] > 0, agg / np.where(total > 0, total, 1)[:, None], out)
    return out.astype(np.float32)


def dense_rr(bits: np.ndarray, combine: str) -> np.ndarray:
    """Edges i < j of the combined RR graph from the n × n reported bits."""
    if combine == "or":
        adj = (bits + bits.T) > 0
    elif combine == "and":
        adj = (bits * bits.T) > 0
    else:  # lower: the pair {i, j}, i < j, takes the report of j (the larger id) about i
        adj = np.tril(bits, k=-1).T > 0
    iu, ju = np.nonzero(np.triu(adj, k=1))
    return np.stack([iu, ju], axis=1).astype(np.int64)


def sigmoid_row_sums_per_node(b: np.ndarray, block: int = 1 << 20) -> np.ndarray:
    """F_i = Σ_{j≠i} σ(b_i + b_j) node by node: exact band |b_i + b_j| < cut summed in sorted
    order, the rest by the alternating series over prefix sums of all n sorted nodes (the
    sparse server's former per-node form, kept to check the per-value form bit for bit)."""
    b = np.asarray(b, dtype=np.float64)
    n = b.shape[0]
    if n == 0:
        return np.zeros(0)
    lo_b, hi_b = float(b.min()), float(b.max())
    if lo_b == hi_b:
        return np.full(n, (n - 1) * sigmoid(2.0 * lo_b))
    if not (max(-lo_b, hi_b) <= SERIES_MAX_ABS):
        return sigmoid_row_sums_exact(b, block)
    order = np.argsort(b, kind="stable")
    bs = b[order]
    lo = np.searchsorted(bs, -SERIES_CUT - b, side="left")
    hi = np.maximum(np.searchsorted(bs, SERIES_CUT - b, side="left"), lo)
    total = np.zeros(n)
    count = hi - lo
    ends = np.cumsum(count)
    start_row = 0
    while start_row < n:
        limit = (ends[start_row - 1] if start_row else 0) + block
        stop = max(int(np.searchsorted(ends, limit, side="right")), start_row + 1)
        rows = np.arange(start_row, stop)
        c = count[rows]
        if c.sum():
            row_of = np.repeat(rows, c)
            offsets = np.repeat(np.cumsum(c) - c, c)
            pos = np.arange(row_of.shape[0]) - offsets + np.repeat(lo[rows], c)
            vals = sigmoid(b[row_of] + bs[pos])
            total[rows] += np.bincount(row_of - start_row, weights=vals, minlength=rows.shape[0])
        start_row = stop
    up_b, up_s = np.exp(b), np.exp(bs)
    down_b, down_s = 1.0 / up_b, 1.0 / up_s[::-1]
    pb, ps, qb, qs = up_b.copy(), up_s.copy(), down_b.copy(), down_s.copy()
    lows, highs = [], []
    prefix = np.zeros(n + 1)
    for term in range(SERIES_TERMS):
        np.cumsum(ps, out=prefix[1:])
        lows.append(pb * prefix[lo])
        np.cumsum(qs, out=prefix[1:])
        highs.append(qb * prefix[n - hi])
        if term + 1 < SERIES_TERMS:
            pb, ps, qb, qs = pb * up_b, ps * up_s, qb * down_b, qs * down_s
    low = np.zeros(n)
    high = np.zeros(n)
    for k in range(SERIES_TERMS, 0, -1):
        sign = 1.0 if k % 2 else -1.0
        low += sign * lows[k - 1]
        high += sign * highs[k - 1]
    return total + low + ((n - hi) - high) - sigmoid(2.0 * b)
