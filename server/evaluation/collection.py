"""Statistics of a generated collection against the original collection (``--metrics
collection``; scores ``graphs`` releases: DPGGAN/DPGVAE, the DPGGAN paper's §4).

The release holds one generated graph per original graph k (on the same N_k nodes, without a
node correspondence), the original is a collection dataset (its ``graph_ptr`` splits the union
back into the K graphs). Every graph is taken undirected and simple, isolated nodes kept
(our reading: the convention that reproduces the paper's "Original" row).

**Table 1** (the paper's §4): for each of LCC, TC (triangles), CPL (mean shortest path over the
connected ordered pairs), GINI (NetGAN's 0-indexed rank convention: graph.py's textbook Gini
less 2/n) and REDE, the mean over k of the original's value (the paper's "Original" row) and
the mean over k of |stat(generated_k) − stat(original_k)| (the model rows; absolute, so signs
do not cancel). A pair where either value is undefined (CPL of a graph without edges, REDE of
one without edges) is left out of that statistic's mean and counted under ``undefined``.
The statistics are graph.py's (:func:`~.graph.graph_statistics`).

**Table 2** (the paper's §4): the mean over k of the cosine similarity of (a) the 50-bin degree
histograms (bin min(degree, 49), raw counts) and (b) the 29-dim motif vectors: counts of the
connected induced subgraphs on 3, 4 and 5 nodes (2 + 6 + 21 isomorphism classes), enumerated
with ESU (Wernicke 2006) and classified by a precomputed canonical form. A zero vector has
similarity 0 (our choice). Motif enumeration is exact but costs the number of connected
5-node subsets: a pair where either graph has more than ``collection_motif_limit`` connected
subgraphs (dense IMDB ego-networks) is left out of the motif mean and counted, never
estimated. GIN accuracy (Table 2's third column) is the ``gin`` metric's
(:mod:`.gin`; ``--metrics collection,gin``).
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ldpgraph.protocols.graph import canonical_edges, edges_to_csr, split_by_offsets
from ldpgraph.protocols.params import Param

from .base import EvaluationContext, Metric, register_metric
from .graph import graph_statistics

#: Table 1's statistics, in the paper's column order (record key → graph.py's key).
TABLE1 = {"lcc": "lcc", "tc": "triangles", "cpl": "cpl", "gini": "gini", "rede": "rede"}
#: Degree histogram bins (the paper's §4: "50-dim vector").
DEGREE_BINS = 50
#: Motif sizes (3–5 nodes: 2 + 6 + 21 = 29 classes).
MOTIF_SIZES = (3, 4, 5)
#: Connected subgraphs (sizes 3..5) one graph's enumeration may visit.
COLLECTION_MOTIF_LIMIT = Param(
    "collection_motif_limit", int, 300_000,
    "collection metric: a graph pair whose motif enumeration would visit more connected "
    "3-5-node subgraphs than this is left out of the motif similarity (counted)",
    low=0, added_with=300_000,
)  # fmt: skip
DEFAULT_MOTIF_LIMIT = COLLECTION_MOTIF_LIMIT.default


class TooManySubgraphs(RuntimeError):
    """The enumeration passed its limit."""


# --- per graph ------------------------------------------------------------------------------


def table1_statistics(edges: np.ndarray, n: int) -> dict[str, float | None]:
    """LCC, TC, CPL, GINI (NetGAN, 0-indexed) and REDE of one graph (isolated nodes kept)."""
    stats, degrees = graph_statistics(edges, n)
    out: dict[str, float | None] = {k: stats[v] for k, v in TABLE1.items()}
    # graph.py's Gini uses 1-indexed ranks; NetGAN's (the paper's) 0-indexed: 2/n less.
    out["gini"] = None if not degrees.sum() else float(stats["gini"]) - 2.0 / n
    out["lcc"] = float(stats["lcc"])
    out["tc"] = float(stats["triangles"])
    return out


def degree_histogram(edges: np.ndarray, n: int) -> np.ndarray:
    """Counts of nodes by degree, degrees ≥ 49 in the last of 50 bins."""
    edges = canonical_edges(edges, n)
    deg = np.bincount(edges.ravel(), minlength=n)
    return np.bincount(np.minimum(deg, DEGREE_BINS - 1), minlength=DEGREE_BINS).astype(float)


def _pairs(k: int) -> list[tuple[int, int]]:
    return list(itertools.combinations(range(k), 2))


def _connected(k: int, mask: int) -> bool:
    pairs = _pairs(k)
    seen, todo = {0}, [0]
    while todo:
        v = todo.pop()
        for b, (i, j) in enumerate(pairs):
            if mask >> b & 1 and v in (i, j):
                w = j if v == i else i
                if w not in seen:
                    seen.add(w)
                    todo.append(w)
    return len(seen) == k


@functools.cache
def motif_table(k: int) -> tuple[np.ndarray, int]:
    """For every adjacency bitmask of k labelled nodes (bit b: pair b of
    ``combinations(range(k), 2)``), its isomorphism class among the connected graphs on k
    nodes (−1 if disconnected), classes numbered by (edge count, canonical mask); and the
    number of classes."""
    pairs = _pairs(k)
    index = {p: b for b, p in enumerate(pairs)}
    perms = list(itertools.permutations(range(k)))
    canon = np.empty(1 << len(pairs), dtype=np.int64)
    for mask in range(1 << len(pairs)):
        best = None
        for perm in perms:
            m = 0
            for b, (i, j) in enumerate(pairs):
                if mask >> b & 1:
                    a, c = sorted((perm[i], perm[j]))
                    m |= 1 << index[(a, c)]
            best = m if best is None or m < best else best
        canon[mask] = best
    classes = sorted(
        {int(c) for mask, c in enumerate(canon) if _connected(k, mask)},
        key=lambda c: (bin(c).count("1"), c),
    )
    number = {c: i for i, c in enumerate(classes)}
    table = np.array([number.get(int(c), -1) for c in canon], dtype=np.int64)
    return table, len(classes)


def motif_counts(edges: np.ndarray, n: int, limit: int = DEFAULT_MOTIF_LIMIT) -> np.ndarray:
    """The 29-dim vector of induced connected motif counts on 3, 4 and 5 nodes (classes of
    :func:`motif_table` for k = 3, 4, 5, concatenated). Raises :class:`TooManySubgraphs` when
    more than ``limit`` connected subgraphs would be visited."""
    edges = canonical_edges(edges, n)
    adj = edges_to_csr(edges, n)
    nbrs = [set(adj.indices[adj.indptr[v] : adj.indptr[v + 1]].tolist()) for v in range(n)]
    kmax = max(MOTIF_SIZES)
    tables = {k: motif_table(k) for k in MOTIF_SIZES}
    pair_bits = {k: _pairs(k) for k in MOTIF_SIZES}
    offsets, total = {}, 0
    for k in MOTIF_SIZES:
        offsets[k] = total
        total += tables[k][1]
    counts = np.zeros(total, dtype=np.int64)
    visited = 0

    def record(sub: list[int]) -> None:
        k = len(sub)
        mask = 0
        for b, (i, j) in enumerate(pair_bits[k]):
            if sub[j] in nbrs[sub[i]]:
                mask |= 1 << b
        counts[offsets[k] + tables[k][0][mask]] += 1

    def extend(sub: list[int], closed: set[int], ext: set[int], root: int) -> None:
        nonlocal visited
        if len(sub) >= min(MOTIF_SIZES):
            visited += 1
            if visited > limit:
                raise TooManySubgraphs(f"more than {limit} connected subgraphs")
            record(sub)
        if len(sub) == kmax:
            return
        ext = set(ext)
        while ext:
            w = ext.pop()
            exclusive = {u for u in nbrs[w] if u > root and u not in closed}
            extend(sub + [w], closed | nbrs[w] | {w}, ext | exclusive, root)

    for v in range(n):
        extend([v], nbrs[v] | {v}, {u for u in nbrs[v] if u > v}, v)
    return counts


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity; 0 when either vector is zero."""
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0 or nb == 0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


