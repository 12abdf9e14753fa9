"""A literal O(n²) HoGS (Algorithms 2 and 3 of the paper), used only to check the sparse one."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def dense_hogs(
    bits: np.ndarray,
    observed: np.ndarray,
    x: np.ndarray,
    p: float,
    tau: float,
    steps: int,
    mu: float = 1.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (P matrix, edges i<j with P ≥ τ, reconstructed features).

    ``bits[i, j]`` is node i's reported bit about j; rows of nodes with ``observed[i] = False``
    are ignored (the node did not reply): each observed bit multiplies the likelihoods by
    (1−p or p) under an edge and (p or 1−p) under no edge, which for two observed bits is the
    paper's Eqs. (7)–(8). ``mu`` < 1 (asymmetric RR: each reported 1 kept with probability μ):
    a 1 has likelihood (1−p)μ under an edge and pμ under none, a 0 has 1 − (1−p)μ and 1 − pμ.
    """
    n = bits.shape[0]
    xf = np.asarray(x, dtype=np.float64)
    gram = xf @ xf.T
    norm = np.sqrt((xf * xf).sum(axis=1))
    denom = np.outer(norm, norm)
    s = np.zeros((n, n))
    np.divide(gram, denom, out=s, where=denom > 0)
    q = 1.0 - p
    if mu == 1.0:
        one_edge, zero_edge, one_none, zero_none = q, p, p, q
    else:
        one_edge, zero_edge = q * mu, 1.0 - q * mu
        one_none, zero_none = p * mu, 1.0 - p * mu
    l_edge = np.ones((n, n))
    l_none = np.ones((n, n))
    for a, b in ((bits, observed[:, None]), (bits.T, observed[None, :])):
        l_edge = np.where(b, l_edge * np.where(a == 1, one_edge, zero_edge), l_edge)
        l_none = np.where(b, l_none * np.where(a == 1, one_none, zero_none), l_none)
    prob = l_edge * s / (l_edge * s + l_none * (1 - s))
    np.fill_diagonal(prob, 0.0)
    iu, ju = np.nonzero(np.triu(prob >= tau, k=1))
    edges = np.stack([iu, ju], axis=1).astype(np.int64)
    w = np.where(prob >= 0.5, prob, 0.0)
    total = w.sum(axis=1)
    out = xf.copy()
    for _ in range(steps):
        agg = w @ out
        out = np.where(total[:, None] > 0, agg / np.where(total > 0, total, 1)[:, None], out)
    return prob, edges, out.astype(np.float32)


def unstreamed_features(
    x0: np.ndarray, i: np.ndarray, j: np.ndarray, prob: np.ndarray, steps: int
) -> np.ndarray:
    """Algorithm 3 on the sparse weights as one whole product per step (the server's former,
    unstreamed form): float64 X, W @ X with W the symmetric P over pairs with P ≥ 0.5."""
    n = x0.shape[0]
    x = np.asarray(x0, dtype=np.float64)
    sel = prob >= 0.5
    w = sp.csr_matrix(
        (np.r_[prob[sel], prob[sel]], (np.r_[i[sel], j[sel]], np.r_[j[sel], i[sel]])),
        shape=(n, n),
    )
    w.sum_duplicates()
    w.sort_indices()
    total = np.asarray(w.sum(axis=1)).ravel()
    has = total > 0
    for _ in range(steps):
        x = np.where(has[:, None], (w @ x) / np.where(has, total, 1.0)[:, None], x)
    return x.astype(np.float32)
