"""Sorted distinct values of integer arrays, by a sort.

numpy 2.3+ answers a plain ``np.unique`` (and ``union1d``) on integers with a hash table and
sorts afterwards: on the int64 edge keys of a 10^5-node release that is ~12× slower than one
sort and a neighbour comparison, which give the same array. numpy only (client import path).
"""

from __future__ import annotations

import numpy as np


def unique_ints(values: np.ndarray) -> np.ndarray:
    """The sorted distinct entries of a 1-D integer array (``np.unique(values)``)."""
    out = np.sort(np.asarray(values).reshape(-1))
    if out.size < 2:
        return out
    first = np.empty(out.shape[0], dtype=bool)
    first[0] = True
    np.not_equal(out[1:], out[:-1], out=first[1:])
    return out[first]


def union_ints(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sorted distinct entries of two integer arrays (``np.union1d(a, b)``)."""
    return unique_ints(np.concatenate([np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)]))
