"""Randomized response on a whole batch of adjacency rows, byte for byte what
:meth:`~ldpgraph.protocols.mechanisms.RandomizedResponse.perturb_row` (and
:meth:`~ldpgraph.protocols.mechanisms.AsymmetricRR.perturb_row`) make node by node: every node
still draws from its own streams, the same draws in the same order; what is batched is the
bookkeeping around the draws (mapping ranks to ids, sorting within rows). numpy only.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from ..batch import NodeBatch
from ..mechanisms import DENSE_FLIP, RandomizedResponse, ranks_from_uniforms
from ..rng import (
    ADJACENCY,
    SAMPLING,
    batch_streams_exact,
    generator_from_words,
    node_rng,
    stream_words,
)

#: Cells (rows × widest first block) of one pass over the batch's first blocks of ranks.
_RANK_CELLS = 1 << 21
_NO_RANK = np.iinfo(np.int32).max
#: Largest n the 2-D slices serve (they sort 2·rank + 1 in int32); larger graphs are made node
#: by node (int32 report ids reach 2^31 − 1).
MAX_SLICED_NODES = 1 << 30


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a block that keeps thousands of generators
    alive (each allocation would otherwise count towards a collection that walks them all:
    +50% per node). Refcounting still frees everything; the collector resumes after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def streams(seeds: int | Sequence[int], nodes: np.ndarray, round_: int, purpose: int):
    """A function k -> the generator of the batch's k-th node for ``purpose``."""
    if batch_streams_exact():
        words = stream_words(seeds, nodes, round_, purpose)
        return lambda k: generator_from_words(words[k])
    node_list = nodes.tolist()
    if isinstance(seeds, int | np.integer):
        return lambda k: node_rng(int(seeds), node_list[k], round_, purpose)
    return lambda k: node_rng(int(seeds[k]), node_list[k], round_, purpose)


def strict_rows(batch: NodeBatch) -> tuple[np.ndarray, np.ndarray] | None:
    """Every row's neighbours without the node itself (indptr int64, indices int64), or None
    when a row is not strictly increasing or names a node outside the graph (then the
    node-by-node path serves the batch, and the server judges what it makes of such rows)."""
    indptr = np.asarray(batch.indptr, dtype=np.int64)
    ones = np.asarray(batch.indices, dtype=np.int64)
    rows = np.repeat(np.arange(len(batch)), np.diff(indptr))
    own = ones == batch.nodes[rows]
    if own.any():
        keep = ~own
        ones, rows = ones[keep], rows[keep]
        indptr = np.zeros(len(batch) + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=len(batch)), out=indptr[1:])
    step_ok = np.diff(ones) > 0
    same_row = rows[1:] == rows[:-1]
    if (same_row & ~step_ok).any():
        return None
    if ones.size and (ones.min() < 0 or ones.max() >= batch.num_nodes):
        return None
    return indptr, ones


