"""Many nodes at once: the views of a batch of nodes and their reports in one compact container.

A simulation with 10^6 node-clients cannot afford 10^6 ``NodeView`` and ``Report`` objects (a
Python object, a dict and a few small arrays each: ~1 KB of headers per node, and ~10 µs to
build and walk them). :class:`NodeBatch` is what a range of nodes knows (each node still only
its own row and features), :class:`ReportBatch` what they send: their adjacency reports as one
CSR (``indptr`` int64, ``indices`` int32), their feature rows as one matrix and each extra
field as one array, at the size of the reports themselves. A ``ReportBatch`` is a read-only
``Mapping[int, Report]``, so code that walks reports node by node keeps working; the server's
assembly (:mod:`ldpgraph.protocols.ldp.assemble`) and validation read the arrays directly.

numpy only: this module is on the client's import path.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .types import NodeView, Report

if TYPE_CHECKING:  # scipy stays off the client's import path
    from .graph import Graph


@dataclass(frozen=True)
class NodeBatch:
    """What the nodes ``nodes`` know, row by row: node ``nodes[k]``'s neighbours are
    ``indices[indptr[k]:indptr[k + 1]]`` (sorted, never itself) and its features
    ``features[k]``.

    Args:
        nodes: the node ids, increasing (int64).
        indptr: row offsets into ``indices`` (length ``len(nodes) + 1``).
        indices: the neighbours of every node, row after row.
        features: the feature rows, ``[len(nodes), d]``.
        num_nodes: n, the size of the whole graph.
        feature_domain: the public range of the features.
    """

    nodes: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    features: np.ndarray
    num_nodes: int
    feature_domain: tuple[float, float] = (0.0, 1.0)

    @classmethod
    def of_graph(cls, graph: Graph, nodes: np.ndarray) -> NodeBatch:
        """The batch of ``nodes`` (increasing ids) of a :class:`~ldpgraph.protocols.graph.Graph`."""
        nodes = np.asarray(nodes, dtype=np.int64)
        adj = graph.adjacency()
        if nodes.size and nodes[-1] - nodes[0] + 1 == nodes.size:
            # A contiguous range: slices of the graph's own arrays, no copy.
            lo, hi = int(nodes[0]), int(nodes[-1]) + 1
            indptr = adj.indptr[lo : hi + 1].astype(np.int64) - int(adj.indptr[lo])
            indices = adj.indices[adj.indptr[lo] : adj.indptr[hi]]
            features = graph.x[lo:hi]
        else:
            rows = adj[nodes]
            indptr, indices = rows.indptr.astype(np.int64), rows.indices
            features = graph.x[nodes]
        return cls(nodes, indptr, indices, features, graph.num_nodes, graph.feature_domain)

    def __len__(self) -> int:
        return int(self.nodes.shape[0])

    @property
    def num_features(self) -> int:
        return int(self.features.shape[1])

    def view(self, k: int) -> NodeView:
        """The :class:`NodeView` of the batch's ``k``-th node."""
        return NodeView(
            int(self.nodes[k]),
            self.indices[self.indptr[k] : self.indptr[k + 1]],
            self.features[k],
            self.num_nodes,
            self.feature_domain,
        )

    def views(self) -> Iterator[NodeView]:
        return (self.view(k) for k in range(len(self)))


def _empty_extras() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    return {}


