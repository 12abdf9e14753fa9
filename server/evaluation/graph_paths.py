"""Path statistics of one graph for the graph metric (:mod:`.graph`): CPL, diameter and the
largest component, exact (a BFS from every node, with scipy) or from seeded sampled sources
above the exact limit, the diameter then a lower bound improved by double sweeps."""

from __future__ import annotations

from typing import Any

import numpy as np

#: Sweeps from the farthest node found that improve a sampled diameter's lower bound.
DIAMETER_SWEEPS = 4
#: Distance-matrix entries of one BFS batch (float64): bounds the memory to about 32 MiB.
_BATCH_ENTRIES = 1 << 22
#: Components are grouped into blocks of about this many nodes, so that a graph of many small
#: components takes few scipy calls.
_BLOCK_NODES = 4096


class GraphTooLargeError(ValueError):
    """An exact path statistic was asked of a graph above the exact limit with sampling off."""


def _blocks(labels: np.ndarray, sizes: np.ndarray, wanted: np.ndarray) -> list[np.ndarray]:
    """The nodes of the wanted components, grouped into blocks of whole components of about
    ``_BLOCK_NODES`` nodes (a larger component is a block of its own)."""
    order = np.argsort(labels, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)])
    blocks: list[np.ndarray] = []
    current: list[np.ndarray] = []
    count = 0
    for c in np.flatnonzero(wanted):
        nodes = order[starts[c] : starts[c + 1]]
        if count and count + nodes.size > _BLOCK_NODES:
            blocks.append(np.sort(np.concatenate(current)))
            current, count = [], 0
        current.append(nodes)
        count += nodes.size
    if current:
        blocks.append(np.sort(np.concatenate(current)))
    return blocks


def _bfs(adj: Any, nodes: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """Hop distances from ``sources`` to every node of ``nodes`` (whole components, sorted
    ids; ``sources`` among them): one row per source, inf where unreachable."""
    from scipy.sparse.csgraph import shortest_path

    sub = adj[nodes][:, nodes]
    local = np.searchsorted(nodes, sources)
    return shortest_path(sub, method="D", directed=True, unweighted=True, indices=local)


def path_statistics(
    adj: Any,
    *,
    exact_limit: int,
    sample_sources: int,
    rng: np.random.Generator | None = None,
    what: str = "graph",
) -> dict[str, Any]:
    """CPL, diameter and LCC of the graph with symmetric adjacency ``adj``, and how the path
    statistics were computed (``paths``: method, sources)."""
    from scipy.sparse.csgraph import connected_components

    n = adj.shape[0]
    if n == 0:
        return {"cpl": None, "diameter": None, "lcc": 0, "paths": _paths("exact", 0)}
    ncomp, labels = connected_components(adj, directed=False)
    sizes = np.bincount(labels, minlength=ncomp)
    lcc = int(sizes.max())
    candidates = np.flatnonzero(sizes[labels] >= 2)  # nodes that reach another node
    if candidates.size == 0:
        return {"cpl": None, "diameter": None, "lcc": lcc, "paths": _paths("exact", 0)}
    sampled = lcc > exact_limit and candidates.size > sample_sources
    if lcc > exact_limit and sample_sources <= 0:
        raise GraphTooLargeError(
            f"graph statistics: the {what}'s largest component has {lcc} nodes, above "
            f"graph-exact-limit {exact_limit}, and sampling is off (graph-sample-sources 0): "
            "raise --graph-exact-limit or sample with --graph-sample-sources N"
        )
    if sampled:
        rng = rng if rng is not None else np.random.default_rng(0)
        sources = np.sort(rng.choice(candidates, size=sample_sources, replace=False))
    else:
        sources = candidates
    wanted = np.zeros(ncomp, dtype=bool)
    wanted[labels[sources]] = True
    total, pairs, diameter, far = _distances(adj, labels, sizes, wanted, sources)
    sweeps = 0
    if sampled:
        diameter, sweeps = _sweep_diameter(adj, labels, far[1], diameter)
    return {
        "cpl": total / pairs if pairs else None,
        "diameter": diameter if pairs else None,
        "lcc": lcc,
        "paths": _paths("sampled" if sampled else "exact", int(sources.size), sweeps),
    }


def _distances(
    adj: Any, labels: np.ndarray, sizes: np.ndarray, wanted: np.ndarray, sources: np.ndarray
) -> tuple[float, int, int, tuple[int, int]]:
    """BFS from every source, block by block: the sum of the finite distances, the number of
    connected ordered pairs, the largest eccentricity, and (that eccentricity, the farthest
    node of the most eccentric source) for the diameter sweeps."""
    total, pairs, diameter = 0.0, 0, 0
    far = (-1, -1)
    for nodes in _blocks(labels, sizes, wanted):
        mine = sources[np.isin(sources, nodes)]
        step = max(1, _BATCH_ENTRIES // nodes.size)
        for i in range(0, mine.size, step):
            dist = _bfs(adj, nodes, mine[i : i + step])
            finite = np.isfinite(dist)
            total += float(dist[finite].sum())
            pairs += int(finite.sum()) - dist.shape[0]  # less each source's own 0
            reach = np.where(finite, dist, -1.0)
            ecc = reach.max(axis=1)
            best = int(ecc.argmax())
            if ecc[best] > far[0]:
                far = (int(ecc[best]), int(nodes[reach[best].argmax()]))
            diameter = max(diameter, int(ecc.max()))
    return total, pairs, diameter, far


def _sweep_diameter(adj: Any, labels: np.ndarray, node: int, diameter: int) -> tuple[int, int]:
    """Iterated double sweep: a BFS from the farthest node found, while it improves the
    diameter's lower bound (at most :data:`DIAMETER_SWEEPS`); the bound and the sweeps run."""
    sweeps = 0
    for _ in range(DIAMETER_SWEEPS):
        nodes = np.flatnonzero(labels == labels[node])
        reach = _bfs(adj, nodes, np.array([node]))[0]
        sweeps += 1
        ecc = int(reach.max())
        node = int(nodes[reach.argmax()])
        if ecc <= diameter:
            break
        diameter = ecc
    return diameter, sweeps


def _paths(method: str, sources: int, sweeps: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {"method": method, "sources": sources}
    if method == "sampled":
        out["diameter"] = f"lower bound: sampled sources + {sweeps} sweep BFS"
        out["sweeps"] = sweeps
    return out
