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
Server (:mod:`.ldpgen_generate`): η_u = round(δ0_u[0] + … ) clipped to [1, n−1];
k1 = clip(⌈mean_u f(η_u/2)⌉, 1, n) with
f(D) = D + (D² − 2(1+√5)D + 1)/ε2 (Blink_GNN's rule; the parameter ``k1`` > 0 fixes it
instead); k-means (k-means++ seeding, Lloyd, ``KMEANS_RESTARTS`` restarts, all from
``stage_rng(seed, "ldpgen-kmeans-1")``) of the n × k0 noisy vectors into k1 groups → ξ1.
Message: ``ldpgen_k`` = k1 (int) and ``ldpgen_groups`` = ξ1 as little-endian int32 bytes.

Round 1 (phase 2). Node u sends δ1_u ∈ ℤ^{k1}, its neighbour count in every ξ1 group plus
i.i.d. discrete Laplace noise at ε2 per entry, as float32 Report.features of length k1 (exact
for integers below 2²⁴).
Server: k-means with k1 clusters of the n × k1 noisy matrix → final partition ξ2 (C_i); then
the generator (phase 3, post-processing):
δ1 rounded and clipped to [0, n−1], re-expressed over the final groups, and sampled by the
block generator of :mod:`.ldpgen_generate` (``generator``: ``blinkgnn``, Blink_GNN's, or
``chunglu``); the directed sample is symmetrised by OR (Release edges are undirected).
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

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..base import (
    EPSILON,
    FEATURE_SHARE,
    STEPS,
    CuratorView,
    EpsilonParts,
    ReportSchema,
    RoundResult,
)
from ..graph import canonical_edges
from ..laplace import MIN_EPSILON, DiscreteLaplace
from ..params import Param, Params
from ..registry import register
from ..rng import DEGREE, node_rng, stage_rng
from ..support import noisy_count
from ..types import NodeView, PrivacyReport, Release, Report
from . import ldpgen_privacy
from .assemble import feature_reports
from .hogs_features import reconstruct_features
from .ldpgen_generate import (
    block_factors,
    choose_k1,
    kmeans,
    out_probabilities,
    reexpress,
    sample_chung_lu,
    sample_directed,
)
from .ldpgen_messages import (
    MAX_GROUPS,
    MSG_GROUPS,
    MSG_K,
    MSG_P0,
    encode_groups,
    extra_names,
    group_degrees,
    initial_partition,
    round0_seed,
    round1_groups,
)
from .split_budget import SplitBudgetProtocol

GENERATORS = ("blinkgnn", "chunglu")

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
class LdpGenProtocol(SplitBudgetProtocol):
    """``ldpgen`` (edge LDP, public features) and ``fp-ldpgen`` (plus 1-bit features)."""

    rounds = 2

    def __init__(self, name: str, params: Params) -> None:
        super().__init__(name, params)
        # Refused before a node is charged: the degree vectors' discrete Laplace needs a
        # meaningful ε (a vanishing one would be a server's way to read the true counts).
        for label, eps in (("ε1", self.eps1), ("ε2", self.eps2)):
            if not eps >= MIN_EPSILON:
                raise ValueError(f"{label} = {eps:g} is below the smallest ε {MIN_EPSILON:g}")
        self._partition0: tuple[int, int, np.ndarray] | None = None
        self._state: dict[str, Any] | None = None

    @property
    def eps1(self) -> float:
        """Round 0's ε: phase_share·ε_g."""
        return self.params.phase_share * self.eps_graph

    @property
    def eps2(self) -> float:
        """Round 1's ε: the rest of ε_g."""
        return self.eps_graph - self.eps1

    @property
    def eps_features(self) -> float:
        """ε_f: what ε_g leaves of ε (0 with public features)."""
        return 0.0 if self.public_features else self.params.epsilon - self.eps_graph

    def config(self) -> dict[str, Any]:
        p = self.params
        return {
            "protocol": self.name,
            "epsilon": p.epsilon,
            "feature_share": self.setting(FEATURE_SHARE),
            "k0": p.k0,
            "k1": p.k1,
            "phase_share": p.phase_share,
            "generator": p.generator,
            "steps": self.setting(STEPS),
        }

    def round_epsilon(self, round_: int) -> float:
        if round_ == 0:
            return self.eps1 + self.eps_features
        if round_ == 1:
            return self.eps2
        raise ValueError(f"ldpgen has rounds 0 and 1, not {round_}")

    def epsilon_parts(self, round_: int) -> EpsilonParts:
        """An adjacency bit moves one entry of the round's degree vector by 1 (discrete Laplace
        at ε1, then ε2); round 0 also sends the 1-bit features (ε_f each)."""
        if round_ == 0:
            return EpsilonParts(self.eps1, self.eps_features)
        if round_ == 1:
            return EpsilonParts(self.eps2, 0.0)
        raise ValueError(f"ldpgen has rounds 0 and 1, not {round_}")

    def check_request(self, round_: int, message: Mapping[str, Any], num_nodes: int) -> None:
        """Round 0's public seed of ξ0, round 1's k1 and ξ1, checked on the message alone."""
        if round_ == 0:
            if MSG_P0 not in message:  # never a node's own seed in its place
                raise ValueError(f"round 0 names no public seed of ξ0 ({MSG_P0})")
            round0_seed(message, 0)
        elif round_ == 1:
            round1_groups(message, num_nodes)
        else:
            raise ValueError(f"ldpgen has rounds 0 and 1, not {round_}")

    def schema(self, round_: int) -> ReportSchema:
        if round_ == 0:
            return ReportSchema(
                adjacency=False,
                features=not self.public_features,
                extras=extra_names(self.params.k0),
                extra_support=noisy_count(self.eps1),
            )
        if round_ == 1:
            return ReportSchema(
                adjacency=False, features=True, feature_support=noisy_count(self.eps2)
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
            p0 = round0_seed(server_msg, seed)
            counts = group_degrees(view.neighbors, self.partition0(p0, n), p.k0)
            noisy = DiscreteLaplace(self.eps1).perturb_many(counts, rng)
            extras = dict(zip(extra_names(p.k0), (float(v) for v in noisy), strict=True))
            feats = self.noisy_features(view, seed, 0)
            return Report(view.node_id, 0, n, None, feats, extras)
        if round_ == 1:
            k, groups = round1_groups(server_msg, n)
            noisy = DiscreteLaplace(self.eps2).perturb_many(
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
        k1, rule = choose_k1(noisy[observed], self.eps2, n)
        if p.k1 > 0:
            k1 = min(int(p.k1), n)
        groups1 = kmeans(_impute(noisy, observed), k1, stage_rng(seed, "ldpgen-kmeans-1"))
        x_tilde = None
        if not self.public_features:
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
        if self.public_features:
            x, _ = self.server_features(result, curator)
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
        return ldpgen_privacy.round_parts(self, round_, num_features)

    def privacy_report(self, num_features: int | None = None) -> PrivacyReport:
        """Discrete Laplace at ε1 and ε2 on the two degree vectors (L1 sensitivity 1 per
        adjacency bit), plus the 1-bit features at ε_f in round 0 when private."""
        return ldpgen_privacy.privacy_report(self, num_features)


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
