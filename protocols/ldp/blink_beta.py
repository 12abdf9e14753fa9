"""Blink's β-model (Zhu, Tan, Xiao, CCS'23; official code github.com/zhxchd/Blink_GNN): the
fit of π_ij = σ(β_i + β_j) to the noisy degrees, without the n² loop.

Blink's Jacobi fixed point β_i ← log d̃_i − log Σ_{j≠i} 1/(e^{β_i} + e^{−β_j}) from β = 0 needs
the row sums F_i = Σ_{j≠i} σ(β_i + β_j) at every iteration. They split by the size of
s = β_i + β_j: pairs with |s| < 2 are summed exactly, pairs with s ≤ −2 through the alternating
series σ(s) = Σ_{k≥1} (−1)^{k+1} e^{ks} truncated after 18 terms (relative error
≲ e^{−36} ≈ 3e-16) over prefix sums of e^{kβ_j} in sorted order, and pairs with s ≥ 2 through
σ(s) = 1 − σ(−s) over suffix sums of e^{−kβ_j}: O(18·n + n log n + #pairs with |s| < 2) per
iteration instead of n². Nodes of equal (clamped) degree have equal β throughout, so all but the
prefix sums run once per distinct degree (a few dozen values), and the exact band costs
O(#degrees · band); the prefix sums still run over the n sorted nodes, so that β is bit for bit
the node-by-node fixed point. numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

#: The β-model fit: Blink_GNN's 200 Jacobi iterations, stopped early once max|Δβ| < tol.
BETA_MAX_ITER = 200
BETA_TOL = 1e-6
#: Pairs with |β_i + β_j| < SERIES_CUT are summed exactly; the others by SERIES_TERMS terms of
#: a series (truncation error relative to σ below ~e^{−SERIES_CUT·SERIES_TERMS} = e^{−36}).
SERIES_CUT = 2.0
SERIES_TERMS = 18
#: With |β| ≤ this, every power e^{kβ}, k ≤ 18, stays inside float64's normal range
#: (|exponent| ≤ 702); beyond it the row sums are computed directly.
SERIES_MAX_ABS = 39.0
_BLOCK = 1 << 20


def sigmoid(z: np.ndarray) -> np.ndarray:
    """σ(z) = 1 / (1 + e^{−z}) in float64 (the one formula used everywhere, so that the
    sparse and dense computations of P_ij agree bit for bit)."""
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-np.asarray(z, dtype=np.float64)))


def sigmoid_row_sums_exact(b: np.ndarray, block: int = _BLOCK) -> np.ndarray:
    """F_i = Σ_{j≠i} σ(b_i + b_j), directly: O(n²) time, O(block) memory."""
    b = np.asarray(b, dtype=np.float64)
    n = b.shape[0]
    out = np.empty(n)
    rows = max(1, block // max(n, 1))
    for a in range(0, n, rows):
        z = b[a : a + rows, None] + b[None, :]
        out[a : a + rows] = sigmoid(z).sum(axis=1) - sigmoid(2.0 * b[a : a + rows])
    return out


def sigmoid_row_sums(b: np.ndarray, block: int = _BLOCK) -> np.ndarray:
    """F_i = Σ_{j≠i} σ(b_i + b_j) without the n² loop (see the module docstring).

    Computed once per distinct value of b (:func:`value_row_sums`), so nodes with equal b get
    bit-identical sums and ties in b stay ties in everything derived from it.
    """
    b = np.asarray(b, dtype=np.float64)
    if b.shape[0] == 0:
        return np.zeros(0)
    values, inverse, counts = np.unique(b, return_inverse=True, return_counts=True)
    return value_row_sums(values, counts, lambda: b, block)[inverse]


def value_row_sums(
    values: np.ndarray,
    counts: np.ndarray,
    nodes: Callable[[], np.ndarray],
    block: int = _BLOCK,
) -> np.ndarray:
    """F(v) = Σ_{j≠i} σ(v + b_j) for a node i with b_i = v, at each distinct value v of b.

    Args:
        values: the distinct values of b, ascending.
        counts: how many nodes hold each value.
        nodes: returns b itself, node by node (needed only beyond the series' range).
        block: pairs materialised at once.

    Bit for bit what a node-by-node evaluation gives (the series' prefix sums and the exact
    band are summed over the n sorted values, in order, as such an evaluation does), at the
    cost of O(#distinct values) instead of O(n) per node: the β-model's values are those of
    the clamped noisy degrees, a few dozen distinct integers.
    """
    values = np.asarray(values, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.int64)
    u = values.shape[0]
    n = int(counts.sum())
    if u == 1:  # all equal (the fit's start, β = 0): n − 1 equal terms
        return np.full(1, (n - 1) * sigmoid(2.0 * values[0]))
    if not (max(-float(values[0]), float(values[-1])) <= SERIES_MAX_ABS):
        return _value_row_sums_direct(values, nodes(), block)
    first = np.zeros(u + 1, dtype=np.int64)  # sorted position of each value's first node
    np.cumsum(counts, out=first[1:])
    # Sorted positions < lo: s = b_i + b_j < −cut (low series); ≥ hi: s ≥ cut (high series,
    # σ(s) = 1 − σ(−s)); in between: summed exactly. Both bounds fall between runs of equal
    # values, so the band is a range [glo, ghi) of values.
    glo = np.searchsorted(values, -SERIES_CUT - values, side="left")
    ghi = np.maximum(np.searchsorted(values, SERIES_CUT - values, side="left"), glo)
    lo, hi = first[glo], first[ghi]
    total = _band_sums(values, counts, glo, ghi, lo, hi, block)
    # Series parts: σ(s) = Σ_k (−1)^{k+1} e^{ks} for s < −cut over prefix sums of e^{k b_j},
    # and σ(s) = 1 − Σ_k (−1)^{k+1} e^{−ks} for s ≥ cut over suffix sums of e^{−k b_j}.
    # Powers by repeated products (a few ulps per power; cumprod multiplies in order), summed
    # smallest term first; the prefix sums run over the n sorted nodes (a sum of equal terms
    # is not their product), and only up to the longest prefix read.
    powers = np.cumprod(np.broadcast_to(np.exp(values), (SERIES_TERMS, u)), axis=0)
    inverse = np.cumprod(np.broadcast_to(1.0 / np.exp(values), (SERIES_TERMS, u)), axis=0)
    n_low, n_high = int(glo.max()), u - int(ghi.min())
    lows = powers * _term_prefix_sums(powers[:, :n_low], counts[:n_low], lo, block)
    top = _term_prefix_sums(inverse[:, ::-1][:, :n_high], counts[::-1][:n_high], n - hi, block)
    highs = inverse * top
    signs = np.where(np.arange(SERIES_TERMS) % 2 == 0, 1.0, -1.0)[::-1, None]
    low = _sequential_sum(signs * lows[::-1])
    high = _sequential_sum(signs * highs[::-1])
    return total + low + ((n - hi) - high) - sigmoid(2.0 * values)


def _band_sums(
    values: np.ndarray,
    counts: np.ndarray,
    glo: np.ndarray,
    ghi: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    block: int,
) -> np.ndarray:
    """The exact part of :func:`value_row_sums`: for each value, Σ σ(v + b_j) over the nodes
    j of the band of values [glo, ghi) (sorted positions [lo, hi))."""
    u = values.shape[0]
    total = np.zeros(u)
    # Exact part: σ(v + b_j) once per (value, band value), repeated once per node of the band
    # value, and summed in sorted order; by chunks of values, ~block terms at once.
    band = ghi - glo
    ends = np.cumsum(hi - lo)
    start = 0
    while start < u:
        limit = (ends[start - 1] if start else 0) + block
        stop = max(int(np.searchsorted(ends, limit, side="right")), start + 1)
        rows = np.arange(start, stop)
        c = band[rows]
        if c.sum():
            row_of = np.repeat(rows, c)
            offsets = np.repeat(np.cumsum(c) - c, c)
            col_of = np.arange(row_of.shape[0]) - offsets + np.repeat(glo[rows], c)
            vals = sigmoid(values[row_of] + values[col_of])
            times = counts[col_of]
            total[rows] += np.bincount(
                np.repeat(row_of - start, times),
                weights=np.repeat(vals, times),
                minlength=rows.shape[0],
            )
        start = stop
    return total


def _term_prefix_sums(
    terms: np.ndarray, counts: np.ndarray, at: np.ndarray, block: int
) -> np.ndarray:
    """For each row of ``terms`` (one value per run of equal nodes, ``counts`` nodes each), the
    sums of the first ``at`` nodes' terms, added node by node in order; ~block at once."""
    m = int(counts.sum())
    out = np.zeros((terms.shape[0], at.shape[0]))
    inside = at > 0
    rows = max(1, block // max(m, 1))
    for a in range(0, terms.shape[0], rows):
        sums = np.cumsum(np.repeat(terms[a : a + rows], counts, axis=1), axis=1)
        out[a : a + rows, inside] = sums[:, at[inside] - 1]
    return out


def _sequential_sum(rows: np.ndarray) -> np.ndarray:
    """0 + rows[0] + rows[1] + … in that order, per column."""
    acc = np.zeros((rows.shape[0] + 1, rows.shape[1]))
    acc[1:] = rows
    return np.cumsum(acc, axis=0)[-1]


def _value_row_sums_direct(values: np.ndarray, b: np.ndarray, block: int) -> np.ndarray:
    """F(v) by the direct sum over every node (as :func:`sigmoid_row_sums_exact` sums a row)."""
    n = b.shape[0]
    out = np.empty(values.shape[0])
    rows = max(1, block // max(n, 1))
    for a in range(0, values.shape[0], rows):
        v = values[a : a + rows]
        out[a : a + rows] = sigmoid(v[:, None] + b[None, :]).sum(axis=1) - sigmoid(2.0 * v)
    return out


def fit_beta(
    degrees: np.ndarray,
    max_iter: int = BETA_MAX_ITER,
    tol: float = BETA_TOL,
    row_sums: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Blink's β-model fit on (already clamped) degrees: the Jacobi fixed point
    β_i ← log d_i − log Σ_{j≠i} 1/(e^{β_i} + e^{−β_j}) = log d_i − log F_i(β) + β_i from β = 0,
    until max|Δβ| < tol or ``max_iter`` iterations.

    Nodes of equal degree have equal β at every iteration, so the fit runs once per distinct
    degree (:func:`value_row_sums`, bit for bit the node-by-node fixed point); ``row_sums``,
    a node-by-node F (e.g. :func:`sigmoid_row_sums_exact`), runs it node by node instead.
    """
    d = np.asarray(degrees, dtype=np.float64)
    if row_sums is not None:
        beta = np.zeros(d.shape[0])
        logd = np.log(d)
        step = lambda b: logd - np.log(row_sums(b)) + b  # noqa: E731
    else:
        # One entry per distinct degree; equal β of different degrees are merged for F.
        degree_values, beta_of, counts = np.unique(d, return_inverse=True, return_counts=True)
        beta = np.zeros(degree_values.shape[0])
        logd = np.log(degree_values)

        def step(b: np.ndarray) -> np.ndarray:
            values, inverse = np.unique(b, return_inverse=True)
            weights = np.zeros(values.shape[0], dtype=np.int64)
            np.add.at(weights, inverse, counts)
            sums = value_row_sums(values, weights, lambda: b[beta_of])[inverse]
            return logd - np.log(sums) + b

    change = math.inf
    iterations = 0
    while iterations < max_iter:
        new = step(beta)
        change = float(np.abs(new - beta).max()) if new.size else 0.0
        beta = new
        iterations += 1
        if change < tol:
            break
    if row_sums is None:
        beta = beta[beta_of]
    return beta, {"iterations": iterations, "last_change": change, "converged": change < tol}
