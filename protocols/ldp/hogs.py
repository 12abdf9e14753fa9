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

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..accounting import ACCOUNTANT, bit_part, pure_epsilon, rr_event, unit_summary
from ..base import (
    EPSILON,
    FEATURE_SHARE,
    STEPS,
    CuratorView,
    LdpProtocol,
    ReportSchema,
    RoundResult,
)
from ..graph import canonical_edges
from ..mechanisms import flip_probability
from ..params import Param
from ..registry import register
from ..types import NodeView, PrivacyReport, Release, Report
from .assemble import adjacency_reports, feature_reports
from .node_reports import noisy_features, noisy_row
from .similarity import FeatureRows

#: Feature reconstruction aggregates over V_i = {j : P_ij >= FR_THRESHOLD} (paper: 0.5).
FR_THRESHOLD = 0.5


def bit_likelihoods(p: float, mu: float = 1.0) -> tuple[float, float, float, float]:
    """Pr[1 | edge], Pr[0 | edge], Pr[1 | no edge], Pr[0 | no edge] of one reported bit.

    Warner RR flips the bit with probability p; asymmetric RR (``hogs-arr``) then keeps a
    reported 1 with probability ``mu`` and turns it into a 0 otherwise. So a 1 is reported
    with (1−p)·μ under an edge and p·μ under none, a 0 with 1 − (1−p)·μ and 1 − p·μ. The
    zeros' probabilities are written p + (1−p)(1−μ) and (1−p) + p(1−μ) (equal in exact
    arithmetic) so that μ = 1 gives p and 1−p bit for bit, i.e. plain RR's table.
    """
    q = 1.0 - p
    return q * mu, p + q * (1.0 - mu), p * mu, q + p * (1.0 - mu)


