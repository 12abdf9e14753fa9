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
