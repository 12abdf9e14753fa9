"""Sorted int64 pair keys held in 4 bytes a key instead of 8.

The LSH join's bands are held whole until their key ranges are merged and scored
(:func:`.hogs_topology._score_lsh`): at 10^7 nodes ~6.6·10^8 verified keys i·n + j, 5.3 GB as
int64. A sorted key array is stored here as its low 32 bits (uint32) and, for each value of
the high bits, where its run starts (the high bits take at most n²/2^32 + 1 values: 23 284 at
n = 10^7), so the keys cost 4 bytes each; ranges are found and decoded exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_LOW = np.int64(0xFFFFFFFF)


@dataclass
class PackedKeys:
    """A sorted int64 key array (non-negative), as low words and the high words' run starts:
    the keys with high word h are ``low[start[h]:start[h + 1]]``."""

    low: np.ndarray
    start: np.ndarray

    @classmethod
    def pack(cls, key: np.ndarray) -> PackedKeys:
        """Pack ``key`` (sorted ascending, ≥ 0)."""
        if key.size and key[0] < 0:
            raise ValueError("packed keys must be non-negative")
        high = key >> 32
        top = int(high[-1]) if key.size else 0
        start = np.searchsorted(high, np.arange(top + 2, dtype=np.int64)).astype(np.int64)
        del high
        return cls((key & _LOW).astype(np.uint32), start)

    @property
    def size(self) -> int:
        return int(self.low.size)

    @property
    def nbytes(self) -> int:
        return int(self.low.nbytes + self.start.nbytes)

    def searchsorted(self, value: int) -> int:
        """The index of the first key ≥ ``value`` (``np.searchsorted(key, value)``)."""
        value = int(value)
        if value <= 0:
            return 0
        h = value >> 32
        if h >= self.start.size - 1:
            return self.size
        a, b = int(self.start[h]), int(self.start[h + 1])
        return a + int(np.searchsorted(self.low[a:b], value & 0xFFFFFFFF))

    def keys(self, a: int, b: int) -> np.ndarray:
        """The int64 keys at indices a..b−1."""
        return self.at(np.arange(a, b, dtype=np.int64))

    def at(self, idx: np.ndarray) -> np.ndarray:
        """The int64 keys at the indices ``idx``."""
        high = np.searchsorted(self.start, idx, side="right") - 1
        return (high.astype(np.int64) << 32) | self.low[idx].astype(np.int64)
