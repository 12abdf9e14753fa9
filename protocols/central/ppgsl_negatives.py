"""PPGSL's surrogate negatives (issue 35): one set of uniform non-links per surrogate epoch, 5 000
sets a release at the paper's defaults, drawn with exactly the draws and the result of the shared
sampler :func:`.baselines.sample_free_pairs` (a test holds it), only faster. Split from
:mod:`.ppgsl_model`, which re-exports the names."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import more_free_pairs
from .baselines import sample_free_pairs


class PairTable:
    """Per-key tables over all n² keys for :func:`fresh_negatives` on a graph small enough
    (n² ≤ :attr:`MAX_KEYS`): the taken pairs as a mask, and a scratch slot per key that finds
    repeated draws without sorting. Built once per learner; :meth:`reset` per retrain."""

    MAX_KEYS = 1 << 24  # 16 MiB of mask and 64 MiB of slots at most (n ≤ 4 096)

    def __init__(self, n: int) -> None:
        self.taken = np.zeros(n * n, dtype=bool)
        self.slot = np.empty(n * n, dtype=np.int32)
        self._idx = np.zeros(0, dtype=np.int32)

    @classmethod
    def fits(cls, n: int) -> bool:
        return n * n <= cls.MAX_KEYS

    def reset(self, taken: np.ndarray) -> PairTable:
        self.taken[:] = False
        self.taken[taken] = True
        return self

    def first_free(
        self, head: np.ndarray, n: int, distinct: np.ndarray | None = None
    ) -> np.ndarray:
        """The mask of ``head``'s keys that are the first occurrence of their key, not a
        self-pair and not taken (in draw order); ``distinct``: the mask u ≠ v of the draws,
        when the caller has it (else from the keys)."""
        idx = self._arange(len(head))
        self.slot[head] = idx  # a repeated key keeps one of its positions (whichever)
        win = self.slot[head]
        keep = win == idx
        lost = ~keep
        if lost.any():  # every occurrence of a repeated key: the losers and their winners
            dup = np.unique(np.concatenate([np.flatnonzero(lost), win[lost]]))
            _, first = np.unique(head[dup], return_index=True)
            keep[dup] = False
            keep[dup[first]] = True
        keep &= ((head // n) != (head % n)) if distinct is None else distinct
        keep &= ~self.taken[head]
        return keep

    def _arange(self, m: int) -> np.ndarray:
        """0 … m−1 as int32, kept between calls (the same m every epoch of a retrain)."""
        if len(self._idx) < m:
            self._idx = np.arange(m, dtype=np.int32)
        return self._idx[:m]


def fresh_negatives(
    n: int,
    count: int,
    taken: np.ndarray,
    rng: np.random.Generator,
    table: PairTable | None = None,
) -> np.ndarray:
    """:func:`.baselines.sample_free_pairs` with the same draws and the same result, faster
    where it runs 5 000 times a release (the surrogate's negatives, one set per epoch): its
    first batch's rejection and first-occurrence de-duplication at once — with ``table`` (the
    same ``taken``, :meth:`PairTable.reset`) by per-key lookups, else in one stable sort with
    the membership test on the sorted keys — and only a prefix of the batch examined when that
    already holds ``count`` free distinct pairs (the whole batch is still drawn, so the
    generator's stream is unchanged). Any other case is the shared function's own loop."""
    total = n * (n - 1) // 2
    if count <= 0 or total - len(taken) < 4 * count:
        return sample_free_pairs(n, count, taken, rng)
    b = 2 * count + 16
    u, v = rng.integers(0, n, size=b), rng.integers(0, n, size=b)
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    keys = lo * n + hi
    for m in (min(b, count + count // 8 + 64), b):
        head = keys[:m]
        if table is not None:
            keep = table.first_free(head, n, lo[:m] != hi[:m])
            at = np.flatnonzero(keep)
            if len(at) >= count:  # the usual case: the pairs are the ends already drawn
                at = at[:count]
                return np.stack([lo[at], hi[at]], axis=1)
            if m == b:
                found = head[at]
                break
            continue
        order = np.argsort(head, kind="stable")
        ranked = head[order]
        keep = np.ones(m, dtype=bool)
        keep[1:] = ranked[1:] != ranked[:-1]  # the first occurrence of each key
        keep &= (ranked // n) != (ranked % n)  # u = v
        if len(taken):
            at = np.minimum(np.searchsorted(taken, ranked), len(taken) - 1)
            keep &= taken[at] != ranked
        if keep.sum() >= count or m == b:
            found = head[np.sort(order[keep])]
            break
    # rare: the shared function's later batches, continued exactly
    return more_free_pairs(found, n, count, taken, rng)


def negatives_tensor(
    n: int, count: int, taken: np.ndarray, rng: np.random.Generator, table: Any, dev: Any
) -> Any:
    """One epoch's negatives (:func:`fresh_negatives`) as a tensor on ``dev``."""
    import torch

    return torch.as_tensor(fresh_negatives(n, count, taken, rng, table), device=dev)