@dataclass(frozen=True, eq=False)
class ReportBatch(Mapping[int, Report]):
    """The reports of one round from the nodes ``nodes`` (increasing ids), row ``k`` being
    node ``nodes[k]``'s.

    Args:
        round: the round every report answers.
        num_nodes: n.
        nodes: the reporting nodes (int64, increasing).
        indptr: adjacency row offsets (int64, ``len(nodes) + 1``); None when no row carries
            an adjacency report.
        indices: the reported 1-bits of every row (int32, sorted within a row).
        has_adjacency: which rows carry an adjacency report (None: all, when ``indptr`` is set).
        features: the feature rows ``[len(nodes), f]`` (zeros in rows without), or None.
        has_features: which rows carry features (None: all, when ``features`` is set).
        extras: per extra field, (float64 values, bool mask of the rows that sent it).
    """

    round: int
    num_nodes: int
    nodes: np.ndarray
    indptr: np.ndarray | None = None
    indices: np.ndarray | None = None
    has_adjacency: np.ndarray | None = None
    features: np.ndarray | None = None
    has_features: np.ndarray | None = None
    extras: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=_empty_extras)

    def __post_init__(self) -> None:
        m = self.nodes.shape[0]
        if self.nodes.dtype != np.int64:
            raise TypeError("report batch node ids must be int64")
        if (self.indptr is None) != (self.indices is None):
            raise ValueError("adjacency needs both indptr and indices")
        if self.indptr is not None and (
            self.indptr.shape != (m + 1,) or self.indices.dtype != np.int32
        ):
            raise ValueError("adjacency must be indptr (rows + 1) and int32 indices")
        if self.features is not None and self.features.shape[0] != m:
            raise ValueError("one feature row per reporting node")
        # Read-only: the local backend replays one batch to several runs, and the Report
        # views it hands out are views of these arrays.
        for array in self._arrays():
            array.flags.writeable = False

    def _arrays(self) -> list[np.ndarray]:
        arrays = [self.nodes, self.indptr, self.indices, self.has_adjacency, self.features,
                  self.has_features]  # fmt: skip
        arrays += [a for pair in self.extras.values() for a in pair]
        return [a for a in arrays if a is not None]

    def __reduce__(self):
        # Rebuilt through __init__ (so a batch a worker sends back is read-only too).
        return (
            ReportBatch,
            (self.round, self.num_nodes, self.nodes, self.indptr, self.indices,
             self.has_adjacency, self.features, self.has_features, self.extras),
        )  # fmt: skip

    # -- building --------------------------------------------------------------------------
    @classmethod
    def empty(cls, round_: int, num_nodes: int) -> ReportBatch:
        return cls(round_, num_nodes, np.zeros(0, dtype=np.int64))

    @classmethod
    def from_reports(
        cls, nodes: np.ndarray, reports: Sequence[Report], round_: int, num_nodes: int
    ) -> ReportBatch:
        """Pack the reports of ``nodes`` (increasing ids; ``reports[k]`` is node
        ``nodes[k]``'s). Raises ValueError when they do not pack as they are: a report that
        names another node, round or graph, adjacency that is not int32, feature rows of
        different dtypes or lengths (then keep them in a dict)."""
        m = len(reports)
        nodes = np.asarray(nodes, dtype=np.int64)
        if nodes.shape != (m,) or (m > 1 and not (nodes[1:] > nodes[:-1]).all()):
            raise ValueError("one report per node, in increasing node order")
        if any(
            not isinstance(r, Report) or r.node_id != v or r.round != round_
            or r.num_nodes != num_nodes for v, r in zip(nodes.tolist(), reports, strict=True)
        ):  # fmt: skip
            raise ValueError("a report of another node, round or graph")
        indptr = indices = has_adj = None
        adj = [r.adjacency for r in reports]
        if any(a is not None for a in adj):
            if any(a is not None and (not isinstance(a, np.ndarray) or a.dtype != np.int32
                                      or a.ndim != 1) for a in adj):  # fmt: skip
                raise ValueError("adjacency reports that are not int32 vectors")
            has_adj = np.fromiter((a is not None for a in adj), dtype=bool, count=m)
            lengths = np.fromiter((0 if a is None else a.shape[0] for a in adj), np.int64, m)
            indptr = np.zeros(m + 1, dtype=np.int64)
            np.cumsum(lengths, out=indptr[1:])
            parts = [a for a in adj if a is not None and a.size]
            indices = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
        features = has_feat = None
        feats = [r.features for r in reports]
        present = [f for f in feats if f is not None]
        if present:
            first = present[0]
            if any(
                not isinstance(f, np.ndarray) or f.dtype != first.dtype or f.shape != first.shape
                or f.ndim != 1 for f in present
            ):  # fmt: skip
                raise ValueError("feature rows of different types or lengths")
            has_feat = np.fromiter((f is not None for f in feats), dtype=bool, count=m)
            features = np.zeros((m, first.shape[0]), dtype=first.dtype)
            features[has_feat] = np.stack(present)
        extras: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for k, r in enumerate(reports):
            for key, value in r.extras.items():
                if key not in extras:
                    extras[key] = (np.zeros(m, dtype=np.float64), np.zeros(m, dtype=bool))
                if isinstance(value, bool) or not isinstance(value, float | int):
                    raise ValueError(f"extra field {key!r} is not a number")
                extras[key][0][k] = value
                extras[key][1][k] = True
        return cls(round_, num_nodes, nodes, indptr, indices, has_adj, features, has_feat, extras)

    @classmethod
    def concat(cls, parts: Sequence[ReportBatch]) -> ReportBatch:
        """One batch of ``parts`` (batches of the same round over increasing, disjoint node
        ranges, in order); the parts' arrays are copied once."""
        if not parts:
            raise ValueError("nothing to concatenate")
        if len(parts) == 1:
            return parts[0]
        builder = BatchBuilder(parts[0].round, parts[0].num_nodes, sum(len(p) for p in parts))
        for part in parts:
            builder.add(part)
        return builder.finish()

    def drop(self, nodes: Iterable[int]) -> ReportBatch:
        """This batch without the reports of ``nodes`` (rejected ones); copies the arrays."""
        gone = np.asarray(sorted(set(int(v) for v in nodes)), dtype=np.int64)
        keep = ~np.isin(self.nodes, gone)
        if keep.all():
            return self
        indptr = indices = has_adj = None
        if self.indptr is not None:
            lengths = np.diff(self.indptr)
            element = np.repeat(keep, lengths)
            indices = self.indices[element]
            indptr = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
            np.cumsum(lengths[keep], out=indptr[1:])
            has_adj = self.adjacency_mask()[keep]
        features = None if self.features is None else self.features[keep]
        has_feat = None if self.features is None else self.features_mask()[keep]
        extras = {k: (v[keep], s[keep]) for k, (v, s) in self.extras.items()}
        return ReportBatch(
            self.round, self.num_nodes, self.nodes[keep], indptr, indices, has_adj, features,
            has_feat, extras,
        )  # fmt: skip

    # -- reading ----------------------------------------------------------------------------
    def adjacency_mask(self) -> np.ndarray:
        """Which rows carry an adjacency report."""
        if self.indptr is None:
            return np.zeros(self.nodes.shape[0], dtype=bool)
        if self.has_adjacency is None:
            return np.ones(self.nodes.shape[0], dtype=bool)
        return self.has_adjacency

    def features_mask(self) -> np.ndarray:
        """Which rows carry features."""
        if self.features is None:
            return np.zeros(self.nodes.shape[0], dtype=bool)
        if self.has_features is None:
            return np.ones(self.nodes.shape[0], dtype=bool)
        return self.has_features

    def row_nodes(self) -> np.ndarray:
        """The node id of every adjacency index (int64, ``len(indices)``)."""
        if self.indptr is None:
            return np.zeros(0, dtype=np.int64)
        return np.repeat(self.nodes, np.diff(self.indptr))

    @property
    def nbytes(self) -> int:
        """Bytes held by the batch's arrays."""
        return int(sum(a.nbytes for a in self._arrays()))

    def _row(self, node: int) -> int:
        k = int(np.searchsorted(self.nodes, node))
        if k >= self.nodes.shape[0] or self.nodes[k] != node:
            raise KeyError(node)
        return k

    def __getitem__(self, node: int) -> Report:
        k = self._row(int(node))
        adj = None
        if self.indptr is not None and self.adjacency_mask()[k]:
            adj = self.indices[self.indptr[k] : self.indptr[k + 1]]
        feats = None
        if self.features is not None and self.features_mask()[k]:
            feats = self.features[k]
        extras = {key: float(v[k]) for key, (v, sent) in self.extras.items() if sent[k]}
        return Report(int(node), self.round, self.num_nodes, adj, feats, extras)

    def __contains__(self, node: object) -> bool:
        try:
            self._row(int(node))  # type: ignore[arg-type]
        except (KeyError, TypeError, ValueError):
            return False
        return True

    def __iter__(self) -> Iterator[int]:
        return iter(self.nodes.tolist())

    def __len__(self) -> int:
        return int(self.nodes.shape[0])


