"""LDPGen (Qin et al., CCS'17) as Blink_GNN implements it, and HoGS's FP-LDPGen.

Following Blink_GNN's code (github.com/zhxchd/Blink_GNN). Two reporting rounds, each followed
by a server step:

Round 0 (phase 1). The initial partition ξ0 puts every node in one of ``k0`` groups uniformly
at random (Blink_GNN: k0 = 2, a fair coin); it is public and derived from the run seed
(``stage_rng(seed, "ldpgen-partition0")``), so client and server compute the same one without a
message. Node u sends its degree vector δ0_u[g] = |N(u) ∩ ξ0⁻¹(g)| plus i.i.d. discrete Laplace
noise at ε1 per entry (integers, P[k] ∝ e^{−ε1|k|}; deviation: LDPGen adds real-valued
Lap(1/ε1), not ε-DP on floats, see :mod:`ldpgraph.protocols.laplace`), as the scalar extras
``deg0 … deg{k0−1}`` (integer-valued floats on the wire). For ``fp-ldpgen`` it also sends its
features through HoGS's 1-bit mechanism with ε_f (Report.features, packed bits).
Server: η_u = round(δ0_u[0] + … ) clipped to [1, n−1]; k1 = clip(⌈mean_u f(η_u/2)⌉, 1, n) with
f(D) = D + (D² − 2(1+√5)D + 1)/ε2 (Blink_GNN's rule; the parameter ``k1`` > 0 fixes it
instead); k-means (k-means++ seeding, Lloyd, ``KMEANS_RESTARTS`` restarts, all from
``stage_rng(seed, "ldpgen-kmeans-1")``) of the n × k0 noisy vectors into k1 groups → ξ1.
Message: ``ldpgen_k`` = k1 (int) and ``ldpgen_groups`` = ξ1 as little-endian int32 bytes.

Round 1 (phase 2). Node u sends δ1_u ∈ ℤ^{k1}, its neighbour count in every ξ1 group plus
i.i.d. discrete Laplace noise at ε2 per entry, as float32 Report.features of length k1 (exact
for integers below 2²⁴).
Server: k-means with k1 clusters of the n × k1 noisy matrix → final partition ξ2 (C_i); then
the generator (phase 3, post-processing):
  1. δ1 rounded and clipped to integers in [0, n−1];
  2. δ̂_u[i] = Σ_j δ1_u[j]·|B_j ∩ C_i|/|B_j| (B_j = ξ1 groups; an empty B_j contributes 0);
  3. ``generator="blinkgnn"`` (default, Blink_GNN's): M[a][b] = (S_b/|C_b|)/(S_b + T_ab) with
     S_b = Σ_u δ̂_u[b], T_ab = Σ_{u∈C_a} δ̂_u[b]; p_uv = clip(δ̂_u[c(v)]·M[c(u)][c(v)], 0, 1) for
     every ordered pair u ≠ v, sampled independently. p_uv depends on (u, c(v)) only, so node u's
     number of out-edges into C_b is Binomial(|C_b \\ {u}|, q_ub) and their heads are uniform
     without replacement in C_b \\ {u}: exact and O(n·k1 + |E|), never n × n. The directed graph
     is symmetrised by OR (Release edges are undirected); both counts are in the stats.
     ``generator="chunglu"`` (the spec's [Rec] symmetric alternative): for the block pair
     (a, b), p_uv = δ̂_u[b]·δ̂_v[a]/Ê_ab with Ê_ab = ½(Σ_{u∈C_a} δ̂_u[b] + Σ_{v∈C_b} δ̂_v[a]);
     sampled as in the spec: a Poisson number of endpoint pairs with mean Σ p_uv per block pair
     (unordered pairs within a block), endpoints drawn ∝ δ̂, self-pairs and duplicates dropped.
For ``fp-ldpgen`` the server then runs HoGS's feature reconstruction (Algorithm 3, ``steps``
passes) on the reported bits X̃ with the sampled graph as P (weight 1, symmetrised): X̂_u is the
mean X̃ over u's sampled neighbours, X̃_u when it has none (our choice: the HoGS paper, Section V,
does not say). ``ldpgen`` trains on the
public features.

Budget: ε_g = ε for ``ldpgen`` and (1 − feature_share)·ε for ``fp-ldpgen``;
ε1 = phase_share·ε_g, ε2 = (1 − phase_share)·ε_g (default phase_share = ½, Blink_GNN's even
split); ε_f = feature_share·ε. round_epsilon(0) = ε1 (+ ε_f), round_epsilon(1) = ε2; they sum
to ε. One changed adjacency bit A_uj moves exactly one entry of a degree vector by 1 (L1
sensitivity 1), so discrete Laplace noise at ε_r on every entry is ε_r-edge-LDP per round.

Nodes that did not reply: their noisy vector is imputed as the mean of the vectors that did
arrive (for the k-means and the generator); a node without a round-0 feature report has a zero
X̃ row (as in HoGS). Server state between the two rounds (ξ1, k1, X̃, round-0 stats) lives on the
protocol instance: call ``server_step`` in order on one instance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..accounting import ACCOUNTANT, bit_part, unit_summary
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
from ..graph import canonical_edges
from ..laplace import MIN_EPSILON, DiscreteLaplace, composed_epsilon, discrete_laplace_part
from ..params import Param
from ..registry import register
from ..rng import DEGREE, node_rng, stage_rng
from ..sorting import union_ints
from ..support import noisy_count
from ..types import NodeView, PrivacyReport, Release, Report
from .assemble import feature_reports
from .hogs import reconstruct_features
from .node_reports import noisy_features

GENERATORS = ("blinkgnn", "chunglu")
#: Message keys of round 1: the number of groups k1 and ξ1 as int32 bytes.
MSG_K = "ldpgen_k"
MSG_GROUPS = "ldpgen_groups"
#: The most groups a degree vector may have (a server-chosen k0 sizes each node's report).
MAX_GROUPS = 4096
#: Round 0's public partition seed: ξ0 is the same for every node (and the server) because the
#: server sends it, not because the nodes share a stream (a deployed node's own seed is entropy).
MSG_P0 = "ldpgen_partition0_seed"
KMEANS_RESTARTS = 4
KMEANS_MAX_ITER = 300
F_COEF = 2.0 * (1.0 + math.sqrt(5.0))  # the 2(1+√5) of f(D)


def extra_names(k0: int) -> tuple[str, ...]:
    """The extras of a round-0 report: ``deg0 … deg{k0−1}``."""
    return tuple(f"deg{g}" for g in range(k0))


# ----------------------------------------------------------------------------- partitions


def initial_partition(seed: int, n: int, k0: int) -> np.ndarray:
    """ξ0: every node's group, uniform in [0, k0), from the public stage stream."""
    return stage_rng(seed, "ldpgen-partition0").integers(0, k0, size=n).astype(np.int64)


