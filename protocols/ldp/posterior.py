"""HoGS's edge posterior P_ij of Eq. (9) from the two reported bits and the feature similarity.

Shared by the numpy curator (:mod:`.hogs`) and the torch one (:mod:`.hogs_torch`), so both
evaluate the same table and the same thresholds.
"""

from __future__ import annotations

import numpy as np


def likelihoods(p: float) -> tuple[np.ndarray, np.ndarray]:
    """Tables l[ones, zeros] and l'[ones, zeros] of Eqs. (7)–(8), generalised to pairs where a
    bit is missing: each observed bit contributes (1−p or p) under an edge and (p or 1−p) under
    a non-edge, and a missing bit contributes 1.

    With both bits observed this is the paper's table: (1,1) → (1−p)², p²; (1,0) → p(1−p) for
    both; (0,0) → p², (1−p)². With one bit b observed and the other missing (its node did not
    reply), the likelihood of b alone is Pr[b | edge] = 1−p if b = 1 else p, and
    Pr[b | no edge] = p if b = 1 else 1−p, so P = (1−p)s / ((1−p)s + p(1−s)) for a reported 1
    and P = p·s / (p·s + (1−p)(1−s)) for a reported 0. With no bit observed, P = s (the prior).
    """
    q = 1.0 - p
    l_edge = np.array([[1.0, p, p * p], [q, p * q, np.nan], [q * q, np.nan, np.nan]])
    l_none = np.array([[1.0, q, q * q], [p, p * q, np.nan], [p * p, np.nan, np.nan]])
    return l_edge, l_none


def posterior(s: np.ndarray, ones: np.ndarray, zeros: np.ndarray, p: float) -> np.ndarray:
    """P_ij of Eq. (9) for pairs with ``ones`` reported 1-bits and ``zeros`` reported 0-bits."""
    l_edge, l_none = likelihoods(p)
    le = l_edge[ones, zeros]
    ln = l_none[ones, zeros]
    num = le * s
    return num / (num + ln * (1.0 - s))


def similarity_threshold(t: float, ones: int, zeros: int, p: float) -> float:
    """The s above which P ≥ t, for a pair with the given bits: t·l' / (l(1−t) + t·l').

    (1,1): t / (t + (1−t)r), (1,0): t, (0,0): t·r / (t·r + 1 − t), with r = ((1−p)/p)².
    """
    l_edge, l_none = likelihoods(p)
    le, ln = l_edge[ones, zeros], l_none[ones, zeros]
    return float(t * ln / (le * (1.0 - t) + t * ln))
