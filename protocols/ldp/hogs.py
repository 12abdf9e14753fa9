"""HoGS: homophily-oriented graph synthesis under edge LDP and feature LDP (Xu et al.).

Client (Algorithm 1): the split-budget client step (:mod:`.split_budget`): Warner RR on the
adjacency row with ε_a = (1 − feature_share)·ε and the 1-bit mechanism on each feature with
ε_f = feature_share·ε (``feature_share`` is the paper's δ).

Server (Algorithms 2 and 3): s_ij = cosine of the noisy feature rows, posterior
P_ij = l·s / (l·s + l'·(1 − s)) from the two reported bits, edges where P_ij ≥ τ
(:mod:`.hogs_topology`), then ``steps`` rounds of P-weighted neighbour averaging over
V_i = {j : P_ij ≥ 0.5} (:mod:`.hogs_features`). On a CUDA device the same two steps run in
torch (:mod:`.hogs_torch`, imported only then).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..base import EPSILON, FEATURE_SHARE, STEPS, CuratorView, RoundResult
from ..mechanisms import flip_probability
from ..params import Param
from ..progress import stage
from ..registry import register
from ..types import Release
from .assemble import adjacency_reports, feature_reports
from .consistency import CONSISTENCY_ALPHA, Screening, onebit_rates, screen, without
from .hogs_features import FR_THRESHOLD, reconstruct_features
from .hogs_merge import sorted_edges
from .hogs_topology import TopologyResult, reconstruct_topology
from .similarity import FeatureRows
from .similarity_lsh import JOINS, RING
from .split_budget import RRSplitBudgetProtocol

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

JOIN = Param(
    "join",
    str,
    "auto",
    "HoGS/hogs-arr: the similarity join of the pairs with no reported 1: exact (every pair at "
    "cosine >= the threshold), lsh (MinHash bands: candidates scale with the similar pairs, "
    "not n^2; approximate, see docs/benchmarks.md), auto (exact unless its work exceeds "
    "2e12 multiply-adds or 2e8 pairs). Server-side: the curator's own hashing, no privacy cost",
    choices=JOINS,
    server_side=True,
    added_with="auto",  # every run stored before the knob joined exactly at its size
)


@register(
    "hogs",
    label="HoGS",
    params=(EPSILON, FEATURE_SHARE, TAU, STEPS, CONSISTENCY_ALPHA, JOIN, RING),
    summary="HoGS: edge LDP + feature LDP, homophily-based reconstruction",
)
@register(
    "hogs-edge",
    label="HoGS",
    params=(EPSILON, TAU, CONSISTENCY_ALPHA, JOIN, RING),
    public_features=True,
    summary="HoGS with edge LDP only; features public (Table III)",
)
class HogsProtocol(RRSplitBudgetProtocol):
    """``hogs`` (links and features private) and ``hogs-edge`` (edge LDP only, public features)."""

    @property
    def steps(self) -> int:
        """l, the feature-averaging passes (none with public features: they stay as they are)."""
        return 0 if self.public_features else int(self.setting(STEPS))

    @property
    def consistency_alpha(self) -> float:
        """Sybil screening (:mod:`.consistency`): 0 off, else the family-wise false-alarm level."""
        return float(self.setting(CONSISTENCY_ALPHA))

    def config(self) -> dict[str, Any]:
        alpha = self.consistency_alpha
        return {
            "protocol": self.name,
            "epsilon": self.params.epsilon,
            "feature_share": self.setting(FEATURE_SHARE),
            "tau": self.params.tau,
            "steps": self.setting(STEPS),
            # Only when on, so the round message (and every stored release) stays as it was.
            **({"consistency_alpha": alpha} if alpha else {}),
            **({"join": self.join} if self.join != "auto" else {}),
            **({"lsh_ring": self.ring} if self.ring != RING.default else {}),
        }

    @property
    def ring(self) -> int:
        """The LSH join's rows per row and band in over-full buckets (``lsh_ring``)."""
        return int(self.setting(RING))

    @property
    def join(self) -> str:
        """The (0,0) pairs' similarity join: auto, exact or lsh (:mod:`.similarity_lsh`)."""
        return str(self.setting(JOIN))

    def server_step(
        self, round_: int, result: RoundResult, curator: CuratorView, seed: int
    ) -> Release:
        n, d = curator.num_nodes, curator.num_features
        tau = self.params.tau
        gpu = accelerator(curator.device)
        # The numpy path reads only R's pattern and the reported rows: neither R's values nor
        # a copy of the rows is made (:mod:`.assemble`; 1.1 GB at 10^7 nodes, d = 64).
        lean = gpu is None and self.consistency_alpha == 0
        reported, observed = adjacency_reports(result.reports, n, pattern_only=lean)
        if lean and not self.public_features:
            x0, sent = feature_reports(result.reports, n, d, share=True)
        else:
            x0, sent = self.server_features(result, curator)
        screening = None
        if self.consistency_alpha > 0:
            reported, observed, x0, screening = self._screen(reported, observed, x0, sent)
        steps = self.steps
        need = min(tau, FR_THRESHOLD) if steps > 0 else tau
        flip = flip_probability(self.eps_adjacency)
        mu = self.keep_probability(n)
        stage(f"HoGS: topology from {int(reported.nnz)} reported 1s of {n} nodes")
        rows = FeatureRows(x0)
        join = dict(mu=mu, join=self.join, seed=seed, ring=self.ring)
        n_ones = int(reported.nnz)
        if gpu is None:
            # One averaging step (hogs-arr's at scale) may be fused into the scoring, so that
            # the kept pairs that are not edges are never held (:mod:`.hogs_fused`).
            fuse = x0 if steps == 1 and not self.public_features else None
            topo = reconstruct_topology(
                reported, observed, rows, flip, need, **join, fuse_features=fuse, tau=tau
            )
            del reported  # the reports are no longer needed once the pairs are scored
        else:
            topo = TopologyResult(*gpu.topology(reported, observed, rows, x0, flip, need, **join))
        edges = sorted_edges(topo.i, topo.j, topo.prob, tau, n)
        if topo.features is not None:  # fused: the pairs were only needed for the edges
            topo.i = topo.j = topo.prob = None
        stage(f"HoGS: {edges.shape[0]} edges; feature reconstruction ({steps} steps)")
        if self.public_features:
            x = x0
        elif topo.features is not None:
            x = topo.features
        elif gpu is None:
            x = reconstruct_features(x0, topo.i, topo.j, topo.prob, steps)
        else:
            x = gpu.features(x0, topo.i, topo.j, topo.prob, steps, FR_THRESHOLD)
        stats = dict(topo.stats)
        stats["adjacency_reports"] = int(observed.sum())
        stats["reported_ones"] = n_ones
        if screening is not None:
            stats["consistency"] = screening.stats
        return Release(edges=edges, x=x, privacy=self.privacy_report(d), stats=stats)

    def _screen(
        self,
        reported: sp.csr_matrix,
        observed: np.ndarray,
        x0: np.ndarray,
        sent: np.ndarray | None = None,
    ) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray, Screening]:
        """The reports less the nodes :func:`.consistency.screen` flags (public features are
        the server's own and are not screened), and the screening."""
        if self.keep_probability(reported.shape[0]) != 1.0:
            raise ValueError("consistency screening assumes plain RR (every reported 1 kept)")
        private = not self.public_features
        found = screen(
            reported,
            observed,
            flip_probability(self.eps_adjacency),
            self.consistency_alpha,
            x0 if private else None,
            onebit_rates(self.eps_features) if private else None,
            sent if private else None,
        )
        reported, observed, x = without(reported, observed, x0 if private else None, found.suspects)
        return reported, observed, x if private else x0, found

    def keep_probability(self, num_nodes: int) -> float:
        """μ, the probability a node keeps each reported 1 after RR: 1 here (every bit is sent);
        ``hogs-arr`` samples them. Public: from the parameters and n, never from reports."""
        return 1.0

    def server_notes(self) -> list[str]:
        return [
            "Reconstruction (posterior, threshold τ, l feature-averaging steps) is "
            "post-processing of the reports: tuning τ and l on one collection spends nothing "
            "more. Tuning the split (feature_share, the paper's δ) or ε is not "
            "post-processing: each configuration collects fresh reports, so a node spends the "
            "sum of the ε of every collection the sweep used, not the ε of the configuration "
            "it picks (the paper does not count this)."
        ]


def accelerator(device: str) -> Any:
    """HoGS's torch curator (:class:`~ldpgraph.protocols.ldp.hogs_torch.TorchCurator`) when
    the run computes on a CUDA device, else None (this module's numpy path). The device is the
    server's own setting: nothing of it reaches the nodes. Imported here, so the client's import
    path stays free of torch."""
    if device == "cpu":
        return None
    from .hogs_torch import TorchCurator

    return TorchCurator.for_run(device)
