"""Stage lines from inside long phases, without a library module printing on its own.

A central strategy's APPR pass, DP-SGD epochs or GAN lanes can run for minutes inside one call
of ``release``. Those loops call :func:`stage` (a one-line message) or wrap their iterations in
:func:`steps`; the message goes to whoever :func:`listening` installed (``ldpgraph run``'s
``[  12.3s] ...`` printer) and nowhere when nobody listens, so a library user stays silent and
tests see nothing. Messages carry no private value: only phase names and counts the caller
already knows (epoch 3/50, row block 7/40).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")

_LISTENER: ContextVar[Callable[[str], None] | None] = ContextVar("ldpgraph_progress", default=None)
#: At most one line per this many seconds from one :func:`steps` loop (the last step always says).
EVERY_S = 2.0


def stage(message: str) -> None:
    """Say ``message`` to the listener, if any."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(message)


def active() -> bool:
    """Whether someone listens (so a loop may skip building messages otherwise)."""
    return _LISTENER.get() is not None


@contextmanager
def listening(listener: Callable[[str], None] | None) -> Iterator[None]:
    """Route :func:`stage` lines to ``listener`` inside the ``with`` block (``None``: silence)."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def steps(
    items: Iterable[T], label: str, total: int | None = None, every_s: float = EVERY_S
) -> Iterator[T]:
    """Yield ``items`` and say ``"{label} i/total"`` at most every ``every_s`` seconds.

    Args:
        items: the loop's iterable.
        label: what one step is, e.g. ``"DP-SGD epoch"``.
        total: the number of steps (``len(items)`` when it has one).
        every_s: the least time between two lines; the final step always says.
    """
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    if not active():
        yield from items
        return
    last = time.perf_counter()
    count = 0
    for item in items:
        yield item
        count += 1
        now = time.perf_counter()
        if now - last >= every_s or (total is not None and count == total):
            stage(f"{label} {count}/{total}" if total is not None else f"{label} {count}")
            last = now