class BatchBuilder:
    """Joins batches as they arrive (increasing, disjoint node ranges, in order) into one, so
    that a part can be freed as soon as it is copied: the joined adjacency grows into one
    buffer sized from the parts seen so far (pages never written are never resident), not
    into a list of parts plus their concatenation (twice the reports at the end).

    Args:
        round_: the round of every part.
        num_nodes: n.
        rows: how many rows the parts hold in all (at most).
    """

    def __init__(self, round_: int, num_nodes: int, rows: int) -> None:
        self.round, self.num_nodes, self.rows = round_, num_nodes, rows
        self.m = 0  # rows filled
        self.used = 0  # adjacency indices filled
        self.nodes = np.empty(rows, dtype=np.int64)
        self.lengths: np.ndarray | None = None
        self.has_adj: np.ndarray | None = None
        self.indices: np.ndarray | None = None
        self.features: np.ndarray | None = None
        self.has_feat: np.ndarray | None = None
        self.extras: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def add(self, part: ReportBatch) -> None:
        """Copy ``part`` in; a ValueError when it does not continue the batch (another round,
        graph, an earlier node, feature rows of another type or length)."""
        k, lo = len(part), self.m
        if (part.round, part.num_nodes) != (self.round, self.num_nodes):
            raise ValueError("a part of another round or graph")
        if lo + k > self.rows:
            raise ValueError(f"more than the {self.rows} rows announced")
        if k and lo and part.nodes[0] <= self.nodes[lo - 1]:
            raise ValueError("parts must cover increasing, disjoint node ranges")
        if part.features is not None:
            shape, dtype = part.features.shape[1:], part.features.dtype
            if self.features is None:
                self.features = np.zeros((self.rows, *shape), dtype=dtype)
                self.has_feat = np.zeros(self.rows, dtype=bool)
            elif (self.features.shape[1:], self.features.dtype) != (shape, dtype):
                raise ValueError("parts with feature rows of different types or lengths")
            self.features[lo : lo + k] = part.features
            self.has_feat[lo : lo + k] = part.features_mask()
        if part.indptr is not None:
            if self.indices is None:
                self.lengths = np.zeros(self.rows, dtype=np.int64)
                self.has_adj = np.zeros(self.rows, dtype=bool)
                self.indices = np.empty(0, dtype=np.int32)
            size = part.indices.shape[0]
            if self.used + size > self.indices.shape[0]:
                self._grow(self.used + size, lo + k)
            self.indices[self.used : self.used + size] = part.indices
            self.used += size
            self.lengths[lo : lo + k] = np.diff(part.indptr)
            self.has_adj[lo : lo + k] = part.adjacency_mask()
        for key, (values, sent) in part.extras.items():
            if key not in self.extras:
                self.extras[key] = (np.zeros(self.rows), np.zeros(self.rows, dtype=bool))
            self.extras[key][0][lo : lo + k] = values
            self.extras[key][1][lo : lo + k] = sent
        self.nodes[lo : lo + k] = part.nodes
        self.m += k

    def _grow(self, need: int, rows_after: int) -> None:
        """Room for at least ``need`` indices: the rate so far times every row, plus 5%."""
        assert self.indices is not None
        rate = need / max(rows_after, 1)
        capacity = max(need, int(rate * self.rows * 1.05) + 4096, self.indices.shape[0] * 5 // 4)
        grown = np.empty(capacity, dtype=np.int32)
        grown[: self.used] = self.indices[: self.used]
        self.indices = grown

    def finish(self) -> ReportBatch:
        """The joined batch (views of the builder's arrays; use the builder no more)."""
        m = self.m
        indptr = indices = has_adj = None
        if self.indices is not None:
            assert self.lengths is not None and self.has_adj is not None
            indptr = np.zeros(m + 1, dtype=np.int64)
            np.cumsum(self.lengths[:m], out=indptr[1:])
            indices, has_adj = self.indices[: self.used], self.has_adj[:m]
        features = None if self.features is None else self.features[:m]
        has_feat = None if self.has_feat is None else self.has_feat[:m]
        extras = {key: (v[:m], sent[:m]) for key, (v, sent) in sorted(self.extras.items())}
        return ReportBatch(
            self.round, self.num_nodes, self.nodes[:m], indptr, indices, has_adj, features,
            has_feat, extras,
        )  # fmt: skip


__all__ = ["BatchBuilder", "NodeBatch", "ReportBatch"]
