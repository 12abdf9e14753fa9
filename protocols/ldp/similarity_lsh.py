"""An approximate similarity join whose cost follows the candidates, not n²: MinHash bands.

HoGS's pairs with no reported 1 can only pass as feature-similar pairs (cosine ≥ t), found by
:meth:`.similarity.FeatureRows.threshold_join`. When t is low (``hogs-arr`` with a small μ:
a reported 0 is then weak evidence) the 1-bit rows are too dense for prefix filtering and the
exact join multiplies all n²/2 pairs; when t is high but the rows are short (d = 64), the exact
join's output alone (every pair of identical rows) grows as n². Here candidates come from
locality-sensitive hashing instead (Broder, "On the resemblance and containment of documents",
1997; the banding of Leskovec, Rajaraman and Ullman, *Mining of Massive Datasets*, §3.4):

* each band hashes a row to the tuple of ``r`` MinHash values of its set of 1-columns; two rows
  with Jaccard similarity J share a band with probability J^r, so a pair is a candidate with
  probability 1 − (1 − J^r)^b over ``b`` bands. Two equal-size sets with cosine t have
  J = t/(2 − t); (r, b) are the sharpest bands that give that J the recall asked for
  (:func:`plan_bands`). Where only identical rows can pass, one band keyed by the whole row is
  exact (recall 1).
* a bucket gives every pair in it while the band's pairs stay within a budget
  (:func:`pair_budget` over the bands, smallest buckets first);
  larger buckets (thousands of near-identical short rows) give each row its next
  :data:`LSH_RING` rows in a random order, so a band's candidates are at most about
  budget/b + LSH_RING·n. That is what the join loses: the pairs of over-full
  buckets beyond those, near-duplicates whose neighbours' features the reconstruction would
  average to nearly the same row.
* every candidate is verified with the exact cosine, as the exact join does.

The hashing and the bucket order use the curator's own random stream, drawn from nothing but
the run's seed: post-processing of the reports, with no privacy cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..params import Param
from ..progress import steps
from .blocks import map_blocks
from .similarity import FeatureRows

#: The join a run asks for: ``exact`` (:meth:`FeatureRows.threshold_join`), ``lsh`` (this
#: module), ``auto`` (exact unless its work exceeds the budgets below).
JOINS = ("auto", "exact", "lsh")
#: ``auto`` leaves the exact join when its all-pairs products exceed this many multiply-adds
#: (2·10^12: n ≈ 2.5·10^5 at d = 64; minutes on two cores) ...
EXACT_PRODUCTS_BUDGET = 2e12
#: ... or when the identical-rows join would return more pairs than this (10^7: ~10^5 rows of
#: 64 bits from the SBM at ε_f = 8; 10^6 such rows have 1.4·10^8 identical pairs).
EXACT_PAIRS_BUDGET = 1e7
#: The recall targeted for a pair of equal-size rows at cosine exactly t.
LSH_RECALL = 0.95
#: The most bands the planner uses (each costs r MinHash passes and one grouping).
LSH_MAX_BANDS = 32
#: Buckets of up to this many rows always contribute every pair (no more than the ring gives);
#: larger ones too, smallest first, while a band's pairs stay within
#: max(LSH_PAIR_BUDGET, LSH_PAIRS_PER_ROW·n) / bands. (A floor of 64 let 10^7 short rows in
#: groups of ≤ 64 give ~10^8 pairs past the budget.)
LSH_BUCKET = 3
LSH_PAIR_BUDGET = 1e7
LSH_PAIRS_PER_ROW = 2
#: ... and the rest give each row its next this many rows (in the bucket's random order).
LSH_RING = 2

RING = Param(
    "lsh_ring",
    int,
    LSH_RING,
    "HoGS/hogs-arr, LSH join: in an over-full bucket (beyond the join's pair budget, only at "
    "scale: ~10^5+ rows) each row is paired with its next lsh_ring rows per band, so the join "
    "gives a row at most 2·lsh_ring·bands neighbours beyond the budget's pairs; 0: the budget's "
    "pairs only (what 10^7 nodes need to fit 16 GiB, docs/benchmarks.md). Server-side",
    low=0,
    server_side=True,
    added_with=LSH_RING,  # runs stored before the knob used a ring of 2
)
#: Candidate pairs verified at once (the cosine's temporaries: ~40 bytes a pair).
VERIFY_CHUNK = 1 << 22
#: Rows whose MinHash values are computed at once (their unpacked bits: d bytes a row, twice).
MINHASH_ROWS = 1 << 18


def choose_join(features: FeatureRows, t: float, join: str = "auto") -> str:
    """``exact`` or ``lsh`` for a threshold join at ``t``: as asked, or, for ``auto``, exact
    wherever its work is within :data:`EXACT_PRODUCTS_BUDGET` / :data:`EXACT_PAIRS_BUDGET`
    (every size the tests and stored runs use), else LSH. Real-valued rows always join
    exactly (MinHash needs sets)."""
    if join not in JOINS:
        raise ValueError(f"join must be one of {', '.join(JOINS)}, got {join!r}")
    if join != "auto" or not features.binary:
        return "lsh" if join == "lsh" and features.binary else "exact"
    if t > 1.0:
        return "exact"
    n = features.num_rows
    if features._only_identical_can_pass(max(t, 0.0)):
        return "lsh" if identical_pairs(features) > EXACT_PAIRS_BUDGET else "exact"
    if features.joins_blockwise(t):
        products = n * (n - 1) / 2 * features.dim
        return "lsh" if products > EXACT_PRODUCTS_BUDGET else "exact"
    return "exact"


def identical_pairs(features: FeatureRows) -> float:
    """How many pairs of identical non-empty rows there are (the identical join's output)."""
    groups = _row_groups(features, np.flatnonzero(features.counts > 0))
    sizes = np.bincount(groups).astype(np.float64)
    return float((sizes * (sizes - 1) / 2).sum())


def plan_bands(t: float, recall: float = LSH_RECALL) -> tuple[int, int]:
    """(r, b): MinHash values per band and bands, the largest r (fewest false candidates)
    whose b ≤ :data:`LSH_MAX_BANDS` gives 1 − (1 − J^r)^b ≥ ``recall`` at J = t/(2 − t), the
    Jaccard similarity of two equal-size sets at cosine t. (0, 1): only identical rows."""
    if not 0.0 < recall < 1.0:
        raise ValueError(f"recall must be in (0, 1), got {recall}")
    t = min(max(float(t), 1e-6), 1.0)
    jac = t / (2.0 - t)
    if jac >= 1.0:
        return 0, 1
    best = (1, LSH_MAX_BANDS)
    for r in range(1, 17):
        hit = jac**r
        b = math.ceil(math.log(1.0 - recall) / math.log1p(-hit)) if hit < 1 else 1
        if b > LSH_MAX_BANDS:
            break
        best = (r, b)
    return best


def candidate_probability(jaccard: float, r: int, b: int) -> float:
    """P[a pair at Jaccard similarity J is a candidate] = 1 − (1 − J^r)^b (no bucket cap)."""
    return 1.0 - (1.0 - jaccard**r) ** b


@dataclass
class LshJoin:
    """The bands of one LSH join, each computed on its own (a picklable block function for
    :func:`.blocks.map_blocks`: threads here, Ray tasks under the Ray curator)."""

    features: FeatureRows
    t: float
    r: int
    seed: int
    pair_budget: float = LSH_PAIR_BUDGET
    bands: int = 1
    ring: int = LSH_RING

    def band(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """The verified pairs i < j (cosine ≥ t) of one band, sorted by i·n + j."""
        key = self.band_keys(index)
        return key // self.features.num_rows, key % self.features.num_rows

    def band_keys(self, index: int) -> np.ndarray:
        """One band's verified pairs as sorted unique int64 keys i·n + j (8 bytes a pair: what
        a streaming consumer holds per band). Candidates are int32 where n < 2^31 and are
        verified chunk by chunk, so a band's transient memory is a few bytes a row."""
        f = self.features
        rows = np.flatnonzero(f.counts > 0).astype(index_dtype(f.num_rows))
        rng = np.random.default_rng([self.seed, 0x15A, index])
        if self.r == 0:
            groups = _row_groups(f, rows)
        else:
            groups = _minhash_groups(f, rows, self.r, rng)
        i, j = bucket_pairs(rows, groups, rng, self.pair_budget, self.ring)
        del rows, groups
        kept: list[np.ndarray] = [np.zeros(0, np.int64)]
        for a in range(0, i.size, VERIFY_CHUNK):
            ci, cj = i[a : a + VERIFY_CHUNK], j[a : a + VERIFY_CHUNK]
            ok = f.cosine(ci, cj) >= self.t - 1e-9
            kept.append(ci[ok].astype(np.int64) * f.num_rows + cj[ok])
        del i, j
        key = np.concatenate(kept)
        del kept
        return unique_sorted(key)


def lsh_join(
    features: FeatureRows,
    t: float,
    seed: int = 0,
    recall: float = LSH_RECALL,
    ring: int = LSH_RING,
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs i < j with cosine ≥ ``t`` found by MinHash bands (0/1 rows only): a subset of
    :meth:`FeatureRows.threshold_join`'s, each of its pairs found with probability at least
    ``recall`` at cosine t between equal-size rows (more above), less the pairs that over-full
    buckets drop (module docstring)."""
    if not features.binary:
        raise ValueError("the LSH join needs 0/1 feature rows; use the exact join")
    if t > 1.0 or features.num_rows < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    joiner = lsh_joiner(features, t, seed, recall, ring)
    b = joiner.bands
    parts = list(
        steps(map_blocks(joiner.band_keys, list(range(b))), "similarity join: LSH band", b)
    )
    key = parts[0] if len(parts) == 1 else unique_sorted(np.concatenate(parts))
    return key // features.num_rows, key % features.num_rows


def lsh_joiner(
    features: FeatureRows,
    t: float,
    seed: int = 0,
    recall: float = LSH_RECALL,
    ring: int = LSH_RING,
):
    """The :class:`LshJoin` for a threshold join at ``t`` (0/1 rows, t ≤ 1): its bands, each
    computable on its own (:meth:`LshJoin.band_keys`), for callers that consume them as they
    come (:func:`.hogs_topology.reconstruct_topology` scores them in bounded blocks)."""
    t = max(float(t), 0.0)
    if features._only_identical_can_pass(t):
        r, b = 0, 1
    else:
        r, b = plan_bands(t, recall)
    if ring < 0:
        raise ValueError(f"lsh_ring must be >= 0, got {ring}")
    return LshJoin(features, t, r, int(seed), pair_budget(features.num_rows) / b, b, int(ring))


def index_dtype(n: int) -> type:
    """int32 for row indices where n < 2^31 (half the bytes of int64), else int64."""
    return np.int32 if n < 2**31 else np.int64


def unique_sorted(key: np.ndarray) -> np.ndarray:
    """np.unique of int64 keys, sorting in place (no second copy of a large array)."""
    if key.size < 2:
        return key
    key.sort()
    keep = np.empty(key.size, dtype=bool)
    keep[0] = True
    np.not_equal(key[1:], key[:-1], out=keep[1:])
    return key[keep]


def pair_budget(num_rows: int) -> float:
    """The full-bucket pairs of one join, over all its bands: max(:data:`LSH_PAIR_BUDGET`,
    :data:`LSH_PAIRS_PER_ROW`·n), so the join's output grows linearly in n at scale."""
    return max(LSH_PAIR_BUDGET, LSH_PAIRS_PER_ROW * num_rows)


def bucket_pairs(
    rows: np.ndarray,
    groups: np.ndarray,
    rng: np.random.Generator,
    pair_budget: float = LSH_PAIR_BUDGET,
    ring: int = LSH_RING,
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs (i < j) of rows sharing a group id: every pair of the buckets of at
    most :func:`full_bucket_size` rows, each row with its next ``ring`` rows (random order)
    in larger ones. Vectorised by offset: row k of the grouped order pairs with k + o.
    The pairs come in ``rows``' dtype (int32 rows: half the memory)."""
    if rows.size < 2:
        return np.zeros(0, rows.dtype), np.zeros(0, rows.dtype)
    small = index_dtype(rows.size)
    order = np.lexsort((rng.random(rows.size), groups)).astype(small)
    members, g = rows[order], groups[order]
    del order
    edge = np.empty(g.size, dtype=bool)
    edge[0] = True
    np.not_equal(g[1:], g[:-1], out=edge[1:])
    del g
    starts = np.flatnonzero(edge).astype(small)
    del edge
    sizes = np.diff(np.append(starts, rows.size)).astype(small)
    cap = full_bucket_size(sizes, pair_budget)
    # Rows after each one in its bucket; capped at the ring in over-full buckets.
    reach = np.repeat(sizes, sizes) - 1
    reach -= np.arange(rows.size, dtype=small) - np.repeat(starts, sizes)
    full = np.repeat(sizes <= cap, sizes)
    np.minimum(reach, ring, out=reach, where=~full)
    del full, starts, sizes
    pi: list[np.ndarray] = [np.zeros(0, rows.dtype)]
    pj: list[np.ndarray] = [np.zeros(0, rows.dtype)]
    active = np.flatnonzero(reach > 0).astype(small)
    offset = 1
    while active.size:
        a, b = members[active], members[active + offset]
        pi.append(np.minimum(a, b))
        pj.append(np.maximum(a, b))
        offset += 1
        active = active[reach[active] >= offset]
    return np.concatenate(pi), np.concatenate(pj)


def full_bucket_size(sizes: np.ndarray, pair_budget: float) -> int:
    """The largest bucket size whose buckets, with all smaller ones, give every pair within
    ``pair_budget`` pairs (at least :data:`LSH_BUCKET`)."""
    values, count = np.unique(sizes, return_counts=True)
    values = values.astype(np.int64)  # int32 sizes: v·(v − 1) overflows above 46,341
    pairs = np.cumsum(count * (values * (values - 1) / 2.0))
    within = values[pairs <= pair_budget]
    return int(max(LSH_BUCKET, within.max() if within.size else 0))


def _row_groups(features: FeatureRows, rows: np.ndarray) -> np.ndarray:
    """A group id per row of ``rows``: equal ids for identical rows."""
    if rows.size == 0:
        return np.zeros(0, np.int64)
    packed = np.ascontiguousarray(features.words[rows])
    keys = packed.view(np.dtype((np.void, packed.shape[1] * 8))).ravel()
    return np.unique(keys, return_inverse=True)[1].astype(np.int64).ravel()


def _minhash_groups(
    features: FeatureRows, rows: np.ndarray, r: int, rng: np.random.Generator
) -> np.ndarray:
    """A group id per row of ``rows``: equal ids for rows with the same ``r`` MinHash values
    (each: the smallest rank of the row's 1-columns under a random permutation)."""
    dim = features.dim
    # The r permutations first (the stream's order as before), then the rows block by block:
    # a block's unpacked bits, not all n × d of them.
    by_rank = [np.argsort(rng.permutation(dim).astype(np.int32)) for _ in range(r)]
    packs = dim ** (r + 1) < 2**62  # r values fit one int64 exactly
    key = np.empty(rows.size, dtype=np.int64)
    for a in range(0, rows.size, MINHASH_ROWS):
        block = features.words[rows[a : a + MINHASH_ROWS]].view(np.uint8)
        bits = np.unpackbits(block, axis=1)[:, :dim]
        k = np.zeros(bits.shape[0], dtype=np.int64)
        for order in by_rank:
            # The smallest rank among set columns: argmax of a 0/1 row reordered by rank.
            first = np.argmax(bits[:, order], axis=1).astype(np.int64)
            # Mix into one 64-bit key (collisions only merge buckets; candidates are verified).
            k = k * (dim + 1) + first if packs else _mix(k, first)
        key[a : a + k.size] = k
    return np.unique(key, return_inverse=True)[1].astype(np.int64).ravel()


def _mix(key: np.ndarray, value: np.ndarray) -> np.ndarray:
    """A 64-bit hash of (key, value) (splitmix64's finaliser), wrapping as uint64 does."""
    z = (key.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ value.astype(np.uint64)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return (z ^ (z >> np.uint64(31))).view(np.int64)
