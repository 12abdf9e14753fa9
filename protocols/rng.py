"""Explicit random streams.

Every random draw in ldpgraph comes from a generator derived from (run seed, node id, round,
purpose) for a node's report, or from (run seed, stage) for a server-side stage. The same seed
therefore gives the same report whether the node runs as a Flower client, in a batch or in a
vectorised loop, and no code touches a global random state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

#: Purposes of a node's streams; each gets its own independent stream so that, e.g., the
#: adjacency report of a node does not change when the feature mechanism changes.
ADJACENCY = 1
FEATURES = 2
DEGREE = 3
#: Asymmetric RR's keep-or-drop draw on each reported 1 (``hogs-arr``): its own stream, so
#: the RR draws on ADJACENCY are HoGS's for the same seed whatever the sampling probability.
SAMPLING = 4


def _stage_key(stage: str) -> int:
    return int.from_bytes(hashlib.sha256(stage.encode()).digest()[:8], "little")


def node_rng(seed: int, node_id: int, round_: int, purpose: int) -> np.random.Generator:
    """The generator node ``node_id`` uses in round ``round_`` for ``purpose``."""
    if seed < 0 or node_id < 0 or round_ < 0:
        raise ValueError("seed, node id and round must be non-negative")
    return np.random.Generator(
        np.random.PCG64(np.random.SeedSequence([seed, node_id, round_, purpose]))
    )


def stage_rng(seed: int, stage: str) -> np.random.Generator:
    """The generator of a server-side stage (``"split"``, ``"synthetic-graph"``, …)."""
    if seed < 0:
        raise ValueError("seed must be non-negative")
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, _stage_key(stage)])))


def stage_seed(seed: int, stage: str) -> int:
    """A 63-bit integer seed for libraries that want one (torch), derived like stage_rng."""
    return int(stage_rng(seed, stage).integers(0, 2**63 - 1))


# -- Many nodes' streams at once -------------------------------------------------------------
# Building a node's generator through ``np.random.SeedSequence`` costs ~10 µs, most of it
# Python-level work in SeedSequence; at 10^6 nodes and two streams each that alone is ~20 s.
# The words SeedSequence hands PCG64 are a fixed, documented hash of the entropy (NEP 19 keeps
# it stable), so they are computed here for a whole batch of nodes with numpy and handed to
# PCG64 through numpy's own seed-sequence interface (``ISeedSequence``): the generators are
# those of :func:`node_rng`, draw for draw (tests compare them, and :func:`batch_streams_exact`
# checks a sample at run time), for ~1 µs each.

_MASK32 = 0xFFFFFFFF
_POOL = 4  # SeedSequence's default pool size (uint32 words)
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_XSHIFT = 16


def _int_words(value: int) -> list[int]:
    """SeedSequence's little-endian uint32 words of a non-negative int (0 is one word)."""
    if value < 0:
        raise ValueError("seed, node id and round must be non-negative")
    words = [value & _MASK32] if value == 0 else []
    while value > 0:
        words.append(value & _MASK32)
        value >>= 32
    return words


def _hash_consts(count: int, init: int, mult: int) -> list[int]:
    """The running hash constant before each hashmix: it depends on the call count only."""
    out, h = [], init
    for _ in range(count):
        out.append(h)
        h = (h * mult) & _MASK32
    return out


