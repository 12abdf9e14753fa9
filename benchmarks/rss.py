"""Resident-memory sampling shared by the benchmarks (imported as ``rss`` when a benchmark runs
as ``python benchmarks/<name>.py``, whose directory is then first on ``sys.path``)."""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


def cpu_seconds(children: bool = False) -> float:
    """CPU time (user + system) of this process and, with ``children``, of its finished child
    processes (a collection's workers): on a loaded machine the steadier figure than wall time."""
    who = [resource.RUSAGE_SELF] + ([resource.RUSAGE_CHILDREN] if children else [])
    return sum(u.ru_utime + u.ru_stime for u in map(resource.getrusage, who))


def rss_bytes() -> int:
    """This process's resident set size now."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@dataclass
class PeakRss:
    """What :func:`peak_rss` measured: the RSS at the start, its sampled peak and the seconds."""

    start: int
    peak: int
    seconds: float = 0.0

    @property
    def added_mib(self) -> float:
        return round((self.peak - self.start) / 2**20, 1)

    @property
    def peak_mib(self) -> float:
        return round(self.peak / 2**20, 1)


@contextmanager
def peak_rss(interval: float = 0.005) -> Iterator[PeakRss]:
    """Time a block and sample this process's RSS every ``interval`` seconds on a thread (the
    peak of a numpy-heavy block is gone by the time it returns)."""
    now = rss_bytes()
    result = PeakRss(start=now, peak=now)
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            result.peak = max(result.peak, rss_bytes())
            stop.wait(interval)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    t0 = time.perf_counter()
    try:
        yield result
    finally:
        result.seconds = time.perf_counter() - t0
        stop.set()
        thread.join()
        result.peak = max(result.peak, rss_bytes())
