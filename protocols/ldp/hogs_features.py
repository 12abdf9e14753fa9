"""HoGS's feature reconstruction (the HoGS paper, Xu et al., Algorithm 3): ``steps`` rounds of
P-weighted neighbour averaging over V_i = {j : P_ij ≥ 0.5}, streamed by blocks of rows. Blink's
and LDPGen's feature-private variants reuse it with their own link weights. numpy and scipy
only.

The symmetric weight matrix W is never built whole when the pairs come as the topology returns
them (i < j, sorted by i·n + j, each once): its upper triangle *is* those arrays (row i's
entries are a contiguous run), and its lower triangle is the same pairs ordered by (j, i), held
as a permutation (4 bytes a pair). A block's rows of W are assembled from the two when the block
is averaged, entry for entry and in the order a CSR of W would hold them, so the sums are the
same to the bit as W's product. Memory beside the pairs: the permutation and two row pointers,
instead of W's COO triple and CSR (~56 bytes a pair; at 10^7 nodes ~4·10^8 pairs, 21 GiB).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .blocks import map_blocks
from .reported_pairs import row_blocks

#: Feature reconstruction aggregates over V_i = {j : P_ij >= FR_THRESHOLD} (paper: 0.5).
FR_THRESHOLD = 0.5
#: Bytes of gathered float64 feature rows per block of the feature reconstruction.
FR_BLOCK_BYTES = 1 << 23
#: Pairs regrouped by column at once when the lower triangle's permutation is built.
REGROUP_CHUNK = 1 << 22


def reconstruct_features(
    x0: np.ndarray,
    i: np.ndarray,
    j: np.ndarray,
    prob: np.ndarray,
    steps: int,
    block_rows: int | None = None,
) -> np.ndarray:
    """Algorithm 3, ``steps`` times: X_i ← Σ_{j∈V_i} P_ij X_j / Σ_{j∈V_i} P_ij, where V_i holds
    the j with P_ij ≥ 0.5; a node with empty V_i keeps its previous row. float64 inside,
    float32 out.

    Streamed by blocks of rows: a block gathers only the rows its neighbours hold (in float64)
    and writes its rows of the next X, so memory is x0, the output (float32; plus one float64
    X between steps, two from the third step on) and a few blocks, not several float64 copies
    of X. Each row's sum runs over its neighbours in column order (scipy's sparse product, the
    same on every CPU), so the result depends neither on the blocks nor on how W is held
    (module docstring). Blocks go through :func:`.blocks.map_blocks`: every core (scipy's
    product and numpy's copies release the GIL), or the Ray curator's tasks.

    Args:
        x0: the n × d feature rows (any real dtype; 0/1 uint8 for the 1-bit reports).
        i, j, prob: the pairs i < j and their posteriors (as :func:`reconstruct_topology`:
            sorted by i·n + j, each once, takes the lean path; any other list of pairs, with
            repeats summed, builds W as a CSR matrix).
        steps: how many averaging passes (the paper's l).
        block_rows: rows per block (default: :data:`FR_BLOCK_BYTES` of gathered rows).
    """
    x0 = np.asarray(x0)
    n, d = x0.shape
    budget = max(1, FR_BLOCK_BYTES // (8 * max(d, 1)))  # gathered rows per block
    if steps <= 0:
        out = np.empty((n, d), dtype=np.float32)
        for a, b in row_blocks(np.arange(n + 1), block_rows=block_rows or budget):
            out[a:b] = np.asarray(x0[a:b], dtype=np.float64)
        return out
    links = links_of(n, np.asarray(i), np.asarray(j), np.asarray(prob))
    if block_rows is None:
        # A row costs itself plus one gathered row per neighbour (at most).
        bounds = list(row_blocks(links.indptr + np.arange(n + 1), budget))
    else:
        bounds = list(row_blocks(links.indptr, block_rows=block_rows))
    src = x0
    for step in range(steps):
        dst = np.empty((n, d), dtype=np.float32 if step == steps - 1 else np.float64)
        _average_blocks(links, src, dst, bounds)
        src = dst
    return src


def links_of(n: int, i: np.ndarray, j: np.ndarray, prob: np.ndarray) -> SortedLinks | CsrLinks:
    """W's rows for the pairs with P ≥ :data:`FR_THRESHOLD`: :class:`SortedLinks` when the
    pairs are i < j sorted by i·n + j without repeats (the topology's output), else a CSR
    (:class:`CsrLinks`)."""
    sel = prob >= FR_THRESHOLD
    if not sel.all():  # all kept, as in HoGS's topology at τ ≥ 0.5: no copy
        i, j, prob = i[sel], j[sel], prob[sel]
    del sel
    if _sorted_upper(n, i, j):
        return SortedLinks.build(n, i, j, prob)
    return CsrLinks.build(n, i, j, prob)


def _sorted_upper(n: int, i: np.ndarray, j: np.ndarray) -> bool:
    """Whether every pair has i < j and the keys i·n + j strictly increase (checked by chunks,
    so no int64 copy of every key is made)."""
    step = REGROUP_CHUNK
    last = -1
    for a in range(0, i.size, step):
        ci = i[a : a + step].astype(np.int64)
        cj = j[a : a + step].astype(np.int64)
        if not bool((ci < cj).all()) or ci.size and (ci.min() < 0 or cj.max() >= n):
            return False
        key = ci * n + cj
        if key[0] <= last or not bool((key[1:] > key[:-1]).all()):
            return False
        last = int(key[-1])
    return True


@dataclass
class SortedLinks:
    """W from the pairs i < j sorted by i·n + j (module docstring): row r of W is its lower
    entries (the pairs (i, r), i ascending: ``by_col[lower_ptr[r]:lower_ptr[r + 1]]``) then its
    upper ones (the pairs (r, j), j ascending: ``upper_ptr[r]:upper_ptr[r + 1]``)."""

    i: np.ndarray
    j: np.ndarray
    prob: np.ndarray
    upper_ptr: np.ndarray
    lower_ptr: np.ndarray
    by_col: np.ndarray

    @classmethod
    def build(cls, n: int, i: np.ndarray, j: np.ndarray, prob: np.ndarray) -> SortedLinks:
        upper_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(i, minlength=n), out=upper_ptr[1:])
        lower_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(j, minlength=n), out=lower_ptr[1:])
        # A stable counting sort of the pairs by j, chunk by chunk (i stays ascending within a
        # column because the pairs come sorted by i): no int64 argsort of every pair.
        by_col = np.empty(i.size, dtype=np.int32 if i.size < 2**31 else np.int64)
        fill = lower_ptr[:-1].copy()
        for a in range(0, i.size, REGROUP_CHUNK):
            cj = j[a : a + REGROUP_CHUNK]
            order = np.argsort(cj, kind="stable")
            sj = cj[order]
            first = np.empty(sj.size, dtype=bool)
            first[0] = True
            np.not_equal(sj[1:], sj[:-1], out=first[1:])
            starts = np.flatnonzero(first)
            runs = np.diff(np.append(starts, sj.size))
            rank = np.arange(sj.size) - np.repeat(starts, runs)
            by_col[fill[sj] + rank] = order + a
            fill[sj[starts]] += runs
        return cls(i, j, prob, upper_ptr, lower_ptr, by_col)

    @property
    def indptr(self) -> np.ndarray:
        """W's CSR row pointer (entries before each row)."""
        return self.upper_ptr + self.lower_ptr

    def rows(self, a: int, b: int) -> sp.csr_matrix:
        """W's rows a..b−1 as a CSR matrix, entries in column order (as W's own CSR)."""
        lo = self.by_col[self.lower_ptr[a] : self.lower_ptr[b]]
        u0, u1 = self.upper_ptr[a], self.upper_ptr[b]
        n_low = np.diff(self.lower_ptr[a : b + 1])
        n_up = np.diff(self.upper_ptr[a : b + 1])
        indptr = np.zeros(b - a + 1, dtype=np.int64)
        np.cumsum(n_low + n_up, out=indptr[1:])
        nnz = int(indptr[-1])
        cols = np.empty(nnz, dtype=self.i.dtype)
        vals = np.empty(nnz, dtype=np.float64)
        # Lower entries first in each row, then upper ones: their slots in the block.
        at_low = np.arange(lo.size) + np.repeat(
            indptr[:-1] - (self.lower_ptr[a:b] - self.lower_ptr[a]), n_low
        )
        at_up = np.arange(u1 - u0) + np.repeat(
            indptr[:-1] + n_low - (self.upper_ptr[a:b] - u0), n_up
        )
        cols[at_low], vals[at_low] = self.i[lo], self.prob[lo]
        cols[at_up], vals[at_up] = self.j[u0:u1], self.prob[u0:u1]
        n = self.upper_ptr.size - 1
        return sp.csr_matrix((vals, cols, indptr), shape=(b - a, n))


@dataclass
class CsrLinks:
    """W as a CSR matrix, from any list of pairs (repeats summed): Blink's and LDPGen's
    link lists when they do not come sorted."""

    w: sp.csr_matrix

    @classmethod
    def build(cls, n: int, i: np.ndarray, j: np.ndarray, prob: np.ndarray) -> CsrLinks:
        rows = np.concatenate([i, j])
        cols = np.concatenate([j, i])
        vals = np.concatenate([prob, prob])
        w = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
        del rows, cols, vals
        w.sum_duplicates()
        w.sort_indices()
        return cls(w)

    @property
    def indptr(self) -> np.ndarray:
        return self.w.indptr

    def rows(self, a: int, b: int) -> sp.csr_matrix:
        return self.w[a:b]


def _average_blocks(
    links: SortedLinks | CsrLinks,
    src: np.ndarray,
    dst: np.ndarray,
    bounds: list[tuple[int, int]],
) -> None:
    """One step of :func:`reconstruct_features`: dst[a:b] for every block [a, b), each block
    a :func:`.blocks.map_blocks` task (threads, or the Ray curator's tasks), written in order."""
    step = _AverageStep(links, src)
    for (a, b), rows in zip(bounds, map_blocks(step.rows, bounds), strict=True):
        dst[a:b] = rows


@dataclass
class _AverageStep:
    """One averaging pass over the blocks' rows: picklable (an executor may ship it once to
    other processes or machines), and every block's rows depend only on ``links`` and
    ``src``."""

    links: SortedLinks | CsrLinks
    src: np.ndarray

    def rows(self, bound: tuple[int, int]) -> np.ndarray:
        """The next X's rows a..b (float64)."""
        a, b = bound
        src = self.src
        own = np.asarray(src[a:b], dtype=np.float64)
        blk = self.links.rows(a, b)
        if blk.nnz == 0:
            return own
        total = np.asarray(blk.sum(axis=1)).ravel()
        has = total > 0
        denom = np.where(has, total, 1.0)
        # A float64 X (every step after the first) is multiplied as it is; any other dtype
        # (the 0/1 reports) is converted only for the rows the block needs.
        if src.dtype == np.float64 and src.flags.c_contiguous:
            agg = blk @ src
        else:
            # The block's neighbours, renumbered in order: each row's terms keep their order.
            needed, local = np.unique(blk.indices, return_inverse=True)
            part = sp.csr_matrix((blk.data, local, blk.indptr), shape=(b - a, needed.size))
            agg = part @ np.asarray(src[needed], dtype=np.float64)
        return np.where(has[:, None], agg / denom[:, None], own)
