"""``hogs-arr``: HoGS with asymmetric randomized response (sampled reports).

Full-row RR sends about n²/(e^ε_a+1) indices in all, which no machine holds at n = 10^7. Here a
node runs HoGS's client step unchanged (Warner RR on its adjacency row with ε_a, on the same
stream and with the same draws as ``hogs``; the 1-bit mechanism on its features with ε_f), then
keeps each reported 1 with a public probability μ and sends it as a 0 otherwise; reported 0s stay
0 (the sampled RR of Imola, Murakami and Chaudhuri, "Communication-efficient triangle counting
under local differential privacy", USENIX Security '22, which ran it to 9·10^5 nodes). The
sampling is post-processing of the node's own RR report with its own random stream (purpose
SAMPLING), so ε is HoGS's: nothing is added or saved. The expected report shrinks by μ:
μ·(deg + p·(n−1−deg)) indices per node instead of deg + p·(n−1−deg), p = 1/(e^ε_a+1). A node
draws the sampling lazily (:meth:`~ldpgraph.protocols.mechanisms.AsymmetricRR.perturb_row`):
the positions of the flipped zeros it drops are never drawn, so its cost shrinks by μ too.

The server is HoGS's with the likelihood table of a sampled bit
(:func:`.posterior.bit_likelihoods`):
Pr[1 | edge] = (1−p)μ, Pr[1 | no edge] = pμ, Pr[0 | edge] = 1 − (1−p)μ, Pr[0 | no edge] = 1 − pμ.
A reported 1 keeps RR's likelihood ratio (1−p)/p; a reported 0 says less, so the (0,0) pairs'
similarity threshold falls from near 1 towards τ and the exact (0,0) join has more to verify.

μ is public and the same for every node: μ = min(mu, report_cap / (n·(n−1)·p)), from the
protocol's parameters, n and ε_a only, never from a node's data. ``report_cap`` caps the expected
number of RR noise 1s in all reports together (what the server must hold, n·(n−1)·p·μ), so
reports are sampled only where the full ones would not fit; ``mu`` caps μ directly.

What sampling costs: a true edge reaches the server as a (1,1) pair with probability
((1−p)μ)², so HoGS's topology, which rests on (1,1) pairs, keeps about μ² of its true edges;
with μ < 1 a (1,0) pair is no longer evidence against an edge (a 0 may be a dropped 1), and
HoGS's similarity prior then admits every singly reported pair at τ = 0.5 (see
docs/reproduction/hogs-arr.md for the measurements and the τ that restores HoGS's rule).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ..base import EPSILON, FEATURE_SHARE, STEPS, CuratorView, RoundResult
from ..batch import NodeBatch, ReportBatch
from ..mechanisms import check_keep_probability, flip_probability
from ..params import Param
from ..registry import register
from ..types import NodeView, PrivacyReport, Release, Report
from .hogs import JOIN, TAU, HogsProtocol
from .node_reports import rr_onebit_batch, sampled_row
from .similarity_lsh import RING

MU = Param(
    "mu",
    float,
    1.0,
    "hogs-arr: upper bound on μ, the public probability with which a node keeps each 1 of its "
    "RR adjacency report (the others are sent as 0; post-processing: ε unchanged); "
    "μ = min(mu, report-cap/(n·(n−1)·p)), p = 1/(e^ε_a+1); 1 leaves μ to report-cap",
    low=0.0,
    low_open=True,
    high=1.0,
)
#: 5·10^8 noise 1s: about what HoGS's reports hold at 10^6 nodes and ε_a = 8 (3.4·10^8), the
#: most the issue's 24 GiB machine is asked to reconstruct from. Below it nothing is sampled.
REPORT_CAP = Param(
    "report_cap",
    float,
    5e8,
    "hogs-arr: cap on the expected number of RR noise 1s in all reports together: "
    "μ = min(mu, report-cap/(n·(n−1)·p)), from public n and ε_a only. The default 5e8 is about "
    "what HoGS's 10^6 nodes send at ε_a = 8: smaller runs send every bit (μ = 1: Cora, "
    "Facebook, 10^6 nodes at ε_a = 8), 10^7 nodes at ε_a = 8 get μ = 0.015. A true edge "
    "survives as a pair of reported 1s with probability about μ², so sample only what does "
    "not fit; 0: no cap (μ = mu)",
    low=0.0,
)


def keep_probability(mu: float, report_cap: float, num_nodes: int, eps_adjacency: float) -> float:
    """μ = min(mu, report_cap / (n·(n−1)·p)): the public keep probability of ``hogs-arr``.

    Args:
        mu: the cap on μ (a protocol parameter, in (0, 1]).
        report_cap: the cap on the expected number of RR noise 1s in all reports (0: none).
        num_nodes: n, public.
        eps_adjacency: ε_a, public.
    """
    mu = check_keep_probability(mu)
    if not (math.isfinite(report_cap) and report_cap >= 0):
        raise ValueError(f"report_cap must be a finite number >= 0, got {report_cap}")
    noise = num_nodes * (num_nodes - 1) * flip_probability(eps_adjacency)
    if report_cap > 0 and noise > report_cap:
        mu = min(mu, report_cap / noise)
    return mu


@register(
    "hogs-arr",
    label="HoGS-ARR",
    params=(EPSILON, FEATURE_SHARE, TAU, STEPS, MU, REPORT_CAP, JOIN, RING),
    summary="HoGS with asymmetric RR: each reported 1 kept with public probability μ "
    "(reports shrink by μ, ε unchanged)",
)
class HogsArrProtocol(HogsProtocol):
    """HoGS whose nodes send a μ-sample of their RR 1s, and whose server's posterior knows it."""

    def config(self) -> dict[str, Any]:
        return {**super().config(), "mu": self.params.mu, "report_cap": self.params.report_cap}

    def keep_probability(self, num_nodes: int) -> float:
        p = self.params
        return keep_probability(p.mu, p.report_cap, num_nodes, self.eps_adjacency)

    def client_step(
        self, round_: int, view: NodeView, server_msg: dict[str, Any], seed: int
    ) -> Report:
        mu = self.keep_probability(view.num_nodes)  # checked in (0, 1] by the mechanism
        adj = sampled_row(view, self.eps_adjacency, mu, seed, round_)
        feats = self.noisy_features(view, seed, round_)
        return Report(view.node_id, round_, view.num_nodes, adj, feats)

    def client_step_batch(
        self, round_: int, batch: NodeBatch, server_msg: dict[str, Any], seeds: int | Sequence[int]
    ) -> ReportBatch:
        mu = self.keep_probability(batch.num_nodes)
        return rr_onebit_batch(batch, round_, seeds, self.eps_adjacency, self.eps_features, mu=mu)

    def server_step(
        self, round_: int, result: RoundResult, curator: CuratorView, seed: int
    ) -> Release:
        release = super().server_step(round_, result, curator, seed)
        n = curator.num_nodes
        mu = self.keep_probability(n)
        noise = n * (n - 1) * flip_probability(self.eps_adjacency)
        release.stats.update({"mu": mu, "noise_ones": noise, "sent_noise_ones": mu * noise})
        release.privacy = self.privacy_report(curator.num_features, num_nodes=n)
        return release

    def privacy_report(
        self, num_features: int | None = None, num_nodes: int | None = None
    ) -> PrivacyReport:
        """HoGS's report (the sampling is post-processing) with a note naming μ: its value
        when ``num_nodes`` is known, else the rule that sets it."""
        p = self.params
        rep = super().privacy_report(num_features)
        rule = f"μ = min(mu, report_cap/(n·(n−1)·p)) with mu = {p.mu:g}, report_cap = " + (
            f"{p.report_cap:g}" if p.report_cap > 0 else "0 (no cap)"
        )
        value = (
            f" = {self.keep_probability(num_nodes):.6g} at n = {num_nodes}"
            if num_nodes is not None
            else ""
        )
        adjacency = rep.parts[0]
        adjacency["mechanism"] = "asymmetric-randomized-response (RR, then sampling)"
        adjacency["keep_probability"] = (
            self.keep_probability(num_nodes) if num_nodes is not None else rule
        )
        rep.notes.insert(
            0,
            "Asymmetric RR: after Warner RR with ε_a, each node keeps each reported 1 with the "
            f"public probability {rule}{value} (p = 1/(e^ε_a+1)), and sends it as 0 otherwise. "
            "This is post-processing of the node's own RR report with its own random stream, "
            "so ε is HoGS's at the same ε_a and ε_f: the sampling adds no privacy and costs "
            "none. It shrinks the report by μ.",
        )
        return rep