def rr_rows(
    batch: NodeBatch,
    strict: tuple[np.ndarray, np.ndarray],
    round_: int,
    seeds: int | Sequence[int],
    epsilon: float,
    mu: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`RandomizedResponse.perturb_row` of every row (``mu`` < 1: :meth:`AsymmetricRR.
    perturb_row`, sparse rows): the same draws on each node's streams (survival uniforms, the
    binomial count, with μ the keep uniforms and the kept count on SAMPLING, the blocks of
    :func:`distinct_ranks`), the same mapping. Per node only the draws are Python calls; the
    rest is numpy on the batch."""
    m, n = len(batch), batch.num_nodes
    p = RandomizedResponse(epsilon).p
    if p >= DENSE_FLIP:
        indptr, indices = _dense_rr_rows(batch, strict, round_, seeds, p)
        if mu < 1.0:  # RR's rows, then keep_each on every node's SAMPLING stream
            indptr, indices = _keep_each(batch, round_, seeds, indptr, indices, mu)
        return indptr, indices
    ptr, ones = strict
    deg = np.diff(ptr)
    rows = np.repeat(np.arange(m, dtype=np.int64), deg)
    num_zeros = n - deg - 1
    gens, count_list, reports = _first_pass(batch, ptr, ones.size, num_zeros, round_, seeds, p, mu)
    counts = np.asarray(count_list, dtype=np.int64)
    # A row's excluded ids (its neighbours, sorted, with itself put in place), for each the
    # number of zeros below it (``below`` of perturb_row) and what the row reports there:
    # the id if it is a neighbour that survived, else nothing (_PAD).
    key = rows * (n + 1) + ones
    own = np.arange(m, dtype=np.int64) * (n + 1) + batch.nodes
    at = np.searchsorted(key, own)
    key = np.insert(key, at, own)
    reported = np.insert(np.where(reports, ones, _PAD).astype(np.int32), at, _PAD)
    ex_ptr = ptr + np.arange(m + 1, dtype=np.int64)
    ex_rows = np.repeat(np.arange(m, dtype=np.int64), deg + 1)
    below = (key - ex_rows * (n + 1) - (np.arange(key.size) - ex_ptr[ex_rows])).astype(np.int32)
    parts = _flipped_rows(gens, counts, num_zeros, deg, ex_ptr, below, reported)
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    indptr[1:] += np.cumsum(np.bincount(rows[reports], minlength=m))
    indices = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
    return indptr, indices


def _keep_each(
    batch: NodeBatch,
    round_: int,
    seeds: int | Sequence[int],
    indptr: np.ndarray,
    indices: np.ndarray,
    mu: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Dense rows' asymmetric RR: each reported 1 kept with ``mu``, one uniform per reported 1
    from each node's SAMPLING stream (:meth:`AsymmetricRR.perturb_row`'s dense path)."""
    m = len(batch)
    keep = np.empty(indices.size, dtype=np.float64)
    sampling = streams(seeds, batch.nodes, round_, SAMPLING)
    starts = indptr.tolist()
    for k in range(m):
        sampling(k).random(out=keep[starts[k] : starts[k + 1]])
    kept = keep < mu
    rows = np.repeat(np.arange(m), np.diff(indptr))
    indices = indices[kept]
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[kept], minlength=m), out=indptr[1:])
    return indptr, indices


def _first_pass(
    batch: NodeBatch,
    ptr: np.ndarray,
    num_ones: int,
    num_zeros: np.ndarray,
    round_: int,
    seeds: int | Sequence[int],
    p: float,
    mu: float,
) -> tuple[list[np.random.Generator], list[int], np.ndarray]:
    """Pass 1 of :func:`rr_rows`, node by node on its ADJACENCY stream: the survival uniforms
    of the true 1s and the number of flipped 0s (with μ < 1 then, on SAMPLING, the keep
    uniforms and the kept count). Returns the streams (pass 2 draws on), the counts and which
    true 1s are reported."""
    m = len(batch)
    survival = np.empty(num_ones, dtype=np.float64)
    # Pass 1, node by node: the stream, the survival uniforms of the true 1s, the count.
    stream = streams(seeds, batch.nodes, round_, ADJACENCY)
    starts, zeros_of = ptr.tolist(), num_zeros.tolist()
    gens: list[np.random.Generator] = []
    count_list: list[int] = []
    with _collector_paused():
        for k in range(m):
            rng = stream(k)
            rng.random(out=survival[starts[k] : starts[k + 1]])
            nz = zeros_of[k]
            count_list.append(int(rng.binomial(nz, p)) if nz > 0 else 0)
            gens.append(rng)
    reports = survival >= p
    if mu < 1.0:  # asymmetric RR: keep uniforms and kept counts on each node's SAMPLING stream
        keep = np.empty(survival.size, dtype=np.float64)
        sampling = streams(seeds, batch.nodes, round_, SAMPLING)
        with _collector_paused():
            for k in range(m):
                krng = sampling(k)
                krng.random(out=keep[starts[k] : starts[k + 1]])
                c = count_list[k]
                count_list[k] = int(krng.binomial(c, mu)) if c > 0 else 0
        reports &= keep < mu
    return gens, count_list, reports


