"""The reported pairs of an adjacency round, block by block of rows: what HoGS and the BLink
family score.

Node i's report is row i of R (R[i, j] = 1 iff i reported bit j as 1; rows sorted, without
duplicates or the diagonal, as the server's validation guarantees). A pair {i, j} has two bits,
R[i, j] and R[j, i], in two rows, so scoring pairs needs both. Transposing R, or forming
R + Rᵀ, would hold a second and a third copy of the reports. Here the strictly lower triangle
of R is regrouped by column once, block by block (under i the rows j > i with R[j, i] = 1:
half of the entries, int32 indices only, about 2 bytes per report entry beside R's 5), and the
pairs owned by rows a..b−1 are R's rows a..b−1 plus that regrouped part's rows a..b−1, merged
one block at a time. Every consumer (the numpy reconstructions here, a device path later) takes
the pairs of one block as plain arrays from :meth:`ReportedPairs.blocks`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

#: Report entries (R's and the regrouped lower triangle's) per block of rows.
BLOCK_ENTRIES = 1 << 18


@dataclass(frozen=True)
class PairBlock:
    """The reported pairs {i, j}, i < j, whose smaller node i lies in rows [start, stop), in
    row-major order (i ascending, then j ascending), with ``ones`` = R[i, j] + R[j, i] (1 or 2,
    int8)."""

    start: int
    stop: int
    i: np.ndarray
    j: np.ndarray
    ones: np.ndarray

    @property
    def size(self) -> int:
        return int(self.i.shape[0])


def row_blocks(
    indptr: np.ndarray, block_entries: int | None = None, block_rows: int | None = None
) -> Iterator[tuple[int, int]]:
    """Consecutive row ranges [a, b) covering every row: ``block_rows`` rows each when given,
    else as many rows as keep a block at ``block_entries`` entries of ``indptr`` (one row at
    least)."""
    n = indptr.shape[0] - 1
    if block_rows is not None:
        if block_rows < 1:
            raise ValueError(f"block_rows must be >= 1, got {block_rows}")
        for a in range(0, n, block_rows):
            yield a, min(n, a + block_rows)
        return
    budget = max(1, int(BLOCK_ENTRIES if block_entries is None else block_entries))
    a = 0
    while a < n:
        b = int(np.searchsorted(indptr, indptr[a] + budget, side="right")) - 1
        b = min(n, max(b, a + 1))
        yield a, b
        a = b


def csr_has(m: sp.csr_matrix, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Whether m[rows[k], cols[k]] is stored (m with sorted indices), by a vectorised binary
    search per row."""
    if rows.size == 0 or m.nnz == 0:
        return np.zeros(rows.shape, dtype=bool)
    lo = m.indptr[rows].astype(np.int64)
    end = m.indptr[rows + 1].astype(np.int64)
    hi = end.copy()
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) // 2
        less = m.indices[np.minimum(mid, m.nnz - 1)] < cols
        lo = np.where(active & less, mid + 1, lo)
        hi = np.where(active & ~less, mid, hi)
    return (lo < end) & (m.indices[np.minimum(lo, m.nnz - 1)] == cols)


