"""The statistics of the central audit (:mod:`.audit_central`): the δ-aware Clopper–Pearson
lower bound on ε from two worlds' hit counts, its ceiling at a number of draws, and the choice
of the event on a statistic (Bonferroni over a binary one's events; a first-half selection of a
real-valued one's threshold)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from .audit_stats import cp_lower, cp_upper

# The same (k, n, a) recurs for hundreds of thresholds of one statistic (a real-valued one
# tries every distinct value, in both directions and both orders): each beta quantile is
# computed once. Pure functions, so the bounds are unchanged.
_cp_lower = functools.lru_cache(maxsize=1 << 16)(cp_lower)
_cp_upper = functools.lru_cache(maxsize=1 << 16)(cp_upper)


def delta_epsilon_lower_bound(k1: int, n1: int, k0: int, n0: int, a: float, delta: float) -> float:
    """ln((p₁_lower − δ) / p₀_upper), each bound at 1 − a/2; −inf when p₁_lower ≤ δ."""
    lo = _cp_lower(int(k1), int(n1), a / 2.0) - delta
    if lo <= 0.0:
        return -math.inf
    return math.log(lo / _cp_upper(int(k0), int(n0), a / 2.0))


def ceiling(draws: int, a: float, delta: float) -> float:
    """The largest ε_lb any event can give at ``draws`` per world: always in one, never in the
    other. A claim at or above it cannot fail, whatever the mechanism does."""
    return max(0.0, delta_epsilon_lower_bound(draws, draws, 0, draws, a, delta))


@dataclass(frozen=True)
class Bound:
    """The best lower bound of one sample pair: ε_lb, the event, its counts."""

    epsilon_lower_bound: float
    event: str
    hits: tuple[int, int]  # (hits in the numerator world, hits in the denominator world)
    estimated_on: int


def _events(values: np.ndarray) -> list[tuple[float, bool]]:
    """Candidate events {s ≥ t} (``True``) and {s < t} (``False``) at the distinct values."""
    grid = np.unique(values)
    return [(float(t), up) for t in grid[1:] for up in (True, False)] or [(float(grid[0]), True)]


def _hits(s: np.ndarray, t: float, up: bool) -> int:
    return int((s >= t).sum() if up else (s < t).sum())


def _sorted_hits(s: np.ndarray, t: float, up: bool) -> int:
    """:func:`_hits` of a sorted ``s`` by bisection (the same count, no pass over ``s``)."""
    below = int(np.searchsorted(s, t, side="left"))  # how many are < t
    return len(s) - below if up else below


def best_bound(s0: np.ndarray, s1: np.ndarray, alpha: float, delta: float) -> Bound:
    """The lower bound on ε from the statistic's values in world 0 and world 1 (module doc)."""
    s0, s1 = np.asarray(s0, dtype=np.float64), np.asarray(s1, dtype=np.float64)
    both = np.concatenate([s0, s1])
    binary = np.unique(both).size <= 2
    if binary:
        sel0, sel1, est0, est1 = s0, s1, s0, s1
        events = _events(both)
        a = alpha / (2 * len(events))  # Bonferroni over the events and the two directions
    else:
        h0, h1 = len(s0) // 2, len(s1) // 2
        sel0, sel1, est0, est1 = s0[:h0], s1[:h1], s0[h0:], s1[h1:]
        events = _events(np.concatenate([sel0, sel1]))
        a = alpha
    best = (-math.inf, -1.0, 0, True, 1)
    sorted_sel = (np.sort(sel0), np.sort(sel1))
    for t, up in events:
        for num in (1, 0):  # which world is the numerator
            sn, sd = (sorted_sel[1], sorted_sel[0]) if num else sorted_sel
            kn, kd = _sorted_hits(sn, t, up), _sorted_hits(sd, t, up)
            lb = delta_epsilon_lower_bound(kn, len(sn), kd, len(sd), a, delta)
            ratio = (kn + 1) / (kd + 1)
            if (lb, ratio) > best[:2]:
                best = (lb, ratio, num, up, t)
    _, _, num, up, t = best
    en, ed = (est1, est0) if num else (est0, est1)
    kn, kd = _hits(en, t, up), _hits(ed, t, up)
    lb = max(0.0, delta_epsilon_lower_bound(kn, len(en), kd, len(ed), a, delta))
    op = "≥" if up else "<"
    event = f"s {op} {t:g} in D{num} over D{1 - num}"
    return Bound(lb, event, (kn, kd), len(en))
