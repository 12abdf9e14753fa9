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


def peak_mib(who: int = resource.RUSAGE_SELF) -> float:
    """Peak resident set size (``/usr/bin/time -v``'s figure): of this process, or of the
    largest of its finished children."""
    return round(resource.getrusage(who).ru_maxrss / 1024, 1)


@contextmanager
def sampled(record: dict, name: str):
    """Seconds, CPU seconds (this process and its finished workers: on a loaded machine the
    steadier figure) and the peak RSS (sampled every 5 ms) of a block."""
    c0 = cpu_seconds(children=True)
    with peak_rss() as measured:
        yield
    record[f"{name}_s"] = round(measured.seconds, 3)
    record[f"{name}_cpu_s"] = round(cpu_seconds(children=True) - c0, 1)
    record[f"{name}_peak_mib"] = measured.peak_mib


class RssBetweenLines:
    """The RSS now and its peak since the previous progress line (sampled every 20 ms on a
    thread), so ``--progress`` shows where within a stage the memory goes."""

    def __init__(self, interval: float = 0.02) -> None:
        self.peak = rss_bytes()
        self._stop = threading.Event()
        self._interval = interval
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes())
            self._stop.wait(self._interval)

    def line(self) -> tuple[float, float]:
        """(RSS now, peak since the last call), GiB; starts the next interval."""
        now = rss_bytes()
        peak, self.peak = max(self.peak, now), now
        return now / 2**30, peak / 2**30

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
