"""BLink (Zhu, Tan, Xiao, CCS'23) and its HoGS-paper variants FP-BLink and "BLink + FR".

Client (Blink's official code, github.com/zhxchd/Blink_GNN): node i sends its adjacency row through
Warner RR with ε_a (diagonal never reported) and its degree plus discrete Laplace noise at ε_d (an
integer, P[k] ∝ e^{−ε_d|k|}; deviation: Blink adds real-valued Lap(0, 1/ε_d), which on a float is
not ε-DP as implemented, see :mod:`ldpgraph.protocols.laplace`), with ε_d = degree_share·ε_g and ε_a
= (1 − degree_share)·ε_g. ``degree_share`` is Blink's δ; ε_g is the budget of the graph: ε itself
when features are public (``blink-*``), (1 − feature_share)·ε when they are private (``fp-blink``,
``blink-fr``; then the node also sends its features through HoGS's 1-bit mechanism with ε_f =
feature_share·ε, ``feature_share`` being HoGS's δ).

Server (the same code):
  A. clamp every noisy degree d̃_i to [1, n − 2];
  B. fit the β-model π_ij = σ(β_i + β_j) by Blink's Jacobi fixed point
     β_i ← log d̃_i − log Σ_{j≠i} 1/(e^{β_i} + e^{−β_j}) from β = 0, stopping when
     max|Δβ| < 1e-6 or after 200 iterations (the spec's rule; Blink_GNN always runs 200, and on
     real graphs the iteration is still moving at 200, so the cap is what decides);
  C. posterior P_ij = σ(β_i + β_j + 2ε_a(x_ij − 1)) with x_ij = Ã_ij + Ã_ji, the logit form of
     the Bayes rule with the likelihoods of Warner RR;
  D. the graph: ``hard`` keeps {P_ij > 0.5} unweighted; ``hybrid`` keeps the entries of P that
     are ≥ t, the K-th largest of the n² entries with K = ⌊Σ_{i,j} P_ij⌋ (ordered pairs; ties at t
     kept; K = 0 gives no edge), weighted by P; ``soft`` is the dense P in the paper (every pair
     weighted): here it keeps every pair with P_ij ≥ ``min_weight`` (default 1e-3), weighted by
     P, and reports the weight it drops (see below).
  E. (private features only) HoGS's feature reconstruction (Algorithm 3) with Blink's posterior
     as link weights: V_i = {j : P_ij ≥ 0.5}, ``steps`` passes (FP-BLink as the HoGS paper
     defines it, Section V), reusing :func:`ldpgraph.protocols.ldp.hogs.reconstruct_features`.

Nodes that did not reply. Their pairs keep the likelihood of the bits that did arrive (each
observed bit multiplies the odds by e^{±ε_a}, as HoGS's generalised likelihood does), and their
degree, needed by the β-model, is imputed as the mean of the clamped degrees that did arrive.
Both reduce to Blink exactly when every node replies.

How it stays sparse. Write o_i = 1 if node i's row arrived, k_ij ∈ {0, 1, 2} the number of
reported 1-bits about {i, j} and γ_i = β_i − ε_a·o_i. Then the posterior logit is
z_ij = γ_i + γ_j + 2ε_a·k_ij. Pairs with k ≥ 1 are the reported ones (a sparse set, the size
of the reports). For every other pair z = γ_i + γ_j, a sum of two per-node numbers, so "P_ij ≥ t"
is "γ_i + γ_j ≥ logit t": with γ sorted, a binary search per node enumerates exactly those
pairs, at a cost of O(n log n + output). The β-model's row sums Σ_j σ(β_i + β_j) split the same
way: pairs with |β_i + β_j| < 2 are summed exactly, pairs with s = β_i + β_j ≤ −2 through the
alternating series σ(s) = Σ_{k≥1} (−1)^{k+1} e^{ks} truncated after 18 terms (relative error
≲ e^{−36} ≈ 3e-16) over prefix sums of e^{kβ_j} in sorted order, and pairs with s ≥ 2 through
σ(s) = 1 − σ(−s) over suffix sums of e^{−kβ_j}: O(18·n + n log n + #pairs with |s| < 2) per
iteration instead of n². Nodes of equal (clamped) degree have equal β throughout, so all but the
prefix sums run once per distinct degree (a few dozen values), and the exact band costs
O(#degrees · band); the prefix sums still run over the n sorted nodes, so that β is bit for bit
the node-by-node fixed point. Hybrid's K needs Σ P over all pairs, which is the same row sum on
γ corrected on the reported pairs; its threshold t is found by enumerating the unreported pairs
with the largest sums (about K/2 of them, doubled until one falls below t, which proves that no
pair left out reaches t). The reported pairs are read block by block from the reports
(:class:`.reported_pairs.ReportedPairs`), never as a transpose or as arrays of all pairs (only
hybrid holds one float64 P per reported pair, to find t).

Soft, precisely: the release holds every pair with P_ij ≥ ``min_weight``; dropped are the pairs
below it, which in the dense soft graph would each carry a weight < ``min_weight``. Their total
weight, per node and overall, comes from the row sums and is reported in
``Release.stats["soft"]``. On Cora (mean weighted degree Σ_j P_ij ≈ 4) it is 0.016 per node
at ε = 5, degree_share = 0.1, and 0.53 per node at ε = 2, degree_share = 0.5; every kept weight
is the dense P_ij (to 1e-12: only the β-fit's summation order differs).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..accounting import ACCOUNTANT, bit_part, unit_summary
from ..base import (
    EPSILON,
    FEATURE_SHARE,
    STEPS,
    CuratorView,
    EpsilonParts,
    LdpProtocol,
    ReportSchema,
    RoundResult,
)
from ..batch import NodeBatch, ReportBatch
from ..laplace import MIN_EPSILON, DiscreteLaplace, composed_epsilon, discrete_laplace_part
from ..params import Param
from ..registry import register
from ..rng import DEGREE, node_rng
from ..support import noisy_count
from ..types import NodeView, PrivacyReport, Release, Report
from .assemble import adjacency_reports, extra_reports, feature_reports
from .hogs import FR_THRESHOLD, reconstruct_features
from .node_reports import noisy_features, noisy_row, rr_onebit_batch
from .reported_pairs import PairBlock, ReportedPairs

VARIANTS = ("hard", "soft", "hybrid")

DEGREE_SHARE = Param(
    "degree_share",
    float,
    0.1,
    "Blink's δ: share of the graph budget spent on the noisy degree (1: the degree prior alone, "
    "no adjacency report)",
    low=0.0,
    high=1.0,
    low_open=True,
)
MIN_WEIGHT = Param(
    "min_weight",
    float,
    1e-3,
    "soft variant: keeps the pairs with posterior P_ij >= this weight",
    low=0.0,
    high=1.0,
    low_open=True,
    high_open=True,
    server_side=True,
)
VARIANT = Param(
    "variant",
    str,
    "hard",
    "how the posterior becomes edges: hard (P > 0.5), soft (weighted by P), hybrid",
    choices=VARIANTS,
    server_side=True,
)
SHARE1 = Param(
    "share1",
    float,
    0.0,
    "FP-BLink's δ1 (0: 1 − feature-share): ε_f = (1 − δ1)ε",
    low=0.0,
    high=1.0,
)
SHARE2 = Param(
    "share2",
    float,
    0.0,
    "FP-BLink's δ2 (0: 1 − degree-share): ε_a = δ1·δ2·ε, ε_d = δ1(1 − δ2)ε",
    low=0.0,
    high=1.0,
)
_PRIVATE_FEATURES = (EPSILON, FEATURE_SHARE, DEGREE_SHARE, STEPS, VARIANT, MIN_WEIGHT)
#: The β-model fit: Blink_GNN's 200 Jacobi iterations, stopped early once max|Δβ| < tol.
BETA_MAX_ITER = 200
BETA_TOL = 1e-6
#: Name of the noisy degree in Report.extras.
DEGREE_FIELD = "degree"
#: Pairs with |β_i + β_j| < SERIES_CUT are summed exactly; the others by SERIES_TERMS terms of
#: a series (truncation error relative to σ below ~e^{−SERIES_CUT·SERIES_TERMS} = e^{−36}).
SERIES_CUT = 2.0
SERIES_TERMS = 18
#: With |β| ≤ this, every power e^{kβ}, k ≤ 18, stays inside float64's normal range
#: (|exponent| ≤ 702); beyond it the row sums are computed directly.
SERIES_MAX_ABS = 39.0
#: A release may not exceed this many pairs (the posterior graph would be nearly complete).
MAX_PAIRS = 50_000_000
_BLOCK = 1 << 20


def sigmoid(z: np.ndarray) -> np.ndarray:
    """σ(z) = 1 / (1 + e^{−z}) in float64 (the one formula used everywhere, so that the
    sparse and dense computations of P_ij agree bit for bit)."""
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-np.asarray(z, dtype=np.float64)))


# ----------------------------------------------------------------------------- row sums


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


# ----------------------------------------------------------------------- pair enumeration


def pairs_with_sum_at_least(g: np.ndarray, s: float) -> tuple[np.ndarray, np.ndarray]:
    """Every unordered pair i < j whose computed float sum g_i + g_j is ≥ s.

    Sorted g and one binary search per node (with a small margin, then an exact check of the
    computed sum): O(n log n + output)."""
    g = np.asarray(g, dtype=np.float64)
    n = g.shape[0]
    if n < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.argsort(g, kind="stable")
    gs = g[order]
    margin = 1e-12 * (1.0 + abs(s) + np.abs(gs))
    lo = np.searchsorted(gs, s - gs - margin, side="left")
    lo = np.maximum(lo, np.arange(1, n + 1))
    count = n - lo
    total = int(count.sum())
    if total > MAX_PAIRS:
        raise ValueError(
            f"the posterior graph would have over {MAX_PAIRS} candidate pairs (nearly complete); "
            "raise the threshold or lower the noise"
        )
    a = np.repeat(np.arange(n), count)
    offsets = np.repeat(np.cumsum(count) - count, count)
    b = np.arange(total) - offsets + np.repeat(lo, count)
    i = order[a]
    j = order[b]
    keep = (g[i] + g[j]) >= s
    i, j = i[keep], j[keep]
    return np.minimum(i, j), np.maximum(i, j)


def count_pairs_with_sum_at_least(g_sorted: np.ndarray, s: float) -> int:
    """#unordered pairs with g_i + g_j ≥ s (up to float rounding at the boundary)."""
    n = g_sorted.shape[0]
    lo = np.searchsorted(g_sorted, s - g_sorted, side="left")
    lo = np.maximum(lo, np.arange(1, n + 1))
    return int((n - lo).sum())