def likelihoods(p: float, mu: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Tables l[ones, zeros] and l'[ones, zeros] of Eqs. (7)–(8), generalised to pairs where a
    bit is missing: each observed bit contributes Pr[bit | edge] under an edge and
    Pr[bit | no edge] under a non-edge (:func:`bit_likelihoods`), and a missing bit contributes
    1. ``mu``: the probability a node keeps a reported 1 (asymmetric RR; 1 for HoGS).

    With μ = 1 and both bits observed this is the paper's table: (1,1) → (1−p)², p²;
    (1,0) → p(1−p) for both; (0,0) → p², (1−p)². With one bit b observed and the other missing
    (its node did not reply), the likelihood of b alone is Pr[b | edge] = 1−p if b = 1 else p,
    and Pr[b | no edge] = p if b = 1 else 1−p, so P = (1−p)s / ((1−p)s + p(1−s)) for a reported
    1 and P = p·s / (p·s + (1−p)(1−s)) for a reported 0. With no bit observed, P = s (the
    prior). With μ < 1 a reported 1 keeps its likelihood ratio (1−p)/p, while a reported 0
    says less: its ratio (p + (1−p)(1−μ)) / (1 − p·μ) tends to 1 as μ → 0.
    """
    e1, e0, n1, n0 = bit_likelihoods(p, mu)
    l_edge = np.array([[1.0, e0, e0 * e0], [e1, e1 * e0, np.nan], [e1 * e1, np.nan, np.nan]])
    l_none = np.array([[1.0, n0, n0 * n0], [n1, n1 * n0, np.nan], [n1 * n1, np.nan, np.nan]])
    return l_edge, l_none


def posterior(
    s: np.ndarray, ones: np.ndarray, zeros: np.ndarray, p: float, mu: float = 1.0
) -> np.ndarray:
    """P_ij of Eq. (9) for pairs with ``ones`` reported 1-bits and ``zeros`` reported 0-bits
    (``mu``: see :func:`likelihoods`)."""
    l_edge, l_none = likelihoods(p, mu)
    le = l_edge[ones, zeros]
    ln = l_none[ones, zeros]
    num = le * s
    return num / (num + ln * (1.0 - s))


def similarity_threshold(t: float, ones: int, zeros: int, p: float, mu: float = 1.0) -> float:
    """The s above which P ≥ t, for a pair with the given bits: t·l' / (l(1−t) + t·l').

    For μ = 1: (1,1): t / (t + (1−t)r), (1,0): t, (0,0): t·r / (t·r + 1 − t), with
    r = ((1−p)/p)². For μ < 1, (1,1) is unchanged, (1,0) falls below t and (0,0) falls from
    near 1 towards t (reported zeros carry less evidence against an edge).
    """
    l_edge, l_none = likelihoods(p, mu)
    le, ln = l_edge[ones, zeros], l_none[ones, zeros]
    return float(t * ln / (le * (1.0 - t) + t * ln))


@dataclass
class TopologyResult:
    """All pairs i < j with P_ij ≥ the threshold asked for, with their posteriors."""

    i: np.ndarray
    j: np.ndarray
    prob: np.ndarray
    stats: dict[str, Any]


def reconstruct_topology(
    reported: sp.csr_matrix,
    observed: np.ndarray,
    features: FeatureRows,
    p: float,
    threshold: float,
    block_entries: int = 1 << 20,
    mu: float = 1.0,
) -> TopologyResult:
    """Every pair i < j with P_ij ≥ ``threshold`` (Algorithm 2 without the n² loop); ``mu``:
    the probability a node kept each reported 1 (asymmetric RR, :func:`likelihoods`).

    Pairs with a reported 1 are scored block by block of rows (memory: R, Rᵀ and one block);
    pairs with none can only pass as near-duplicates and come from the similarity join. When
    the features are too dense for prefix filtering (1-bit-perturbed rows), the join computes
    the dot products of all pairs block by block, and the reported pairs take theirs from the
    same blocks instead of a popcount each.
    """
    n = reported.shape[0]
    reported = reported.tocsr()
    reported.sort_indices()
    transposed = reported.T.tocsr()
    transposed.sort_indices()
    parts_i: list[np.ndarray] = []
    parts_j: list[np.ndarray] = []
    parts_p: list[np.ndarray] = []
    n_reported = 0

    def score_reported(a: int, b: int, block: np.ndarray | None = None) -> None:
        """Score the reported pairs i < j with a ≤ i < b; ``block`` holds the dot products of
        rows a..b-1 with rows a.. (from ``features.block_products``), else each pair's
        cosine is computed on its own."""
        nonlocal n_reported
        blk = (reported[a:b] + transposed[a:b]).tocoo()
        ri = blk.row.astype(np.int64) + a
        rj = blk.col.astype(np.int64)
        upper = rj > ri
        ri, rj = ri[upper], rj[upper]
        ones = blk.data[upper].astype(np.int64)
        n_reported += ri.size
        nobs = observed[ri].astype(np.int64) + observed[rj]
        if block is None:
            s = features.cosine(ri, rj)
        else:
            s = features.cosine_from_dots(block[ri - a, rj - a].astype(np.float64), ri, rj)
        prob = posterior(s, ones, nobs - ones, p, mu)
        keep = prob >= threshold
        parts_i.append(ri[keep])
        parts_j.append(rj[keep])
        parts_p.append(prob[keep])

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
        found_i: list[np.ndarray] = []
        found_j: list[np.ndarray] = []
        for a, dots in features.block_products():
            b = a + dots.shape[0]
            score_reported(a, b, dots)
            ci, cj = features.block_candidates(a, dots, t_join)
            s = features.cosine_from_dots(dots[ci - a, cj - a].astype(np.float64), ci, cj)
            keep = s >= t_join - 1e-9
            found_i.append(ci[keep])
            found_j.append(cj[keep])
        candidates.append((np.concatenate(found_i), np.concatenate(found_j)))
    else:
        per_row = max(1.0, 2.0 * reported.nnz / max(n, 1))
        rows_per_block = max(1, int(block_entries / per_row))
        for a in range(0, n, rows_per_block):
            score_reported(a, min(n, a + rows_per_block))
        if t_join is not None:
            candidates.append(features.threshold_join(t_join))
    if n_miss >= 2:
        missing = np.flatnonzero(~observed)
        mi, mj = FeatureRows(_rows_of(features, missing)).threshold_join(threshold)
        candidates.append((missing[mi], missing[mj]))
    joined = 0
    for ci, cj in candidates:
        joined += ci.size
        fresh = ~(_csr_has(reported, ci, cj) | _csr_has(reported, cj, ci))
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


def _csr_has(m: sp.csr_matrix, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """Whether m[rows[k], cols[k]] is stored, by a vectorised binary search per row."""
    if rows.size == 0 or m.nnz == 0:
        return np.zeros(rows.shape, dtype=bool)
    lo = m.indptr[rows].astype(np.int64)
    end = m.indptr[rows + 1].astype(np.int64)
    hi = end.copy()
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) // 2
        less = m.indices[np.minimum(mid, m.nnz - 1)] < cols
        lo = np.where(active & less, mid + 1, lo)
        hi = np.where(active & ~less, mid, hi)
    return (lo < end) & (m.indices[np.minimum(lo, m.nnz - 1)] == cols)


def _rows_of(features: FeatureRows, rows: np.ndarray) -> np.ndarray:
    if features.binary:
        bits = np.unpackbits(features.words[rows].view(np.uint8), axis=1)
        return bits[:, : features.dim]
    return features.dense[rows]


def reconstruct_features(
    x0: np.ndarray, i: np.ndarray, j: np.ndarray, prob: np.ndarray, steps: int
) -> np.ndarray:
    """Algorithm 3, ``steps`` times: X_i ← Σ_{j∈V_i} P_ij X_j / Σ_{j∈V_i} P_ij, where V_i holds
    the j with P_ij ≥ 0.5; a node with empty V_i keeps its previous row. float64 inside,
    float32 out."""
    x = np.asarray(x0, dtype=np.float64)
    if steps <= 0:
        return x.astype(np.float32)
    n = x.shape[0]
    sel = prob >= FR_THRESHOLD
    rows = np.concatenate([i[sel], j[sel]])
    cols = np.concatenate([j[sel], i[sel]])
    vals = np.concatenate([prob[sel], prob[sel]])
    w = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    w.sum_duplicates()
    w.sort_indices()
    total = np.asarray(w.sum(axis=1)).ravel()
    has = total > 0
    for _ in range(steps):
        agg = _sparse_dense_product(w, x)
        x = np.where(has[:, None], agg / np.where(has, total, 1.0)[:, None], x)
    return x.astype(np.float32)


def _sparse_dense_product(w: sp.csr_matrix, x: np.ndarray) -> np.ndarray:
    """``w @ x`` in float64 on every core: scipy's product is single-threaded, torch's CSR
    product is not (a random matrix of Facebook's shape, 22470² with 6 M weights, times 4714
    columns: 36 s → 16 s on 2 cores, bit-identical). Imported
    here so the client's import path stays free of torch."""
    import warnings

    import torch

    if w.nnz == 0:
        return np.zeros_like(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "sparse CSR support is in beta"
        tw = torch.sparse_csr_tensor(
            torch.from_numpy(w.indptr.astype(np.int64)),
            torch.from_numpy(w.indices.astype(np.int64)),
            torch.from_numpy(np.asarray(w.data, dtype=np.float64)),
            size=w.shape,
        )
        return (tw @ torch.from_numpy(np.ascontiguousarray(x))).numpy()


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

    def __post_init__(self) -> None:
        if not math.isfinite(self.epsilon) or self.epsilon <= 0:
            raise ValueError(f"epsilon must be a finite number > 0, got {self.epsilon}")
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
    params=(EPSILON, FEATURE_SHARE, TAU, STEPS),
    summary="HoGS: edge LDP + feature LDP, homophily-based reconstruction",
)
@register(
    "hogs-edge",
    label="HoGS",
    params=(EPSILON, TAU),
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
        }

    def round_epsilon(self, round_: int) -> float:
        return self.params.eps_adjacency + self.params.eps_features

    def schema(self, round_: int) -> ReportSchema:
        return ReportSchema(adjacency=True, features=not self.params.public_features)

    def client_step(
        self, round_: int, view: NodeView, server_msg: dict[str, Any], seed: int
    ) -> Report:
        p = self.params
        adj = noisy_row(view, p.eps_adjacency, seed, round_)
        feats = None if p.public_features else noisy_features(view, p.eps_features, seed, round_)
        return Report(view.node_id, round_, view.num_nodes, adj, feats)

    def server_step(
        self, round_: int, result: RoundResult, curator: CuratorView, seed: int
    ) -> Release:
        p = self.params
        n, d = curator.num_nodes, curator.num_features
        reported, observed = adjacency_reports(result.reports, n)
        if p.public_features:
            if curator.public_features is None:
                raise ValueError("hogs-edge needs the public features in the curator view")
            x0 = curator.public_features
        else:
            x0, _ = feature_reports(result.reports, n, d)
        rows = FeatureRows(x0)
        steps = 0 if p.public_features else p.steps
        need = min(p.tau, FR_THRESHOLD) if steps > 0 else p.tau
        p_flip = flip_probability(p.eps_adjacency)
        mu = self.keep_probability(n)
        topo = reconstruct_topology(reported, observed, rows, p_flip, need, mu=mu)
        in_graph = topo.prob >= p.tau
        edges = canonical_edges(np.stack([topo.i[in_graph], topo.j[in_graph]], axis=1), n)
        x = x0 if p.public_features else reconstruct_features(x0, topo.i, topo.j, topo.prob, steps)
        stats = dict(topo.stats)
        stats["adjacency_reports"] = int(observed.sum())
        stats["reported_ones"] = int(reported.nnz)
        return Release(edges=edges, x=x, privacy=self.privacy_report(d), stats=stats)

    def keep_probability(self, num_nodes: int) -> float:
        """μ, the probability a node keeps each reported 1 after RR: 1 here (every bit is sent);
        ``hogs-arr`` samples them. Public: from the parameters and n, never from reports."""
        return 1.0

    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        return hogs_privacy_report(self.name, self.params, num_features)


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