def _flipped_rows(
    gens: list[np.random.Generator],
    counts: np.ndarray,
    num_zeros: np.ndarray,
    deg: np.ndarray,
    ex_ptr: np.ndarray,
    below: np.ndarray,
    reported: np.ndarray,
) -> list[np.ndarray]:
    """Pass 2 of :func:`rr_rows`: every row's reported ids, slice by slice of rows."""
    m = counts.shape[0]
    count_list = counts.tolist()
    # Pass 2: the flipped zeros of slices of rows, at most _RANK_CELLS cells a slice; a row
    # much wider than its neighbours (a hub) gets a slice of its own.
    parts: list[np.ndarray] = []
    wide = (counts + deg + 1).tolist()
    lo = 0
    while lo < m:
        hi, widest, narrowest = lo + 1, wide[lo], wide[lo]
        while hi < m:
            top, bottom = max(widest, wide[hi]), min(narrowest, wide[hi])
            if top * (hi + 1 - lo) > _RANK_CELLS or top > 2 * bottom + 64:
                break
            widest, narrowest, hi = top, bottom, hi + 1
        ranks = _flipped_ranks(gens, counts, num_zeros, lo, hi, max(1, max(count_list[lo:hi])))
        a, b = ex_ptr[lo], ex_ptr[hi]
        parts.append(_reported_rows(*ranks, below[a:b], reported[a:b], deg[lo:hi] + 1))
        lo = hi
    return parts


#: An empty cell of the slices (the same value: odd, so it sorts last and never reads as a
#: doubled ``below`` entry).
_PAD = _NO_RANK


def _reported_rows(
    ranks: np.ndarray,
    fresh: np.ndarray,
    later: np.ndarray,
    below: np.ndarray,
    reported: np.ndarray,
    excluded_len: np.ndarray,
) -> np.ndarray:
    """A slice's reported rows, concatenated (int32), from each row's flipped ranks (those of
    ``ranks`` marked ``fresh``, and the keys row << 31 | rank of ``later`` rounds) and its
    excluded ids (``below``: the zeros under each; ``reported``: the id if the row reports it).

    One sort within rows does it (numpy sorts many short rows of a 2-D array far faster than
    one long array): ranks enter as 2·rank + 1, excluded ids as 2·below. In a sorted row the
    t-th even entry is the row's t-th excluded id, and a rank's column (perturb_row's rank +
    #{below <= rank}) is the rank plus the even entries up to it; reading the row in order,
    columns and reported excluded ids come out sorted."""
    r, width = ranks.shape
    later = np.sort(later)
    later_len = np.bincount(later >> 31, minlength=r)
    extra = width + int(later_len.max(initial=0))
    spread = np.full((r, extra + int(excluded_len.max())), _PAD, dtype=np.int32)
    spread[:, :width] = np.where(fresh, ranks * 2 + 1, _PAD)
    spread[_row_slots(later_len, width)] = (later & 0x7FFFFFFF).astype(np.int32) * 2 + 1
    slots = _row_slots(excluded_len, extra)
    spread[slots] = below * 2
    spread.sort(axis=1)
    even = (spread & 1) == 0
    seen = np.cumsum(even, axis=1, dtype=np.int32)
    own = np.full((r, int(excluded_len.max())), _PAD, dtype=np.int32)
    own[slots[0], slots[1] - extra] = reported
    ids = np.take_along_axis(own, np.maximum(seen - 1, 0), axis=1)
    out = np.where(even, ids, np.where(spread == _PAD, _PAD, (spread >> 1) + seen))
    return out[out != _PAD]


