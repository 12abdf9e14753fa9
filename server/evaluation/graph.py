"""Graph statistics of a graph release against the original graph (``--metrics graph``).

The statistics and their definitions are PrivDPR's utility metrics (Zhang et al. 2025,
§6; NetGAN's ``compute_graph_statistics``), on the undirected
simple graph, degrees counted over all n nodes:

* ``triangles`` (TC), ``wedges`` Σ C(d, 2) (WC), ``claws`` Σ C(d, 3) (CC);
* ``rede``: the relative edge-distribution entropy (1/ln n)·Σ −(d/2m)·ln((d + 1e-4)/2m);
* ``cpl``: the mean shortest-path length over all connected ordered pairs i ≠ j;
* ``diameter``: the largest finite shortest-path length; ``lcc``: the largest component's size;
* ``degree_ks``: the two-sample Kolmogorov–Smirnov statistic of the two degree sequences;

and besides them ``edges``, Newman's degree ``assortativity``, the average local
``clustering`` (nodes of degree < 2 count as 0, as networkx does) and the ``gini`` coefficient
of the degrees. Each statistic is recorded with the original's value, the release's value and
their relative error |release − original| / |original| (the paper's RE; a report's MRE is its
mean over runs); a value that is undefined (CPL of a graph without edges, the assortativity of
a regular graph) is None, and so is an RE against an original of 0, unless both are equal.

Path statistics are exact (a BFS from every node, with scipy) while the largest component has
at most ``graph_exact_limit`` nodes; above that they are estimated from BFS runs from
``graph_sample_sources`` nodes drawn uniformly (seeded from the run seed) among the nodes with
a neighbour: the CPL as the sum of their distances over the pairs they reach, the diameter as a
lower bound (the largest eccentricity seen, improved by sweeps from the farthest node found).
The section says, per graph, which way its path statistics were computed and from how many
sources. With sampling off (0 sources) a graph above the limit is an error.

A weighted release (soft releases: the weight is an edge's posterior probability) is scored as
the graph of its pairs with weight ≥ 1/2, the most likely graph; the section says how many of
the weighted pairs that kept.

When ``lp`` or ``attack`` hid links before collection, every statistic compares the release
with the graph the nodes held (the original less the hidden links): the release could not
have held them, and scoring against the full original would count the hidden share as the
mechanism's error. ``reference`` says so; ``full_original`` holds the same comparison against
the whole original, the second reference.

``pgb`` holds the PGB benchmark's remaining queries (modularity, community agreement,
eigenvector centrality, transitivity, degree and distance distribution distances;
:mod:`.pgb`), within the same limits.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from ldpgraph.protocols.graph import canonical_edges, edges_to_csr
from ldpgraph.protocols.params import Param
from ldpgraph.protocols.rng import stage_rng

from .base import EvaluationContext, Metric, register_metric
from .graph_measures import assortativity, degree_statistics, relative_error
from .graph_paths import _BATCH_ENTRIES, path_statistics
from .graph_paths import (
    GraphTooLargeError as GraphTooLargeError,
)  # importers use graph.GraphTooLargeError
from .holdout import HeldOut, pair_keys
from .pgb import pgb_queries

#: Path statistics are exact while the largest component has at most this many nodes.
GRAPH_EXACT_LIMIT = Param(
    "graph_exact_limit", int, 5000,
    "graph metric: path statistics (CPL, diameter) are exact while the largest component "
    "has at most this many nodes, sampled above",
    low=0, added_with=5000,
)  # fmt: skip
#: BFS sources of the sampled path statistics above the limit; 0: never sample.
GRAPH_SAMPLE_SOURCES = Param(
    "graph_sample_sources", int, 500,
    "graph metric: BFS sources of the sampled path statistics above graph-exact-limit "
    "(seeded from the run seed); 0: never sample (a larger graph is an error)",
    low=0, added_with=500,
)  # fmt: skip
DEFAULT_EXACT_LIMIT = GRAPH_EXACT_LIMIT.default
DEFAULT_SAMPLE_SOURCES = GRAPH_SAMPLE_SOURCES.default
#: A weighted release's pairs with at least this weight are its edges.
WEIGHT_THRESHOLD = 0.5
#: The statistics with an original value, a release value and an RE, in record order.
STATISTICS = (
    "edges",
    "triangles",
    "wedges",
    "claws",
    "rede",
    "cpl",
    "diameter",
    "lcc",
    "assortativity",
    "clustering",
    "gini",
)


def release_edges(release: Any) -> tuple[np.ndarray, str]:
    """The edges the statistics see in ``release`` and how its weights were treated."""
    edges = np.asarray(release.edges, dtype=np.int64).reshape(-1, 2)
    weight = getattr(release, "edge_weight", None)
    if weight is None:
        return edges, "unweighted: every released pair is an edge"
    weight = np.asarray(weight, dtype=np.float64).reshape(-1)
    if weight.shape[0] != edges.shape[0]:
        raise ValueError(
            f"the release has {weight.shape[0]} edge weights for {edges.shape[0]} edges"
        )
    kept = edges[weight >= WEIGHT_THRESHOLD]
    return kept, (
        f"weighted: the {kept.shape[0]} of {edges.shape[0]} released pairs with weight >= "
        f"{WEIGHT_THRESHOLD:g} are the edges"
    )


# --- statistics of one graph -------------------------------------------------------------------


def triangles_per_node(adj: Any) -> np.ndarray:
    """Triangles through each node: the diagonal of A³ / 2, as (A·A ∘ A) row sums, a block of
    rows at a time (A·A of a whole dense release would not fit)."""
    a = adj.astype(np.int64)
    n = a.shape[0]
    out = np.zeros(n, dtype=np.int64)
    # rows whose A·A has at most about _BATCH_ENTRIES entries (Σ of their degree² bounds it)
    work = np.concatenate([[0], np.cumsum(np.diff(a.indptr) ** 2 + 1)])
    start = 0
    while start < n:
        stop = int(np.searchsorted(work, work[start] + _BATCH_ENTRIES, side="right")) - 1
        stop = min(n, max(start + 1, stop))
        rows = a[start:stop]
        out[start:stop] = np.asarray((rows @ a).multiply(rows).sum(axis=1)).ravel() // 2
        start = stop
    return out


def graph_statistics(
    edges: np.ndarray,
    num_nodes: int,
    *,
    exact_limit: int = DEFAULT_EXACT_LIMIT,
    sample_sources: int = DEFAULT_SAMPLE_SOURCES,
    rng: np.random.Generator | None = None,
    what: str = "graph",
) -> tuple[dict[str, Any], np.ndarray]:
    """Every statistic of :data:`STATISTICS` of the undirected simple graph on ``num_nodes``
    nodes with ``edges`` (any orientation, duplicates and loops dropped), with ``paths``; and
    its degree sequence."""
    edges = canonical_edges(edges, num_nodes)
    adj = edges_to_csr(edges, num_nodes)
    degrees = np.diff(adj.indptr).astype(np.int64)
    stats: dict[str, Any] = degree_statistics(degrees)
    tri = triangles_per_node(adj)
    stats["triangles"] = int(tri.sum()) // 3
    with np.errstate(divide="ignore", invalid="ignore"):
        local = np.where(degrees >= 2, 2.0 * tri / (degrees * (degrees - 1.0)), 0.0)
    stats["clustering"] = float(local.mean()) if num_nodes else None
    stats["assortativity"] = assortativity(edges, degrees)
    stats.update(
        path_statistics(
            adj, exact_limit=exact_limit, sample_sources=sample_sources, rng=rng, what=what
        )
    )
    return stats, degrees


def visible_edges(ctx: EvaluationContext) -> tuple[np.ndarray, int] | None:
    """The original's edges less the links ``lp``/``attack`` hid before collection, and how
    many were hidden; None when no links were hidden (the holdout is not in play)."""
    held = next((h for h in ctx.held_out_all.values() if isinstance(h, HeldOut)), None)
    if held is None or held.count == 0:
        return None
    n = ctx.graph.num_nodes
    edges = canonical_edges(ctx.graph.edges, n)
    keep = ~np.isin(pair_keys(edges, n), pair_keys(held.edges, n))
    return edges[keep], held.count


# --- the metric ---------------------------------------------------------------------------------

#: Statistics of recent graphs: a sweep scores one release under many training settings, and
#: every run of a data set against the same original.
_CACHE: OrderedDict[tuple, tuple[dict[str, Any], np.ndarray]] = OrderedDict()
_CACHE_SIZE = 8


def _cached_statistics(
    edges: np.ndarray, num_nodes: int, exact_limit: int, sample_sources: int, seed: int, what: str
) -> tuple[dict[str, Any], np.ndarray]:
    digest = hashlib.sha256(np.ascontiguousarray(edges, dtype=np.int64).tobytes()).hexdigest()
    key = (digest, num_nodes, exact_limit, sample_sources, seed)
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    value = graph_statistics(
        edges,
        num_nodes,
        exact_limit=exact_limit,
        sample_sources=sample_sources,
        # One stream for both graphs: an identical release draws the same sources.
        rng=stage_rng(seed, "graph-stats"),
        what=what,
    )
    _CACHE[key] = value
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return value


def settings(config: Mapping[str, Any] | None) -> tuple[int, int]:
    """(exact limit, sample sources) from a run's configuration (defaults where absent)."""
    config = config or {}
    limit = int(config.get("graph_exact_limit", DEFAULT_EXACT_LIMIT))
    sources = int(config.get("graph_sample_sources", DEFAULT_SAMPLE_SOURCES))
    if limit < 0 or sources < 0:
        raise ValueError(
            f"graph-exact-limit and graph-sample-sources must be >= 0, got {limit}, {sources}"
        )
    return limit, sources


