"""Where the curator's row blocks run: threads of this process, or an installed executor.

The curator's heavy loops (HoGS's posterior over reported pairs, the feature-similarity join)
are maps of one picklable function over independent row blocks whose results are combined in
order. :func:`map_blocks` runs them on this process's threads unless an executor was installed
with :func:`using` (the Ray curator installs one that runs each block as a Ray task), so the
same code gives the same edges on one core, every core, or a cluster.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class BlockExecutor(Protocol):
    """Runs ``fn`` over ``items`` elsewhere and yields the results in the items' order.

    ``fn`` is picklable (a module-level function or a bound method of a picklable object);
    an executor may ship it once and reuse it for every item.
    """

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> Iterator[R]: ...


_EXECUTOR: ContextVar[BlockExecutor | None] = ContextVar("ldpgraph_block_executor", default=None)


@contextmanager
def using(executor: BlockExecutor | None) -> Iterator[None]:
    """Run :func:`map_blocks` on ``executor`` inside the ``with`` block (``None``: threads)."""
    token = _EXECUTOR.set(executor)
    try:
        yield
    finally:
        _EXECUTOR.reset(token)


def map_blocks(fn: Callable[[T], R], items: Sequence[T], workers: int | None = None) -> Iterator[R]:
    """``map(fn, items)``, results in order: on the installed executor, else on threads."""
    executor = _EXECUTOR.get()
    if executor is not None:
        yield from executor.map(fn, items)
        return
    yield from threaded_in_order(fn, items, workers)


def usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def threaded_in_order(
    fn: Callable[[T], R], items: Sequence[T], workers: int | None = None
) -> Iterator[R]:
    """``map(fn, items)`` on ``workers`` threads (default: every usable core), results in
    order, at most two per thread in flight (a block's intermediates stay bounded)."""
    workers = min(len(items), usable_cores() if workers is None else workers)
    if workers <= 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending: deque = deque()
        for item in items:
            pending.append(pool.submit(fn, item))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
