"""The device kernels of HoGS's torch curator (:mod:`.hogs_torch`): the similarity join's
threshold, pair lookup, popcount, cosine, Eq. (9)'s posterior and row chunking, each the same
sequence of float64 operations as the numpy path's so the two agree (see :mod:`.hogs_torch`).

Only the server imports this module: the client's import path stays free of torch.
"""

from __future__ import annotations

import numpy as np
import torch

from .posterior import likelihoods, similarity_threshold

__all__ = [
    "device_posterior",
    "host_tensor",
    "is_pair",
    "join_threshold",
    "pair_cosine",
    "popcount",
    "row_spans",
]


def join_threshold(
    threshold: float, observed: np.ndarray, p: float, mu: float = 1.0
) -> float | None:
    """The lowest similarity at which a pair with no reported 1 can reach ``threshold``: the
    (0,0) threshold when two nodes reported, the (0,1) one when a node is missing; None when
    no such pair has an observed bit (the numpy path's rule)."""
    n_obs = int(observed.sum())
    n_miss = observed.size - n_obs
    found = []
    if n_obs >= 2:
        found.append(similarity_threshold(threshold, 0, 2, p, mu))
    if n_obs >= 1 and n_miss >= 1:
        found.append(similarity_threshold(threshold, 0, 1, p, mu))
    return min(found) if found else None


def is_pair(sorted_keys: torch.Tensor, keys: np.ndarray) -> np.ndarray:
    """Whether each of ``keys`` (i·n + j) is among the ascending ``sorted_keys``."""
    if sorted_keys.numel() == 0 or keys.size == 0:
        return np.zeros(keys.shape, dtype=bool)
    k = torch.from_numpy(keys).to(sorted_keys.device)
    at = torch.searchsorted(sorted_keys, k).clamp_(max=sorted_keys.numel() - 1)
    return (sorted_keys[at] == k).cpu().numpy()


_M1, _M2, _M4 = 0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F


def popcount(w: torch.Tensor) -> torch.Tensor:
    """Set bits of each row of int64 words (torch has no popcount): the SWAR bit count of
    every word, summed over the row. Every mask is clear of the sign bit, so the arithmetic
    shifts of negative words count right too."""
    w = w - ((w >> 1) & _M1)
    w = (w & _M2) + ((w >> 2) & _M2)
    w = (w + (w >> 4)) & _M4
    w = w + (w >> 8)
    w = w + (w >> 16)
    w = w + (w >> 32)
    return (w & 0x7F).sum(dim=-1)


def host_tensor(a: np.ndarray) -> torch.Tensor:
    """``a`` as a CPU tensor sharing its memory, copied first when numpy marks it read-only
    (torch warns about those)."""
    a = np.ascontiguousarray(a)
    return torch.from_numpy(a if a.flags.writeable else a.copy())


def pair_cosine(dots: torch.Tensor, norm: torch.Tensor, i: torch.Tensor, j: torch.Tensor):
    """s_ij from float64 dot products, 0 where either row is all-zero (as numpy's)."""
    denom = norm[i] * norm[j]
    ok = denom > 0
    return torch.where(ok, dots / torch.where(ok, denom, 1.0), 0.0)


def device_posterior(
    s: torch.Tensor, ones: torch.Tensor, zeros: torch.Tensor, p: float, mu: float = 1.0
):
    """Eq. (9) on the device: the same table and the same float64 operations, in the same
    order, as :func:`~ldpgraph.protocols.ldp.posterior.posterior`."""
    l_edge, l_none = likelihoods(p, mu)
    idx = ones * 3 + zeros
    le = torch.from_numpy(l_edge.ravel()).to(s.device)[idx]
    ln = torch.from_numpy(l_none.ravel()).to(s.device)[idx]
    num = le * s
    return num / (num + ln * (1.0 - s))


def row_spans(indptr: np.ndarray, most: int) -> list[tuple[int, int]]:
    """Consecutive row ranges holding at most ``most`` entries each (a row with more is a
    range of its own)."""
    n = indptr.size - 1
    spans = []
    r0 = 0
    while r0 < n:
        r1 = int(np.searchsorted(indptr, indptr[r0] + most, side="right")) - 1
        r1 = min(n, max(r1, r0 + 1))
        spans.append((r0, r1))
        r0 = r1
    return spans
