"""HoGS: homophily-oriented graph synthesis under edge LDP and feature LDP (Xu et al.).

Client (Algorithm 1): Warner RR on the adjacency row with ε_a and the 1-bit mechanism on each
feature with ε_f, where ε_a = (1 − feature_share)·ε and ε_f = feature_share·ε. The paper calls
``feature_share`` δ; we never do, so it cannot be mistaken for the δ of (ε, δ)-DP.

Server (Algorithms 2 and 3): s_ij = cosine of the noisy feature rows, posterior
P_ij = l·s / (l·s + l'·(1 − s)) from the two reported bits, edges where P_ij ≥ τ, then ``steps``
rounds of P-weighted neighbour averaging over V_i = {j : P_ij ≥ 0.5}. Computed sparsely: the
pairs with a reported 1 are scored directly, and pairs reported (0, 0) can only pass when their
noisy features are near-duplicates, which an exact high-threshold similarity join finds.
"""

from __future__ import annotations

import logging
import math
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from ..accounting import ACCOUNTANT, bit_part, pure_epsilon, rr_event, unit_summary
from ..base import (
    EPSILON,
    FEATURE_SHARE,
    STEPS,
    CuratorView,
    EpsilonParts,
    LdpProtocol,
    ReportSchema,
    RoundResult,
)
from ..batch import NodeBatch, ReportBatch
from ..graph import canonical_edges
from ..mechanisms import flip_probability
from ..params import Param
from ..registry import register
from ..types import NodeView, PrivacyReport, Release, Report
from .assemble import adjacency_reports, feature_reports
from .consistency import CONSISTENCY_ALPHA, onebit_rates, screen, without
from .node_reports import noisy_features, noisy_row, rr_onebit_batch
from .posterior import posterior, similarity_threshold
from .reported_pairs import PairBlock, ReportedPairs, row_blocks
from .similarity import FeatureRows

log = logging.getLogger("ldpgraph.hogs")
T = TypeVar("T")
R = TypeVar("R")

#: Feature reconstruction aggregates over V_i = {j : P_ij >= FR_THRESHOLD} (paper: 0.5).
FR_THRESHOLD = 0.5
#: Bytes of gathered float64 feature rows per block of the feature reconstruction.
FR_BLOCK_BYTES = 1 << 23


@dataclass
class TopologyResult:
    """All pairs i < j with P_ij ≥ the threshold asked for, with their posteriors."""

    i: np.ndarray
    j: np.ndarray
    prob: np.ndarray
    stats: dict[str, Any]