# --- the collection ---------------------------------------------------------------------------


def original_graphs(graph: Any) -> list[tuple[np.ndarray, int]]:
    """The original collection's graphs (local edges, n) from the union's ``graph_ptr``."""
    if (getattr(graph, "meta", None) or {}).get("graph_ptr") is None:
        raise ValueError(
            "the collection metric compares a generated collection with a collection "
            "dataset (dblp-collection, imdb-collection, …); this original is one graph"
        )
    return split_by_offsets(graph.edges, graph.meta["graph_ptr"])


def original_row(graphs: list[tuple[np.ndarray, int]]) -> dict[str, float]:
    """Table 1's "Original" row: the mean of each statistic over the graphs (defined ones)."""
    stats = [table1_statistics(e, n) for e, n in graphs]
    return {k: float(np.mean([s[k] for s in stats if s[k] is not None])) for k in TABLE1}


def compare_collections(
    originals: list[tuple[np.ndarray, int]],
    generated: list[tuple[np.ndarray, int]],
    motif_limit: int = DEFAULT_MOTIF_LIMIT,
) -> dict[str, Any]:
    """DPGGAN's Tables 1 and 2 of ``generated`` against ``originals``, pair by pair."""
    if len(originals) != len(generated):
        raise ValueError(
            f"the release holds {len(generated)} graphs for {len(originals)} original graphs"
        )
    for k, ((_, n_o), (_, n_g)) in enumerate(zip(originals, generated, strict=True)):
        if n_o != n_g:
            raise ValueError(f"generated graph {k} has {n_g} nodes, its original {n_o}")
    orig = [table1_statistics(e, n) for e, n in originals]
    gen = [table1_statistics(e, n) for e, n in generated]
    table1: dict[str, Any] = {}
    for key in TABLE1:
        both = [(o[key], g[key]) for o, g in zip(orig, gen, strict=True)]
        defined = [(o, g) for o, g in both if o is not None and g is not None]
        table1[key] = {
            "original": _mean([o[key] for o in orig if o[key] is not None]),
            "generated": _mean([g for _, g in defined]),
            "abs_diff": _mean([abs(g - o) for o, g in defined]),
            "pairs": len(defined),
            "undefined": len(both) - len(defined),
        }
    degree = [
        cosine(degree_histogram(*o), degree_histogram(*g))
        for o, g in zip(originals, generated, strict=True)
    ]
    motif: list[float] = []
    skipped = 0
    for o, g in zip(originals, generated, strict=True):
        try:
            motif.append(cosine(motif_counts(*o, motif_limit), motif_counts(*g, motif_limit)))
        except TooManySubgraphs:
            skipped += 1
    table2 = {
        "degree_cosine": _mean(degree),
        "motif_cosine": _mean(motif),
        "motif_pairs": len(motif),
        "motif_pairs_skipped": skipped,
        "motif_limit": motif_limit,
    }
    return {"graphs": len(originals), "table1": table1, "table2": table2}


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def motif_limit(config: Mapping[str, Any] | None) -> int:
    limit = int((config or {}).get("collection_motif_limit", DEFAULT_MOTIF_LIMIT))
    if limit < 0:
        raise ValueError(f"collection-motif-limit must be >= 0, got {limit}")
    return limit


