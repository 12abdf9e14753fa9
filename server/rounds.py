"""The one round loop: drive a protocol's rounds over any collector, trust no reply.

A collector moves one round's message to the nodes and their reports back (the ``local``
backend calls every node's client step in this process; the Flower backend talks to the
SuperNodes over a Grid, :mod:`ldpgraph.server.collector`). Everything else about a round is
written once, here: the message (the protocol's parameters, the server's feedback from the
previous round and the public values of this round), the validation of every report against
what was asked, the counts of nodes that replied, refused, were rejected or stayed silent, the
server step, and the stop: the loop ends at the first :class:`Release`, and a protocol that has
run all its rounds without one is an error. No message is ever built or sent for a round the
protocol does not have.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np

from ldpgraph.protocols import progress
from ldpgraph.protocols.base import CuratorView, LdpProtocol, ReportSchema, RoundResult
from ldpgraph.protocols.batch import ReportBatch
from ldpgraph.protocols.messages import RoundMessage
from ldpgraph.protocols.support import Support
from ldpgraph.protocols.types import Release, Report

log = logging.getLogger("ldpgraph.server")


class NoReportsError(ValueError):
    """No node sent a usable report in a round: there is nothing private to release, and
    training on an empty graph would only print a meaningless accuracy."""


@dataclass
class RoundStats:
    """What happened to the nodes asked in one round. ``rejected``: reports that failed
    validation; ``refused``: nodes whose guard said no; ``missing``: nodes that sent nothing
    (lost, silent, or hosted by no SuperNode); ``bad_records``: reply records naming a node the
    sender does not host."""

    asked: int = 0
    replied: int = 0
    rejected: int = 0
    refused: int = 0
    missing: int = 0
    bad_records: int = 0
    reasons: Counter = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        return {
            "asked": self.asked,
            "replied": self.replied,
            "rejected": self.rejected,
            "refused": self.refused,
            "missing": self.missing,
            "bad_records": self.bad_records,
            "reasons": dict(self.reasons.most_common(20)),
        }


class Replies(NamedTuple):
    """What a collector brings back from one round: the decoded reports by node id (a dict,
    or a :class:`~ldpgraph.protocols.batch.ReportBatch`), and its counts of what it could not
    use (``stats.replied`` counts ``reports``). ``seconds``: what
    the collection cost when that is not the time of the call (a replay of earlier reports)."""

    reports: Mapping[int, Report]
    stats: RoundStats
    seconds: float | None = None


class Collector(Protocol):
    """Sends a round's ``message`` to every node and returns their replies (``length``: of the
    feature part of each report, None when the round asks for none)."""

    def collect(
        self, protocol: LdpProtocol, message: RoundMessage, length: int | None
    ) -> Replies: ...


@dataclass
class Collected:
    """The outcome of :func:`run_rounds`: the release, each round's counts, and the seconds
    spent collecting and in the server steps."""

    release: Release
    rounds: list[dict[str, Any]]
    timings: dict[str, float]


def round_message(
    protocol: LdpProtocol, round_: int, seed: int, feedback: dict[str, Any] | None = None
) -> RoundMessage:
    """Round ``round_``'s request: the protocol's parameters, the server's feedback from the
    previous round and the public values of this round (never a node's randomness). Where
    the nodes' data lies is the collector's to add."""
    public = {**(feedback or {}), **protocol.public_message(round_, seed)}
    # A protocol's config names it; one that does not (a test's own) goes by its name.
    return RoundMessage.report(round_, {"protocol": protocol.name, **protocol.config()}, public)


def run_rounds(
    protocol: LdpProtocol, collector: Collector, curator: CuratorView, seed: int
) -> Collected:
    """Run ``protocol``'s rounds over ``collector`` until its server step releases."""
    timings = {"collect": 0.0, "reconstruct": 0.0}
    rounds: list[dict[str, Any]] = []
    message = round_message(protocol, 0, seed)
    for round_ in range(protocol.rounds):
        length = protocol.num_features(round_, message.protocol_values(), curator.num_features)
        t0 = time.perf_counter()
        replies = collector.collect(protocol, message, length)
        t1 = time.perf_counter()
        result, stats = validate_replies(
            protocol, round_, replies, curator.num_nodes, length, curator.feature_domain
        )
        rounds.append(stats.to_dict())
        require_reports(protocol.name, round_, stats.replied, stats.asked, stats.refused)
        # The reconstruction can take minutes (HoGS's similarity join): not in silence.
        progress.stage(
            f"round {round_}: {stats.replied} reports; the server step of {protocol.name}"
        )
        out = protocol.server_step(round_, result, curator, seed)
        timings["collect"] += replies.seconds if replies.seconds is not None else t1 - t0
        timings["reconstruct"] += time.perf_counter() - t1
        if isinstance(out, Release):
            return Collected(out, rounds, timings)
        if round_ + 1 < protocol.rounds:
            message = round_message(protocol, round_ + 1, seed, out)
    raise RuntimeError(
        f"protocol {protocol.name} finished its {protocol.rounds} round(s) without a release"
    )


def validate_replies(
    protocol: LdpProtocol,
    round_: int,
    replies: Replies,
    num_nodes: int,
    num_features: int | None,
    domain: tuple[float, float] = (0.0, 1.0),
) -> tuple[RoundResult, RoundStats]:
    """Check every report against what round ``round_`` asked for and against its
    mechanism's support (``domain``: the public feature domain); a bad one is dropped,
    counted as rejected and its reason logged. Returns the round's usable reports (with the
    nodes that sent none) and the completed counts."""
    schema = protocol.schema(round_)
    stats = replies.stats
    if isinstance(replies.reports, ReportBatch):
        problems = batch_problems(replies.reports, round_, num_nodes, num_features, schema, domain)
        valid: Mapping[int, Report] = replies.reports.drop(problems)
    else:
        problems = {}
        valid = {}
        for node, report in replies.reports.items():
            problem = report_problem(report, node, round_, num_nodes, num_features, schema, domain)
            if problem is None:
                valid[node] = report
            else:
                problems[node] = problem
    for node, problem in problems.items():
        stats.replied -= 1
        stats.rejected += 1
        stats.reasons[f"invalid report: {problem}"] += 1
        log.warning("round %d: report of node %s dropped: %s", round_, node, problem)
    if isinstance(valid, ReportBatch):
        sent = valid.nodes
    else:
        sent = np.fromiter(valid, np.int64, len(valid))
    absent = np.ones(num_nodes, dtype=bool)
    sent = np.asarray(sent, dtype=np.int64)
    absent[sent[(sent >= 0) & (sent < num_nodes)]] = False
    missing = np.flatnonzero(absent)
    return RoundResult(valid, missing), stats


def batch_problems(
    batch: ReportBatch,
    round_: int,
    num_nodes: int,
    num_features: int | None,
    schema: ReportSchema,
    domain: tuple[float, float] = (0.0, 1.0),
) -> dict[int, str]:
    """:func:`report_problem` for every report of a batch, read from its arrays: the nodes
    whose report is invalid, each with its (first) reason."""
    nodes = batch.nodes
    problems: dict[int, str] = {}

    def flag(rows: np.ndarray, reason: str) -> None:
        for node in nodes[rows].tolist():
            problems.setdefault(node, reason)

    everyone = np.ones(nodes.shape[0], dtype=bool)
    if nodes.size and (nodes[0] < 0 or nodes[-1] >= num_nodes):
        flag((nodes < 0) | (nodes >= num_nodes), "report of a node outside the graph")
    if batch.round != round_ or batch.num_nodes != num_nodes:
        flag(everyone, f"report for round {batch.round} of n={batch.num_nodes}")
    has_adj = batch.adjacency_mask()
    if schema.adjacency:
        flag(~has_adj, "adjacency is not a vector of node ids")
        if batch.indptr is not None:
            for rows, reason in _adjacency_problems(batch, num_nodes):
                flag(rows, reason)
    else:
        flag(has_adj, "adjacency sent in a round that did not ask for it")
    has_feat = batch.features_mask()
    if schema.features:
        x = batch.features
        if x is None or x.ndim != 2 or x.shape[1] != num_features:
            flag(everyone, f"features are not a vector of length {num_features}")
        else:
            flag(~has_feat, f"features are not a vector of length {num_features}")
            if x.dtype.kind == "f":
                flag(~np.isfinite(x).all(axis=1), "features are not finite")
            support = schema.feature_support
            outside = support.outside(x, num_nodes, domain).any(axis=1)
            flag(has_feat & outside, _outside("features", support, num_nodes, domain))
    else:
        flag(has_feat, "features sent in a round that did not ask for them")
    for key in schema.extras:
        values, sent = batch.extras.get(key, (None, None))
        if values is None:
            flag(everyone, f"missing or invalid field {key!r}")
        else:
            flag(~(sent & np.isfinite(values)), f"missing or invalid field {key!r}")
    for key in schema.extras:
        values, sent = batch.extras.get(key, (None, None))
        if values is not None and schema.extra_support is not None:
            outside = schema.extra_support.outside(values, num_nodes, domain)
            flag(outside, _outside(f"field {key!r}", schema.extra_support, num_nodes, domain))
    return problems


def _outside(what: str, support: Support, num_nodes: int, domain: tuple[float, float]) -> str:
    """The reason a report is dropped for a value its mechanism cannot output."""
    return f"{what} outside the mechanism's support ({support.describe(num_nodes, domain)})"


def _adjacency_problems(batch: ReportBatch, num_nodes: int, chunk: int = 1 << 24):
    """(rows, reason) for adjacency rows out of range, unsorted or duplicated, or holding the
    node's own diagonal entry; reads ``chunk`` indices at a time (no copy of the reports)."""
    indptr, indices, nodes = batch.indptr, batch.indices, batch.nodes
    m = nodes.shape[0]
    bad_range = np.zeros(m, dtype=bool)
    bad_order = np.zeros(m, dtype=bool)
    own = np.zeros(m, dtype=bool)
    for lo in range(0, indices.shape[0], chunk):
        hi = min(lo + chunk, indices.shape[0])
        # The rows that overlap [lo, hi), and the row of every index in it.
        first = int(np.searchsorted(indptr, lo, side="right")) - 1
        last = min(int(np.searchsorted(indptr, hi, side="left")), m)
        starts = np.clip(indptr[first:last], lo, hi)
        ends = np.clip(indptr[first + 1 : last + 1], lo, hi)
        which = np.repeat(np.arange(first, last), ends - starts)
        part = indices[lo:hi]
        bad_range[which[(part < 0) | (part >= num_nodes)]] = True
        # Within a row every index exceeds the one before it (across the chunk's edge too).
        down = (part[1:] <= part[:-1]) & (which[1:] == which[:-1])
        bad_order[which[1:][down]] = True
        if lo > 0 and indptr[which[0]] < lo and part[0] <= indices[lo - 1]:
            bad_order[which[0]] = True
        own[which[part == nodes[which]]] = True
    yield bad_range, f"adjacency index out of range [0, {num_nodes})"
    yield bad_order, "adjacency indices are unsorted or duplicated"
    yield own, "adjacency contains the node's own diagonal entry"


def report_problem(
    report: Report,
    node: int,
    round_: int,
    num_nodes: int,
    num_features: int | None,
    schema: ReportSchema,
    domain: tuple[float, float] = (0.0, 1.0),
) -> str | None:
    """Why ``report`` is not a valid report of ``node`` for this round (its shape, or a
    value outside its mechanism's support), or None."""
    if not isinstance(report, Report):
        return f"not a report ({type(report).__name__})"
    if not 0 <= node < num_nodes or report.node_id != node:
        return f"report of node {report.node_id} in the place of node {node}"
    if report.round != round_ or report.num_nodes != num_nodes:
        return f"report for round {report.round} of n={report.num_nodes}"
    adj = report.adjacency
    if schema.adjacency:
        if not isinstance(adj, np.ndarray) or adj.ndim != 1 or adj.dtype.kind not in "iu":
            return "adjacency is not a vector of node ids"
        if adj.size and (adj[0] < 0 or adj[-1] >= num_nodes):
            return f"adjacency index out of range [0, {num_nodes})"
        if adj.size > 1 and not (adj[1:] > adj[:-1]).all():
            return "adjacency indices are unsorted or duplicated"
        if (adj == node).any():
            return "adjacency contains the node's own diagonal entry"
    elif adj is not None:
        return "adjacency sent in a round that did not ask for it"
    x = report.features
    if schema.features:
        if not isinstance(x, np.ndarray) or x.shape != (num_features,):
            return f"features are not a vector of length {num_features}"
        if x.dtype.kind == "f" and not np.isfinite(x).all():
            return "features are not finite"
        support = schema.feature_support
        if support.outside(x, num_nodes, domain).any():
            return _outside("features", support, num_nodes, domain)
    elif x is not None:
        return "features sent in a round that did not ask for them"
    for key in schema.extras:
        value = report.extras.get(key)
        if not isinstance(value, float | int) or isinstance(value, bool) or not np.isfinite(value):
            return f"missing or invalid field {key!r}"
    for key in schema.extras:
        support = schema.extra_support
        if support is not None and support.outside(
            np.float64(report.extras[key]), num_nodes, domain
        ):
            return _outside(f"field {key!r}", support, num_nodes, domain)
    return None


def require_reports(protocol: str, round_: int, replied: int, asked: int, refused: int) -> None:
    """Stop the run when a round collected no report at all."""
    if replied == 0:
        raise NoReportsError(
            f"{protocol}: no node reported in round {round_} ({refused} of {asked} refused, the "
            "rest sent nothing usable): nothing to release. A node refuses a round over its own "
            "budget (--node-budget in simulation, `budget` in a SuperNode's --node-config) or a "
            "raw upload it did not consent to (--trust-curator / `trust-curator`)"
        )