# ----------------------------------------------------------------------------- posterior


@dataclass
class Posterior:
    """Blink's posterior in sparse form: P_ij = σ(z_ij), z_ij = (γ_i + γ_j) + 2ε_a·k_ij.

    ``pairs``: the reported unordered pairs and their number k of reported 1-bits (1 or 2),
    served block by block from the reports (:class:`ReportedPairs`: no transpose, no pair
    arrays held beside them); every other pair has k = 0. ``block_entries`` and
    ``block_rows`` size those blocks (the results do not depend on them).
    """

    n: int
    gamma: np.ndarray
    eps_adjacency: float
    pairs: ReportedPairs
    block_entries: int | None = None
    block_rows: int | None = None

    @classmethod
    def build(
        cls,
        beta: np.ndarray,
        observed: np.ndarray,
        reported: sp.csr_matrix | ReportedPairs,
        eps_adjacency: float,
        block_entries: int | None = None,
        block_rows: int | None = None,
    ) -> Posterior:
        n = beta.shape[0]
        gamma = beta - eps_adjacency * observed.astype(np.float64)
        pairs = reported if isinstance(reported, ReportedPairs) else ReportedPairs(reported)
        return cls(n, gamma, float(eps_adjacency), pairs, block_entries, block_rows)

    @property
    def num_reported(self) -> int:
        return self.pairs.num_pairs

    def blocks(self) -> Iterator[PairBlock]:
        return self.pairs.blocks(self.block_entries, self.block_rows)

    def logit(self, i: np.ndarray, j: np.ndarray, k: np.ndarray | int) -> np.ndarray:
        return (self.gamma[i] + self.gamma[j]) + 2.0 * self.eps_adjacency * np.asarray(k)

    def block_prob(self, blk: PairBlock) -> np.ndarray:
        return sigmoid(self.logit(blk.i, blk.j, blk.ones))

    def reported_prob(self, out: np.ndarray | None = None) -> np.ndarray:
        """P of every reported pair in (i, j) order (into the first entries of ``out``)."""
        out = np.empty(self.num_reported) if out is None else out
        pos = 0
        for blk in self.blocks():
            out[pos : pos + blk.size] = self.block_prob(blk)
            pos += blk.size
        return out

    def unreported_at_least(self, s: float) -> tuple[np.ndarray, np.ndarray]:
        """Pairs with k = 0 whose logit γ_i + γ_j is ≥ s."""
        i, j = pairs_with_sum_at_least(self.gamma, s)
        fresh = ~self.pairs.has(i, j)
        return i[fresh], j[fresh]

    def select(self, threshold: float, strict: bool = False) -> tuple[np.ndarray, ...]:
        """All pairs i < j with P_ij ≥ threshold (> with ``strict``), with their P."""
        if threshold <= 0.0:
            raise ValueError("threshold must be > 0 (P > 0 for every pair)")
        parts_i: list[np.ndarray] = [np.zeros(0, np.int64)]
        parts_j: list[np.ndarray] = [np.zeros(0, np.int64)]
        parts_p: list[np.ndarray] = [np.zeros(0)]
        for blk in self.blocks():
            pr = self.block_prob(blk)
            keep = pr > threshold if strict else pr >= threshold
            parts_i.append(blk.i[keep])
            parts_j.append(blk.j[keep])
            parts_p.append(pr[keep])
        # P ≥ t implies z ≥ logit(t) up to rounding: enumerate a superset and check P itself.
        if threshold < 1.0:
            s = math.log(threshold) - math.log1p(-threshold)
            s -= 1e-9 * (1.0 + abs(s))
            ui, uj = self.unreported_at_least(s)
            up = sigmoid(self.gamma[ui] + self.gamma[uj])
            ok = up > threshold if strict else up >= threshold
            parts_i.append(ui[ok])
            parts_j.append(uj[ok])
            parts_p.append(up[ok])
        return _sorted_pairs(self.n, parts_i, parts_j, parts_p)

    def row_sums(self) -> np.ndarray:
        """Σ_{j≠i} P_ij for every i: the row sums of σ(γ_i + γ_j), corrected on reported pairs
        (accumulated pair by pair in (i, j) order, across blocks, as one bincount would)."""
        rows = sigmoid_row_sums(self.gamma)
        if self.num_reported:
            by_i = np.zeros(self.n)
            by_j = np.zeros(self.n)
            for blk in self.blocks():
                g = self.gamma[blk.i] + self.gamma[blk.j]
                delta = self.block_prob(blk) - sigmoid(g)
                np.add.at(by_i, blk.i, delta)
                np.add.at(by_j, blk.j, delta)
            rows = rows + by_i
            rows = rows + by_j
        return rows

    def hybrid(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Blink's hybrid graph: entries of P ≥ t, t the K-th largest of the n² entries,
        K = ⌊Σ_{i,j} P_ij⌋ (ordered pairs, so each unordered pair counts twice)."""
        n = self.n
        total = float(self.row_sums().sum())
        big_k = int(math.floor(total))
        info: dict[str, Any] = {"sum_p": total, "K": big_k}
        empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
        if big_k <= 0:
            info["t"] = None
            return (*empty, info)
        # The K-th largest of the ordered entries is the ceil(K/2)-th largest unordered value
        # (each value appears twice); beyond all n(n−1)/2 pairs only the zero diagonal is left.
        want = (big_k + 1) // 2
        num_pairs = n * (n - 1) // 2
        if want > num_pairs:
            info["t"] = 0.0
            i, j = pairs_with_sum_at_least(self.gamma, -math.inf)
            return (*self._with_prob(i, j), info)
        reported = self.num_reported
        gs = np.sort(self.gamma)
        need = want  # pairs (reported or not) to enumerate; doubled until t is certain
        while True:
            s = _kth_largest_pair_sum(gs, need)
            ui, uj = self.unreported_at_least(s)
            up = sigmoid(self.gamma[ui] + self.gamma[uj])
            complete = ui.size + reported >= num_pairs
            if reported + up.size >= want:
                # One buffer for the reported P and the enumerated ones, partitioned in place.
                values = np.empty(reported + up.size)
                self.reported_prob(values)
                values[reported:] = up
                values.partition(values.size - want)
                t = float(values[values.size - want])
                del values
                # A k = 0 pair left out has P ≤ min(up): below t, it can neither be among the
                # top entries nor tie with t.
                if complete or (up.size and up.min() < t):
                    break
            elif complete:
                raise AssertionError("hybrid selection: fewer pairs than K/2")
            need = min(num_pairs, 2 * need + 1)
        info["t"] = t
        parts_i, parts_j, parts_p = [], [], []
        for blk in self.blocks():
            pr = self.block_prob(blk)
            keep = pr >= t
            parts_i.append(blk.i[keep])
            parts_j.append(blk.j[keep])
            parts_p.append(pr[keep])
        keep_u = up >= t
        parts_i.append(ui[keep_u])
        parts_j.append(uj[keep_u])
        parts_p.append(up[keep_u])
        i, j, p = _sorted_pairs(n, parts_i, parts_j, parts_p)
        return i, j, p, info

    def _with_prob(self, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, ...]:
        return i, j, sigmoid(self.logit(i, j, self.pairs.ones(i, j)))


def _kth_largest_pair_sum(gs: np.ndarray, k: int) -> float:
    """A value s with at least k unordered pairs g_i + g_j ≥ s (about the k-th largest sum),
    by bisection on the count (g sorted ascending)."""
    hi = 2.0 * float(gs[-1]) + 1.0
    lo = 2.0 * float(gs[0]) - 1.0
    if count_pairs_with_sum_at_least(gs, lo) < k:
        return -math.inf
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if count_pairs_with_sum_at_least(gs, mid) >= k:
            lo = mid
        else:
            hi = mid
    return lo


def _sorted_pairs(n: int, parts_i, parts_j, parts_p) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    i = np.concatenate(parts_i).astype(np.int64)
    j = np.concatenate(parts_j).astype(np.int64)
    p = np.concatenate(parts_p).astype(np.float64)
    order = np.argsort(i * n + j, kind="stable")
    return i[order], j[order], p[order]


# ----------------------------------------------------------------------------- protocol


@dataclass(frozen=True)
class BlinkParams:
    """Blink's parameters in our names (the papers' δ's are never spelled δ in code).

    ``degree_share``: Blink's δ, the share of the graph budget ε_g spent on the degree
    (ε_d = degree_share·ε_g, ε_a = (1 − degree_share)·ε_g); 1 means the prior alone (no
    adjacency report: with ε_a = 0 RR carries no information). ``feature_share``: HoGS's δ,
    ε_f = feature_share·ε (private features only); ε_g = ε − ε_f. FP-BLink's δ1 and δ2 are
    1 − feature_share and 1 − degree_share. ``steps``: HoGS's l for the feature
    reconstruction. ``min_weight``: the smallest posterior the soft variant keeps.
    """

    epsilon: float
    degree_share: float = DEGREE_SHARE.default
    feature_share: float = 0.0
    public_features: bool = True
    variant: str = VARIANT.default
    steps: int = STEPS.default
    min_weight: float = MIN_WEIGHT.default

    def __post_init__(self) -> None:
        if not math.isfinite(self.epsilon) or self.epsilon <= 0:
            raise ValueError(f"epsilon must be a finite number > 0, got {self.epsilon}")
        if not 0.0 < self.degree_share <= 1.0:
            raise ValueError(
                f"degree share must be in (0, 1], got {self.degree_share} (0 would send the "
                "true degree, which is not private)"
            )
        if not self.public_features and not 0.0 < self.feature_share < 1.0:
            raise ValueError(
                f"feature share must be in (0, 1) when features are private, got "
                f"{self.feature_share}"
            )
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {self.variant!r}")
        if self.steps < 0 or int(self.steps) != self.steps:
            raise ValueError(f"steps (l) must be a non-negative integer, got {self.steps}")
        if not 0.0 < self.min_weight < 1.0:
            raise ValueError(f"min weight must be in (0, 1), got {self.min_weight}")
        # Refused before a node is charged: the degree's discrete Laplace needs a meaningful ε
        # (a vanishing ε_d would be a server's way to read the true degree).
        if not self.eps_degree >= MIN_EPSILON:
            raise ValueError(
                f"ε_d = {self.eps_degree:g} is below the smallest ε {MIN_EPSILON:g} (raise "
                "degree-share or ε)"
            )

    @property
    def eps_features(self) -> float:
        return 0.0 if self.public_features else self.feature_share * self.epsilon

    @property
    def eps_graph(self) -> float:
        return self.epsilon if self.public_features else (1.0 - self.feature_share) * self.epsilon

    @property
    def eps_degree(self) -> float:
        return self.degree_share * self.eps_graph

    @property
    def eps_adjacency(self) -> float:
        return (1.0 - self.degree_share) * self.eps_graph


# The three edge-only variants differ only in how the posterior becomes edges.
@register(
    "blink-hard",
    label="BLink",
    params=(EPSILON, DEGREE_SHARE),
    public_features=True,
    summary="Blink: RR row + discrete-Laplace degree, beta-model posterior, edges P > 0.5",
)
@register(
    "blink-soft",
    label="BLink (soft)",
    params=(EPSILON, DEGREE_SHARE, MIN_WEIGHT),
    public_features=True,
    summary="Blink soft: posterior-weighted edges (pairs with P >= min_weight)",
)
@register(
    "blink-hybrid",
    label="BLink (hybrid)",
    params=(EPSILON, DEGREE_SHARE),
    public_features=True,
    summary="Blink hybrid: the floor(sum P) largest posteriors, weighted",
)
@register(
    "fp-blink",
    label="FP-BLink",
    params=(*_PRIVATE_FEATURES, SHARE1, SHARE2),
    summary="FP-BLink: Blink + 1-bit features + HoGS feature reconstruction (share1, share2)",
)
@register(
    "blink-fr",
    label="BLink + FR",
    params=_PRIVATE_FEATURES,
    summary="ablation BLink + FR: Blink topology + HoGS feature reconstruction",
)
class BlinkProtocol(LdpProtocol):
    """``blink-hard|soft|hybrid`` (edge LDP, public features), ``fp-blink`` and ``blink-fr``
    (edge LDP + feature LDP, HoGS feature reconstruction on Blink's posterior).

    ``fp-blink`` and ``blink-fr`` are the same mechanism: FP-BLink's split (δ1, δ2) is
    blink-fr's (feature_share, degree_share) = (1 − δ1, 1 − δ2). They differ only in the
    parameters they are described by (the HoGS paper searches δ1, δ2 for FP-BLink and HoGS's δ
    for the ablation), so a config names them accordingly.
    """

    rounds = 1

    @classmethod
    def from_params(cls, name: str, **params: Any) -> BlinkProtocol:
        epsilon, degree_share = params["epsilon"], params["degree_share"]
        if name not in ("fp-blink", "blink-fr"):
            variant = name.removeprefix("blink-")
            min_weight = params.get("min_weight", MIN_WEIGHT.default)
            blink = BlinkParams(epsilon, degree_share, variant=variant, min_weight=min_weight)
            return cls(blink, name)
        feature_share = params["feature_share"]
        shares = None
        if name == "fp-blink":
            # FP-BLink (HoGS paper): ε_d = δ1(1−δ2)ε, ε_a = δ1δ2ε, ε_f = (1−δ1)ε, with
            # δ1 = share1 and δ2 = share2; at 0 the run's feature_share and degree_share decide.
            shares = (
                params["share1"] or 1.0 - feature_share,
                params["share2"] or 1.0 - degree_share,
            )
            feature_share, degree_share = 1.0 - shares[0], 1.0 - shares[1]
        blink = BlinkParams(
            epsilon,
            degree_share=degree_share,
            feature_share=feature_share,
            public_features=False,
            variant=params["variant"],
            steps=params["steps"],
            min_weight=params["min_weight"],
        )
        return cls(blink, name, shares)

    def __init__(
        self,
        params: BlinkParams,
        name: str | None = None,
        shares: tuple[float, float] | None = None,
    ) -> None:
        self.params = params
        self.public_features = params.public_features
        allowed = (
            (f"blink-{params.variant}",) if params.public_features else ("blink-fr", "fp-blink")
        )
        name = allowed[0] if name is None else name
        if name not in allowed:
            raise ValueError(f"protocol name {name!r} does not match its parameters ({allowed})")
        self.name = name
        #: FP-BLink's (δ1, δ2) as given, so that a rebuilt protocol has bit-identical budgets.
        self.shares = shares
        if name == "fp-blink" and shares is None:
            self.shares = (1.0 - params.feature_share, 1.0 - params.degree_share)

    def config(self) -> dict[str, Any]:
        p = self.params
        out: dict[str, Any] = {"protocol": self.name, "epsilon": p.epsilon}
        if self.name == "fp-blink":
            out["share1"], out["share2"] = self.shares
        else:
            out["degree_share"] = p.degree_share
            if not p.public_features:
                out["feature_share"] = p.feature_share
        if not p.public_features:
            out["variant"] = p.variant
            out["steps"] = p.steps
        if p.variant == "soft":
            out["min_weight"] = p.min_weight
        return out

    def round_epsilon(self, round_: int) -> float:
        p = self.params
        return p.eps_adjacency + p.eps_degree + p.eps_features

    def epsilon_parts(self, round_: int) -> EpsilonParts:
        """An adjacency bit is seen by its RR bit (ε_a) and moves the degree by 1 (ε_d)."""
        p = self.params
        return EpsilonParts(p.eps_adjacency + p.eps_degree, p.eps_features)

    @property
    def sends_adjacency(self) -> bool:
        return self.params.degree_share < 1.0

    def schema(self, round_: int) -> ReportSchema:
        return ReportSchema(
            adjacency=self.sends_adjacency,
            features=not self.params.public_features,
            extras=(DEGREE_FIELD,),
            extra_support=noisy_count(self.params.eps_degree),
        )

    def client_step(
        self, round_: int, view: NodeView, server_msg: dict[str, Any], seed: int
    ) -> Report:
        p = self.params
        me = view.node_id
        neighbors = np.asarray(view.neighbors, dtype=np.int64)
        neighbors = neighbors[neighbors != me]
        adj = noisy_row(view, p.eps_adjacency, seed, round_) if self.sends_adjacency else None
        degree = DiscreteLaplace(p.eps_degree).perturb(
            int(np.unique(neighbors).shape[0]), node_rng(seed, me, round_, DEGREE)
        )
        feats = None if p.public_features else noisy_features(view, p.eps_features, seed, round_)
        # An integer; the wire's extras are float64, which holds it exactly.
        return Report(me, round_, view.num_nodes, adj, feats, {DEGREE_FIELD: float(degree)})

    def client_step_batch(
        self, round_: int, batch: NodeBatch, server_msg: dict[str, Any], seeds: int | Sequence[int]
    ) -> ReportBatch:
        p = self.params
        eps_a = p.eps_adjacency if self.sends_adjacency else None
        eps_f = None if p.public_features else p.eps_features
        degree = (DEGREE_FIELD, p.eps_degree)
        return rr_onebit_batch(batch, round_, seeds, eps_a, eps_f, degree)

    def server_step(
        self, round_: int, result: RoundResult, curator: CuratorView, seed: int
    ) -> Release:
        p = self.params
        n, d = curator.num_nodes, curator.num_features
        reported, observed = adjacency_reports(result.reports, n)
        noisy, has_degree = extra_reports(result.reports, DEGREE_FIELD, n)
        if p.public_features:
            if curator.public_features is None:
                raise ValueError(f"{self.name} needs the public features in the curator view")
            x0 = curator.public_features
            feat_obs = np.ones(n, dtype=bool)
        else:
            x0, feat_obs = feature_reports(result.reports, n, d)
        graph = blink_graph(noisy, has_degree, reported, observed, p)
        stats = graph.pop("stats")
        stats["adjacency_reports"] = int(observed.sum())
        stats["degree_reports"] = int(has_degree.sum())
        if p.public_features:
            x = x0
        else:
            fi, fj, fp = graph["fr_pairs"]
            both = feat_obs[fi] & feat_obs[fj]
            x = reconstruct_features(x0, fi[both], fj[both], fp[both], p.steps)
            stats["feature_reports"] = int(feat_obs.sum())
            stats["fr_pairs"] = int(both.sum())
        return Release(
            edges=graph["edges"],
            x=x,
            privacy=self.privacy_report(d),
            edge_weight=graph["weight"],
            stats=stats,
        )

    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        return blink_privacy_report(self.name, self.params, num_features)


def blink_graph(
    noisy_degrees: np.ndarray,
    has_degree: np.ndarray,
    reported: sp.csr_matrix,
    observed: np.ndarray,
    p: BlinkParams,
) -> dict[str, Any]:
    """Steps A–D (and the pairs step E needs) from the reports: edges (u < v, sorted),
    aligned weights or None, the pairs with P ≥ 0.5 for the feature reconstruction, stats."""
    # Integer-valued noisy degrees (discrete Laplace); the β-model works in float64.
    noisy_degrees = np.asarray(noisy_degrees, dtype=np.float64)
    n = noisy_degrees.shape[0]
    eps_a = p.eps_adjacency if p.degree_share < 1.0 else 0.0
    stats: dict[str, Any] = {
        "variant": p.variant,
        "eps_adjacency": eps_a,
        "eps_degree": p.eps_degree,
        "eps_features": p.eps_features,
    }
    empty_i = np.zeros(0, np.int64)
    no_pairs = (empty_i, empty_i, np.zeros(0))
    if n < 3 or not has_degree.any():
        stats["reason"] = "fewer than 3 nodes" if n < 3 else "no degree report"
        return {
            "edges": np.zeros((0, 2), np.int64),
            "weight": None if p.variant == "hard" else np.zeros(0),
            "fr_pairs": no_pairs,
            "stats": stats,
        }
    clamped = np.clip(noisy_degrees, 1.0, n - 2.0)
    if not has_degree.all():
        clamped = np.where(has_degree, clamped, float(clamped[has_degree].mean()))
    stats["clamped_low"] = int((noisy_degrees[has_degree] < 1.0).sum())
    stats["clamped_high"] = int((noisy_degrees[has_degree] > n - 2.0).sum())
    stats["imputed_degrees"] = int((~has_degree).sum())
    beta, fit = fit_beta(clamped)
    stats["beta_fit"] = fit
    post = Posterior.build(beta, observed, reported, eps_a)
    stats["reported_pairs"] = post.num_reported
    weight = None
    if p.variant == "hard":
        i, j, _ = post.select(0.5, strict=True)
    elif p.variant == "soft":
        i, j, weight = post.select(p.min_weight)
        rows = post.row_sums()
        kept = np.bincount(i, weights=weight, minlength=n) + np.bincount(
            j, weights=weight, minlength=n
        )
        dropped = np.maximum(rows - kept, 0.0)
        stats["soft"] = {
            "min_weight": p.min_weight,
            "total_weight": float(rows.sum()),
            "dropped_weight": float(dropped.sum()),
            "max_row_dropped": float(dropped.max()),
            "mean_row_dropped": float(dropped.mean()),
        }
    else:
        i, j, weight, info = post.hybrid()
        stats["hybrid"] = info
    edges = np.stack([i, j], axis=1).astype(np.int64) if i.size else np.zeros((0, 2), np.int64)
    fr = no_pairs
    if not p.public_features and p.steps > 0:
        fr = post.select(FR_THRESHOLD)
    stats["kept_pairs"] = int(i.size)
    return {"edges": edges, "weight": weight, "fr_pairs": fr, "stats": stats}


def blink_privacy_report(
    name: str, p: BlinkParams, num_features: int | None = None
) -> PrivacyReport:
    eps_a = p.eps_adjacency if p.degree_share < 1.0 else 0.0
    parts = []
    rr_eps = []
    if eps_a > 0:
        parts.append(bit_part("adjacency", "one adjacency bit (edge LDP)", eps_a))
        rr_eps.append(eps_a)
    parts.append(
        discrete_laplace_part(
            "degree", "the degree, changed by 1 by one adjacency bit (edge LDP)", p.eps_degree
        )
    )
    notes = [
        f"One adjacency bit enters both the RR row (ε_a = {eps_a:g}) and the discrete-Laplace "
        "degree "
        f"(ε_d = {p.eps_degree:g}); by sequential composition it is protected at "
        f"ε_a + ε_d = {eps_a + p.eps_degree:g}, as Blink states.",
        "An edge {i, j} enters both endpoints' reports; the two reports together are "
        f"{2 * (eps_a + p.eps_degree):g}-DP for that edge (edge LDP is per row, as in the papers).",
        "The β-model, the posterior, thresholding (variant, min_weight) and feature "
        "reconstruction (steps) are post-processing: tuning them on one collection spends "
        "nothing more.",
        "Tuning δ (degree_share), the feature split or ε is not post-processing: each "
        "configuration collects fresh reports, so a node spends the sum of the ε of every "
        "collection a sweep used (Blink_GNN and HoGS tune δ this way and do not count it).",
    ]
    if p.public_features:
        unit = "adjacency bit (edge LDP); features are public and not protected"
        total = composed_epsilon(rr_eps, [p.eps_degree])
        notes.append("Features are treated as public: they are neither perturbed nor protected.")
    else:
        parts.append(
            bit_part("features", "one feature bit (feature LDP)", p.eps_features, num_features)
        )
        unit = "one adjacency bit plus one feature bit of a node (edge LDP + feature LDP)"
        total = composed_epsilon(rr_eps + [p.eps_features], [p.eps_degree])
        notes.append(
            f"ε_f = {p.eps_features:g} is per feature BIT (HoGS's definition); the whole "
            "d-bit vector is protected only at d·ε_f"
            + (f" = {num_features * p.eps_features:g}" if num_features else "")
            + "."
        )
        if name == "fp-blink":
            notes.append(
                "FP-BLink's split: ε_d = δ1(1−δ2)ε, ε_a = δ1δ2ε, ε_f = (1−δ1)ε with "
                f"δ1 = {1 - p.feature_share:g}, δ2 = {1 - p.degree_share:g}."
            )
    headline, unit_eps = unit_summary(
        adjacency_label="ε_a + ε_d" if eps_a > 0 else "ε_d",
        rr_adjacency=eps_a,
        counts=[p.eps_degree],
        adjacency_detail="its RR bit and the degree it moves by 1"
        if eps_a > 0
        else "the degree it moves by 1",
        edge_detail="both endpoints report it, each in its row and its degree",
        feature_bit=None if p.public_features else p.eps_features,
        num_features=num_features,
    )
    return PrivacyReport(
        protocol=name,
        unit=unit,
        epsilon=total,
        delta=0.0,
        accountant=ACCOUNTANT + " + dp_accounting discrete Laplace PLD (sensitivity 1)",
        parts=parts,
        paper_epsilon=p.epsilon,
        notes=notes,
        headline=headline,
        unit_epsilons=unit_eps,
    )