def encode_groups(groups: np.ndarray) -> bytes:
    return np.asarray(groups, dtype="<i4").tobytes()


def decode_groups(payload: Any, n: int, k: int) -> np.ndarray:
    """ξ1 from the round message, validated (length n, values in [0, k))."""
    if not isinstance(payload, bytes | bytearray) or len(payload) != 4 * n:
        raise ValueError(f"{MSG_GROUPS} must be {4 * n} bytes of int32")
    groups = np.frombuffer(bytes(payload), dtype="<i4").astype(np.int64)
    if groups.size and (groups.min() < 0 or groups.max() >= k):
        raise ValueError(f"{MSG_GROUPS} has a group outside [0, {k})")
    return groups


def _round0_seed(message: Mapping[str, Any], default: int) -> int:
    """Round 0's public seed of ξ0 (``default`` when the message omits it, as tests do)."""
    p0 = message.get(MSG_P0, default)
    if isinstance(p0, bool) or not isinstance(p0, int) or not 0 <= p0 < 2**63:
        raise ValueError(f"{MSG_P0} must be an integer in [0, 2^63), got {p0!r}")
    return p0


def _round1_groups(message: Mapping[str, Any], n: int) -> tuple[int, np.ndarray]:
    """Round 1's k1 and ξ1 from the message, validated (k1 an integer in [1, n])."""
    k = message.get(MSG_K)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
        raise ValueError(f"{MSG_K} must be an integer in [1, {n}], got {k!r}")
    return k, decode_groups(message.get(MSG_GROUPS), n, k)


def group_degrees(neighbors: np.ndarray, groups: np.ndarray, k: int) -> np.ndarray:
    """δ[g] = |N(u) ∩ groups⁻¹(g)|: the node's true neighbour count in every group (int64:
    the discrete Laplace mechanism takes integers)."""
    return np.bincount(groups[np.asarray(neighbors, dtype=np.int64)], minlength=k).astype(np.int64)


