"""PackedKeys: sorted int64 keys in 4 bytes each, found and decoded exactly."""

from __future__ import annotations

import numpy as np
import pytest

from ldpgraph.protocols.ldp.packed_keys import PackedKeys


@pytest.mark.parametrize("n", [10, 1000, 10**7])
def test_packed_keys_decode_and_search_exactly(n):
    """Keys i·n + j of every size class (runs of high words, empty runs between them, keys
    at 2^32 boundaries): every slice decodes to the keys, every search to numpy's."""
    rng = np.random.default_rng(n)
    i = rng.integers(0, n, 5000)
    j = rng.integers(0, n, 5000)
    key = np.unique(np.minimum(i, j).astype(np.int64) * n + np.maximum(i, j))
    edge = np.array([0, 2**32 - 1, 2**32, 2**33 + 5, 7 * 2**32 - 1], dtype=np.int64)
    key = np.unique(np.concatenate([key, edge[edge < n * n]]))
    packed = PackedKeys.pack(key)
    assert packed.low.dtype == np.uint32 and packed.size == key.size
    np.testing.assert_array_equal(packed.keys(0, key.size), key)
    for a, b in [(0, 0), (3, 17), (key.size // 2, key.size), (key.size - 1, key.size)]:
        np.testing.assert_array_equal(packed.keys(a, b), key[a:b])
    idx = rng.integers(0, key.size, 200)
    np.testing.assert_array_equal(packed.at(idx), key[idx])
    probes = np.concatenate(
        [key, key + 1, key - 1, edge, [-5, 0, n * n, n * n + 2**40, np.iinfo(np.int64).max]]
    )
    for v in probes:
        assert packed.searchsorted(int(v)) == int(np.searchsorted(key, v)), v


def test_empty_and_negative():
    empty = PackedKeys.pack(np.zeros(0, np.int64))
    assert empty.size == 0 and empty.searchsorted(123) == 0 and empty.keys(0, 0).size == 0
    with pytest.raises(ValueError, match="non-negative"):
        PackedKeys.pack(np.array([-1, 3], dtype=np.int64))