class ReportedPairs:
    """The pairs with at least one reported 1-bit, served block by block from R without a
    transpose (see the module docstring). Holds a reference to R (with its indices sorted in
    place, as every consumer needs) and the regrouped lower triangle.

    Args:
        reported: the n × n CSR of reported 1-bits (:func:`.assemble.adjacency_reports`);
            every stored entry is a 1-bit, whatever value it stores.
        block_entries: entries of R per block while regrouping (memory of one block; at
            least n) and per block of :attr:`num_pairs`'s pass.
    """

    def __init__(self, reported: sp.csr_matrix, block_entries: int | None = None) -> None:
        reported = reported.tocsr()
        if reported.shape[0] != reported.shape[1]:
            raise ValueError(f"reported must be square, got {reported.shape}")
        if not reported.has_sorted_indices:
            reported.sort_indices()
        self.reported = reported
        self.n = n = int(reported.shape[0])
        indptr = reported.indptr
        # Regrouping a block costs O(n) besides its entries (a CSC pointer over all columns),
        # so its blocks hold n entries at least.
        regroup = max(BLOCK_ENTRIES if block_entries is None else block_entries, n)
        # Pass 1: how many lower-triangle bits each column receives.
        counts = np.zeros(n, dtype=np.int64)
        for a, b in row_blocks(indptr, regroup):
            rows, cols = self._entries(a, b)
            low = cols < rows
            counts += np.bincount(cols[low], minlength=n)
        self.lower_indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=self.lower_indptr[1:])
        idx_dtype = np.int32 if n <= np.iinfo(np.int32).max else np.int64
        self.lower_indices = np.empty(int(self.lower_indptr[-1]), dtype=idx_dtype)
        # Pass 2: each block's lower bits, regrouped by column (a linear CSR → CSC pass), go
        # after what earlier blocks (smaller rows) put there, so every list stays sorted.
        cursor = self.lower_indptr[:-1].copy()
        for a, b in row_blocks(indptr, regroup):
            rows, cols = self._entries(a, b)
            low = cols < rows
            if not low.any():
                continue
            r, c = rows[low], cols[low]
            per_row = np.bincount(r - a, minlength=b - a)
            local_ptr = np.zeros(b - a + 1, dtype=np.int64)
            np.cumsum(per_row, out=local_ptr[1:])
            chunk = sp.csr_matrix(
                (np.ones(c.shape[0], dtype=np.int8), c, local_ptr), shape=(b - a, n)
            ).tocsc()
            col_counts = np.diff(chunk.indptr)
            col_of = np.repeat(np.arange(n, dtype=np.int64), col_counts)
            rank = np.arange(col_of.shape[0]) - np.repeat(chunk.indptr[:-1], col_counts)
            self.lower_indices[cursor[col_of] + rank] = chunk.indices + a
            cursor += col_counts
        self._block_entries = block_entries

    def _entries(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Row and column of each stored entry of R's rows a..b−1 (int64)."""
        indptr = self.reported.indptr
        rows = np.repeat(np.arange(a, b, dtype=np.int64), np.diff(indptr[a : b + 1]))
        cols = self.reported.indices[indptr[a] : indptr[b]].astype(np.int64)
        return rows, cols

    @cached_property
    def num_pairs(self) -> int:
        """Distinct unordered pairs {i, j}, i ≠ j, with at least one reported 1-bit (one pass
        over the blocks, on first use)."""
        return sum(blk.size for blk in self.blocks(self._block_entries))

    @property
    def nbytes(self) -> int:
        """Bytes held beside R (the regrouped lower triangle)."""
        if self.lower_indices is None:
            return 0
        return int(self.lower_indices.nbytes + self.lower_indptr.nbytes)

    def drop_regrouped(self) -> None:
        """Release the regrouped lower triangle once every block has been read: :meth:`has`
        and :meth:`ones` ask R alone, :meth:`rows` (and so :meth:`blocks`) then refuse."""
        self.lower_indices = None
        self.lower_indptr = None

    def _whole(self) -> None:
        if self.lower_indices is None:
            raise RuntimeError("the reported pairs' lower triangle was dropped (drop_regrouped)")

    def rows(self, start: int, stop: int) -> PairBlock:
        """The pairs owned by rows [start, stop): R's rows plus the regrouped lower triangle's,
        merged row by row (scipy's linear sorted-row addition), entries right of the diagonal."""
        self._whole()
        n = self.n
        lo, hi = int(self.lower_indptr[start]), int(self.lower_indptr[stop])
        lower = sp.csr_matrix(
            (
                np.ones(hi - lo, dtype=np.int8),
                self.lower_indices[lo:hi],
                self.lower_indptr[start : stop + 1] - lo,
            ),
            shape=(stop - start, n),
        )
        indptr = self.reported.indptr
        s, e = int(indptr[start]), int(indptr[stop])
        own = sp.csr_matrix(
            (
                np.ones(e - s, dtype=np.int8),
                self.reported.indices[s:e],
                indptr[start : stop + 1] - s,
            ),
            shape=(stop - start, n),
        )
        blk = (own + lower).tocoo()
        ri = blk.row.astype(np.int64) + start
        rj = blk.col.astype(np.int64)
        upper = rj > ri
        return PairBlock(start, stop, ri[upper], rj[upper], blk.data[upper])

    def block_bounds(
        self, block_entries: int | None = None, block_rows: int | None = None
    ) -> Iterator[tuple[int, int]]:
        """Row ranges of about ``block_entries`` entries (R's plus the regrouped part's), or of
        ``block_rows`` rows."""
        self._whole()
        if block_rows is not None:
            return row_blocks(self.lower_indptr, block_rows=block_rows)
        return row_blocks(self.reported.indptr + self.lower_indptr, block_entries)

    def blocks(
        self, block_entries: int | None = None, block_rows: int | None = None
    ) -> Iterator[PairBlock]:
        """Every reported pair once, block after block in row-major order (see
        :meth:`block_bounds`): concatenated, the blocks are all pairs sorted by (i, j)."""
        for a, b in self.block_bounds(block_entries, block_rows):
            yield self.rows(a, b)

    def has(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Whether {i[k], j[k]} was reported by either node (R[i, j] or R[j, i] stored)."""
        i = np.asarray(i, dtype=np.int64)
        j = np.asarray(j, dtype=np.int64)
        return csr_has(self.reported, i, j) | csr_has(self.reported, j, i)

    def ones(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """R[i, j] + R[j, i] for each pair (0, 1 or 2; int64)."""
        i = np.asarray(i, dtype=np.int64)
        j = np.asarray(j, dtype=np.int64)
        return csr_has(self.reported, i, j).astype(np.int64) + csr_has(self.reported, j, i)
