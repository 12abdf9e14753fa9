"""HoGS's edge posterior P_ij of Eq. (9) from the two reported bits and the feature similarity.

Shared by the numpy curator (:mod:`.hogs`) and the torch one (:mod:`.hogs_torch`), so both
evaluate the same table and the same thresholds.
"""

from __future__ import annotations

import numpy as np


def bit_likelihoods(p: float, mu: float = 1.0) -> tuple[float, float, float, float]:
    """Pr[1 | edge], Pr[0 | edge], Pr[1 | no edge], Pr[0 | no edge] of one reported bit.

    Warner RR flips the bit with probability p; asymmetric RR (``hogs-arr``) then keeps a
    reported 1 with probability ``mu`` and turns it into a 0 otherwise. So a 1 is reported
    with (1−p)·μ under an edge and p·μ under none, a 0 with 1 − (1−p)·μ and 1 − p·μ. The
    zeros' probabilities are written p + (1−p)(1−μ) and (1−p) + p(1−μ) (equal in exact
    arithmetic) so that μ = 1 gives p and 1−p bit for bit, i.e. plain RR's table.
    """
    q = 1.0 - p
    return q * mu, p + q * (1.0 - mu), p * mu, q + p * (1.0 - mu)


def likelihoods(p: float, mu: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Tables l[ones, zeros] and l'[ones, zeros] of Eqs. (7)–(8), generalised to pairs where a
    bit is missing: each observed bit contributes Pr[bit | edge] under an edge and
    Pr[bit | no edge] under a non-edge (:func:`bit_likelihoods`), and a missing bit contributes
    1. ``mu``: the probability a node keeps a reported 1 (asymmetric RR; 1 for HoGS).

    With μ = 1 and both bits observed this is the paper's table: (1,1) → (1−p)², p²;
    (1,0) → p(1−p) for both; (0,0) → p², (1−p)². With one bit b observed and the other missing
    (its node did not reply), the likelihood of b alone is Pr[b | edge] = 1−p if b = 1 else p,
    and Pr[b | no edge] = p if b = 1 else 1−p, so P = (1−p)s / ((1−p)s + p(1−s)) for a reported
    1 and P = p·s / (p·s + (1−p)(1−s)) for a reported 0. With no bit observed, P = s (the
    prior). With μ < 1 a reported 1 keeps its likelihood ratio (1−p)/p, while a reported 0
    says less: its ratio (p + (1−p)(1−μ)) / (1 − p·μ) tends to 1 as μ → 0.
    """
    e1, e0, n1, n0 = bit_likelihoods(p, mu)
    l_edge = np.array([[1.0, e0, e0 * e0], [e1, e1 * e0, np.nan], [e1 * e1, np.nan, np.nan]])
    l_none = np.array([[1.0, n0, n0 * n0], [n1, n1 * n0, np.nan], [n1 * n1, np.nan, np.nan]])
    return l_edge, l_none


def posterior(
    s: np.ndarray, ones: np.ndarray, zeros: np.ndarray, p: float, mu: float = 1.0
) -> np.ndarray:
    """P_ij of Eq. (9) for pairs with ``ones`` reported 1-bits and ``zeros`` reported 0-bits
    (``mu``: see :func:`likelihoods`)."""
    l_edge, l_none = likelihoods(p, mu)
    le = l_edge[ones, zeros]
    ln = l_none[ones, zeros]
    num = le * s
    return num / (num + ln * (1.0 - s))


def similarity_threshold(t: float, ones: int, zeros: int, p: float, mu: float = 1.0) -> float:
    """The s above which P ≥ t, for a pair with the given bits: t·l' / (l(1−t) + t·l').

    For μ = 1: (1,1): t / (t + (1−t)r), (1,0): t, (0,0): t·r / (t·r + 1 − t), with
    r = ((1−p)/p)². For μ < 1, (1,1) is unchanged, (1,0) falls below t and (0,0) falls from
    near 1 towards t (reported zeros carry less evidence against an edge).
    """
    l_edge, l_none = likelihoods(p, mu)
    le, ln = l_edge[ones, zeros], l_none[ones, zeros]
    return float(t * ln / (le * (1.0 - t) + t * ln))
