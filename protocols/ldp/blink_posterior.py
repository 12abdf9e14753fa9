"""Blink's posterior (Zhu, Tan, Xiao, CCS'23) in sparse form, the pairs it selects, and the
graph the server releases from it (:func:`blink_graph`, steps A–D of :mod:`.blink`).

Write o_i = 1 if node i's row arrived, k_ij ∈ {0, 1, 2} the number of reported 1-bits about
{i, j} and γ_i = β_i − ε_a·o_i. Then the posterior logit is z_ij = γ_i + γ_j + 2ε_a·k_ij. Pairs
with k ≥ 1 are the reported ones (a sparse set, the size of the reports). For every other pair
z = γ_i + γ_j, a sum of two per-node numbers, so "P_ij ≥ t" is "γ_i + γ_j ≥ logit t": with γ
sorted, a binary search per node enumerates exactly those pairs, at a cost of
O(n log n + output). Hybrid's K needs Σ P over all pairs, which is the β-model's row sum on γ
(:mod:`.blink_beta`) corrected on the reported pairs; its threshold t is found by enumerating
the unreported pairs with the largest sums (about K/2 of them, doubled until one falls below t,
which proves that no pair left out reaches t). The reported pairs are read block by block from
the reports (:class:`.reported_pairs.ReportedPairs`), never as a transpose or as arrays of all
pairs (only hybrid holds one float64 P per reported pair, to find t). numpy and scipy only.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp

from .blink_beta import fit_beta, sigmoid, sigmoid_row_sums
from .hogs_features import FR_THRESHOLD
from .reported_pairs import PairBlock, ReportedPairs

#: A release may not exceed this many pairs (the posterior graph would be nearly complete).
MAX_PAIRS = 50_000_000


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
        t, ui, uj, up = self._hybrid_threshold(want, num_pairs)
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

    def _hybrid_threshold(
        self, want: int, num_pairs: int
    ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """t, the ``want``-th largest P over all pairs, with the unreported pairs enumerated to
        find it (i, j, P): enough of them that no pair left out can reach t."""
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
                    return t, ui, uj, up
            elif complete:
                raise AssertionError("hybrid selection: fewer pairs than K/2")
            need = min(num_pairs, 2 * need + 1)

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


class BlinkSettings(Protocol):
    """What :func:`blink_graph` reads of a :class:`~ldpgraph.protocols.ldp.blink.BlinkProtocol`."""

    eps_adjacency: float
    eps_degree: float
    eps_features: float
    sends_adjacency: bool
    public_features: bool
    variant: str
    min_weight: float
    steps: int


def blink_graph(
    noisy_degrees: np.ndarray,
    has_degree: np.ndarray,
    reported: sp.csr_matrix,
    observed: np.ndarray,
    proto: BlinkSettings,
) -> dict[str, Any]:
    """Steps A–D (and the pairs step E needs) from the reports: edges (u < v, sorted),
    aligned weights or None, the pairs with P ≥ 0.5 for the feature reconstruction, stats."""
    # Integer-valued noisy degrees (discrete Laplace); the β-model works in float64.
    noisy_degrees = np.asarray(noisy_degrees, dtype=np.float64)
    n = noisy_degrees.shape[0]
    eps_a = proto.eps_adjacency if proto.sends_adjacency else 0.0
    stats: dict[str, Any] = {
        "variant": proto.variant,
        "eps_adjacency": eps_a,
        "eps_degree": proto.eps_degree,
        "eps_features": proto.eps_features,
    }
    empty_i = np.zeros(0, np.int64)
    no_pairs = (empty_i, empty_i, np.zeros(0))
    if n < 3 or not has_degree.any():
        stats["reason"] = "fewer than 3 nodes" if n < 3 else "no degree report"
        return {
            "edges": np.zeros((0, 2), np.int64),
            "weight": None if proto.variant == "hard" else np.zeros(0),
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
    i, j, weight = _edges(post, proto.variant, proto.min_weight, stats)
    edges = np.stack([i, j], axis=1).astype(np.int64) if i.size else np.zeros((0, 2), np.int64)
    fr = no_pairs
    if not proto.public_features and proto.steps > 0:
        fr = post.select(FR_THRESHOLD)
    stats["kept_pairs"] = int(i.size)
    return {"edges": edges, "weight": weight, "fr_pairs": fr, "stats": stats}


def _edges(
    post: Posterior, variant: str, min_weight: float, stats: dict[str, Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Step D: the pairs (i, j) and their weights (None for ``hard``) of the variant; what
    soft drops and how hybrid chose its threshold go into ``stats``."""
    if variant == "hard":
        i, j, _ = post.select(0.5, strict=True)
        return i, j, None
    if variant == "hybrid":
        i, j, weight, info = post.hybrid()
        stats["hybrid"] = info
        return i, j, weight
    i, j, weight = post.select(min_weight)
    rows = post.row_sums()
    n = post.n
    kept = np.bincount(i, weights=weight, minlength=n) + np.bincount(j, weights=weight, minlength=n)
    dropped = np.maximum(rows - kept, 0.0)
    stats["soft"] = {
        "min_weight": min_weight,
        "total_weight": float(rows.sum()),
        "dropped_weight": float(dropped.sum()),
        "max_row_dropped": float(dropped.max()),
        "mean_row_dropped": float(dropped.mean()),
    }
    return i, j, weight
