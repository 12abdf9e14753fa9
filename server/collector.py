"""The server's side of collection over a Flower Grid: wait for the SuperNodes, learn which
logical nodes each hosts, send the round messages in batches and validate every reply.

A SuperNode hosts one or more logical node-clients; which ones is the manifest's to say
(:mod:`ldpgraph.server.binding`), not the SuperNode's. Its reply carries one ConfigRecord per
hosted node: the node's wire report, or a refusal. Nothing in a reply is trusted: a record for
a node the SuperNode does not host, a malformed report, a duplicate or an error reply is
dropped with a logged reason and counted; the run goes on with the rest.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from flwr.app import ConfigRecord, Message, MessageType, RecordDict
from flwr.serverapp import Grid

from ldpgraph.protocols.base import LdpProtocol
from ldpgraph.protocols.messages import RoundMessage
from ldpgraph.protocols.reports import (
    CONFIG_RECORD,
    HOSTS_RECORD,
    ReportError,
    decode_report,
    node_from_record_name,
)
from ldpgraph.protocols.types import Report

from .binding import (
    BindingError,
    HelloStats,
    Manifest,
    grant_claims,
    key_fingerprint,
    parse_claim,
)
from .rounds import Replies, RoundStats

log = logging.getLogger("ldpgraph.server")


class CollectionError(RuntimeError):
    """The collection cannot go on (e.g. the SuperNodes never connected)."""


def settled_node_count(grid: Grid, timeout: float, settle: float = 2.0) -> int:
    """The number of SuperNodes once it has stopped growing for ``settle`` seconds (a
    federation started by ``flwr run`` does not tell the ServerApp its size)."""
    deadline = time.monotonic() + timeout
    count, since = 0, time.monotonic()
    while time.monotonic() < deadline:
        now = len(list(grid.get_node_ids()))
        if now != count:
            count, since = now, time.monotonic()
        elif count and time.monotonic() - since >= settle:
            return count
        time.sleep(0.1)
    if count:
        return count
    raise CollectionError(f"no SuperNode connected within {timeout:g} s")


class GridCollector:
    """Collects the rounds of one protocol run over a Grid (a collector of
    :func:`ldpgraph.server.rounds.run_rounds`): after :meth:`discover`, every round message
    also carries the hello's values (where the nodes' data lies). ``manifest``: which
    SuperNode key may host which node (a deployment's curator file); None in simulation."""

    def __init__(
        self,
        grid: Grid,
        num_nodes: int,
        expected_supernodes: int,
        *,
        wait_timeout: float = 120.0,
        round_timeout: float = 600.0,
        batch_size: int = 512,
        progress: Callable[[int], None] | None = None,
        abort: threading.Event | None = None,
        manifest: Manifest | None = None,
    ) -> None:
        self.grid = grid
        self.abort = abort or threading.Event()
        self.num_nodes = num_nodes
        self.expected = expected_supernodes
        self.wait_timeout = wait_timeout
        self.round_timeout = round_timeout
        self.batch_size = max(1, batch_size)
        self.progress = progress
        self.hosts: dict[int, np.ndarray] = {}
        #: How many hosted nodes count their budget in each unit, as their SuperNode's hello
        #: states it ("unstated" when it does not say, or says something unknown).
        self.units: dict[str, int] = {}
        #: How many hosted nodes draw their rows in each way (``constant-work``: a deployed
        #: node, ``sparse``: a simulated one), as their hello states it.
        self.sampling: dict[str, int] = {}
        self.manifest = manifest
        self.hello_stats = HelloStats()
        self.where: dict[str, Any] = {}  # the hello's where-values, added to every round

    # -- connection -------------------------------------------------------------------------
    def wait_for_supernodes(self, poll: float = 0.2) -> list[int]:
        deadline = time.monotonic() + self.wait_timeout
        while True:
            if self.abort.is_set():
                raise CollectionError("collection aborted")
            ids = sorted(self.grid.get_node_ids())
            # With a manifest only the SuperNodes whose keys it names count towards the
            # expected number: an unknown SuperNode (an impostor) cannot stand in for a bound
            # one that is missing (every connected one still gets the hello).
            bound = self._bound(ids) if self.manifest is not None else len(ids)
            if bound >= self.expected:
                return ids
            if time.monotonic() > deadline:
                raise CollectionError(
                    f"only {bound} of {self.expected} SuperNodes connected within "
                    f"{self.wait_timeout:g} s; check that they are running and can reach the "
                    "SuperLink"
                )
            time.sleep(poll)

    def _exchange(
        self,
        message: RoundMessage,
        supernodes: list[int],
        group: str,
        timeout: float | None = None,
    ) -> dict[int, Message]:
        """Send ``message`` to each of ``supernodes`` (in batches); the replies by sender."""
        timeout = self.round_timeout if timeout is None else timeout
        replies: dict[int, Message] = {}
        record = message.to_record()
        for start in range(0, len(supernodes), self.batch_size):
            batch = supernodes[start : start + self.batch_size]
            msgs = [
                Message(
                    RecordDict({CONFIG_RECORD: ConfigRecord(record)}),
                    dst_node_id=sid,
                    message_type=MessageType.QUERY,
                    group_id=group,
                )
                for sid in batch
            ]
            asked = set(batch)
            for reply in self._send_and_receive(msgs, timeout):
                src = reply.metadata.src_node_id
                if src in asked and src not in replies:
                    replies[src] = reply
            if self.progress is not None:
                self.progress(sum(len(self.hosts.get(sid, ())) or 1 for sid in batch))
        return replies

    def _send_and_receive(self, msgs: list[Message], timeout: float) -> list[Message]:
        """Grid.send_and_receive (partial replies at the timeout) that also stops when the run
        is aborted (Ctrl-C), so the ServerApp thread never outlives the run."""
        pending = set(self.grid.push_messages(msgs))
        out: list[Message] = []
        deadline = time.monotonic() + timeout
        while pending and time.monotonic() < deadline:
            if self.abort.is_set():
                raise CollectionError("collection aborted")
            got = list(self.grid.pull_messages(list(pending)))
            out.extend(got)
            pending -= {m.metadata.reply_to_message_id for m in got}
            if pending:
                time.sleep(0.02)
        return out

    def _bound(self, ids: list[int]) -> int:
        """How many of the SuperNodes ``ids`` hold a key the manifest binds node files to."""
        assert self.manifest is not None
        named = set(self.manifest.keys)
        return sum(1 for key in self.supernode_keys(ids).values() if key in named)

    def supernode_keys(self, supernodes: Any) -> dict[int, str | None]:
        """The fingerprint of each SuperNode's authenticated key, as the SuperLink knows it
        (None: it has none, e.g. a SuperLink without SuperNode authentication)."""
        out: dict[int, str | None] = dict.fromkeys(supernodes)
        for info in self.grid.get_nodes():
            if info.node_id in out and info.public_key:
                try:
                    out[info.node_id] = key_fingerprint(info.public_key)
                except BindingError:
                    log.warning("SuperNode %s has an unreadable public key", info.node_id)
        return out

    def discover(self, where: dict[str, Any]) -> dict[int, np.ndarray]:
        """Ask every SuperNode which logical nodes it hosts; grant each the ids the manifest
        binds to its key (:mod:`ldpgraph.server.binding`), or, without one, the ids no other
        SuperNode claims.
        ``where``: where the nodes' data lies (``WHERE_KEYS`` of
        :mod:`ldpgraph.protocols.messages`), told again with every round."""
        hello = RoundMessage.hello(where)
        self.where = dict(hello.where)
        self.units = {}
        self.sampling = {}
        supernodes = self.wait_for_supernodes()
        # The first exchange also waits for the engine to start its workers (Ray: seconds), so
        # it gets the connection timeout on top of a round's.
        replies = self._exchange(
            hello, supernodes, "hello", timeout=self.wait_timeout + self.round_timeout
        )
        claims: dict[int, np.ndarray | None] = {}
        stated: dict[int, str] = {}  # the budget unit each SuperNode's hello states
        sampling: dict[int, str] = {}  # how its nodes draw their rows, as it states it
        for sid in supernodes:
            reply = replies.get(sid)
            if (
                reply is None
                or reply.has_error()
                or HOSTS_RECORD not in reply.content.config_records
            ):
                reason = reply.error.reason if reply is not None and reply.has_error() else "none"
                log.warning("SuperNode %s gave no usable hello reply (%s)", sid, reason[:200])
                continue
            raw = reply.content.config_records[HOSTS_RECORD].get("nodes")
            claims[sid] = parse_claim(raw, self.num_nodes)
            if claims[sid] is None:
                log.warning("SuperNode %s sent a malformed host list", sid)
            unit = reply.content.config_records[HOSTS_RECORD].get("unit")
            stated[sid] = unit if unit in ("per-bit", "per-vector") else "unstated"
            how = reply.content.config_records[HOSTS_RECORD].get("sampling")
            sampling[sid] = how if how in ("constant-work", "sparse") else "unstated"
        keys = self.supernode_keys(claims) if self.manifest is not None else None
        hosts, self.hello_stats = grant_claims(claims, self.num_nodes, self.manifest, keys)
        for reason, count in self.hello_stats.reasons.items():
            log.warning("hello: %d claim(s) refused: %s", count, reason)
        for sid, ids in hosts.items():  # the units of the nodes actually granted
            unit = stated.get(sid, "unstated")
            self.units[unit] = self.units.get(unit, 0) + int(len(ids))
            how = sampling.get(sid, "unstated")
            self.sampling[how] = self.sampling.get(how, 0) + int(len(ids))
        self.hosts = hosts
        return hosts

    # -- rounds -----------------------------------------------------------------------------
    def collect(self, protocol: LdpProtocol, message: RoundMessage, length: int | None) -> Replies:
        """Send a round's message (with the hello's where-values) to every SuperNode that
        hosts nodes and decode the replies; what cannot be decoded is counted (rejected,
        refused, missing, bad records) and dropped."""
        if message.op != "report":
            raise ValueError(f"not a round's request: {message.op}")
        round_ = message.round
        schema = protocol.schema(round_)
        stats = RoundStats(asked=self.num_nodes)
        request = message.with_where(self.where)
        replies = self._exchange(request, list(self.hosts), f"round-{round_}")
        reports: dict[int, Report] = {}
        for sid, ids in self.hosts.items():
            reply = replies.get(sid)
            if reply is None:
                self._drop(stats, ids.size, "no reply (timeout or lost SuperNode)")
                continue
            if reply.has_error():
                self._drop(stats, ids.size, f"error reply: {_last_line(reply.error.reason)}")
                continue
            records = reply.content.config_records
            self._decode_records(records, ids, round_, schema, length, stats, reports)
        hosted = sum(ids.size for ids in self.hosts.values())
        if hosted < self.num_nodes:
            self._drop(stats, self.num_nodes - hosted, "node not hosted by any SuperNode")
        for reason, count in stats.reasons.items():
            log.warning("round %d: %d node(s) dropped: %s", round_, count, reason)
        return Replies(reports, stats)

    def _decode_records(
        self,
        records: Any,
        ids: np.ndarray,
        round_: int,
        schema: Any,
        length: int | None,
        stats: RoundStats,
        reports: dict[int, Report],
    ) -> None:
        """One SuperNode's reply records into ``reports``: a record of a node it does not host,
        a duplicate, a refusal or a report that does not decode is counted in ``stats`` and
        dropped, and so is a hosted node with no record."""
        allowed = set(ids.tolist())
        seen: set[int] = set()
        for name in list(records.keys()):
            node = node_from_record_name(name)
            if node is None:
                stats.bad_records += 1
                stats.reasons["unexpected record in reply"] += 1
                continue
            if node not in allowed or node in seen:
                stats.bad_records += 1
                stats.reasons["record for a node the SuperNode does not host"] += 1
                continue
            seen.add(node)
            payload = dict(records[name])
            if "refused" in payload:
                stats.refused += 1
                stats.reasons["refused by the node"] += 1
                continue
            try:
                rep = decode_report(
                    payload,
                    num_nodes=self.num_nodes,
                    round_=round_,
                    num_features=length,
                    node_id=node,
                    **schema.expected(),
                )
            except ReportError as exc:
                stats.rejected += 1
                stats.reasons[f"invalid report: {exc}"] += 1
                continue
            reports[node] = rep
            stats.replied += 1
        unanswered = len(allowed) - len(seen)
        if unanswered:
            self._drop(stats, unanswered, "hosted node sent no record")

    @staticmethod
    def _drop(stats: RoundStats, count: int, reason: str) -> None:
        stats.missing += count
        stats.reasons[reason] += count


def _last_line(text: str, width: int = 160) -> str:
    """The informative end of an error reason (Ray wraps the exception in a traceback)."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return (lines[-1] if lines else "unknown error")[:width]
