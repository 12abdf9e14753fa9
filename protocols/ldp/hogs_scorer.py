"""HoGS's pair scorer (the HoGS paper, Xu et al., Algorithm 2's posterior): the posterior of
each scored pair, and the kept pairs collected in order — or, once they pass a budget, only the
edges, the one-step feature reconstruction's sums taking the rest (:mod:`.hogs_fused`). Used by
:func:`.hogs_topology.reconstruct_topology`, which decides which pairs are scored.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..progress import stage
from .hogs_fused import FusedAverage, worth_fusing
from .hogs_merge import Kept, concat, merge_kept, sorted_unique
from .posterior import posterior
from .reported_pairs import PairBlock, ReportedPairs
from .similarity import FeatureRows

Scored = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass
class PairScorer:
    """The posterior of reported pairs, and the kept ones collected in order."""

    pairs: ReportedPairs
    observed: np.ndarray
    features: FeatureRows
    p: float
    threshold: float
    mu: float
    #: The rows Algorithm 3 averages, when its one step may be fused into the scoring
    #: (:mod:`.hogs_fused`): once more than ``fuse_pairs`` kept pairs are held, the pairs with
    #: P ≥ 0.5 are summed into per-row accumulators as they are scored and only those with
    #: P ≥ ``tau`` (the edges) are held.
    fuse_x0: np.ndarray | None = None
    tau: float = 1.0
    fuse_pairs: int = 0
    #: Also ask that the held pairs that are not edges cost more than the sums would
    #: (:func:`.hogs_fused.worth_fusing`); False: ``fuse_pairs`` alone decides (tests).
    fuse_when_worth: bool = True
    #: Whether the silent nodes' own join runs (two or more silent nodes): their pairs then
    #: come from it alone into the fused sums (a join may find them too).
    silent_join: bool = False

    def __post_init__(self) -> None:
        #: Kept pairs as (i·n + j int64 keys, P_ij): the reported pairs' in row-major order
        #: (sorted, unique), the unreported ones apart (disjoint from them). Once fused, only
        #: the edges (P ≥ tau).
        self.reported_parts: list[Kept] = []
        self.unreported_parts: list[Kept] = []
        self.silent_parts: list[Kept] = []
        self.n_reported = 0
        self.held = 0
        self.held_edges = 0
        self.fused: FusedAverage | None = None
        self.counted = 0  # kept pairs, once fused (each once)

    #: Driver-side state: what it has kept and summed. A Ray task that scores a block
    #: (:meth:`scored_rows`) needs none of it, and pickling the n × d rows and sums into every
    #: map would cost gigabytes at scale.
    _DRIVER_ONLY = ("fuse_x0", "fused", "reported_parts", "unreported_parts", "silent_parts")

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        for name in self._DRIVER_ONLY:
            state[name] = None
        return state

    def scored(self, blk: PairBlock, dots: np.ndarray | None = None) -> Scored:
        """One block's reported pairs with P_ij ≥ threshold: (i, j, P_ij). ``dots`` holds the
        dot products of rows blk.start.. with rows blk.start.. (from
        ``features.block_products``), else each pair's cosine is computed on its own."""
        ri, rj = blk.i, blk.j
        ones = blk.ones.astype(np.int64)
        nobs = self.observed[ri].astype(np.int64) + self.observed[rj]
        if dots is None:
            s = self.features.cosine(ri, rj)
        else:
            a = blk.start
            s = self.features.cosine_from_dots(dots[ri - a, rj - a].astype(np.float64), ri, rj)
        prob = posterior(s, ones, nobs - ones, self.p, self.mu)
        keep = prob >= self.threshold
        return ri[keep], rj[keep], prob[keep]

    def scored_rows(self, bounds: tuple[int, int]) -> tuple[int, Scored]:
        blk = self.pairs.rows(*bounds)
        return blk.i.size, self.scored(blk)

    def add(self, size: int, part: Scored) -> None:
        self.n_reported += size
        i, j, prob = part
        if self.fused is not None:
            self._absorb(i, j, prob, joined=False, reported=True)
            return
        self.reported_parts.append((i * self.pairs.n + j, prob))
        self._held(prob)

    def add_unreported(self, ci: np.ndarray, cj: np.ndarray, silent: bool = False) -> None:
        """Score candidate pairs that no node reported (every arrived bit a 0); ``silent``:
        the silent nodes' own join's pairs."""
        fresh = ~self.pairs.has(ci, cj)
        ci, cj = ci[fresh].astype(np.int64), cj[fresh].astype(np.int64)
        zeros = self.observed[ci].astype(np.int64) + self.observed[cj]
        prob = posterior(self.features.cosine(ci, cj), np.zeros_like(zeros), zeros, self.p, self.mu)
        keep = prob >= self.threshold
        ci, cj, prob = ci[keep], cj[keep], prob[keep]
        if silent and self.fused is not None:
            self.silent_parts.append((ci * self.pairs.n + cj, prob))
        elif self.fused is not None:
            self._absorb(ci, cj, prob, joined=True)
        else:
            self.unreported_parts.append((ci * self.pairs.n + cj, prob))
            if not silent:  # the silent pairs come last: no switch with them held
                self._held(prob)

    def _held(self, prob: np.ndarray) -> None:
        """Count newly held kept pairs (their posteriors), and fuse (:meth:`_fuse`) past
        ``fuse_pairs`` where it is worth it."""
        self.held += prob.size
        if self.fuse_x0 is None or self.fused is not None:
            return
        self.held_edges += int(np.count_nonzero(prob >= self.tau))
        if self.held <= self.fuse_pairs:
            return
        if not self.fuse_when_worth or worth_fusing(
            self.held - self.held_edges, *self.fuse_x0.shape
        ):
            self._fuse()

    def _fuse(self) -> None:
        """Switch to the fused sums: the pairs held so far go into them (the reported ones
        part by part, the joined ones once each), and only their edges stay held."""
        stage(f"HoGS: {self.held} kept pairs held; one-step features fused into the scoring")
        self.fused = FusedAverage.of(self.fuse_x0)
        n = self.pairs.n
        reported, self.reported_parts = self.reported_parts, []
        while reported:
            key, prob = reported.pop(0)
            self._absorb(key // n, key % n, prob, joined=False, reported=True)
            del key, prob
        # The joined parts are disjoint (the LSH key ranges, or one exact join's pairs; only
        # the silent nodes' join repeats pairs, and it is held apart): one part at a time.
        joined, self.unreported_parts = self.unreported_parts, []
        while joined:
            key, prob = joined.pop(0)
            self._absorb(key // n, key % n, prob, joined=True)
            del key, prob

    def _absorb(
        self, i: np.ndarray, j: np.ndarray, prob: np.ndarray, joined: bool, reported: bool = False
    ) -> None:
        """Fused: the pairs (each once; all P ≥ threshold) into the sums, their edges held
        with the reported or the unreported pairs. A ``joined`` pair of two silent nodes is
        left to the silent nodes' join (it finds every such pair that passes), so that none is
        summed twice."""
        assert self.fused is not None
        if joined and self.silent_join:
            own = self.observed[i] | self.observed[j]
            self.counted += int(own.sum())
            self.fused.add(i[own], j[own], prob[own])
        else:
            self.counted += int(i.size)
            self.fused.add(i, j, prob)
        edge = prob >= self.tau
        kept = (i[edge] * self.pairs.n + j[edge], prob[edge])
        (self.reported_parts if reported else self.unreported_parts).append(kept)

    def kept_pairs(self, size: int) -> int:
        """The kept pairs' count (P ≥ threshold), fused or not (``size``: the pairs
        :meth:`result` returned)."""
        return self.counted if self.fused is not None else int(size)

    def result(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every kept pair once (once fused: every edge), as (i, j, P_ij) sorted by i·n + j,
        i and j in :func:`.similarity_lsh.index_dtype`: the reported pairs' sorted run and the
        unreported pairs' merged (the two sets are disjoint; a pair found twice, by two LSH
        bands or by the join and the silent nodes' join, has the same P_ij both times).
        Memory: the parts not yet merged and the output written so far, 16 bytes a pair
        each, never a second set of keys (:func:`.hogs_merge.merge_kept`)."""
        n = self.pairs.n
        if self.silent_parts:  # fused: the silent nodes' pairs, once each, into the sums
            sk, sp_ = sorted_unique(*concat(self.silent_parts))
            self.silent_parts = []
            self._absorb(sk // n, sk % n, sp_, joined=False)
            del sk, sp_
        reported, self.reported_parts = self.reported_parts, []
        unreported, self.unreported_parts = self.unreported_parts, []
        return merge_kept(reported, unreported, n)