def choose_k1(noisy0: np.ndarray, eps2: float, n: int) -> tuple[int, float]:
    """Blink_GNN's rule: k1 = clip(⌈Σ_η (N_η/n')·f(η/2)⌉, 1, n), η = round(Σ_g δ0[g]) clipped to
    [1, n−1], f(D) = D + (D² − 2(1+√5)D + 1)/ε2, over the n' nodes that reported. Returns k1 and
    the unclipped mean."""
    if noisy0.shape[0] == 0:
        return 1, 0.0
    eta = np.clip(np.round(noisy0.sum(axis=1)), 1, max(1, n - 1))
    d = eta / 2.0
    value = float(np.mean(d + (d * d - F_COEF * d + 1.0) / eps2))
    return int(min(max(math.ceil(value), 1), n)), value


def kmeans(
    data: np.ndarray, k: int, rng: np.random.Generator, restarts: int = KMEANS_RESTARTS
) -> np.ndarray:
    """Labels of k-means (k-means++ seeding, Lloyd until the labels stop changing or
    ``KMEANS_MAX_ITER``), the best of ``restarts`` by inertia; deterministic given ``rng``.
    An emptied cluster is re-seeded with the point farthest from its centre."""
    x = np.asarray(data, dtype=np.float64)
    n = x.shape[0]
    k = int(min(max(k, 1), n))
    if k == 1 or n == 0:
        return np.zeros(n, dtype=np.int64)
    sq = (x * x).sum(axis=1)
    best, best_inertia = None, math.inf
    for _ in range(max(1, restarts)):
        centres = np.empty((k, x.shape[1]))
        centres[0] = x[rng.integers(n)]
        dmin = ((x - centres[0]) ** 2).sum(axis=1)
        for c in range(1, k):
            total = dmin.sum()
            idx = int(rng.choice(n, p=dmin / total)) if total > 0 else int(rng.integers(n))
            centres[c] = x[idx]
            dmin = np.minimum(dmin, ((x - centres[c]) ** 2).sum(axis=1))
        labels = np.full(n, -1, dtype=np.int64)
        for _ in range(KMEANS_MAX_ITER):
            dist = sq[:, None] - 2.0 * x @ centres.T + (centres * centres).sum(axis=1)[None, :]
            new = dist.argmin(axis=1)
            if np.array_equal(new, labels):
                break
            labels = new
            counts = np.bincount(labels, minlength=k)
            for c in np.flatnonzero(counts == 0):
                far = int(dist[np.arange(n), labels].argmax())
                labels[far] = c
                counts = np.bincount(labels, minlength=k)
            sums = np.zeros((k, x.shape[1]))
            np.add.at(sums, labels, x)
            centres = sums / counts[:, None]
        inertia = float(((x - centres[labels]) ** 2).sum())
        if inertia < best_inertia:
            best, best_inertia = labels.copy(), inertia
    return best


# ----------------------------------------------------------------------------- generator


def reexpress(
    delta1: np.ndarray, old_groups: np.ndarray, new_groups: np.ndarray, k_old: int, k_new: int
) -> np.ndarray:
    """δ̂_u[i] = Σ_j δ1_u[j]·|B_j ∩ C_i|/|B_j| (B_j = old groups, C_i = new ones)."""
    overlap = np.zeros((k_old, k_new))
    np.add.at(overlap, (old_groups, new_groups), 1.0)
    size = overlap.sum(axis=1)
    w = np.divide(overlap, size[:, None], out=np.zeros_like(overlap), where=size[:, None] > 0)
    return np.asarray(delta1, dtype=np.float64) @ w


def block_factors(dhat: np.ndarray, groups: np.ndarray, k: int) -> np.ndarray:
    """Blink_GNN's M[a][b] = (S_b/|C_b|)/(S_b + T_ab); 0 where |C_b| = 0 or S_b + T_ab = 0."""
    sizes = np.bincount(groups, minlength=k).astype(np.float64)
    t = np.zeros((k, k))
    np.add.at(t, groups, dhat)  # t[a, b] = T_ab
    s = dhat.sum(axis=0)  # S_b
    num = np.divide(s, sizes, out=np.zeros(k), where=sizes > 0)[None, :]
    den = s[None, :] + t
    return np.divide(np.broadcast_to(num, den.shape), den, out=np.zeros((k, k)), where=den > 0)


