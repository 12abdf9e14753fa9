"""The feature reconstruction's lean W (the sorted pairs plus a column permutation) against W
as one CSR matrix built from the COO triple (the former path, kept for unsorted pair lists):
the same features to the bit."""

from __future__ import annotations

import numpy as np
import pytest

from ldpgraph.protocols.ldp import hogs_features
from ldpgraph.protocols.ldp.hogs_features import (
    CsrLinks,
    SortedLinks,
    links_of,
    reconstruct_features,
)


def sorted_pairs(n: int, m: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """m distinct pairs i < j sorted by i·n + j, int32 (as the topology returns them), with
    posteriors on both sides of 0.5, and a few hub rows so blocks hold uneven rows."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, 3 * m)
    b = np.where(rng.random(3 * m) < 0.2, rng.integers(0, 4, 3 * m), rng.integers(0, n, 3 * m))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    key = np.unique((lo * n + hi)[lo < hi])[:m]
    rng.shuffle(key)
    key = np.sort(key[:m])
    return (key // n).astype(np.int32), (key % n).astype(np.int32), rng.uniform(0.3, 1.0, key.size)


def coo_features(x0, i, j, prob, steps):
    """The former path: W from the COO triple, one CSR."""
    n = x0.shape[0]
    sel = prob >= hogs_features.FR_THRESHOLD
    links = CsrLinks.build(n, i[sel], j[sel], prob[sel])
    bounds = [(0, n)]
    src = x0
    for step in range(steps):
        dst = np.empty(x0.shape, dtype=np.float32 if step == steps - 1 else np.float64)
        hogs_features._average_blocks(links, src, dst, bounds)
        src = dst
    return src


@pytest.mark.parametrize("block_rows", [1, 13, None])
@pytest.mark.parametrize("steps", [1, 3])
@pytest.mark.parametrize("binary", [True, False])
def test_sorted_links_bit_identical_to_csr(block_rows, steps, binary, monkeypatch):
    n, d = 400, 9
    rng = np.random.default_rng(5)
    x0 = rng.integers(0, 2, (n, d), dtype=np.uint8) if binary else rng.normal(size=(n, d))
    i, j, prob = sorted_pairs(n, 3000, seed=steps)
    monkeypatch.setattr(hogs_features, "REGROUP_CHUNK", 257)  # many chunks of the regrouping
    assert isinstance(links_of(n, i, j, prob), SortedLinks)
    out = reconstruct_features(x0, i, j, prob, steps, block_rows=block_rows)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, coo_features(x0, i, j, prob, steps))


def test_sorted_links_rows_equal_csr_rows():
    """Every block of rows: the same CSR (pointer, columns in order, values) as W's."""
    n = 300
    i, j, prob = sorted_pairs(n, 2500, seed=9)
    lean = SortedLinks.build(n, i, j, prob)
    full = CsrLinks.build(n, i, j, prob)
    np.testing.assert_array_equal(lean.indptr, full.indptr)
    for a, b in [(0, 1), (0, n), (3, 4), (17, 120), (299, 300), (5, 5)]:
        got, want = lean.rows(a, b), full.rows(a, b)
        np.testing.assert_array_equal(got.indptr, want.indptr)
        np.testing.assert_array_equal(got.indices, want.indices)
        np.testing.assert_array_equal(got.data, want.data)


def test_unsorted_or_repeated_pairs_take_the_csr_path():
    n = 50
    i, j, prob = sorted_pairs(n, 200, seed=1)
    assert isinstance(links_of(n, i[::-1], j[::-1], prob[::-1]), CsrLinks)
    assert isinstance(links_of(n, j, i, prob), CsrLinks)  # i > j
    rep = np.r_[i, i[:1]], np.r_[j, j[:1]], np.r_[prob, 1.0]
    assert isinstance(links_of(n, *rep), CsrLinks)
    assert isinstance(links_of(n, i, j, prob), SortedLinks)


def test_empty_and_isolated():
    x0 = np.arange(12, dtype=np.float64).reshape(4, 3)
    none = np.zeros(0, np.int32)
    out = reconstruct_features(x0, none, none, np.zeros(0), steps=2)
    np.testing.assert_array_equal(out, x0.astype(np.float32))
    # One link 0-2 at P = 0.7: rows 0 and 2 take each other's row, 1 and 3 keep theirs.
    out = reconstruct_features(x0, np.array([0], np.int32), np.array([2], np.int32), [0.7], 1)
    np.testing.assert_array_equal(out, x0[[2, 1, 0, 3]].astype(np.float32))
