"""Seeded train/validation/test node splits.

The split depends only on (number of nodes, seed, fractions): it is drawn from the ``"split"``
stage stream, so every backend and every protocol sees the same nodes in the same split for a
given run seed, and changing any other random stage never moves a node between sets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ldpgraph.protocols.rng import stage_rng


@dataclass(frozen=True)
class Split:
    """Disjoint, sorted int64 node-index arrays."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray

    def masks(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Boolean train/val/test masks of length ``n`` (what PyG models index with)."""
        out = []
        for idx in (self.train, self.val, self.test):
            if idx.size and (idx.min() < 0 or idx.max() >= n):
                raise ValueError(f"split index out of range for n={n}")
            mask = np.zeros(n, dtype=bool)
            mask[idx] = True
            out.append(mask)
        return out[0], out[1], out[2]

    def sizes(self) -> tuple[int, int, int]:
        return int(self.train.size), int(self.val.size), int(self.test.size)


def make_split(num_nodes: int, seed: int, train: float = 0.5, val: float = 0.25) -> Split:
    """A random split of ``range(num_nodes)`` into train / val / test.

    Sizes: ``round(train * n)`` training nodes, ``round((train + val) * n) - n_train``
    validation nodes (halves rounded up), the rest test. Raises ValueError for fractions outside
    [0, 1] or summing above 1.
    """
    if isinstance(num_nodes, bool) or int(num_nodes) != num_nodes or num_nodes < 0:
        raise ValueError(f"num_nodes must be a non-negative integer, got {num_nodes!r}")
    for label, frac in (("train", train), ("val", val)):
        if not 0.0 <= float(frac) <= 1.0:
            raise ValueError(f"{label} fraction must be in [0, 1], got {frac!r}")
    if float(train) + float(val) > 1.0 + 1e-12:
        raise ValueError(f"train + val fractions must be <= 1, got {train} + {val}")
    n = int(num_nodes)
    # Round the cumulative boundaries half-up, so train + val = 1 leaves exactly no test nodes.
    n_train = min(int(np.floor(train * n + 0.5)), n)
    n_val = min(int(np.floor((train + val) * n + 0.5)), n) - n_train
    perm = stage_rng(seed, "split").permutation(n).astype(np.int64)
    return Split(
        train=np.sort(perm[:n_train]),
        val=np.sort(perm[n_train : n_train + n_val]),
        test=np.sort(perm[n_train + n_val :]),
    )