def out_probabilities(dhat: np.ndarray, groups: np.ndarray, m: np.ndarray) -> np.ndarray:
    """q[u, b] = clip(δ̂_u[b]·M[c(u)][b], 0, 1): p_uv for every v ∈ C_b, v ≠ u."""
    return np.clip(dhat * m[groups], 0.0, 1.0)


def sample_distinct(
    counts: np.ndarray, pools: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """For every row r, ``counts[r]`` distinct ranks uniform in [0, pools[r]). Returns (row,
    rank) pairs sorted by row then rank. Rows asking for more than half their pool sample the
    ranks they leave out instead, so every redraw loop keeps collision odds ≤ ½."""
    counts = np.asarray(counts, dtype=np.int64)
    pools = np.asarray(pools, dtype=np.int64)
    if (counts > pools).any() or (counts < 0).any():
        raise ValueError("cannot draw more distinct ranks than the pool holds")
    big = 2 * counts > pools
    rows_out: list[np.ndarray] = []
    ranks_out: list[np.ndarray] = []
    want = np.where(big, pools - counts, counts)
    have_rows = np.zeros(0, dtype=np.int64)
    have_ranks = np.zeros(0, dtype=np.int64)
    deficit = want.copy()
    width = int(pools.max()) + 1 if pools.size else 1
    while deficit.sum() > 0:
        rows = np.repeat(np.arange(counts.shape[0]), deficit)
        ranks = (rng.random(rows.shape[0]) * pools[rows]).astype(np.int64)
        ranks = np.minimum(ranks, pools[rows] - 1)
        keys = union_ints(have_rows * width + have_ranks, rows * width + ranks)
        have_rows, have_ranks = keys // width, keys % width
        got = np.bincount(have_rows, minlength=counts.shape[0])
        # A row draws only its deficit, so it never passes ``want``; the distinct ranks kept so
        # far are a uniform subset (by symmetry), so the final set is uniform too.
        deficit = want - got
    small = ~big[have_rows]
    rows_out.append(have_rows[small])
    ranks_out.append(have_ranks[small])
    big_rows = np.flatnonzero(big)
    if big_rows.size:
        sizes = pools[big_rows]
        r = np.repeat(big_rows, sizes)
        offsets = np.repeat(np.cumsum(sizes) - sizes, sizes)
        rk = np.arange(r.shape[0]) - offsets
        excluded = have_rows[~small] * width + have_ranks[~small]
        keep = ~np.isin(r * width + rk, excluded)
        rows_out.append(r[keep])
        ranks_out.append(rk[keep])
    rows = np.concatenate(rows_out)
    ranks = np.concatenate(ranks_out)
    o = np.lexsort((ranks, rows))
    return rows[o], ranks[o]


def sample_directed(
    q: np.ndarray, groups: np.ndarray, k: int, rng: np.random.Generator
) -> np.ndarray:
    """Every ordered pair u ≠ v independently with probability q[u, c(v)]: per (u, b) a
    Binomial(|C_b \\ {u}|, q_ub) count of heads, uniform without replacement in C_b \\ {u}.
    Returns the directed edges as an int64 [m, 2] array (tail, head)."""
    n = groups.shape[0]
    order = np.argsort(groups, kind="stable")  # members of C_b: order[start[b]:start[b+1]]
    sizes = np.bincount(groups, minlength=k)
    start = np.concatenate([[0], np.cumsum(sizes)])
    pos_in_group = np.empty(n, dtype=np.int64)
    pos_in_group[order] = np.arange(n) - start[groups[order]]
    parts = []
    for b in range(k):
        if sizes[b] == 0:
            continue
        own = groups == b
        pools = sizes[b] - own.astype(np.int64)
        counts = rng.binomial(pools, q[:, b])
        rows, ranks = sample_distinct(counts, pools, rng)
        skip = own[rows] & (ranks >= pos_in_group[rows])
        heads = order[start[b] + ranks + skip]
        parts.append(np.stack([rows, heads], axis=1))
    if not parts:
        return np.zeros((0, 2), dtype=np.int64)
    return np.concatenate(parts).astype(np.int64)


def sample_chung_lu(
    dhat: np.ndarray, groups: np.ndarray, k: int, rng: np.random.Generator
) -> np.ndarray:
    """The symmetric block Chung–Lu sample: per block pair a ≤ b a Poisson number of endpoint
    pairs (u ∈ C_a drawn ∝ δ̂_u[b], v ∈ C_b ∝ δ̂_v[a]; within a block, Poisson(W_a/2) pairs
    with self-pairs dropped). Returns the raw pairs (duplicates kept; no self-pairs)."""
    order = np.argsort(groups, kind="stable")
    sizes = np.bincount(groups, minlength=k)
    start = np.concatenate([[0], np.cumsum(sizes)])
    parts = []

    def draw(members: np.ndarray, weights: np.ndarray, count: int) -> np.ndarray:
        cum = np.cumsum(weights)
        idx = np.searchsorted(cum, rng.random(count) * cum[-1], side="right")
        return members[np.minimum(idx, members.shape[0] - 1)]

    for a in range(k):
        ma = order[start[a] : start[a + 1]]
        for b in range(a, k):
            mb = order[start[b] : start[b + 1]]
            if ma.size == 0 or mb.size == 0:
                continue
            wa, wb = dhat[ma, b], dhat[mb, a]
            sa, sb = float(wa.sum()), float(wb.sum())
            if sa <= 0 or sb <= 0:
                continue
            mean = sa / 2.0 if a == b else 2.0 * sa * sb / (sa + sb)
            count = int(rng.poisson(mean))
            if count == 0:
                continue
            u, v = draw(ma, wa, count), draw(mb, wb, count)
            keep = u != v
            parts.append(np.stack([u[keep], v[keep]], axis=1))
    if not parts:
        return np.zeros((0, 2), dtype=np.int64)
    return np.concatenate(parts).astype(np.int64)


# ----------------------------------------------------------------------------- protocol


K0 = Param("k0", int, 2, "groups of the initial random partition", low=1, high=MAX_GROUPS)
K1 = Param("k1", int, 0, "groups after clustering (0: LDPGen's rule)", low=0)
PHASE_SHARE = Param(
    "phase_share",
    float,
    0.5,
    "share of the graph budget spent in the first round",
    low=0.0,
    high=1.0,
    low_open=True,
    high_open=True,
)
GENERATOR = Param(
    "generator",
    str,
    "blinkgnn",
    "graph generator on the estimated blocks: " + ", ".join(GENERATORS),
    choices=GENERATORS,
    server_side=True,
)
_PARAMS = (EPSILON, K0, K1, PHASE_SHARE, GENERATOR)


@dataclass(frozen=True)
class LdpGenParams:
    """LDPGen parameters (see the module docstring for the budget split)."""

    epsilon: float
    feature_share: float = FEATURE_SHARE.default
    public_features: bool = True
    k0: int = K0.default
    k1: int = K1.default  # 0: Blink_GNN's rule
    phase_share: float = PHASE_SHARE.default
    generator: str = GENERATOR.default
    steps: int = STEPS.default

    def __post_init__(self) -> None:
        if not math.isfinite(self.epsilon) or self.epsilon <= 0:
            raise ValueError(f"epsilon must be a finite number > 0, got {self.epsilon}")
        if not self.public_features and not 0.0 < self.feature_share < 1.0:
            raise ValueError(f"feature share must be in (0, 1), got {self.feature_share}")
        if not 0.0 < self.phase_share < 1.0:
            raise ValueError(f"phase share must be in (0, 1), got {self.phase_share}")
        if int(self.k0) != self.k0 or not 1 <= self.k0 <= MAX_GROUPS:
            raise ValueError(f"k0 must be an integer in [1, {MAX_GROUPS}], got {self.k0}")
        if int(self.k1) != self.k1 or self.k1 < 0:
            raise ValueError(f"k1 must be a non-negative integer (0: the rule), got {self.k1}")
        if self.generator not in GENERATORS:
            raise ValueError(f"generator must be one of {GENERATORS}, got {self.generator!r}")
        if self.steps < 0 or int(self.steps) != self.steps:
            raise ValueError(f"steps must be a non-negative integer, got {self.steps}")
        # Refused before a node is charged: the degree vectors' discrete Laplace needs a
        # meaningful ε (a vanishing one would be a server's way to read the true counts).
        for name, eps in (("ε1", self.eps1), ("ε2", self.eps2)):
            if not eps >= MIN_EPSILON:
                raise ValueError(f"{name} = {eps:g} is below the smallest ε {MIN_EPSILON:g}")

    @property
    def eps_graph(self) -> float:
        return self.epsilon if self.public_features else (1.0 - self.feature_share) * self.epsilon

    @property
    def eps1(self) -> float:
        return self.phase_share * self.eps_graph

    @property
    def eps2(self) -> float:
        return self.eps_graph - self.eps1

    @property
    def eps_features(self) -> float:
        return 0.0 if self.public_features else self.epsilon - self.eps_graph


@register(
    "ldpgen",
    label="LDPGen",
    params=_PARAMS,
    public_features=True,
    summary="LDPGen (Blink_GNN's version): 2 rounds of discrete-Laplace degree vectors, "
    "k-means, block generator; features public",
)
@register(
    "fp-ldpgen",
    label="FP-LDPGen",
    params=(*_PARAMS, FEATURE_SHARE, STEPS),
    summary="FP-LDPGen: LDPGen on (1-feature_share)·ε + 1-bit features + HoGS feature "
    "reconstruction",
)
class LdpGenProtocol(LdpProtocol):
    """``ldpgen`` (edge LDP, public features) and ``fp-ldpgen`` (plus 1-bit features)."""

    rounds = 2

    @classmethod
    def from_params(cls, name: str, **params: Any) -> LdpGenProtocol:
        return cls(LdpGenParams(public_features=name == "ldpgen", **params))

    def __init__(self, params: LdpGenParams) -> None:
        self.params = params
        self.name = "ldpgen" if params.public_features else "fp-ldpgen"
        self._partition0: tuple[int, int, np.ndarray] | None = None
        self._state: dict[str, Any] | None = None

    def config(self) -> dict[str, Any]:
        p = self.params
        return {
            "protocol": self.name,
            "epsilon": p.epsilon,
            "feature_share": p.feature_share,
            "k0": p.k0,
            "k1": p.k1,
            "phase_share": p.phase_share,
            "generator": p.generator,
            "steps": p.steps,
        }

    def round_epsilon(self, round_: int) -> float:
        p = self.params
        if round_ == 0:
            return p.eps1 + p.eps_features
        if round_ == 1:
            return p.eps2
        raise ValueError(f"ldpgen has rounds 0 and 1, not {round_}")

    def epsilon_parts(self, round_: int) -> EpsilonParts:
        """An adjacency bit moves one entry of the round's degree vector by 1 (discrete Laplace
        at ε1, then ε2); round 0 also sends the 1-bit features (ε_f each)."""
        p = self.params
        if round_ == 0:
            return EpsilonParts(p.eps1, p.eps_features)
        if round_ == 1:
            return EpsilonParts(p.eps2, 0.0)
        raise ValueError(f"ldpgen has rounds 0 and 1, not {round_}")

    def check_request(self, round_: int, message: Mapping[str, Any], num_nodes: int) -> None:
        """Round 0's public seed of ξ0, round 1's k1 and ξ1, checked on the message alone."""
        if round_ == 0:
            if MSG_P0 not in message:  # never a node's own seed in its place
                raise ValueError(f"round 0 names no public seed of ξ0 ({MSG_P0})")
            _round0_seed(message, 0)
        elif round_ == 1:
            _round1_groups(message, num_nodes)
        else:
            raise ValueError(f"ldpgen has rounds 0 and 1, not {round_}")

    def schema(self, round_: int) -> ReportSchema:
        if round_ == 0:
            return ReportSchema(
                adjacency=False,
                features=not self.params.public_features,
                extras=extra_names(self.params.k0),
                extra_support=noisy_count(self.params.eps1),
            )
        if round_ == 1:
            return ReportSchema(
                adjacency=False, features=True, feature_support=noisy_count(self.params.eps2)
            )
        raise ValueError(f"ldpgen has rounds 0 and 1, not {round_}")

    def public_message(self, round_: int, seed: int) -> dict[str, Any]:
        """Round 0 carries the seed of ξ0 (public: the run seed the server derives it from)."""
        return {MSG_P0: int(seed)} if round_ == 0 else {}

    @staticmethod
    def num_features(round_: int, message: dict[str, Any], d: int) -> int:
        """What the server validates a report's feature length against: d in round 0 (the
        1-bit features of fp-ldpgen), k1 = message[MSG_K] in round 1 (the degree vector)."""
        return d if round_ == 0 else int(message[MSG_K])

    def partition0(self, seed: int, n: int) -> np.ndarray:
        cached = self._partition0
        if cached is None or cached[0] != seed or cached[1] != n:
            cached = (seed, n, initial_partition(seed, n, self.params.k0))
            self._partition0 = cached
        return cached[2]

    def client_step(
        self, round_: int, view: NodeView, server_msg: dict[str, Any], seed: int
    ) -> Report:
        p = self.params
        n = view.num_nodes
        rng = node_rng(seed, view.node_id, round_, DEGREE)
        if round_ == 0:
            p0 = _round0_seed(server_msg, seed)
            counts = group_degrees(view.neighbors, self.partition0(p0, n), p.k0)
            noisy = DiscreteLaplace(p.eps1).perturb_many(counts, rng)
            extras = dict(zip(extra_names(p.k0), (float(v) for v in noisy), strict=True))
            feats = None if p.public_features else noisy_features(view, p.eps_features, seed, 0)
            return Report(view.node_id, 0, n, None, feats, extras)
        if round_ == 1:
            k, groups = _round1_groups(server_msg, n)
            noisy = DiscreteLaplace(p.eps2).perturb_many(
                group_degrees(view.neighbors, groups, k), rng
            )
            # Integers travel as float32 (the report codec's real-valued form), exactly.
            return Report(view.node_id, 1, n, None, noisy.astype(np.float32))
        raise ValueError(f"ldpgen has rounds 0 and 1, not {round_}")

    # -- server -----------------------------------------------------------------------------
    def server_step(
        self, round_: int, result: RoundResult, curator: CuratorView, seed: int
    ) -> dict[str, Any] | Release:
        if round_ == 0:
            return self._server_round0(result, curator, seed)
        if round_ == 1:
            return self._server_round1(result, curator, seed)
        raise ValueError(f"ldpgen has rounds 0 and 1, not {round_}")

    def _server_round0(self, result: RoundResult, curator: CuratorView, seed: int) -> dict:
        p = self.params
        n = curator.num_nodes
        names = extra_names(p.k0)
        noisy, observed = _vectors(
            {u: [r.extras[g] for g in names] for u, r in result.reports.items()}, n, p.k0
        )
        k1, rule = choose_k1(noisy[observed], p.eps2, n)
        if p.k1 > 0:
            k1 = min(int(p.k1), n)
        groups1 = kmeans(_impute(noisy, observed), k1, stage_rng(seed, "ldpgen-kmeans-1"))
        x_tilde = None
        if not p.public_features:
            x_tilde, _ = feature_reports(result.reports, n, curator.num_features)
        self._state = {
            "seed": seed,
            "k1": k1,
            "groups1": groups1,
            "x_tilde": x_tilde,
            "stats": {
                "k1": k1,
                "k1_rule": rule,
                "round0_reports": int(observed.sum()),
            },
        }
        return {MSG_K: int(k1), MSG_GROUPS: encode_groups(groups1)}

    def _server_round1(self, result: RoundResult, curator: CuratorView, seed: int) -> Release:
        p = self.params
        n = curator.num_nodes
        state = self._state
        if state is None or state["seed"] != seed or state["groups1"].shape[0] != n:
            raise RuntimeError("ldpgen round 1 needs this instance's round-0 server step first")
        k1, groups1 = state["k1"], state["groups1"]
        vectors = {}
        for u, r in result.reports.items():
            if r.features is None or r.features.shape != (k1,):
                raise ValueError(f"node {u}: round-1 report must be a length-{k1} vector")
            vectors[u] = r.features
        noisy, observed = _vectors(vectors, n, k1)
        noisy = _impute(noisy, observed)
        groups2 = kmeans(noisy, k1, stage_rng(seed, "ldpgen-kmeans-2"))
        delta1 = np.clip(np.round(noisy), 0, n - 1)
        dhat = reexpress(delta1, groups1, groups2, k1, k1)
        rng = stage_rng(seed, "ldpgen-generate")
        stats = dict(state["stats"])
        if p.generator == "blinkgnn":
            q = out_probabilities(dhat, groups2, block_factors(dhat, groups2, k1))
            pairs = sample_directed(q, groups2, k1, rng)
            stats["directed_edges"] = int(pairs.shape[0])
        else:
            pairs = sample_chung_lu(dhat, groups2, k1, rng)
            stats["sampled_pairs"] = int(pairs.shape[0])
        edges = canonical_edges(pairs, n)
        stats["round1_reports"] = int(observed.sum())
        stats["undirected_edges"] = int(edges.shape[0])
        stats["cluster_sizes"] = np.bincount(groups2, minlength=k1).tolist()
        if p.public_features:
            if curator.public_features is None:
                raise ValueError("ldpgen needs the public features in the curator view")
            x = curator.public_features
        else:
            ones = np.ones(edges.shape[0])
            x = reconstruct_features(state["x_tilde"], edges[:, 0], edges[:, 1], ones, p.steps)
        self._state = None
        return Release(
            edges=edges, x=x, privacy=self.privacy_report(curator.num_features), stats=stats
        )

    # -- privacy ----------------------------------------------------------------------------
    def round_parts(self, round_: int, num_features: int | None = None) -> list[dict[str, Any]]:
        """The privacy-report lines of one round (each carries ``round``)."""
        p = self.params
        unit = "one adjacency bit (edge LDP): moves one entry of the degree vector by 1"
        if round_ == 0:
            parts = [discrete_laplace_part("degree-vector-0", unit, p.eps1)]
            parts[0]["entries"] = int(p.k0)
            if not p.public_features:
                parts.append(
                    bit_part(
                        "features", "one feature bit (feature LDP)", p.eps_features, num_features
                    )
                )
        elif round_ == 1:
            parts = [discrete_laplace_part("degree-vector-1", unit, p.eps2)]
        else:
            raise ValueError(f"ldpgen has rounds 0 and 1, not {round_}")
        for part in parts:
            part["round"] = round_
        return parts

    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        p = self.params
        parts = self.round_parts(0, num_features) + self.round_parts(1, num_features)
        rr = [] if p.public_features else [p.eps_features]
        total = composed_epsilon(rr, [p.eps1, p.eps2])
        notes = [
            f"ε1 = {p.eps1:g} (round 0) and ε2 = {p.eps2:g} (round 1) protect one adjacency bit: "
            "it changes one entry of each degree vector by 1 (L1 sensitivity 1), and each entry "
            "gets discrete Laplace noise at ε_r; the two rounds compose to ε1 + ε2.",
            "An edge {u, v} is counted in both endpoints' degree vectors (u's entry for v's "
            f"group and v's for u's), in both rounds: it is 2(ε1 + ε2) = "
            f"{2 * (p.eps1 + p.eps2):g}-DP for that edge (edge LDP is per row, as in the "
            "papers).",
            "Clustering, k1 and the graph generator are post-processing of the reports; tuning "
            "what nodes report (k0, phase_share, feature_share or ε) collects fresh reports per "
            "configuration, and a node spends the sum over the collections used.",
        ]
        if p.public_features:
            unit = "adjacency bit (edge LDP); features are public and not protected"
        else:
            unit = "one adjacency bit plus one feature bit of a node (edge LDP + feature LDP)"
            notes.append(
                f"ε_f = {p.eps_features:g} is per feature BIT (HoGS's definition); a node's whole "
                "feature vector of d bits is protected only at d·ε_f."
            )
        headline, unit_eps = unit_summary(
            adjacency_label="ε1 + ε2",
            counts=[p.eps1, p.eps2],
            adjacency_detail="one entry of each round's degree vector",
            edge_detail="both endpoints' degree vectors count it, in both rounds",
            feature_bit=None if p.public_features else p.eps_features,
            num_features=num_features,
        )
        return PrivacyReport(
            protocol=self.name,
            unit=unit,
            epsilon=total,
            delta=0.0,
            accountant=ACCOUNTANT + " with the discrete Laplace PLD of protocols.laplace",
            parts=parts,
            paper_epsilon=p.epsilon,
            notes=notes,
            headline=headline,
            unit_epsilons=unit_eps,
        )


def _vectors(rows: dict[int, Any], n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    out = np.zeros((n, k))
    observed = np.zeros(n, dtype=bool)
    for u, v in rows.items():
        out[u] = np.asarray(v, dtype=np.float64)
        observed[u] = True
    return out, observed


def _impute(noisy: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Rows of nodes without a report get the mean of the reported rows (zeros if none)."""
    if observed.all() or not observed.any():
        return noisy
    out = noisy.copy()
    out[~observed] = noisy[observed].mean(axis=0)
    return out
