"""The reported pairs served block by block from R (no transpose) are exactly the pairs of the
dense R + Rᵀ, whatever the blocks."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from ldpgraph.protocols.ldp import reported_pairs
from ldpgraph.protocols.ldp.reported_pairs import ReportedPairs, row_blocks


def random_reports(n: int, density: float, seed: int, empty_rows=()) -> sp.csr_matrix:
    """Rows of 1-bits as the server assembles them: sorted, no diagonal, no duplicates; some
    pairs reported by both ends."""
    rng = np.random.default_rng(seed)
    bits = rng.random((n, n)) < density
    both = np.triu(rng.random((n, n)) < density, k=1)
    bits |= both | both.T
    np.fill_diagonal(bits, False)
    bits[list(empty_rows)] = False
    return sp.csr_matrix(bits.astype(np.int8))


def dense_pairs(r: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, R[i, j] + R[j, i]) for every i < j with a reported bit, row-major."""
    a = r.toarray().astype(np.int64)
    k = np.triu(a + a.T, k=1)
    i, j = np.nonzero(k)
    return i, j, k[i, j]


def concat(blocks):
    blocks = list(blocks)
    return (
        np.concatenate([b.i for b in blocks]),
        np.concatenate([b.j for b in blocks]),
        np.concatenate([b.ones for b in blocks]),
        blocks,
    )


@pytest.mark.parametrize(
    "n,density,seed,empty", [(1, 0.0, 0, ()), (2, 0.6, 1, ()), (37, 0.15, 2, (3, 4, 36)),
                             (64, 0.02, 3, ()), (90, 0.4, 4, (0,))]
)  # fmt: skip
@pytest.mark.parametrize(
    "sizes", [{}, {"block_rows": 1}, {"block_rows": 7}, {"block_rows": 1000}, {"entries": 5}]
)
def test_blocks_are_the_dense_pairs(n, density, seed, empty, sizes):
    """Chunks of 1 row, of 7 rows (not dividing n), one chunk, and tiny entry budgets (also
    while regrouping the lower triangle)."""
    r = random_reports(n, density, seed, empty)
    entries = sizes.get("entries")
    pairs = ReportedPairs(r, block_entries=entries)
    i, j, ones, blocks = concat(pairs.blocks(entries, sizes.get("block_rows")))
    ei, ej, eo = dense_pairs(r)
    np.testing.assert_array_equal(i, ei)
    np.testing.assert_array_equal(j, ej)
    np.testing.assert_array_equal(ones, eo)
    assert ones.dtype == np.int8
    assert pairs.num_pairs == ei.size
    # Blocks tile the rows in order, and each holds exactly its rows' pairs.
    assert [b.start for b in blocks] == [0] + [b.stop for b in blocks[:-1]]
    assert blocks[-1].stop == n
    for b in blocks:
        assert np.all((b.i >= b.start) & (b.i < b.stop))
    if "block_rows" in sizes:
        assert all(b.stop - b.start == min(sizes["block_rows"], n - b.start) for b in blocks)
    # Lookups of arbitrary pairs, in either order.
    rng = np.random.default_rng(seed)
    qi, qj = rng.integers(0, n, 500), rng.integers(0, n, 500)
    a = r.toarray().astype(np.int64)
    np.testing.assert_array_equal(pairs.has(qi, qj), (a[qi, qj] + a[qj, qi]) > 0)
    np.testing.assert_array_equal(pairs.ones(qi, qj), a[qi, qj] + a[qj, qi])


def test_rows_of_any_range_and_unsorted_input():
    """Arbitrary row ranges (the blockwise similarity join asks for its own); R given with
    unsorted rows is sorted in place first."""
    r = random_reports(50, 0.2, 9)
    ei, ej, eo = dense_pairs(r)
    shuffled = r.copy()
    rng = np.random.default_rng(0)
    for row in range(50):
        seg = slice(shuffled.indptr[row], shuffled.indptr[row + 1])
        shuffled.indices[seg] = rng.permutation(shuffled.indices[seg])
    shuffled.has_sorted_indices = False
    pairs = ReportedPairs(shuffled)
    for a, b in ((0, 50), (10, 11), (13, 40), (49, 50)):
        blk = pairs.rows(a, b)
        sel = (ei >= a) & (ei < b)
        np.testing.assert_array_equal(blk.i, ei[sel])
        np.testing.assert_array_equal(blk.j, ej[sel])
        np.testing.assert_array_equal(blk.ones, eo[sel])


def test_memory_beside_the_reports_is_half_their_indices(monkeypatch):
    """What the pairs hold beside R: the lower triangle's int32 indices and an indptr, i.e.
    about half of R's indices (no transpose, no R + Rᵀ)."""
    monkeypatch.setattr(reported_pairs, "BLOCK_ENTRIES", 1000)
    r = random_reports(400, 0.05, 5)
    pairs = ReportedPairs(r)
    lower = int(sp.tril(r, k=-1).nnz)
    assert pairs.lower_indices.shape[0] == lower
    assert pairs.lower_indices.dtype == np.int32
    assert pairs.nbytes == 4 * lower + 8 * 401
    assert pairs.nbytes < 0.6 * (r.indices.nbytes + r.data.nbytes) + 8 * 401


def test_row_blocks_cover_every_row_once():
    indptr = np.array([0, 0, 5, 5, 6, 30, 31])
    for budget in (1, 3, 6, 100):
        bounds = list(row_blocks(indptr, budget))
        assert bounds[0][0] == 0 and bounds[-1][1] == 6
        assert all(b0[1] == b1[0] for b0, b1 in zip(bounds, bounds[1:], strict=False))
        # At most `budget` entries unless one row alone holds more.
        for a, b in bounds:
            assert indptr[b] - indptr[a] <= budget or b == a + 1
    assert list(row_blocks(indptr, block_rows=4)) == [(0, 4), (4, 6)]
    with pytest.raises(ValueError):
        list(row_blocks(indptr, block_rows=0))
