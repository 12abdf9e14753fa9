"""Progress lines on stderr, timed from the command's start."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


def stage_printer(quiet: bool) -> Callable[[str], None]:
    """A ``say(msg)`` that prints ``[  12.3s] msg`` to stderr (nothing when ``quiet``)."""
    start = time.perf_counter()

    def say(msg: str) -> None:
        if quiet:
            return
        line = f"[{time.perf_counter() - start:7.1f}s] {msg}"
        bars = sys.modules.get("tqdm")  # a bar on screen (the epochs'): print above it
        if bars is not None and getattr(bars.tqdm, "_instances", None):
            bars.tqdm.write(line, file=sys.stderr)
            sys.stderr.flush()
        else:
            print(line, file=sys.stderr, flush=True)

    return say


#: Third-party warnings that say nothing a user of ``ldpgraph`` can act on (category, message
#: regex): PyG's notes on optional compiled packages it does without, torch's and Click's
#: deprecations of APIs its own dependencies call. Matched by message, never all warnings.
NOISE = (
    (UserWarning, r"An issue occurred while importing '(pyg-lib|torch-(scatter|sparse|cluster))'"),
    (UserWarning, r"'torch-(cluster|spline-conv)' is no longer necessary"),
    (DeprecationWarning, r"`torch\.jit\.script` is deprecated"),
    (UserWarning, r"TypedStorage is deprecated"),
    (DeprecationWarning, r"'click\.utils\.get_(binary|text)_stream' is deprecated"),
)


def quiet_third_party_warnings() -> None:
    """Hide :data:`NOISE` on stderr for this command (the CLI's entry only: a library user
    keeps every warning)."""
    import warnings

    for category, message in NOISE:
        warnings.filterwarnings("ignore", message=message, category=category)