def _row_slots(lengths: np.ndarray, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) of ``lengths[i]`` consecutive cells of row i from column ``offset``."""
    rows = np.repeat(np.arange(lengths.size), lengths)
    starts = np.cumsum(lengths) - lengths
    return rows, offset + np.arange(rows.size) - np.repeat(starts, lengths)


def _dense_rr_rows(
    batch: NodeBatch,
    strict: tuple[np.ndarray, np.ndarray],
    round_: int,
    seeds: int | Sequence[int],
    p: float,
) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`RandomizedResponse.perturb_row`'s dense rows (p >= DENSE_FLIP): one uniform per
    column from each node's stream, rows in slices of at most _RANK_CELLS cells."""
    m, n = len(batch), batch.num_nodes
    ptr, ones = strict
    stream = streams(seeds, batch.nodes, round_, ADJACENCY)
    lengths = np.zeros(m, dtype=np.int64)
    parts: list[np.ndarray] = []
    step = max(1, _RANK_CELLS // max(n, 1))
    for lo in range(0, m, step):
        hi = min(m, lo + step)
        cells = np.empty((hi - lo, n), dtype=np.float64)
        for k in range(lo, hi):
            stream(k).random(out=cells[k - lo])
        bits = cells < p
        at = np.repeat(np.arange(hi - lo), np.diff(ptr[lo : hi + 1])), ones[ptr[lo] : ptr[hi]]
        bits[at] = ~bits[at]
        bits[np.arange(hi - lo), batch.nodes[lo:hi]] = False
        lengths[lo:hi] = bits.sum(axis=1)
        parts.append(np.nonzero(bits)[1].astype(np.int32))
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    indices = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
    return indptr, indices


def _flipped_ranks(
    gens: list[np.random.Generator],
    counts: np.ndarray,
    num_zeros: np.ndarray,
    lo: int,
    hi: int,
    width: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows lo..hi-1's flipped ranks: :func:`distinct_ranks` for all the rows at once. Every
    round, each row still short draws its deficit with one call on its own stream; keeping the
    new distinct ranks (sorting within rows, looking up the ranks a row holds) is numpy on
    all. Returns the first round's (hi − lo, width) sorted int32 ranks and which of them are
    the row's (not padding, not a repeat), and the later rounds' ranks as keys row << 31 | rank.
    """
    want = counts[lo:hi]
    size = np.maximum(num_zeros[lo:hi], 1)[:, None]
    block, fresh = _draw_ranks(gens, lo, np.arange(hi - lo), want, size, width)
    have = fresh.sum(axis=1)
    later: list[np.ndarray] = []
    if (have < want).any():
        # A row's ranks, as keys row << 31 | rank, sorted: rows in order, each row sorted
        # (repeats kept, they change no lookup), its padding last.
        tag = np.arange(hi - lo, dtype=np.int64)[:, None] << 31
        held = [(tag | block).ravel()]
        while (short := np.flatnonzero(have < want)).size:
            new, new_fresh = _draw_ranks(gens, lo, short, want[short] - have[short], size[short])
            keys = (tag[short] | new)[new_fresh]
            for known in held:
                if known.size:
                    at = np.minimum(np.searchsorted(known, keys), known.size - 1)
                    keys = keys[known[at] != keys]
            held.append(keys)
            later.append(keys)
            have += np.bincount(keys >> 31, minlength=hi - lo)
    return block, fresh, np.concatenate(later) if later else np.zeros(0, dtype=np.int64)


def _draw_ranks(
    gens: list[np.random.Generator],
    lo: int,
    rows: np.ndarray,
    need: np.ndarray,
    size: np.ndarray,
    width: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One round of :func:`distinct_ranks` for ``rows`` (offsets from ``lo``): ``need[j]``
    uniforms from row j's stream as ranks in [0, ``size[j]``), sorted within the row and
    padded with _NO_RANK to ``width`` (default: the largest need), and which are new: drawn,
    not rejected, not a repeat of the rank before."""
    cells = np.zeros((rows.size, int(need.max()) if width is None else width))
    for j, (row, c) in enumerate(zip((rows + lo).tolist(), need.tolist(), strict=True)):
        gens[row].random(out=cells[j, :c])
    ranks, ok = ranks_from_uniforms(cells, size)
    ok &= np.arange(cells.shape[1]) < need[:, None]
    out = np.where(ok, ranks, _NO_RANK).astype(np.int32)
    out.sort(axis=1)
    fresh = out != _NO_RANK
    fresh[:, 1:] &= out[:, 1:] != out[:, :-1]
    return out, fresh
