"""HoGS's kept pairs merged into one sorted run, and the release's edges taken from it, without
a second copy of every pair (the HoGS paper, Xu et al., Algorithm 2: the edges are the pairs
with P_ij ≥ τ).

The topology collects its kept pairs as parts of (i·n + j int64 keys, P_ij): the reported
pairs' parts and the unreported (joined) pairs' parts, each list sorted once concatenated in
the large runs. Concatenating each list, then merging the two into new key and posterior
arrays, then splitting the keys into i and j, held about 45 bytes a pair at once (at 10^7 nodes
~7.7·10^7 edges: ~3 GiB above the parts). Here the output (i, j in
:func:`.similarity_lsh.index_dtype`, P float64) is allocated once and written chunk by chunk,
and each part is released as soon as it is merged: the merge holds the parts not yet merged
plus the output written so far (16 bytes a pair either side), and one chunk.

The release's edges (int64 ``[m, 2]``) are then written chunk by chunk from the pairs with
P ≥ τ, instead of :func:`~ldpgraph.protocols.graph.canonical_edges`' int64 copies, minima,
maxima, keys and sort (~100 bytes an edge): the pairs are already canonical (i < j, sorted,
once), which is checked as they are copied, and any other input falls back to it.
"""

from __future__ import annotations

import numpy as np

from ..graph import canonical_edges
from .similarity_lsh import index_dtype

#: Keys merged (or edges written) at once.
CHUNK = 1 << 20

Kept = tuple[np.ndarray, np.ndarray]


def concat(parts: list[Kept]) -> Kept:
    """The parts' keys and posteriors, concatenated (a single part as it is)."""
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.float64)
    if len(parts) == 1:
        return parts[0]
    return np.concatenate([k for k, _ in parts]), np.concatenate([p for _, p in parts])


def sorted_unique(key: np.ndarray, prob: np.ndarray) -> Kept:
    """The keys sorted without repeats, each with the P of its first occurrence (as
    ``np.unique(..., return_index=True)``); a run already strictly increasing is kept as is."""
    if key.size < 2 or _increasing(key):
        return key, prob
    order = np.argsort(key, kind="stable")
    key, prob = key[order], prob[order]
    del order
    first = np.empty(key.size, dtype=bool)
    first[0] = True
    np.not_equal(key[1:], key[:-1], out=first[1:])
    return key[first], prob[first]


def merge_kept(first: list[Kept], second: list[Kept], n: int) -> tuple[np.ndarray, ...]:
    """(i, j, P) of every key of ``first`` and ``second``, ascending: each list's keys sorted
    without repeats (:func:`sorted_unique` of its concatenation), then the two merged, a key of
    ``second`` before an equal one of ``first`` (the two are disjoint in the topology). Both
    lists are emptied: each part is dropped once it is merged (module docstring).

    Args:
        first, second: the parts (int64 keys i·n + j, float64 P); a list whose parts
            concatenate to a strictly increasing run is merged part by part, any other is
            sorted whole first.
        n: the number of nodes (i = key // n, j = key % n).
    """
    a, b = _Run(_as_run(first)), _Run(_as_run(second))
    total = a.size + b.size
    small = index_dtype(n)
    out_i = np.empty(total, dtype=small)
    out_j = np.empty(total, dtype=small)
    out_p = np.empty(total, dtype=np.float64)
    at = 0
    while a.size or b.size:
        ka, pa = a.peek()
        kb, pb = b.peek()
        if ka.size and kb.size:
            # Up to the smaller of the two chunks' last keys: everything below it is here.
            hi = min(ka[-1], kb[-1])
            ka, pa = _upto(ka, pa, hi)
            kb, pb = _upto(kb, pb, hi)
            key, prob = _merge_two(ka, pa, kb, pb)
        else:
            key, prob = (ka, pa) if ka.size else (kb, pb)
        a.advance(ka.size)
        b.advance(kb.size)
        m = key.size
        np.floor_divide(key, n, out=out_i[at : at + m], casting="unsafe")
        np.remainder(key, n, out=out_j[at : at + m], casting="unsafe")
        out_p[at : at + m] = prob
        at += m
    return out_i, out_j, out_p