def reconstruct_topology(
    reported: sp.csr_matrix | ReportedPairs,
    observed: np.ndarray,
    features: FeatureRows,
    p: float,
    threshold: float,
    block_entries: int | None = None,
    block_rows: int | None = None,
    mu: float = 1.0,
) -> TopologyResult:
    """Every pair i < j with P_ij ≥ ``threshold`` (Algorithm 2 without the n² loop); ``mu``:
    the probability a node kept each reported 1 (asymmetric RR, :func:`likelihoods`).

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
    """
    pairs = reported if isinstance(reported, ReportedPairs) else ReportedPairs(reported)
    n = pairs.n
    parts_i: list[np.ndarray] = []
    parts_j: list[np.ndarray] = []
    parts_p: list[np.ndarray] = []
    n_reported = 0

    def score_reported(blk: PairBlock, dots: np.ndarray | None = None) -> None:
        """Score one block's reported pairs; ``dots`` holds the dot products of rows
        blk.start.. with rows blk.start.. (from ``features.block_products``), else each pair's
        cosine is computed on its own."""
        nonlocal n_reported
        ri, rj, prob = scored(blk, dots)
        n_reported += blk.i.size
        parts_i.append(ri)
        parts_j.append(rj)
        parts_p.append(prob)

    def scored(
        blk: PairBlock, dots: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One block's reported pairs with P_ij >= threshold: (i, j, P_ij)."""
        ri, rj = blk.i, blk.j
        ones = blk.ones.astype(np.int64)
        nobs = observed[ri].astype(np.int64) + observed[rj]
        if dots is None:
            s = features.cosine(ri, rj)
        else:
            a = blk.start
            s = features.cosine_from_dots(dots[ri - a, rj - a].astype(np.float64), ri, rj)
        prob = posterior(s, ones, nobs - ones, p, mu)
        keep = prob >= threshold
        return ri[keep], rj[keep], prob[keep]

    def scored_rows(bounds: tuple[int, int]) -> tuple[int, tuple[np.ndarray, ...]]:
        blk = pairs.rows(*bounds)
        return blk.i.size, scored(blk)

    # Pairs with no reported 1 pass only if their features are near-duplicates.
    n_obs = int(observed.sum())
    n_miss = n - n_obs
    thresholds = []
    if n_obs >= 2:
        thresholds.append(similarity_threshold(threshold, 0, 2, p, mu))
    if n_obs >= 1 and n_miss >= 1:
        thresholds.append(similarity_threshold(threshold, 0, 1, p, mu))
    t_join = min(thresholds) if thresholds else None
    candidates = []
    if t_join is not None and features.joins_blockwise(t_join):
        if n >= 100_000:
            log.warning(
                "HoGS: the similarity join (threshold %.3f) must compare all %.3g pairs of "
                "the %d feature rows (too dense for prefix filtering): %.3g multiply-adds",
                t_join, n * (n - 1) / 2, n, n * (n - 1) / 2 * features.dim,
            )  # fmt: skip
        found_i: list[np.ndarray] = []
        found_j: list[np.ndarray] = []
        for a, dots in features.block_products():
            b = a + dots.shape[0]
            score_reported(pairs.rows(a, b), dots)
            ci, cj = features.block_candidates(a, dots, t_join)
            s = features.cosine_from_dots(dots[ci - a, cj - a].astype(np.float64), ci, cj)
            keep = s >= t_join - 1e-9
            found_i.append(ci[keep])
            found_j.append(cj[keep])
        candidates.append((np.concatenate(found_i), np.concatenate(found_j)))
    else:
        # Blocks on every core (numpy's gathers and arithmetic release the GIL), in order.
        bounds = list(pairs.block_bounds(block_entries, block_rows))
        for size, (ri, rj, prob) in threaded_in_order(scored_rows, bounds):
            n_reported += size
            parts_i.append(ri)
            parts_j.append(rj)
            parts_p.append(prob)
        if t_join is not None:
            candidates.append(features.threshold_join(t_join))
    if n_miss >= 2:
        missing = np.flatnonzero(~observed)
        mi, mj = FeatureRows(_rows_of(features, missing)).threshold_join(threshold)
        candidates.append((missing[mi], missing[mj]))
    joined = 0
    for ci, cj in candidates:
        joined += ci.size
        fresh = ~pairs.has(ci, cj)
        ci, cj = ci[fresh], cj[fresh]
        zeros = observed[ci].astype(np.int64) + observed[cj]
        prob = posterior(features.cosine(ci, cj), np.zeros_like(zeros), zeros, p, mu)
        keep = prob >= threshold
        parts_i.append(ci[keep])
        parts_j.append(cj[keep])
        parts_p.append(prob[keep])
    i = np.concatenate(parts_i)
    j = np.concatenate(parts_j)
    pr = np.concatenate(parts_p)
    key, first = np.unique(i * n + j, return_index=True)
    stats = {
        "reported_pairs": int(n_reported),
        "joined_pairs": int(joined),
        "kept_pairs": int(key.size),
    }
    return TopologyResult(key // n, key % n, pr[first], stats)


def usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def threaded_in_order(
    fn: Callable[[T], R], items: Sequence[T], workers: int | None = None
) -> Iterator[R]:
    """``map(fn, items)`` on ``workers`` threads (default: every usable core), results in
    order, at most two per thread in flight (a block's intermediates stay bounded)."""
    workers = min(len(items), usable_cores() if workers is None else workers)
    if workers <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque = deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def _rows_of(features: FeatureRows, rows: np.ndarray) -> np.ndarray:
    if features.binary:
        bits = np.unpackbits(features.words[rows].view(np.uint8), axis=1)
        return bits[:, : features.dim]
    return features.dense[rows]


def reconstruct_features(
    x0: np.ndarray,
    i: np.ndarray,
    j: np.ndarray,
    prob: np.ndarray,
    steps: int,
    block_rows: int | None = None,
) -> np.ndarray:
    """Algorithm 3, ``steps`` times: X_i ← Σ_{j∈V_i} P_ij X_j / Σ_{j∈V_i} P_ij, where V_i holds
    the j with P_ij ≥ 0.5; a node with empty V_i keeps its previous row. float64 inside,
    float32 out.

    Streamed by blocks of rows: a block gathers only the rows its neighbours hold (in float64)
    and writes its rows of the next X, so memory is x0, the output (float32; plus one float64
    X between steps, two from the third step on) and a few blocks, not several float64 copies
    of X. Each row's sum runs over its neighbours in order (scipy's sparse product, the same
    on every CPU), so the result does not depend on the blocks. Blocks run on every core
    (scipy's product and numpy's copies release the GIL).

    Args:
        x0: the n × d feature rows (any real dtype; 0/1 uint8 for the 1-bit reports).
        i, j, prob: the pairs i < j and their posteriors (as :func:`reconstruct_topology`).
        steps: how many averaging passes (the paper's l).
        block_rows: rows per block (default: :data:`FR_BLOCK_BYTES` of gathered rows).
    """
    x0 = np.asarray(x0)
    n, d = x0.shape
    budget = max(1, FR_BLOCK_BYTES // (8 * max(d, 1)))  # gathered rows per block
    if steps <= 0:
        out = np.empty((n, d), dtype=np.float32)
        for a, b in row_blocks(np.arange(n + 1), block_rows=block_rows or budget):
            out[a:b] = np.asarray(x0[a:b], dtype=np.float64)
        return out
    sel = prob >= FR_THRESHOLD
    rows = np.concatenate([i[sel], j[sel]])
    cols = np.concatenate([j[sel], i[sel]])
    vals = np.concatenate([prob[sel], prob[sel]])
    w = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    del rows, cols, vals
    w.sum_duplicates()
    w.sort_indices()
    total = np.asarray(w.sum(axis=1)).ravel()
    has = total > 0
    denom = np.where(has, total, 1.0)
    if block_rows is None:
        # A row costs itself plus one gathered row per neighbour (at most).
        bounds = list(row_blocks(w.indptr + np.arange(n + 1), budget))
    else:
        bounds = list(row_blocks(w.indptr, block_rows=block_rows))
    src = x0
    for step in range(steps):
        dst = np.empty((n, d), dtype=np.float32 if step == steps - 1 else np.float64)
        _average_blocks(w, src, dst, has, denom, bounds)
        src = dst
    return src


def _average_blocks(
    w: sp.csr_matrix,
    src: np.ndarray,
    dst: np.ndarray,
    has: np.ndarray,
    denom: np.ndarray,
    bounds: list[tuple[int, int]],
) -> None:
    """One step of :func:`reconstruct_features`: dst[a:b] for every block [a, b), on threads."""
    # A float64 X (every step after the first) is multiplied as it is; any other dtype (the
    # 0/1 reports) is converted only for the rows a block needs.
    whole = src.dtype == np.float64 and src.flags.c_contiguous

    def one(bound: tuple[int, int]) -> None:
        a, b = bound
        own = np.asarray(src[a:b], dtype=np.float64)
        blk = w[a:b]
        if blk.nnz == 0:
            dst[a:b] = own
            return
        if whole:
            agg = blk @ src
        else:
            # The block's neighbours, renumbered in order: each row's terms keep their order.
            needed, local = np.unique(blk.indices, return_inverse=True)
            part = sp.csr_matrix((blk.data, local, blk.indptr), shape=(b - a, needed.size))
            agg = part @ np.asarray(src[needed], dtype=np.float64)
        dst[a:b] = np.where(has[a:b, None], agg / denom[a:b, None], own)

    workers = min(len(bounds), usable_cores())
    if workers <= 1:
        for bound in bounds:
            one(bound)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for _ in pool.map(one, bounds):
            pass


TAU = Param(
    "tau",
    float,
    0.5,
    "edge threshold τ on the posterior P_ij: the release keeps the pairs with P_ij >= τ",
    low=0.0,
    high=1.0,
    low_open=True,
    server_side=True,
)


@dataclass(frozen=True)
class HogsParams:
    """HoGS parameters. ``feature_share`` is the paper's δ: ε_f = share·ε, ε_a = (1−share)·ε."""

    epsilon: float
    feature_share: float = FEATURE_SHARE.default
    tau: float = TAU.default
    steps: int = STEPS.default
    public_features: bool = False
    #: Sybil screening (:mod:`.consistency`): 0 off, else the family-wise false-alarm level.
    consistency_alpha: float = CONSISTENCY_ALPHA.default

    def __post_init__(self) -> None:
        if not math.isfinite(self.epsilon) or self.epsilon <= 0:
            raise ValueError(f"epsilon must be a finite number > 0, got {self.epsilon}")
        if not 0.0 <= self.consistency_alpha < 1.0:
            raise ValueError(
                f"consistency_alpha must be in [0, 1) (0: off), got {self.consistency_alpha}"
            )
        if not self.public_features and not 0.0 < self.feature_share < 1.0:
            raise ValueError(
                f"feature share must be in (0, 1) when features are private, got "
                f"{self.feature_share} (use hogs-edge for public features)"
            )
        if not (0.0 < self.tau <= 1.0):
            raise ValueError(f"tau must be in (0, 1], got {self.tau}")
        if self.steps < 0 or int(self.steps) != self.steps:
            raise ValueError(f"steps (l) must be a non-negative integer, got {self.steps}")

    @property
    def eps_adjacency(self) -> float:
        return self.epsilon if self.public_features else (1.0 - self.feature_share) * self.epsilon

    @property
    def eps_features(self) -> float:
        return 0.0 if self.public_features else self.feature_share * self.epsilon


@register(
    "hogs",
    label="HoGS",
    params=(EPSILON, FEATURE_SHARE, TAU, STEPS, CONSISTENCY_ALPHA),
    summary="HoGS: edge LDP + feature LDP, homophily-based reconstruction",
)
@register(
    "hogs-edge",
    label="HoGS",
    params=(EPSILON, TAU, CONSISTENCY_ALPHA),
    public_features=True,
    summary="HoGS with edge LDP only; features public (Table III)",
)
class HogsProtocol(LdpProtocol):
    """``hogs`` (links and features private) and ``hogs-edge`` (edge LDP only, public features)."""

    rounds = 1

    @classmethod
    def from_params(cls, name: str, **params: Any) -> HogsProtocol:
        return cls(HogsParams(public_features=name == "hogs-edge", **params))

    def __init__(self, params: HogsParams) -> None:
        self.params = params
        self.name = "hogs-edge" if params.public_features else "hogs"

    def config(self) -> dict[str, Any]:
        p = self.params
        return {
            "protocol": self.name,
            "epsilon": p.epsilon,
            "feature_share": p.feature_share,
            "tau": p.tau,
            "steps": p.steps,
            # Only when on, so the round message (and every stored release) stays as it was.
            **({"consistency_alpha": p.consistency_alpha} if p.consistency_alpha else {}),
        }

    def round_epsilon(self, round_: int) -> float:
        return self.params.eps_adjacency + self.params.eps_features

    def epsilon_parts(self, round_: int) -> EpsilonParts:
        """RR on each adjacency bit (ε_a), the 1-bit mechanism on each feature (ε_f)."""
        return EpsilonParts(self.params.eps_adjacency, self.params.eps_features)

    def schema(self, round_: int) -> ReportSchema:
        return ReportSchema(adjacency=True, features=not self.params.public_features)

    def client_step(
        self, round_: int, view: NodeView, server_msg: dict[str, Any], seed: int
    ) -> Report:
        p = self.params
        adj = noisy_row(view, p.eps_adjacency, seed, round_)
        feats = None if p.public_features else noisy_features(view, p.eps_features, seed, round_)
        return Report(view.node_id, round_, view.num_nodes, adj, feats)

    def client_step_batch(
        self, round_: int, batch: NodeBatch, server_msg: dict[str, Any], seeds: int | Sequence[int]
    ) -> ReportBatch:
        p = self.params
        eps_f = None if p.public_features else p.eps_features
        return rr_onebit_batch(batch, round_, seeds, p.eps_adjacency, eps_f)

    def server_step(
        self, round_: int, result: RoundResult, curator: CuratorView, seed: int
    ) -> Release:
        p = self.params
        n, d = curator.num_nodes, curator.num_features
        reported, observed = adjacency_reports(result.reports, n)
        sent = None
        if p.public_features:
            if curator.public_features is None:
                raise ValueError("hogs-edge needs the public features in the curator view")
            x0 = curator.public_features
        else:
            x0, sent = feature_reports(result.reports, n, d)
        screening = None
        if p.consistency_alpha > 0:
            reported, observed, x0, screening = self._screen(reported, observed, x0, sent)
        rows = FeatureRows(x0)
        steps = 0 if p.public_features else p.steps
        need = min(p.tau, FR_THRESHOLD) if steps > 0 else p.tau
        flip = flip_probability(p.eps_adjacency)
        mu = self.keep_probability(n)
        gpu = accelerator(curator.device)
        if gpu is None:
            topo = reconstruct_topology(reported, observed, rows, flip, need, mu=mu)
        else:
            topo = TopologyResult(*gpu.topology(reported, observed, rows, x0, flip, need, mu=mu))
        in_graph = topo.prob >= p.tau
        edges = canonical_edges(np.stack([topo.i[in_graph], topo.j[in_graph]], axis=1), n)
        if p.public_features:
            x = x0
        elif gpu is None:
            x = reconstruct_features(x0, topo.i, topo.j, topo.prob, steps)
        else:
            x = gpu.features(x0, topo.i, topo.j, topo.prob, steps, FR_THRESHOLD)
        stats = dict(topo.stats)
        stats["adjacency_reports"] = int(observed.sum())
        stats["reported_ones"] = int(reported.nnz)
        if screening is not None:
            stats["consistency"] = screening.stats
        return Release(edges=edges, x=x, privacy=self.privacy_report(d), stats=stats)

    def _screen(
        self,
        reported: sp.csr_matrix,
        observed: np.ndarray,
        x0: np.ndarray,
        sent: np.ndarray | None = None,
    ) -> tuple:
        """The reports less the nodes :func:`.consistency.screen` flags (public features are
        the server's own and are not screened), and the screening."""
        p = self.params
        if self.keep_probability(reported.shape[0]) != 1.0:
            raise ValueError("consistency screening assumes plain RR (every reported 1 kept)")
        private = not p.public_features
        found = screen(
            reported,
            observed,
            flip_probability(p.eps_adjacency),
            p.consistency_alpha,
            x0 if private else None,
            onebit_rates(p.eps_features) if private else None,
            sent if private else None,
        )
        reported, observed, x = without(reported, observed, x0 if private else None, found.suspects)
        return reported, observed, x if private else x0, found

    def keep_probability(self, num_nodes: int) -> float:
        """μ, the probability a node keeps each reported 1 after RR: 1 here (every bit is sent);
        ``hogs-arr`` samples them. Public: from the parameters and n, never from reports."""
        return 1.0

    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        return hogs_privacy_report(self.name, self.params, num_features)


def accelerator(device: str) -> Any:
    """HoGS's torch curator (:class:`~ldpgraph.protocols.ldp.hogs_torch.TorchCurator`) when
    the run computes on a CUDA device, else None (this module's numpy path). The device is the
    server's own setting: nothing of it reaches the nodes. Imported here, so the client's import
    path stays free of torch."""
    if device == "cpu":
        return None
    from .hogs_torch import TorchCurator

    return TorchCurator.for_run(device)


def hogs_privacy_report(name: str, p: HogsParams, num_features: int | None = None) -> PrivacyReport:
    parts = [bit_part("adjacency", "one adjacency bit (edge LDP)", p.eps_adjacency)]
    notes = [
        f"ε_a = {p.eps_adjacency:g} protects any one bit of a node's adjacency row (edge LDP).",
        "An edge {i, j} is reported by both endpoints; the pair of reports about it is "
        f"2·ε_a = {2 * p.eps_adjacency:g}-DP for that edge (edge LDP is per row, as in the "
        "papers).",
        "Reconstruction (posterior, threshold τ, l feature-averaging steps) is post-processing "
        "of the reports: tuning τ and l on one collection spends nothing more. Tuning the split "
        "(feature_share, the paper's δ) or ε is not post-processing: each configuration "
        "collects fresh reports, so a node spends the sum of the ε of every collection the "
        "sweep used, not the ε of the configuration it picks (the paper does not count this).",
    ]
    if p.public_features:
        total = pure_epsilon([rr_event(p.eps_adjacency)])
        unit = "adjacency bit (edge LDP); features are public and not protected"
        notes.append("Features are treated as public: they are neither perturbed nor protected.")
    else:
        parts.append(
            bit_part("features", "one feature bit (feature LDP)", p.eps_features, num_features)
        )
        total = pure_epsilon([rr_event(p.eps_adjacency), rr_event(p.eps_features)])
        unit = "one adjacency bit plus one feature bit of a node (edge LDP + feature LDP)"
        notes.append(
            f"ε_f = {p.eps_features:g} is per feature BIT. A node's whole feature vector of d bits "
            f"is protected only at d·ε_f by composition"
            + (f" = {num_features * p.eps_features:g}" if num_features else "")
            + ", not at ε_f: do not compare it with the vector-level ε of LPGNN or Solitude."
        )
    headline, unit_eps = unit_summary(
        adjacency_label="ε_a",
        rr_adjacency=p.eps_adjacency,
        feature_bit=None if p.public_features else p.eps_features,
        num_features=num_features,
    )
    return PrivacyReport(
        protocol=name,
        unit=unit,
        epsilon=total,
        delta=0.0,
        accountant=ACCOUNTANT,
        parts=parts,
        paper_epsilon=p.epsilon,
        notes=notes,
        headline=headline,
        unit_epsilons=unit_eps,
    )
