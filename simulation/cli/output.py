"""Progress lines on stderr, timed from the command's start."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


def stage_printer(quiet: bool) -> Callable[[str], None]:
    """A ``say(msg)`` that prints ``[  12.3s] msg`` to stderr (nothing when ``quiet``)."""
    start = time.perf_counter()

    def say(msg: str) -> None:
        if not quiet:
            print(f"[{time.perf_counter() - start:7.1f}s] {msg}", file=sys.stderr, flush=True)

    return say
