"""map_blocks keeps order on threads and hands the work to an installed executor."""

from __future__ import annotations

from ldpgraph.protocols.ldp import blocks


def _square(x: int) -> int:
    return x * x


class _Recording:
    def __init__(self) -> None:
        self.seen: list[int] = []

    def map(self, fn, items):
        for item in items:
            self.seen.append(item)
            yield fn(item)


def test_threads_keep_order():
    items = list(range(50))
    assert list(blocks.map_blocks(_square, items, workers=4)) == [x * x for x in items]
    assert list(blocks.map_blocks(_square, items, workers=1)) == [x * x for x in items]


def test_installed_executor_runs_every_block_then_threads_again():
    rec = _Recording()
    with blocks.using(rec):
        assert list(blocks.map_blocks(_square, [3, 1, 2])) == [9, 1, 4]
    assert rec.seen == [3, 1, 2]
    assert list(blocks.map_blocks(_square, [5])) == [25]
    assert rec.seen == [3, 1, 2]


def test_feature_reconstruction_runs_its_blocks_on_the_executor():
    import numpy as np

    from ldpgraph.protocols.ldp.hogs_features import reconstruct_features

    rng = np.random.default_rng(0)
    n, d = 200, 6
    x = rng.integers(0, 2, (n, d), dtype=np.uint8)
    i = rng.integers(0, n - 1, 800)
    j = np.minimum(n - 1, i + rng.integers(1, 20, 800))
    prob = rng.uniform(0.3, 1.0, 800)
    ref = reconstruct_features(x, i, j, prob, steps=3, block_rows=17)
    rec = _Recording()
    with blocks.using(rec):
        got = reconstruct_features(x, i, j, prob, steps=3, block_rows=17)
    assert np.array_equal(ref, got) and got.dtype == np.float32
    assert len(rec.seen) == 3 * -(-n // 17)  # every block of every step