@register_metric
class CollectionStats(Metric):
    """``collection``: Tables 1 and 2 of DPGGAN (its §4) for a ``graphs`` release against the
    original collection (record section ``collection_stats``)."""

    name = "collection"
    kinds = ("graphs",)
    settings = (COLLECTION_MOTIF_LIMIT,)

    def evaluate(self, ctx: EvaluationContext) -> dict[str, Any]:
        t0 = time.perf_counter()
        originals = original_graphs(ctx.graph)
        generated = [
            (np.asarray(g.edges, dtype=np.int64).reshape(-1, 2), g.num_nodes)
            for g in ctx.release.graphs
        ]
        section = compare_collections(originals, generated, motif_limit(ctx.config))
        section["seconds"] = round(time.perf_counter() - t0, 4)
        return {"collection_stats": section}


def summary_lines(name: str, section: dict[str, Any]) -> list[str]:
    """The run summary of a ``collection_stats`` section: Table 1 (the original's mean, the
    generated collection's mean |Δ| per graph) and Table 2 (cosine similarities)."""
    t1, t2 = section.get("table1") or {}, section.get("table2") or {}

    def num(v: Any) -> str:
        return "-" if v is None else f"{v:.4g}"

    took = f"; {section['seconds']:.1f} s" if isinstance(section.get("seconds"), float) else ""
    head = "".join(f"{k.upper():>10}" for k in t1)
    lines = [
        f"  collection    {section.get('graphs')} graphs, Table 1 (mean over graphs){took}",
        " " * 16 + f"{'':<22}{head}",
        " " * 16 + f"{'original':<22}" + "".join(f"{num(v['original']):>10}" for v in t1.values()),
        " " * 16
        + f"{'generated mean |Δ|':<22}"
        + "".join(f"{num(v['abs_diff']):>10}" for v in t1.values()),
    ]
    undefined = {k: v["undefined"] for k, v in t1.items() if v.get("undefined")}
    if undefined:
        lines.append(" " * 16 + "pairs left out (undefined): " + ", ".join(
            f"{k.upper()} {n}" for k, n in undefined.items()))  # fmt: skip
    lines.append(
        " "
        * 16
        + f"Table 2 cosine: degree histogram {num(t2.get('degree_cosine'))}   motif counts "
        f"{num(t2.get('motif_cosine'))} ({t2.get('motif_pairs')} pairs; "
        f"{t2.get('motif_pairs_skipped')} over the motif limit)"
    )
    return lines
