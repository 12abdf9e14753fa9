"""Closed-form statistics of one graph for the graph metric (:mod:`.graph`): the degree
sequence's edges, wedges, claws, REDE and Gini, Newman's degree assortativity, and the
relative error that compares a release with its original (PrivDPR's utility metrics, Zhang
et al. 2025, §6; NetGAN's ``compute_graph_statistics``)."""

from __future__ import annotations

import numpy as np


def relative_error(original: float | None, released: float | None) -> float | None:
    """|released − original| / |original|; None where undefined (either value undefined, or
    an original of 0 that the release does not match)."""
    if original is None or released is None:
        return None
    if released == original:
        return 0.0
    if original == 0:
        return None
    return float(abs(released - original) / abs(original))


def degree_statistics(degrees: np.ndarray) -> dict[str, float | int | None]:
    """Edges, wedges, claws, REDE and Gini from the degree sequence (closed forms)."""
    d = np.asarray(degrees, dtype=np.int64)
    n = d.shape[0]
    two_m = int(d.sum())
    out: dict[str, float | int | None] = {
        "edges": two_m // 2,
        "wedges": int((d * (d - 1) // 2).sum()),
        "claws": int((d * (d - 1) * (d - 2) // 6).sum()),
    }
    if two_m == 0 or n < 2:
        out["rede"] = None
    else:
        p = d / two_m
        out["rede"] = float(np.sum(-p * np.log((d + 1e-4) / two_m)) / np.log(n))
    if two_m == 0:
        out["gini"] = 0.0
    else:
        # Gini = Σ_i Σ_j |d_i − d_j| / (2 n² mean), from the sorted sequence.
        s = np.sort(d).astype(np.float64)
        ranks = np.arange(1, n + 1, dtype=np.float64)
        out["gini"] = float(2.0 * np.sum(ranks * s) / (n * s.sum()) - (n + 1.0) / n)
    return out


def assortativity(edges: np.ndarray, degrees: np.ndarray) -> float | None:
    """Newman's degree assortativity: the Pearson correlation of the degrees at the two ends of
    an edge, each edge taken both ways (networkx's ``degree_assortativity_coefficient``);
    None without edges or when every edge joins nodes of one degree."""
    if edges.shape[0] == 0:
        return None
    du, dv = degrees[edges[:, 0]], degrees[edges[:, 1]]
    x = np.concatenate([du, dv]).astype(np.float64)
    y = np.concatenate([dv, du]).astype(np.float64)
    if np.all(x == x[0]):
        return None
    from scipy.stats import pearsonr

    return float(pearsonr(x, y).statistic)
