"""Cosine similarity of node feature vectors, for chosen pairs and as a threshold join.

HoGS needs s_ij only for a sparse set of pairs (the reported ones) plus every pair whose
similarity is above a threshold close to 1 (the (0,0) pairs). Both are computed without an
n × n matrix. For 0/1 features the dot product is an exact popcount of packed bits, so s_ij is
bit-identical to the dense reference ``(X @ X.T)[i, j] / (‖X_i‖ ‖X_j‖)`` in float64.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from ..sorting import unique_ints

_PAIR_CHUNK = 1 << 18
#: Above this many prefix-filter candidate pairs (dense rows, e.g. 1-bit-perturbed features,
#: where every column is frequent) the binary join switches to exact blockwise products, whose
#: memory is one block of rows against all rows instead of every candidate pair at once.
PREFIX_PAIR_BUDGET = 1 << 25
#: How much below t the blockwise filter admits pairs (float32 rounding); candidates are verified.
_JOIN_SLACK = 1e-5
#: Rows per block of the all-pairs products (one block: this many rows × n floats), at most.
JOIN_BLOCK_ROWS = 1024
#: Bytes of one block of products: fewer rows a block when n is large (n = 10^7: 26 rows).
JOIN_BLOCK_BYTES = 1 << 30


class FeatureRows:
    """Feature rows prepared for many cosine evaluations.

    Binary rows are packed into uint64 words (dot = popcount of AND); real rows are kept as
    float64. ``norm`` is ``sqrt(sum x^2)`` in float64, as the dense reference computes it.
    """

    def __init__(self, x: np.ndarray) -> None:
        x = np.asarray(x)
        self.num_rows, self.dim = x.shape
        self._f32_cache: np.ndarray | None = None
        self.binary = x.dtype == np.uint8 or x.dtype == np.bool_ or bool(np.isin(x, (0, 1)).all())
        if self.binary:
            xb = np.asarray(x, dtype=np.uint8)
            packed = np.packbits(xb, axis=1)
            pad = (-packed.shape[1]) % 8
            if pad:
                packed = np.pad(packed, ((0, 0), (0, pad)))
            self.words = np.ascontiguousarray(packed).view(np.uint64)
            self.counts = xb.sum(axis=1, dtype=np.int64)
            self.norm = np.sqrt(self.counts.astype(np.float64))
            self._csr_cache: sp.csr_matrix | None = None
        else:
            self.dense = np.asarray(x, dtype=np.float64)
            self.norm = np.sqrt(np.einsum("ij,ij->i", self.dense, self.dense))

    def dots(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Dot products of rows i[k] and j[k] (float64), chunked over pairs."""
        out = np.empty(i.shape[0], dtype=np.float64)
        for start in range(0, i.shape[0], _PAIR_CHUNK):
            a = i[start : start + _PAIR_CHUNK]
            b = j[start : start + _PAIR_CHUNK]
            if self.binary:
                both = self.words[a]
                np.bitwise_and(both, self.words[b], out=both)
                ones = np.bitwise_count(both)
                # Word by word: numpy reduces a short inner axis (d/64 words) slowly.
                acc = out[start : start + a.shape[0]]
                acc[:] = ones[:, 0] if ones.shape[1] else 0
                for k in range(1, ones.shape[1]):
                    acc += ones[:, k]
            else:
                out[start : start + a.shape[0]] = np.einsum(
                    "ij,ij->i", self.dense[a], self.dense[b]
                )
        return out

    def cosine(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """s_ij for the given pairs; 0 where either vector is all-zero."""
        i = np.asarray(i, dtype=np.int64)
        j = np.asarray(j, dtype=np.int64)
        return self.cosine_from_dots(self.dots(i, j), i, j)

    def cosine_from_dots(self, dots: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """s_ij from exact float64 dot products of the pairs (i[k], j[k])."""
        denom = self.norm[i] * self.norm[j]
        out = np.zeros_like(dots)
        ok = denom > 0
        out[ok] = dots[ok] / denom[ok]
        return out

    def threshold_join(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Every pair i < j whose cosine may reach ``t`` (a superset, to be verified by caller).

        Binary rows use prefix filtering: with the columns ordered rarest first, two sets with
        cosine ≥ t share at least ceil(t²·max(c_i, c_j)) elements, so their prefixes of length
        c − ceil(t²c) + 1 must intersect; a size filter c_j ∈ [t²c_i, c_i/t²] prunes the rest.
        Real rows, and 0/1 rows too dense for prefix filtering (:meth:`joins_blockwise`), use
        blockwise products. Returns no pairs when t > 1.
        """
        if t > 1.0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        t = max(float(t), 0.0)
        if self.binary and self._only_identical_can_pass(t):
            i, j = self._identical_join()
        elif self.binary and not self.joins_blockwise(t):
            i, j = self._prefix_join(t)
        else:
            i, j = self._block_join(t)
        if i.size:
            s = self.cosine(i, j)
            keep = s >= t - 1e-9
            i, j = i[keep], j[keep]
        return i, j

    def joins_blockwise(self, t: float) -> bool:
        """Whether ``threshold_join(t)`` goes straight to all-pairs block products (0/1 rows
        too dense for prefix filtering); callers that need the products of many pairs anyway
        can then share them through :meth:`block_products` and :meth:`block_candidates`."""
        if not self.binary or t > 1.0:
            return False
        t = max(float(t), 0.0)
        if t <= 0.0 or self._only_identical_can_pass(t):
            return False
        return self._prefix_surely_over_budget(self._prefix_lengths(t))

    def _prefix_lengths(self, t: float) -> np.ndarray:
        alpha = np.maximum(1, np.ceil(t * t * self.counts - 1e-9).astype(np.int64))
        return np.clip(self.counts - alpha + 1, 0, self.counts)

    def _prefix_surely_over_budget(self, prefix: np.ndarray) -> bool:
        """Cauchy-Schwarz: prefix filtering makes at least (total prefix)² / (2·dim) candidate
        pairs. Dense rows exceed the budget by far, and sorting their entries is skipped."""
        return float(prefix.sum()) ** 2 / (2.0 * max(self.dim, 1)) > PREFIX_PAIR_BUDGET

    def _only_identical_can_pass(self, t: float) -> bool:
        """Two different non-empty 0/1 sets of sizes ≤ c have cosine ≤ sqrt(c / (c + 1)) (one a
        subset of the other, one element apart); above that only identical rows qualify."""
        cmax = int(self.counts.max()) if self.num_rows else 0
        return cmax == 0 or math.sqrt(cmax / (cmax + 1)) < t - 1e-9

    def _identical_join(self) -> tuple[np.ndarray, np.ndarray]:
        """All pairs i < j of identical non-empty rows: O(n log n) by sorting the packed rows."""
        rows = np.flatnonzero(self.counts > 0)
        if rows.size < 2:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        packed = np.ascontiguousarray(self.words[rows])
        keys = packed.view(np.dtype((np.void, packed.shape[1] * 8))).ravel()
        _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
        dup = counts[inverse] > 1
        rows, groups = rows[dup], inverse[dup]
        order = np.lexsort((rows, groups))
        rows, groups = rows[order], groups[order]
        pi: list[np.ndarray] = []
        pj: list[np.ndarray] = []
        bounds = np.flatnonzero(np.diff(groups)) + 1
        for members in np.split(rows, bounds):
            a, b = np.triu_indices(members.size, k=1)
            pi.append(members[a])
            pj.append(members[b])
        if not pi:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(pi).astype(np.int64), np.concatenate(pj).astype(np.int64)

    def _bits(self) -> np.ndarray:
        """The 0/1 rows again (uint8, n × d), unpacked from ``words``."""
        return np.unpackbits(self.words.view(np.uint8), axis=1)[:, : self.dim]

    @property
    def _csr(self) -> sp.csr_matrix:
        """The 0/1 rows as CSR, built on first use (only the prefix join reads it)."""
        if self._csr_cache is None:
            self._csr_cache = sp.csr_matrix(self._bits())
        return self._csr_cache

    def _prefix_join(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        csr = self._csr
        counts = self.counts
        if t <= 0.0:
            # Every pair qualifies in principle; the caller verifies. Only sensible for small n.
            nz = np.flatnonzero(counts)
            iu, ju = np.triu_indices(nz.shape[0], k=1)
            return nz[iu], nz[ju]
        freq = np.asarray(csr.sum(axis=0)).ravel()
        order = np.lexsort((np.arange(self.dim), freq))  # rarest first, ties by column id
        rank = np.empty(self.dim, dtype=np.int64)
        rank[order] = np.arange(self.dim)
        t2 = t * t
        prefix = self._prefix_lengths(t)
        rows = np.repeat(np.arange(self.num_rows), np.diff(csr.indptr))
        ranks = rank[csr.indices]
        # Sort each row's columns by rank, then keep its first `prefix` entries.
        o = np.lexsort((ranks, rows))
        rows, ranks = rows[o], ranks[o]
        pos = np.arange(rows.shape[0]) - np.repeat(csr.indptr[:-1], np.diff(csr.indptr))
        keep = pos < prefix[rows]
        rows, ranks = rows[keep], ranks[keep]
        o = np.lexsort((rows, ranks))
        rows, ranks = rows[o], ranks[o]
        bounds = np.flatnonzero(np.diff(ranks)) + 1
        starts = np.concatenate([[0], bounds])
        ends = np.concatenate([bounds, [ranks.shape[0]]])
        sizes = ends - starts
        if int((sizes * (sizes - 1) // 2).sum()) > PREFIX_PAIR_BUDGET:
            return self._block_join(t)
        pi: list[np.ndarray] = []
        pj: list[np.ndarray] = []
        for s0, g in zip(starts[sizes > 1], sizes[sizes > 1], strict=True):
            members = rows[s0 : s0 + g]
            a, b = np.triu_indices(g, k=1)
            pi.append(members[a])
            pj.append(members[b])
        if not pi:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        i = np.concatenate(pi)
        j = np.concatenate(pj)
        ci, cj = counts[i], counts[j]
        lo = np.minimum(ci, cj)
        hi = np.maximum(ci, cj)
        ok = lo >= t2 * hi - 1e-9
        key = unique_ints(np.minimum(i, j)[ok] * self.num_rows + np.maximum(i, j)[ok])
        return key // self.num_rows, key % self.num_rows

    def block_products(self, block: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """``(a, rows[a:b] @ rows[a:].T)`` for consecutive blocks of ``block`` rows: the dot
        products of every pair i < j once (and the diagonal), block by block.

        0/1 rows multiply as dense float32 on BLAS (every core): the dots are integer counts
        below 2^24, so they are exact; real rows multiply in float64.
        """
        x = self._block_matrix()
        for start in self.block_starts(block):
            yield start, x[start : start + self._block_rows(block)] @ x[start:].T

    def _block_rows(self, block: int | None = None) -> int:
        if block is None:
            block = max(1, min(JOIN_BLOCK_ROWS, JOIN_BLOCK_BYTES // (4 * max(self.num_rows, 1))))
        return block

    def block_starts(self, block: int | None = None) -> list[int]:
        """The first rows of :meth:`block_products`'s blocks."""
        return list(range(0, self.num_rows, self._block_rows(block)))

    def block_product(self, start: int) -> np.ndarray:
        """One block of :meth:`block_products` (default block size) on its own: a block
        function's work, so the blocks can run anywhere (:func:`.blocks.map_blocks`)."""
        x = self._block_matrix()
        return x[start : start + self._block_rows()] @ x[start:].T

    def _block_matrix(self) -> np.ndarray:
        """The rows as multiplied: 0/1 as float32 (built once, kept), real rows as float64."""
        if not self.binary:
            return self.dense
        if self._f32_cache is None:
            self._f32_cache = self._bits().astype(np.float32)
        return self._f32_cache

    def drop_block_matrix(self) -> None:
        """Free the float32 copy :meth:`block_product` keeps between blocks."""
        self._f32_cache = None

    def block_candidates(
        self, start: int, dots: np.ndarray, t: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """The pairs i < j of one :meth:`block_products` block whose cosine may reach ``t``.

        The filter is loosened by ``_JOIN_SLACK`` so that float32 rounding never drops a pair;
        callers verify candidates with the exact cosine. All-zero rows never qualify.
        """
        stop = start + dots.shape[0]
        ok_rows = self.norm[start:stop] > 0
        ok_cols = self.norm[start:] > 0
        inv = np.where(ok_rows, 1.0 / np.where(ok_rows, self.norm[start:stop], 1.0), 0.0)
        bound = np.where(ok_cols, (t - _JOIN_SLACK) * self.norm[start:], np.inf)
        scaled = dots * inv.astype(dots.dtype)[:, None]
        a, b = np.nonzero(scaled >= bound.astype(dots.dtype)[None, :])
        upper = b > a
        return (a[upper] + start).astype(np.int64), (b[upper] + start).astype(np.int64)

    def _block_join(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Every pair i < j whose cosine may reach ``t``, by :meth:`block_products`."""
        pi: list[np.ndarray] = [np.zeros(0, np.int64)]
        pj: list[np.ndarray] = [np.zeros(0, np.int64)]
        for start, dots in self.block_products():
            i, j = self.block_candidates(start, dots, t)
            pi.append(i)
            pj.append(j)
        return np.concatenate(pi), np.concatenate(pj)
