"""Server-side consistency screening of randomized-response reports (a defence against Sybils).

A pair {u, v} of an undirected graph is reported twice, by u and by v, each bit through its own
Warner RR with flip probability p. The event "u reports 1, v reports 0" has probability p(1−p)
whether {u, v} is an edge ((1−p)·p) or not (p·(1−p)), and the 2(n−1) bits a node's pairs hang on
are independent. So for an honest node u whose counterparts are honest, the number of its
claims its counterparts deny,

    D_u = #{v ≠ u, v reported : R[u, v] = 1, R[v, u] = 0}  ~  Binomial(m_u, p(1−p)),

exactly, whatever u's degree (m_u: the other nodes that reported). A node that invents edges to
nodes it is not adjacent to (the fake-edge attacks of Wu, Cao, Jia, Gong, "Poisoning attacks to
local differential privacy protocols for graphs") is denied on each with probability
1 − p and lands in the upper tail; a node that does not randomize at all (a colluding clique
that only confirms itself) has too few denials and lands in the lower tail. The same holds for
the 1-bit feature reports: an honest node's count of reported ones is a sum of d Bernoulli bits
whose rates lie in [q_lo, q_hi] (the 1-bit mechanism's range), so it is stochastically between
Binomial(d, q_lo) and Binomial(d, q_hi); an all-ones vector (the report that maximises its
cosine with every other report) is far above.

:func:`screen` flags the nodes whose statistic falls in either tail at level α / (2·tests·n)
(Bonferroni: an honest collection loses any node with probability at most α). Flagged nodes'
reports are then left out, as if they had not replied: the pairs they touch rest on the honest
endpoint's bit alone. The limit, measured in docs/poisoning.md: a Sybil that keeps its claims
within the honest noise (about (n−1)·p of them) and its feature count within the 1-bit range
is not detected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..params import Param

CONSISTENCY_ALPHA = Param(
    "consistency_alpha",
    float,
    0.0,
    "server-side Sybil screening: leave out nodes whose RR reports disagree with their "
    "counterparts' (or whose feature bit count leaves the 1-bit range) beyond chance, at "
    "family-wise false-alarm probability α (0: off)",
    low=0.0,
    high=1.0,
    high_open=True,
    server_side=True,
    added_with=0.0,  # runs stored before the screening existed were unscreened
)

#: At most this many flagged node ids are named in a release's stats (the count is exact).
NAMED_SUSPECTS = 1000


@dataclass
class Screening:
    """Which nodes a screening flagged and why (``adjacency``/``features``: per test)."""

    suspects: np.ndarray
    adjacency: np.ndarray
    features: np.ndarray
    stats: dict[str, Any] = field(default_factory=dict)


def disagreements(reported: sp.csr_matrix, observed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(D, m): D[u] the claims of u that a reporting counterpart denies, m[u] the number of
    other nodes that reported (0 for a node that did not)."""
    r = sp.csr_matrix(reported, dtype=np.int64)
    obs = observed.astype(np.int64)
    claims = r @ obs  # claims to nodes that reported (their rows can deny)
    confirmed = np.asarray(r.multiply(r.T).sum(axis=1)).ravel()
    d = np.where(observed, claims - confirmed, 0)
    m = np.where(observed, int(obs.sum()) - 1, 0)
    return d.astype(np.int64), m.astype(np.int64)


def _tails(k: np.ndarray, trials: np.ndarray | int, lo: float, hi: float) -> tuple:
    """P[Binomial(trials, hi) >= k] and P[Binomial(trials, lo) <= k]."""
    from scipy.stats import binom

    return binom.sf(k - 1, trials, hi), binom.cdf(k, trials, lo)


def screen(
    reported: sp.csr_matrix,
    observed: np.ndarray,
    flip: float,
    alpha: float,
    features: np.ndarray | None = None,
    feature_rates: tuple[float, float] | None = None,
    feature_observed: np.ndarray | None = None,
) -> Screening:
    """The nodes whose reports fail the consistency tests at family-wise level ``alpha``.

    Args:
        reported: CSR of the reported 1-bits (row u: node u's report).
        observed: which nodes sent an adjacency report.
        flip: the RR flip probability p of every adjacency bit.
        alpha: the probability that an honest collection loses any node, in (0, 1).
        features: the n × d reported 0/1 feature rows, or None (public features: no test).
        feature_rates: (q_lo, q_hi), the 1-bit mechanism's smallest and largest Pr[report 1].
        feature_observed: which nodes sent features (default: ``observed``).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if not 0.0 < flip < 0.5:
        raise ValueError(f"flip probability must be in (0, 0.5), got {flip}")
    n = reported.shape[0]
    n_obs = max(int(observed.sum()), 1)
    tests = 1 if features is None else 2
    level = alpha / (2 * tests * n_obs)  # two tails, each test, each node
    d, m = disagreements(reported, observed)
    rate = flip * (1.0 - flip)
    up, low = _tails(d, m, rate, rate)
    bad_adj = observed & (m > 0) & ((up < level) | (low < level))
    bad_feat = np.zeros(n, dtype=bool)
    if features is not None:
        if feature_rates is None:
            raise ValueError("feature_rates are needed to screen feature reports")
        sent = observed if feature_observed is None else feature_observed
        q_lo, q_hi = feature_rates
        count = np.asarray(features, dtype=np.int64).sum(axis=1)
        up_f, low_f = _tails(count, features.shape[1], q_lo, q_hi)
        bad_feat = sent & ((up_f < level) | (low_f < level))
    suspects = np.flatnonzero(bad_adj | bad_feat)
    stats = {
        "alpha": alpha,
        "level_per_test": level,
        "expected_denied_claims": float(rate * (n_obs - 1)),
        "suspects": int(suspects.size),
        "adjacency_suspects": int(bad_adj.sum()),
        "feature_suspects": int(bad_feat.sum()),
        "suspect_ids": suspects[:NAMED_SUSPECTS].tolist(),
    }
    return Screening(suspects, np.flatnonzero(bad_adj), np.flatnonzero(bad_feat), stats)


def without(
    reported: sp.csr_matrix, observed: np.ndarray, x: np.ndarray | None, nodes: np.ndarray
) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray | None]:
    """The reports with ``nodes`` left out, as if they had not replied: their rows emptied,
    their adjacency unobserved, their feature rows zero (what the assembly gives a silent node)."""
    if nodes.size == 0:
        return reported, observed, x
    keep = np.ones(reported.shape[0], dtype=reported.dtype)
    keep[nodes] = 0
    r = sp.csr_matrix(sp.diags(keep, dtype=reported.dtype) @ reported)
    r.eliminate_zeros()
    obs = observed.copy()
    obs[nodes] = False
    if x is not None:
        x = x.copy()
        x[nodes] = 0
    return r, obs, x


def onebit_rates(epsilon: float) -> tuple[float, float]:
    """(q_lo, q_hi): the 1-bit mechanism's Pr[report 1] at the ends of its domain."""
    e = math.exp(epsilon)
    return 1.0 / (e + 1.0), e / (e + 1.0)


__all__ = [
    "CONSISTENCY_ALPHA",
    "Screening",
    "disagreements",
    "onebit_rates",
    "screen",
    "without",
]
