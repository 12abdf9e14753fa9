"""The shape every central-DP strategy has: one raw-upload round, then a mechanism on the graph
the curator received.

A central strategy is a protocol (:class:`~ldpgraph.protocols.base.LdpProtocol`) whose round
message asks the nodes for the ``none`` raw upload, so a node needs no code of the strategy: it
runs the plain upload, and only if its own node config says it trusts the curator (the others
refuse and are counted). Every backend, the budget guard, reply validation, sweeps, the store and
reports then serve the strategy unchanged; a strategy writes only :meth:`CentralStrategy.release`
and :meth:`CentralStrategy.privacy_report`.
"""

from __future__ import annotations

import secrets
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..base import ClientSideOf, CuratorView, RoundResult
from ..graph import Graph
from ..ldp.floors import NonPrivate
from ..params import Param
from ..types import Release

#: What ``--epsilon`` means for a central strategy. ``proven``: the noise is calibrated so the
#: bound proven for the mechanism as run (docs/privacy/<mechanism>.md) equals the request.
#: ``paper``: the paper's own calibration, reproduced; the headline is then the proven ε of
#: that noise (∞ where there is no proof) and the paper's figure goes beside it. One
#: declaration; a strategy whose default differs (no proof exists yet) re-declares only the
#: default with ``EPSILON_CONVENTION.but(default=...)``, as δ does.
EPSILON_CONVENTION = Param(
    "epsilon_convention",
    str,
    "proven",
    "what --epsilon means: proven (noise calibrated so the proven bound equals it) or paper "
    "(the paper's calibration; the headline is then the proven ε of that noise)",
    choices=("proven", "paper"),
    # Central runs stored before the key existed were calibrated by the paper's convention.
    added_with="paper",
)


#: δ of a central (ε, δ) guarantee, in (0, 1): declared once here; each strategy re-declares
#: only its default and help with ``DELTA.but(...)`` (DPAR's default is its Table 1 value).
DELTA = Param(
    "delta", float, 2e-3, "δ of the (ε, δ) guarantee",
    low=0.0, high=1.0, low_open=True, high_open=True,
)  # fmt: skip

#: The dp-accounting accountant a strategy reports (and calibrates) with; each strategy
#: re-declares only its help with ``ACCOUNTANT_PARAM.but(help=...)``.
ACCOUNTANT_PARAM = Param(
    "accountant", str, "rdp", "dp-accounting accountant: rdp or pld", choices=("rdp", "pld")
)


#: What a central record says of its noise (``release.release_noise``).
REPLAYABLE = "seeded: replayable from the run seed, not a private release"
OS_ENTROPY = "OS entropy: drawn on the server at release time, not recoverable from the record"


def release_seed(run_seed: int, replayable: bool) -> int:
    """The seed a central release's noise and sampling derive from: the run seed when the run
    is explicitly seeded (``replayable``), else 63 fresh bits of OS entropy, held only for the
    duration of the release. Anyone holding the record (seed included) and every record but
    one could otherwise recompute the noise and undo it (DP's own threat model); Opacus's
    ``secure_mode`` draws the same line."""
    return run_seed if replayable else secrets.randbits(63)


@dataclass
class UploadedGraph(Graph):
    """The raw graph the curator holds after the upload round: the edges reported by the
    consenting nodes, their features (rows of nodes that did not upload are zero), ``y`` the
    labels the curator knows (training and validation nodes; −1 elsewhere, never a test label)
    and ``uploaded``, which nodes took part; ``reported`` the directed pairs (u, w) with w in
    u's own uploaded report (``edges`` keeps only the pairs both ends reported). A degree bound
    that must hold for one node's add/remove ranks each node's choices over its own report
    (:func:`.gap_node.reports_of`), never over ``edges``, which another node's absence changes.
    ``None`` when the graph was built from an edge list, which then stands for every uploaded
    node's report."""

    uploaded: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))
    reported: np.ndarray | None = None


class CentralStrategy(ClientSideOf):
    """A central-DP mechanism as a one-round raw-upload protocol.

    Subclasses set ``name`` and ``kind`` (the :class:`Release` kind they produce) and implement
    :meth:`release` on the uploaded graph and :meth:`privacy_report` from an accountant.
    """

    rounds = 1
    raw_upload = True
    privacy_model = "central"
    #: What :meth:`release` returns (``graph``, ``model`` or ``graphs``).
    kind: str = "graph"

    client_side = NonPrivate()

    def config(self) -> dict[str, Any]:
        """The round message the nodes receive: the plain raw upload (nodes never run, or
        even import, the strategy's code). A node charges it ε = ∞: only a node that trusts
        the curator takes part."""
        return self.client_side.config()

    def server_step(
        self, round_: int, result: RoundResult, curator: CuratorView, seed: int
    ) -> Release:
        raw, own = self.client_side.upload(result, curator)
        uploaded = np.zeros(curator.num_nodes, dtype=bool)
        uploaded[np.fromiter(result.reports, dtype=np.int64, count=len(result.reports))] = True
        labels = curator.labels
        if labels is None:
            labels = np.full(curator.num_nodes, -1, dtype=np.int64)
        own = own.tocoo()
        reported = np.stack([own.row, own.col], axis=1).astype(np.int64)
        graph = UploadedGraph(
            self.name,
            raw.edges,
            raw.x,
            labels,
            curator.feature_domain,
            uploaded=uploaded,
            reported=reported,
        )
        release = self.release(graph, curator, release_seed(seed, curator.replayable))
        if release.kind != self.kind:
            raise RuntimeError(f"{self.name} released a {release.kind!r}, not a {self.kind!r}")
        release.stats.setdefault("uploaded_nodes", int(uploaded.sum()))
        release.stats["replayable"] = bool(curator.replayable)
        release.stats["release_noise"] = REPLAYABLE if curator.replayable else OS_ENTROPY
        return release

    @abstractmethod
    def release(self, graph: UploadedGraph, curator: CuratorView, seed: int) -> Release:
        """Run the mechanism on the uploaded graph. ``curator`` holds the sizes, the training
        labels and split (never a test label) and the device to compute on; ``seed`` drives
        every random draw (``stage_seed(seed, ...)``): the run seed only when the run is
        explicitly seeded, else a secret one (:func:`release_seed`)."""
