"""The shapes of the central audit's rows (:mod:`.audit_central`): one neighbouring dataset
(:class:`World`), one row (:class:`CentralCase`) and its result (:class:`CentralRow`, with one
of the verdicts). Apart from the runner so that the rows (:mod:`.audit_central_cases`) and the
runner do not import each other."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "FAIL",
    "INCONCLUSIVE",
    "NOT_APPLICABLE",
    "NO_CLAIM",
    "PASS",
    "CentralCase",
    "CentralRow",
    "World",
    "audit_curator",
    "audit_graph",
]

PASS, FAIL, INCONCLUSIVE, NO_CLAIM, NOT_APPLICABLE = (
    "PASS", "FAIL", "INCONCLUSIVE", "NO CLAIM", "N/A",
)  # fmt: skip


@dataclass(frozen=True)
class World:
    """One neighbouring dataset: the uploaded graph and the curator's view of it."""

    graph: Any  # UploadedGraph
    curator: Any  # CuratorView


@dataclass(frozen=True)
class CentralCase:
    """One row: a strategy at audit settings, its neighbouring pair and its statistic.

    ``planted`` are the parameters of the under-stating variant (run by the same registered
    name unless ``planted_protocol`` names another); its claim is the honest one. ``skip``
    makes the row N/A with that reason, before anything runs; ``claim_only`` reads the claim
    (∞: NO CLAIM) and reports a finite one INCONCLUSIVE with that reason.
    """

    name: str
    protocol: str
    params: dict[str, Any]
    planted: dict[str, Any]
    planted_what: str
    neighbours: str
    statistic_text: str
    worlds: Callable[[], tuple[World, World]]
    statistic: Callable[[Any], float]
    draws: int
    planted_protocol: str | None = None
    skip: str | None = None
    #: A finite claim is reported INCONCLUSIVE with this reason instead of being audited.
    claim_only: str | None = None
    #: (protocol, params) whose headline the row claims instead of its own: a planted row
    #: (:func:`planted_row`) runs the under-stating variant and claims the honest headline.
    claims_as: tuple[str, dict[str, Any]] | None = None


@dataclass
class CentralRow:
    """One audited strategy."""

    mechanism: str
    protocol: str
    unit: str
    neighbours: str
    statistic: str
    draws: int
    claimed_epsilon: float
    claimed_delta: float
    alpha_row: float
    verdict: str
    reason: str
    epsilon_lower_bound: float = 0.0
    event: str = ""
    ceiling: float = math.inf
    planted: str = ""
    planted_lower_bound: float = 0.0
    planted_verdict: str = ""
    counts: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for key, value in d.items():
            if isinstance(value, float) and math.isinf(value):
                d[key] = "inf" if value > 0 else "-inf"
        return d


def audit_curator(n: int, d: int, labels: np.ndarray | None = None, train=None, val=None, ptr=None):
    """The curator's view of an audit world (sizes, the training side of the task)."""
    from ldpgraph.protocols.base import CuratorView

    return CuratorView(
        n, d, (0.0, 1.0), labels=labels, train_nodes=train, val_nodes=val, graph_ptr=ptr
    )


def audit_graph(edges: list[tuple[int, int]], x: np.ndarray, uploaded: np.ndarray | None = None):
    """An audit world's uploaded graph: ``edges`` stand for every uploaded node's report."""
    import numpy as np

    from ldpgraph.protocols.central.base import UploadedGraph
    from ldpgraph.protocols.graph import canonical_edges

    n = x.shape[0]
    e = canonical_edges(np.asarray(edges, dtype=np.int64).reshape(-1, 2), n)
    up = np.ones(n, dtype=bool) if uploaded is None else uploaded
    return UploadedGraph("audit", e, x, np.full(n, -1, dtype=np.int64), (0.0, 1.0), uploaded=up)
