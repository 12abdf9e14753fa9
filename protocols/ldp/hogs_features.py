"""HoGS's feature reconstruction (the HoGS paper, Xu et al., Algorithm 3): ``steps`` rounds of
P-weighted neighbour averaging over V_i = {j : P_ij ≥ 0.5}, streamed by blocks of rows. Blink's
and LDPGen's feature-private variants reuse it with their own link weights. numpy and scipy
only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .blocks import map_blocks
from .reported_pairs import row_blocks

#: Feature reconstruction aggregates over V_i = {j : P_ij >= FR_THRESHOLD} (paper: 0.5).
FR_THRESHOLD = 0.5
#: Bytes of gathered float64 feature rows per block of the feature reconstruction.
FR_BLOCK_BYTES = 1 << 23


def reconstruct_features(
    x0: np.ndarray,
    i: np.ndarray,
    j: np.ndarray,
    prob: np.ndarray,
    steps: int,
    block_rows: int | None = None,
) -> np.ndarray:
    """Algorithm 3, ``steps`` times: X_i ← Σ_{j∈V_i} P_ij X_j / Σ_{j∈V_i} P_ij, where V_i holds
    the j with P_ij ≥ 0.5; a node with empty V_i keeps its previous row. float64 inside,
    float32 out.

    Streamed by blocks of rows: a block gathers only the rows its neighbours hold (in float64)
    and writes its rows of the next X, so memory is x0, the output (float32; plus one float64
    X between steps, two from the third step on) and a few blocks, not several float64 copies
    of X. Each row's sum runs over its neighbours in order (scipy's sparse product, the same
    on every CPU), so the result does not depend on the blocks. Blocks go through
    :func:`.blocks.map_blocks`: every core (scipy's product and numpy's copies release the
    GIL), or the Ray curator's tasks.

    Args:
        x0: the n × d feature rows (any real dtype; 0/1 uint8 for the 1-bit reports).
        i, j, prob: the pairs i < j and their posteriors (as :func:`reconstruct_topology`).
        steps: how many averaging passes (the paper's l).
        block_rows: rows per block (default: :data:`FR_BLOCK_BYTES` of gathered rows).
    """
    x0 = np.asarray(x0)
    n, d = x0.shape
    budget = max(1, FR_BLOCK_BYTES // (8 * max(d, 1)))  # gathered rows per block
    if steps <= 0:
        out = np.empty((n, d), dtype=np.float32)
        for a, b in row_blocks(np.arange(n + 1), block_rows=block_rows or budget):
            out[a:b] = np.asarray(x0[a:b], dtype=np.float64)
        return out
    sel = prob >= FR_THRESHOLD
    rows = np.concatenate([i[sel], j[sel]])
    cols = np.concatenate([j[sel], i[sel]])
    vals = np.concatenate([prob[sel], prob[sel]])
    w = sp.csr_matrix((vals, (rows, cols)), shape=(n, n))
    del rows, cols, vals
    w.sum_duplicates()
    w.sort_indices()
    total = np.asarray(w.sum(axis=1)).ravel()
    has = total > 0
    denom = np.where(has, total, 1.0)
    if block_rows is None:
        # A row costs itself plus one gathered row per neighbour (at most).
        bounds = list(row_blocks(w.indptr + np.arange(n + 1), budget))
    else:
        bounds = list(row_blocks(w.indptr, block_rows=block_rows))
    src = x0
    for step in range(steps):
        dst = np.empty((n, d), dtype=np.float32 if step == steps - 1 else np.float64)
        _average_blocks(w, src, dst, has, denom, bounds)
        src = dst
    return src


def _average_blocks(
    w: sp.csr_matrix,
    src: np.ndarray,
    dst: np.ndarray,
    has: np.ndarray,
    denom: np.ndarray,
    bounds: list[tuple[int, int]],
) -> None:
    """One step of :func:`reconstruct_features`: dst[a:b] for every block [a, b), each block
    a :func:`.blocks.map_blocks` task (threads, or the Ray curator's tasks), written in order."""
    step = _AverageStep(w, src, has, denom)
    for (a, b), rows in zip(bounds, map_blocks(step.rows, bounds), strict=True):
        dst[a:b] = rows


@dataclass
class _AverageStep:
    """One averaging pass over the blocks' rows: picklable (an executor may ship it once to
    other processes or machines), and every block's rows depend only on ``w`` and ``src``."""

    w: sp.csr_matrix
    src: np.ndarray
    has: np.ndarray
    denom: np.ndarray

    def rows(self, bound: tuple[int, int]) -> np.ndarray:
        """The next X's rows a..b (float64)."""
        a, b = bound
        src = self.src
        own = np.asarray(src[a:b], dtype=np.float64)
        blk = self.w[a:b]
        if blk.nnz == 0:
            return own
        # A float64 X (every step after the first) is multiplied as it is; any other dtype
        # (the 0/1 reports) is converted only for the rows the block needs.
        if src.dtype == np.float64 and src.flags.c_contiguous:
            agg = blk @ src
        else:
            # The block's neighbours, renumbered in order: each row's terms keep their order.
            needed, local = np.unique(blk.indices, return_inverse=True)
            part = sp.csr_matrix((blk.data, local, blk.indptr), shape=(b - a, needed.size))
            agg = part @ np.asarray(src[needed], dtype=np.float64)
        return np.where(self.has[a:b, None], agg / self.denom[a:b, None], own)
