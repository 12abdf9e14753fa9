"""Plain randomized response: the noisy graph as it is, with no denoising.

``rr-edge`` is the "RR" baseline of Blink's official code (github.com/zhxchd/Blink_GNN, the
code of Zhu, Tan, Xiao, CCS'23): each node reports
its adjacency row through Warner RR with the whole ε (diagonal never reported) and the GNN
trains on the public, true features.

``rr`` is the same with HoGS's dual-privacy split (the HoGS paper, Xu et al., Section III-B,
Information Collection): ε_a =
(1 − feature_share)·ε on the adjacency row and ε_f = feature_share·ε per feature bit through
the 1-bit mechanism; the server keeps the raw noisy bits as the features (no reconstruction).
``feature_share`` is the HoGS paper's δ.

Symmetrisation. Blink_GNN trains on the reported ones as a *directed* edge list; a
:class:`Release` is undirected, so the server combines the two reports about a pair:
``combine="or"`` (default; an edge if either endpoint reported it: the undirected version of
the directed RR graph, doubling the false-positive rate), ``"and"`` (both reported it; squares
the keep probability) or ``"lower"`` (Blink_GNN's SymRR without its +1 offset: the
pair {i, j} takes the report of the node with the larger id). A node that did not reply has no
report: under "or" its pairs rest on the other endpoint's bit, under "and" they are never
edges, under "lower" they are edges iff the larger-id endpoint (if present) reported them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base import EPSILON, FEATURE_SHARE, CuratorView, RoundResult
from ..graph import canonical_edges
from ..params import Param
from ..registry import register
from ..types import Release
from .assemble import adjacency_reports
from .split_budget import RRSplitBudgetProtocol

COMBINE = ("or", "and", "lower")
COMBINE_PARAM = Param(
    "combine",
    str,
    "or",
    "how the two reported bits of a pair make an edge: or (either), and (both), lower (the "
    "lower-id endpoint's)",
    choices=COMBINE,
    server_side=True,
)


def combine_reports(reported, combine: str) -> np.ndarray:
    """Canonical undirected edges (u < v) from the CSR of reported 1-bits."""
    n = reported.shape[0]
    coo = reported.tocoo()
    rows = coo.row.astype(np.int64)
    cols = coo.col.astype(np.int64)
    if combine == "or":
        pairs = np.stack([rows, cols], axis=1)
    elif combine == "lower":
        keep = cols < rows
        pairs = np.stack([rows[keep], cols[keep]], axis=1)
    else:  # "and": both (i, j) and (j, i) reported
        lo = np.minimum(rows, cols)
        hi = np.maximum(rows, cols)
        keys, counts = np.unique(lo * n + hi, return_counts=True)
        both = keys[counts == 2]
        pairs = np.stack([both // n, both % n], axis=1)
    return canonical_edges(pairs, n)


@register(
    "rr",
    label="RR",
    params=(EPSILON, FEATURE_SHARE, COMBINE_PARAM),
    summary="plain RR adjacency (OR of both reports) + raw 1-bit features, no denoising",
)
@register(
    "rr-edge",
    params=(EPSILON, COMBINE_PARAM),
    public_features=True,
    summary="plain RR adjacency (OR of both reports), features public (Blink_GNN's RR)",
)
class RRProtocol(RRSplitBudgetProtocol):
    """``rr`` (RR adjacency + 1-bit features) and ``rr-edge`` (RR adjacency, public features):
    the split-budget client step, and a server that only combines the two reports of a pair."""

    def config(self) -> dict[str, Any]:
        p = self.params
        out: dict[str, Any] = {"protocol": self.name, "epsilon": p.epsilon, "combine": p.combine}
        if not self.public_features:
            out["feature_share"] = p.feature_share
        return out

    def server_step(
        self, round_: int, result: RoundResult, curator: CuratorView, seed: int
    ) -> Release:
        n, d = curator.num_nodes, curator.num_features
        reported, observed = adjacency_reports(result.reports, n)
        edges = combine_reports(reported, self.params.combine)
        x, sent = self.server_features(result, curator)
        stats = {
            "adjacency_reports": int(observed.sum()),
            "feature_reports": 0 if sent is None else int(sent.sum()),
            "reported_ones": int(reported.nnz),
            "combine": self.params.combine,
        }
        return Release(edges=edges, x=x, privacy=self.privacy_report(d), stats=stats)

    def server_notes(self) -> list[str]:
        return ["Combining the two reports of a pair and training are post-processing."]