def _seed_words(entropy: np.ndarray) -> np.ndarray:
    """``SeedSequence(e).generate_state(4, np.uint64)`` for every row ``e`` of the uint32
    matrix ``entropy`` (rows of equal length), vectorised over the rows (uint32 arithmetic
    wraps modulo 2^32, as SeedSequence's C code does)."""
    rows, length = entropy.shape
    ent = np.ascontiguousarray(entropy.T, dtype=np.uint32)
    shift = np.uint32(_XSHIFT)
    extra = max(length - _POOL, 0)
    consts = iter(_hash_consts(_POOL + _POOL * (_POOL - 1) + extra * _POOL, _INIT_A, _MULT_A))

    def hashmix(value: np.ndarray) -> np.ndarray:
        h = next(consts)
        v = value ^ np.uint32(h)
        v *= np.uint32((h * _MULT_A) & _MASK32)
        v ^= v >> shift
        return v

    def mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        r = np.uint32(_MIX_L) * x
        r -= np.uint32(_MIX_R) * y
        r ^= r >> shift
        return r

    zero = np.zeros(rows, dtype=np.uint32)
    pool = [hashmix(ent[i] if i < length else zero) for i in range(_POOL)]
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    for src in range(_POOL, length):
        for dst in range(_POOL):
            pool[dst] = mix(pool[dst], hashmix(ent[src]))
    state = np.empty((rows, 8), dtype=np.uint32)
    for i, h in enumerate(_hash_consts(8, _INIT_B, _MULT_B)):
        v = pool[i % _POOL] ^ np.uint32(h)
        v *= np.uint32((h * _MULT_B) & _MASK32)
        v ^= v >> shift
        state[:, i] = v
    # Two little-endian uint32 words make one uint64 (as generate_state views them).
    return state.astype("<u4").view("<u8").astype(np.uint64)


def stream_words(
    seeds: int | Sequence[int], nodes: np.ndarray, round_: int, purpose: int
) -> np.ndarray:
    """The (len(nodes), 4) uint64 words :func:`node_rng` seeds PCG64 with, for every node of
    ``nodes`` (``seeds``: one run seed for all, or one per node)."""
    nodes = np.asarray(nodes, dtype=np.int64).reshape(-1)
    if nodes.size and (nodes.min() < 0 or nodes.max() > _MASK32):
        raise ValueError("node ids must be in [0, 2^32)")
    tail = _int_words(int(round_)) + _int_words(int(purpose))
    if isinstance(seeds, int | np.integer):
        heads = [_int_words(int(seeds))]
    else:
        heads = [_int_words(int(s)) for s in seeds]
        if len(heads) != nodes.size:
            raise ValueError(f"{len(heads)} seeds for {nodes.size} nodes")
    out = np.empty((nodes.size, 4), dtype=np.uint64)
    # Rows of one entropy length hash together: a run seed is one group; OS-entropy seeds
    # (one per node) are 4 words long but for one in 2^32.
    groups: dict[int, list[int]] = {}
    for i, words in enumerate(heads):
        groups.setdefault(len(words), []).append(i)
    for length, idx in groups.items():
        rows = np.arange(nodes.size) if len(heads) == 1 else np.asarray(idx, dtype=np.int64)
        ent = np.empty((rows.size, length + 1 + len(tail)), dtype=np.uint32)
        ent[:, :length] = heads[0] if len(heads) == 1 else [heads[i] for i in idx]
        ent[:, length] = nodes[rows]
        ent[:, length + 1 :] = tail
        out[rows] = _seed_words(ent)
    return out


class _PresetState(np.random.bit_generator.ISeedSequence):
    """numpy's seed-sequence interface answering with words computed beforehand."""

    __slots__ = ("words",)

    def __init__(self, words: np.ndarray) -> None:
        self.words = words

    def generate_state(self, n_words: int, dtype=np.uint32) -> np.ndarray:
        if n_words != 4 or np.dtype(dtype) != np.uint64:
            raise ValueError("preset words serve PCG64 (4 uint64 words) only")
        return self.words


def generator_from_words(words: np.ndarray) -> np.random.Generator:
    """The generator PCG64 builds from one row of :func:`stream_words`."""
    return np.random.Generator(np.random.PCG64(_PresetState(words)))


def batch_streams_exact() -> bool:
    """Whether :func:`stream_words` reproduces :func:`node_rng` in this numpy (checked once per
    process on a few streams; the batched client steps fall back to node_rng when not)."""
    global _EXACT
    if _EXACT is None:
        cases = [(0, 0, 0, ADJACENCY), (7, 123456, 1, FEATURES), (2**64 + 3, 2**32 - 1, 0, DEGREE)]
        _EXACT = all(
            np.array_equal(
                generator_from_words(stream_words(s, np.array([v]), r, p)[0]).integers(0, 2**63, 4),
                node_rng(s, v, r, p).integers(0, 2**63, 4),
            )
            for s, v, r, p in cases
        )
    return _EXACT


_EXACT: bool | None = None