def compare(
    original: tuple[np.ndarray, int],
    released: tuple[np.ndarray, int],
    *,
    exact_limit: int = DEFAULT_EXACT_LIMIT,
    sample_sources: int = DEFAULT_SAMPLE_SOURCES,
    seed: int = 0,
) -> dict[str, Any]:
    """The ``graph_stats`` section for two graphs given as (edges, num_nodes)."""
    from scipy.stats import ks_2samp

    ours, deg_o = _cached_statistics(*original, exact_limit, sample_sources, seed, "original")
    theirs, deg_r = _cached_statistics(*released, exact_limit, sample_sources, seed, "release")
    out: dict[str, Any] = {
        name: {
            "original": ours[name],
            "release": theirs[name],
            "re": relative_error(ours[name], theirs[name]),
        }
        for name in STATISTICS
    }
    if deg_o.size and deg_r.size:
        # The statistic does not depend on how the p-value is computed; "asymp" skips the
        # exact p-value, slow (and warning) on large samples.
        out["degree_ks"] = float(ks_2samp(deg_o, deg_r, method="asymp").statistic)
    else:
        out["degree_ks"] = None
    out["paths"] = {"original": ours["paths"], "release": theirs["paths"]}
    return out


@register_metric
class GraphStats(Metric):
    """``graph``: the statistics of a graph release against the original graph (record
    section ``graph_stats``; the record's ``graph`` section holds the two graphs' sizes)."""

    name = "graph"
    kinds = ("graph",)
    settings = (GRAPH_EXACT_LIMIT, GRAPH_SAMPLE_SOURCES)
    #: A generated collection's graph statistics are the collection comparison (Tables 1–2
    #: of DPGGAN, per graph against its original): ``--metrics graph`` gives them there.
    stand_ins = {"graphs": "collection"}

    def evaluate(self, ctx: EvaluationContext) -> dict[str, Any]:
        t0 = time.perf_counter()
        if getattr(ctx.graph, "edges", None) is None:
            raise ValueError(
                "the graph metric compares the release with the original graph, which this "
                "server does not hold (a deployment's curator file has no edges): choose other "
                "--metrics"
            )
        limit, sources = settings(ctx.config)
        edges, weights = release_edges(ctx.release)
        n = ctx.graph.num_nodes
        held = visible_edges(ctx)
        reference = ctx.graph.edges if held is None else held[0]
        section = compare(
            (reference, n),
            (edges, ctx.release.num_nodes),
            exact_limit=limit,
            sample_sources=sources,
            seed=ctx.seed,
        )
        original = edges_to_csr(canonical_edges(reference, n), n)
        released = edges_to_csr(
            canonical_edges(edges, ctx.release.num_nodes), ctx.release.num_nodes
        )
        if released.shape == original.shape:
            labels = getattr(ctx.graph, "y", None)
            section["pgb"] = pgb_queries(
                original,
                released,
                None if labels is None else np.asarray(labels),
                exact_limit=limit,
                sample_sources=sources,
                seed=ctx.seed,
            )
        if held is not None:
            section["reference"] = (
                f"the graph the nodes held: the original less the {held[1]} links hidden "
                "before collection (full_original: against the whole original)"
            )
            section["full_original"] = compare(
                (ctx.graph.edges, n),
                (edges, ctx.release.num_nodes),
                exact_limit=limit,
                sample_sources=sources,
                seed=ctx.seed,
            )
        section["weights"] = weights
        section["seconds"] = round(time.perf_counter() - t0, 4)
        return {"graph_stats": section}