def sorted_edges(i: np.ndarray, j: np.ndarray, prob: np.ndarray, tau: float, n: int) -> np.ndarray:
    """``canonical_edges`` of the pairs (i, j) with ``prob`` ≥ τ: written chunk by chunk where
    the pairs are canonical already (0 ≤ i < j < n, i·n + j strictly increasing: the
    topology's output), else by :func:`~ldpgraph.protocols.graph.canonical_edges` itself."""
    if not _canonical(i, j, n):
        keep = prob >= tau
        return canonical_edges(np.stack([i[keep], j[keep]], axis=1), n)
    m = sum(int(np.count_nonzero(prob[a : a + CHUNK] >= tau)) for a in range(0, prob.size, CHUNK))
    edges = np.empty((m, 2), dtype=np.int64)
    at = 0
    for a in range(0, prob.size, CHUNK):
        keep = prob[a : a + CHUNK] >= tau
        c = int(np.count_nonzero(keep))
        edges[at : at + c, 0] = i[a : a + CHUNK][keep]
        edges[at : at + c, 1] = j[a : a + CHUNK][keep]
        at += c
    return edges


def _canonical(i: np.ndarray, j: np.ndarray, n: int) -> bool:
    """Whether 0 ≤ i < j < n for every pair and i·n + j strictly increases (by chunks: no
    int64 copy of every key)."""
    last = -1
    for a in range(0, i.size, CHUNK):
        ci = i[a : a + CHUNK].astype(np.int64)
        cj = j[a : a + CHUNK].astype(np.int64)
        if ci.min() < 0 or cj.max() >= n or not bool((ci < cj).all()):
            return False
        key = ci * n + cj
        if key[0] <= last or not _increasing(key):
            return False
        last = int(key[-1])
    return True


def _increasing(key: np.ndarray) -> bool:
    """Whether the keys strictly increase, by chunks (no bool array of every key)."""
    for a in range(0, max(key.size - 1, 0), CHUNK):
        part = key[a : a + CHUNK + 1]
        if not bool((part[1:] > part[:-1]).all()):
            return False
    return True


def _as_run(parts: list[Kept]) -> list[Kept]:
    """The parts as one strictly increasing run (a list of parts; ``parts`` emptied): as they
    are where they already are one, else their concatenation sorted without repeats."""
    taken = [part for part in parts if part[0].size]
    parts.clear()
    last = None
    for key, _ in taken:
        if (last is not None and key[0] <= last) or not _increasing(key):
            whole = sorted_unique(*concat(taken))
            return [whole] if whole[0].size else []
        last = key[-1]
    return taken


def _upto(key: np.ndarray, prob: np.ndarray, hi: int) -> Kept:
    end = int(np.searchsorted(key, hi, side="right"))
    return key[:end], prob[:end]


def _merge_two(rk: np.ndarray, rp: np.ndarray, uk: np.ndarray, up: np.ndarray) -> Kept:
    """Two sorted runs merged: each key of ``uk`` goes after the keys of ``rk`` below it."""
    if uk.size == 0:
        return rk, rp
    if rk.size == 0:
        return uk, up
    at = np.searchsorted(rk, uk) + np.arange(uk.size)
    key = np.empty(rk.size + uk.size, dtype=np.int64)
    prob = np.empty(key.size, dtype=np.float64)
    theirs = np.ones(key.size, dtype=bool)
    theirs[at] = False
    key[at], prob[at] = uk, up
    key[theirs], prob[theirs] = rk, rp
    return key, prob


class _Run:
    """A strictly increasing run held as parts, read front to back in chunks; a part is
    dropped as soon as it has been read."""

    def __init__(self, parts: list[Kept]) -> None:
        self.parts = parts
        self.size = sum(int(k.size) for k, _ in parts)
        self.pos = 0  # into parts[0]

    def peek(self) -> Kept:
        """Up to :data:`CHUNK` of the next keys (from the current part) and their P."""
        if not self.parts:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        key, prob = self.parts[0]
        return key[self.pos : self.pos + CHUNK], prob[self.pos : self.pos + CHUNK]

    def advance(self, count: int) -> None:
        if count == 0:
            return
        self.size -= count
        self.pos += count
        if self.pos == self.parts[0][0].size:
            self.parts.pop(0)
            self.pos = 0
