"""HoGS's one-step feature reconstruction fused into the topology's scoring, so that the kept
pairs that are not edges are never held.

Algorithm 3 of the HoGS paper (Xu et al.) with l = 1 needs, for each row i, only
Σ_{j∈V_i} P_ij X_j and Σ_{j∈V_i} P_ij over V_i = {j : P_ij ≥ 0.5}. Both are sums over pairs, so
they can be accumulated as each block of pairs is scored (each pair {i, j} adds to row i and
to row j) and the pairs then dropped; only the edges (P ≥ τ) are kept. At 10^7 nodes the
topology keeps ~4·10^8 pairs with P ≥ 0.5 (16 bytes each held, ~40 while merging: ~15 GiB)
against ~7·10^7 edges; the accumulators cost n·d·4 + n·8 bytes (2.6 GiB at n = 10^7, d = 64).

The numerators are float32 (half the memory of float64: 2.56 against 5.12 GB at 10^7, d = 64;
the release is float32 anyway), each block's contribution is computed in float64 and added
once; the denominators are float64 (8 bytes a row). Each row's sum is therefore taken in another
order and with float32 partial sums: the features agree with the unfused path
(:func:`.hogs_features.reconstruct_features`) to float32 rounding, not to the bit, which is why
the topology fuses only once the kept pairs it holds pass :data:`FUSE_KEPT_PAIRS` (never in
the tests' and golden runs' sizes) and those that are not edges cost more than the sums
(:func:`worth_fusing`; so never at τ ≤ 0.5, where every kept pair is an edge). The edges are
the same pairs either way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .blocks import threaded_in_order
from .hogs_features import FR_THRESHOLD

#: Kept pairs (P ≥ min(τ, 0.5)) the topology holds before it fuses the one-step feature
#: reconstruction into its scoring (~160 MB held at 16 bytes a pair; 10^6 nodes at the 10^7
#: regime's μ keep 3.6·10^7).
FUSE_KEPT_PAIRS = 10**7
#: Bytes a held kept pair costs until the features are reconstructed: (i, j, P) held, ~40
#: while the kept pairs are merged into one sorted run.
PAIR_BYTES = 40
#: Bytes of one chunk's gathered float64 rows (two per pair) while accumulating.
FUSE_CHUNK_BYTES = 1 << 24
#: The numerators' dtype (module docstring).
FUSED_DTYPE = np.float32


def worth_fusing(non_edges: int, n: int, d: int) -> bool:
    """Whether the held kept pairs that are not edges (the only pairs fusing frees: the edges
    are held either way) cost more than the sums, n·d float32 and n float64. Never where
    τ ≤ 0.5 (HoGS's default): every kept pair is then an edge."""
    return non_edges * PAIR_BYTES > n * (d * np.dtype(FUSED_DTYPE).itemsize + 8)


@dataclass
class FusedAverage:
    """Σ_j P_ij X_j (float32) and Σ_j P_ij (float64) per row over the pairs added, each pair
    {i, j} once (the caller's duty), P ≥ :data:`.hogs_features.FR_THRESHOLD` only."""

    x0: np.ndarray
    num: np.ndarray
    den: np.ndarray

    @classmethod
    def of(cls, x0: np.ndarray) -> FusedAverage:
        n, d = x0.shape
        return cls(x0, np.zeros((n, d), dtype=FUSED_DTYPE), np.zeros(n, dtype=np.float64))

    def add(self, i: np.ndarray, j: np.ndarray, prob: np.ndarray) -> None:
        """Add the pairs (i, j, P) whose P ≥ 0.5 to both rows' sums. The chunks' products run
        on this process's threads (never on an installed executor: they read x0 in place) and
        are added here in order."""
        sel = prob >= FR_THRESHOLD
        i, j, prob = i[sel], j[sel], prob[sel]
        if i.size == 0:
            return
        step = max(1, FUSE_CHUNK_BYTES // (16 * max(self.x0.shape[1], 1)))
        chunks = [(a, min(i.size, a + step)) for a in range(0, i.size, step)]
        part = _Chunks(self.x0, i, j, prob)
        for rows, num, den in threaded_in_order(part.contribution, chunks):
            self.num[rows] += num
            self.den[rows] += den

    def features(self) -> np.ndarray:
        """The one-step rows (float32): the weighted average where a row has a neighbour, its
        own row of x0 otherwise (as Algorithm 3 and :func:`.hogs_features.reconstruct_features`).
        Written into the numerators' buffer: no second n × d array."""
        out = self.num
        has = self.den > 0
        n = out.shape[0]
        step = max(1, FUSE_CHUNK_BYTES // (8 * max(out.shape[1], 1)))
        for a in range(0, n, step):
            b = min(n, a + step)
            h = has[a:b]
            avg = out[a:b].astype(np.float64) / np.where(h, self.den[a:b], 1.0)[:, None]
            out[a:b] = np.where(h[:, None], avg, np.asarray(self.x0[a:b], dtype=np.float64))
        self.num = np.zeros((0, out.shape[1]), dtype=FUSED_DTYPE)
        return out


@dataclass
class _Chunks:
    """One add's pairs, cut into chunks whose contributions run on threads."""

    x0: np.ndarray
    i: np.ndarray
    j: np.ndarray
    prob: np.ndarray

    def contribution(self, bound: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The chunk's rows touched (sorted, int64), their Σ P X_j (float64) and Σ P."""
        a, b = bound
        i = self.i[a:b].astype(np.int64)
        j = self.j[a:b].astype(np.int64)
        p = self.prob[a:b].astype(np.float64)
        rows, at = np.unique(np.concatenate([i, j]), return_inverse=True)
        cols, src = np.unique(np.concatenate([j, i]), return_inverse=True)
        w = np.concatenate([p, p])
        m = sp.csr_matrix((w, (at, src)), shape=(rows.size, cols.size))
        num = m @ np.asarray(self.x0[cols], dtype=np.float64)
        den = np.bincount(at, weights=w, minlength=rows.size)
        return rows, num, den
