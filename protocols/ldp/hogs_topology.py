"""HoGS's topology reconstruction (the HoGS paper, Xu et al., Algorithm 2) without the n² loop.

P_ij = l·s / (l·s + l'·(1 − s)) from the pair's reported bits and the cosine s_ij of the two
noisy feature rows; the edges are the pairs with P_ij ≥ τ. Computed sparsely: the pairs with a
reported 1 are scored directly, block by block of rows, and pairs reported (0, 0) can only pass
when their noisy features are near-duplicates, which an exact high-threshold similarity join
finds. numpy and scipy only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from ..progress import stage, steps
from . import hogs_fused
from .blocks import map_blocks
from .hogs_scorer import PairScorer, Scored
from .packed_keys import PackedKeys
from .posterior import similarity_threshold
from .reported_pairs import ReportedPairs
from .similarity import FeatureRows
from .similarity_lsh import LSH_RING, choose_join, lsh_joiner, unique_sorted

log = logging.getLogger("ldpgraph.hogs")
T = TypeVar("T")
R = TypeVar("R")

#: Distinct LSH pairs scored at once (a key range merged across the bands).
LSH_SCORE_KEYS = 1 << 22


@dataclass
class TopologyResult:
    """All pairs i < j with P_ij ≥ the threshold asked for, with their posteriors; i and j
    are int32 where n < 2^31 (:func:`.similarity_lsh.index_dtype`): cast before forming
    i·n + j. When the one-step feature reconstruction was fused into the scoring
    (:mod:`.hogs_fused`), ``features`` holds its rows and the pairs are only those with
    P_ij ≥ the edge threshold τ."""

    i: np.ndarray
    j: np.ndarray
    prob: np.ndarray
    stats: dict[str, Any]
    features: np.ndarray | None = None


def reconstruct_topology(
    reported: sp.csr_matrix | ReportedPairs,
    observed: np.ndarray,
    features: FeatureRows,
    p: float,
    threshold: float,
    block_entries: int | None = None,
    block_rows: int | None = None,
    mu: float = 1.0,
    join: str = "auto",
    seed: int = 0,
    ring: int = LSH_RING,
    fuse_features: np.ndarray | None = None,
    tau: float | None = None,
    fuse_pairs: int | None = None,
) -> TopologyResult:
    """Every pair i < j with P_ij ≥ ``threshold`` (Algorithm 2 without the n² loop); ``mu``:
    the probability a node kept each reported 1 (asymmetric RR, :func:`.posterior.likelihoods`).

    Pairs with a reported 1 are scored block by block of rows from :class:`ReportedPairs`
    (memory: R, its regrouped lower triangle and one block); pairs with none can only pass as
    near-duplicates and come from the similarity join. When the features are too dense for
    prefix filtering (1-bit-perturbed rows), the join computes the dot products of all pairs
    block by block, and the reported pairs take theirs from the same blocks instead of a
    popcount each.

    Args:
        reported: the CSR of reported 1-bits, or its :class:`ReportedPairs`.
        observed: which nodes' adjacency reports arrived.
        features: the (noisy or public) feature rows.
        p: the RR flip probability of the adjacency bits.
        threshold: the smallest posterior kept.
        block_entries: report entries per block of reported pairs (default
            :data:`.reported_pairs.BLOCK_ENTRIES`).
        block_rows: rows per block instead (tests; the result does not depend on blocks).
        join: the similarity join of the pairs with no reported 1: ``exact``, ``lsh``
            (:mod:`.similarity_lsh`, approximate) or ``auto`` (exact where it is cheap).
        seed: the curator's own seed for the LSH join's hashing (post-processing).
        ring: the LSH join's rows per row and band in over-full buckets
            (:data:`.similarity_lsh.RING`).
        fuse_features: the n × d rows of Algorithm 3's one step (l = 1), to fuse it into the
            scoring once more than ``fuse_pairs`` kept pairs are held (:mod:`.hogs_fused`):
            then ``features`` of the result holds the one-step rows, and its pairs are only
            those with P ≥ ``tau``. None: never fused.
        tau: the edge threshold (with ``fuse_features``; default ``threshold``).
        fuse_pairs: kept pairs held before fusing (default
            :data:`.hogs_fused.FUSE_KEPT_PAIRS`, and only where the held pairs that are not
            edges cost more than the sums: :func:`.hogs_fused.worth_fusing`; given, it
            alone decides).
    """
    own_pairs = not isinstance(reported, ReportedPairs)  # a caller's own pairs stay whole
    pairs = ReportedPairs(reported) if own_pairs else reported
    n = pairs.n
    n_obs = int(observed.sum())
    scorer = PairScorer(
        pairs,
        observed,
        features,
        p,
        threshold,
        mu,
        fuse_x0=fuse_features,
        tau=threshold if tau is None else tau,
        fuse_pairs=hogs_fused.FUSE_KEPT_PAIRS if fuse_pairs is None else fuse_pairs,
        fuse_when_worth=fuse_pairs is None,
        silent_join=n - n_obs >= 2,
    )
    t_join = _join_threshold(n_obs, n - n_obs, threshold, p, mu)
    candidates = []
    joined_lsh = 0
    method = "exact" if t_join is None else choose_join(features, t_join, join)
    if t_join is not None and method == "exact" and features.joins_blockwise(t_join):
        candidates.append(_score_blockwise(scorer, t_join))
        if own_pairs:
            pairs.drop_regrouped()
    else:
        # Blocks on every core (numpy's gathers and arithmetic release the GIL), in order.
        bounds = list(pairs.block_bounds(block_entries, block_rows))
        done = map_blocks(scorer.scored_rows, bounds)
        for size, part in steps(done, "HoGS: reported pairs, block", len(bounds)):
            scorer.add(size, part)
        del done
        if own_pairs:
            # Every reported pair is scored: the joins below only ask R whether a pair was
            # reported, so the regrouped lower triangle (~2 bytes a report entry) goes.
            pairs.drop_regrouped()
        if t_join is not None and method == "lsh":
            joined_lsh = _score_lsh(scorer, t_join, seed, ring)
        elif t_join is not None:
            candidates.append(features.threshold_join(t_join))
    if n - n_obs >= 2:
        # Two silent nodes: no bit about their pair arrived, the features alone decide.
        missing = np.flatnonzero(~observed)
        mi, mj = FeatureRows(_rows_of(features, missing)).threshold_join(threshold)
        candidates.append((missing[mi], missing[mj]))
    joined = joined_lsh
    for k, (ci, cj) in enumerate(candidates):
        joined += ci.size
        scorer.add_unreported(ci, cj, silent=n - n_obs >= 2 and k == len(candidates) - 1)
    del candidates
    stage("HoGS: merging the kept pairs")
    # (i, j) in int32 where n < 2^31 (8 bytes a kept pair instead of 16; at 10^7 nodes ~4·10^8
    # pairs), written part by part as the kept parts are released (:mod:`.hogs_merge`).
    i, j, prob = scorer.result()
    stats = {
        "reported_pairs": int(scorer.n_reported),
        "joined_pairs": int(joined),
        "kept_pairs": scorer.kept_pairs(i.size),
    }
    if method == "lsh":  # only then: the exact join's stats (and the torch curator's) as before
        stats["join"] = "lsh"
    x_fused = None
    if scorer.fused is not None:
        stats["features"] = "fused"
        x_fused = scorer.fused.features()
        scorer.fused = None
    return TopologyResult(i, j, prob, stats, x_fused)


def _score_lsh(scorer: PairScorer, t_join: float, seed: int, ring: int = LSH_RING) -> int:
    """The LSH join's pairs (:mod:`.similarity_lsh`) scored as they come, in bounded blocks:
    each band's verified pairs are held as sorted int64 keys (8 bytes a pair), then ranges of
    the key space are merged across bands, deduplicated and scored one at a time, so no
    array of every candidate pair × (i, j, cosine, posterior) is ever built. The kept pairs and
    the count of distinct joined pairs are those of :func:`.similarity_lsh.lsh_join` followed
    by :meth:`PairScorer.add_unreported`. Returns that count."""
    features = scorer.features
    if t_join > 1.0 or features.num_rows < 2:  # no pair can pass (as lsh_join)
        return 0
    joiner = lsh_joiner(features, t_join, seed, ring=ring)
    items = list(range(joiner.bands))
    packed = _PackedBand(joiner)
    bands = list(steps(map_blocks(packed.keys, items), "similarity join: LSH band", len(items)))
    total = sum(b.size for b in bands)
    if total == 0:
        return 0
    # Range bounds from the largest band's quantiles: ~LSH_SCORE_KEYS keys a range over all
    # bands (the bands are alike: same hashing law, other draws).
    ref = max(bands, key=lambda b: b.size)
    stride = max(1, LSH_SCORE_KEYS * ref.size // max(total, 1))
    inner = ref.at(np.arange(stride, ref.size, stride, dtype=np.int64))
    bounds = np.concatenate([[0], inner, [np.iinfo(np.int64).max]])
    joined = 0
    n = scorer.pairs.n
    for lo, hi in steps(
        zip(bounds[:-1], bounds[1:], strict=True), "LSH pairs: key range", bounds.size - 1
    ):
        part = [b.keys(b.searchsorted(lo), b.searchsorted(hi)) for b in bands]
        key = unique_sorted(np.concatenate(part))
        del part
        joined += key.size
        if key.size:
            scorer.add_unreported(key // n, key % n)
    return joined


@dataclass
class _PackedBand:
    """One LSH band's verified keys, packed where they are computed (4 bytes a key held
    instead of 8: :mod:`.packed_keys`); picklable, for :func:`.blocks.map_blocks`."""

    joiner: Any

    def keys(self, index: int) -> PackedKeys:
        return PackedKeys.pack(self.joiner.band_keys(index))


def _join_threshold(n_obs: int, n_miss: int, threshold: float, p: float, mu: float):
    """The smallest similarity at which a pair with no reported 1 (two 0s, or one 0 and a
    silent endpoint) can reach ``threshold``; None when no such pair exists."""
    thresholds = []
    if n_obs >= 2:
        thresholds.append(similarity_threshold(threshold, 0, 2, p, mu))
    if n_obs >= 1 and n_miss >= 1:
        thresholds.append(similarity_threshold(threshold, 0, 1, p, mu))
    return min(thresholds) if thresholds else None


def _score_blockwise(scorer: PairScorer, t_join: float) -> tuple[np.ndarray, np.ndarray]:
    """Features too dense for prefix filtering: the dot products of all pairs, block by block,
    score the block's reported pairs and yield its join candidates (returned)."""
    features, n = scorer.features, scorer.pairs.n
    if n >= 100_000:
        log.warning(
            "HoGS: the similarity join (threshold %.3f) must compare all %.3g pairs of "
            "the %d feature rows (too dense for prefix filtering): %.3g multiply-adds",
            t_join, n * (n - 1) / 2, n, n * (n - 1) / 2 * features.dim,
        )  # fmt: skip
    blocks = _Blockwise(scorer, t_join)
    starts = blocks.starts()
    found_i: list[np.ndarray] = []
    found_j: list[np.ndarray] = []
    done = map_blocks(blocks.run, starts)
    for size, part, (ci, cj) in steps(done, "similarity join: block", len(starts)):
        scorer.add(size, part)
        found_i.append(ci)
        found_j.append(cj)
    features.drop_block_matrix()
    return np.concatenate(found_i), np.concatenate(found_j)


@dataclass
class _Blockwise:
    """One block of the all-pairs join (picklable, for :func:`.blocks.map_blocks`): the block's
    dot products score its reported pairs and give its verified join pairs."""

    scorer: PairScorer
    t_join: float

    def starts(self) -> list[int]:
        return self.scorer.features.block_starts()

    def run(self, a: int) -> tuple[int, Scored, tuple[np.ndarray, np.ndarray]]:
        features = self.scorer.features
        dots = features.block_product(a)
        blk = self.scorer.pairs.rows(a, a + dots.shape[0])
        part = self.scorer.scored(blk, dots)
        ci, cj = features.block_candidates(a, dots, self.t_join)
        s = features.cosine_from_dots(dots[ci - a, cj - a].astype(np.float64), ci, cj)
        keep = s >= self.t_join - 1e-9
        return blk.i.size, part, (ci[keep], cj[keep])


def _rows_of(features: FeatureRows, rows: np.ndarray) -> np.ndarray:
    if features.binary:
        bits = np.unpackbits(features.words[rows].view(np.uint8), axis=1)
        return bits[:, : features.dim]
    return features.dense[rows]
