"""The kept pairs' lean merge and the edges taken from it against the former code (a copy of it
below): the same arrays, dtypes included, on random inputs with sorted and unsorted parts,
repeats, empty parts and lists, and chunks smaller than the parts."""

from __future__ import annotations

import numpy as np
import pytest

from ldpgraph.protocols.graph import canonical_edges
from ldpgraph.protocols.ldp import hogs_merge
from ldpgraph.protocols.ldp.hogs_merge import merge_kept, sorted_edges


def _old_sorted_unique(key, prob):
    if key.size < 2 or bool((key[1:] > key[:-1]).all()):
        return key, prob
    order = np.argsort(key, kind="stable")
    key, prob = key[order], prob[order]
    first = np.empty(key.size, dtype=bool)
    first[0] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    return key[first], prob[first]


def _old_concat(parts):
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    if len(parts) == 1:
        return parts[0]
    return np.concatenate([k for k, _ in parts]), np.concatenate([p for _, p in parts])


def old_merge(reported, unreported, n):
    """The former ``PairScorer.result`` and ``reconstruct_topology``'s split of the keys."""
    rk, rp = _old_sorted_unique(*_old_concat(reported))
    uk, up = _old_sorted_unique(*_old_concat(unreported))
    if uk.size == 0:
        key, prob = rk, rp
    elif rk.size == 0:
        key, prob = uk, up
    else:
        at = np.searchsorted(rk, uk) + np.arange(uk.size)
        key = np.empty(rk.size + uk.size, dtype=np.int64)
        prob = np.empty(key.size, dtype=np.float64)
        theirs = np.ones(key.size, dtype=bool)
        theirs[at] = False
        key[at], prob[at] = uk, up
        key[theirs], prob[theirs] = rk, rp
    key = key.copy()
    j = (key % n).astype(np.int32)
    i = np.floor_divide(key, n, out=key).astype(np.int32, copy=False)
    return i, j, prob


def _parts(rng, keys, sorted_run: bool, repeats: bool, empties: bool):
    """``keys`` cut into parts (key, P): ascending and cut in order, or shuffled (with some
    keys repeated, each repeat with another P) and cut anywhere."""
    keys = np.sort(keys)
    if not sorted_run:
        if repeats and keys.size:
            keys = np.concatenate([keys, rng.choice(keys, keys.size // 3)])
        keys = rng.permutation(keys)
    cuts = np.sort(rng.integers(0, keys.size + 1, rng.integers(0, 6)))
    parts = []
    for k in np.split(keys, cuts):
        parts.append((k.astype(np.int64), rng.uniform(0.5, 1.0, k.size)))
        if empties and rng.random() < 0.5:
            parts.append((np.zeros(0, np.int64), np.zeros(0, np.float64)))
    return parts


def _copy(parts):
    return [(k.copy(), p.copy()) for k, p in parts]


@pytest.mark.parametrize("chunk", [1, 3, 64, 1 << 20])
def test_merge_kept_is_the_former_merge(monkeypatch, chunk):
    monkeypatch.setattr(hogs_merge, "CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    for trial in range(60):
        n = int(rng.integers(2, 60))
        pairs = n * n
        count = int(rng.integers(0, min(pairs, 400)))
        keys = rng.choice(pairs, count, replace=False)
        split = rng.random(count) < rng.random()
        first = _parts(rng, keys[split], rng.random() < 0.6, trial % 3 == 0, trial % 2 == 0)
        second = _parts(rng, keys[~split], rng.random() < 0.6, trial % 4 == 0, trial % 2 == 1)
        if trial % 7 == 0:
            first = []
        if trial % 11 == 0:
            second = []
        want = old_merge(_copy(first), _copy(second), n)
        a, b = _copy(first), _copy(second)
        got = merge_kept(a, b, n)
        assert a == [] and b == []  # the lists are emptied
        for w, g in zip(want, got, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)


def test_merge_kept_places_a_repeat_across_lists_as_before(monkeypatch):
    # Not met by the topology (its two lists are disjoint), but the order stays the former.
    monkeypatch.setattr(hogs_merge, "CHUNK", 2)
    first = [(np.array([1, 4, 7, 9], np.int64), np.array([0.6, 0.7, 0.8, 0.9]))]
    second = [(np.array([4, 9, 12], np.int64), np.array([0.61, 0.91, 0.95]))]
    want = old_merge(_copy(first), _copy(second), 5)
    got = merge_kept(first, second, 5)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_array_equal(g, w)


def test_merge_kept_releases_each_part_once_merged(monkeypatch):
    monkeypatch.setattr(hogs_merge, "CHUNK", 4)
    keys = np.arange(0, 40, dtype=np.int64)
    first = [(keys[a : a + 10].copy(), np.full(10, 0.7)) for a in range(0, 40, 10)]
    run = hogs_merge._Run(hogs_merge._as_run(first))
    seen = []
    while run.size:
        key, _ = run.peek()
        seen.append(len(run.parts))
        run.advance(key.size)
    # 4 parts of 10 read in chunks of 4 (4, 4, 2 each): a part leaves after its last chunk.
    assert seen == [4, 4, 4, 3, 3, 3, 2, 2, 2, 1, 1, 1]


@pytest.mark.parametrize("chunk", [1, 5, 1 << 20])
def test_sorted_edges_are_canonical_edges(monkeypatch, chunk):
    monkeypatch.setattr(hogs_merge, "CHUNK", chunk)
    rng = np.random.default_rng(7 + chunk)
    for trial in range(40):
        n = int(rng.integers(2, 50))
        keys = np.sort(rng.choice(n * n, int(rng.integers(0, min(n * n, 300))), replace=False))
        i, j = keys // n, keys % n
        up = i < j
        i, j = i[up].astype(np.int32), j[up].astype(np.int32)
        prob = rng.uniform(0.4, 1.0, i.size)
        tau = float(rng.choice([0.5, 0.9, 1.0, 0.3]))
        if trial % 5 == 1:  # not canonical: the fallback
            i, j = j, i
        if trial % 5 == 2 and i.size > 1:
            i, j = i[::-1].copy(), j[::-1].copy()
        keep = prob >= tau
        want = canonical_edges(np.stack([i[keep], j[keep]], axis=1), n)
        got = sorted_edges(i, j, prob, tau, n)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)


def test_sorted_edges_checks_the_range():
    i = np.array([0, 1], np.int32)
    j = np.array([1, 7], np.int32)  # 7 >= n
    with pytest.raises(ValueError, match="out of range"):
        sorted_edges(i, j, np.ones(2), 0.5, 5)
