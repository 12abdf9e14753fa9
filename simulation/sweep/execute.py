"""Executing a sweep's units: in this process, in a pool of worker processes, or (through
:mod:`.on_ray`) as tasks on a Ray cluster. A unit collects its reports once, reconstructs once
per set of server keys and trains every training on its release, recording each in the store
as soon as it ends (``claim`` before, ``finish`` or ``fail`` after)."""

from __future__ import annotations

import multiprocessing as mp
import os
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from ..config import RunConfig
from .plan import Training, Unit, _server_key
from .report import PhaseStats

_GRAPHS: dict[tuple[str, str], Any] = {}


def _graph(cfg: RunConfig) -> Any:
    from ..datasets import load_dataset

    key = (cfg.dataset, cfg.data_root)
    if key not in _GRAPHS:
        _GRAPHS.clear()  # one graph at a time per process
        _GRAPHS[key] = load_dataset(cfg.dataset, cfg.data_root or None)
    return _GRAPHS[key]


def run_unit(
    unit: Unit,
    store_path: str | Any,
    sweep: str,
    num_threads: int | None = 1,
    tick: Callable[[int], None] | Any = None,
) -> dict[str, int]:
    """Run the pending trainings of one unit; returns counts (collections, reconstructions,
    trained, failed, skipped). ``tick`` is a callable or a queue (``put``) told of each
    training finished or skipped. ``store_path`` may instead be an object with the store's
    ``is_done``/``claim``/``finish``/``fail`` (a Ray task hands its results to the driver)."""
    import contextlib

    from .. import pipeline
    from ..results.store import ResultsStore

    counts = {"collections": 0, "reconstructions": 0, "trained": 0, "failed": 0, "skipped": 0}
    opened = (
        ResultsStore(store_path)
        if isinstance(store_path, str | os.PathLike)
        else contextlib.nullcontext(store_path)
    )
    with opened as store:
        pending = [t for t in unit.trainings if not store.is_done(t.config)]
        counts["skipped"] = len(unit.trainings) - len(pending)
        if not pending:
            return counts
        first = RunConfig.from_mapping(pending[0].config)
        prepared = pipeline.prepare(first, graph=_graph(first))
        # One collection for every reconstruction of the unit, where that is sound.
        replay = pipeline.replay_for(first, prepared.graph)
        groups: dict[str, list[Training]] = {}
        for t in pending:
            groups.setdefault(_server_key(t.config), []).append(t)
        runner = _UnitRunner(store, sweep, prepared, replay, num_threads, counts, tick)
        for trainings in groups.values():
            runner.run_group(trainings)
    return counts


@dataclass
class _UnitRunner:
    """What the releases and trainings of one unit share: the open store, the prepared data,
    the replayable collection (None: each release collects its own) and the counts."""

    store: Any
    sweep: str
    prepared: Any
    replay: Any
    num_threads: int | None
    counts: dict[str, int]
    tick: Callable[[int], None] | Any

    def told(self, n: int = 1) -> None:
        if self.tick is None:
            return
        (self.tick.put if hasattr(self.tick, "put") else self.tick)(n)

    def run_group(self, trainings: list[Training]) -> None:
        """One release (the group shares its server keys) and every training on it. A bad
        release fails its trainings, and the sweep goes on."""
        from .. import pipeline

        store, sweep, prepared, replay = self.store, self.sweep, self.prepared, self.replay
        cfg0 = RunConfig.from_mapping(trainings[0].config)
        collects = replay is None or replay.replies is None
        try:
            release, timings = pipeline.release(
                cfg0, prepared.graph, replay=replay, split=prepared.split
            )
            self.counts["collections"] += collects
            self.counts["reconstructions"] += 1
        except Exception as exc:
            for t in trainings:
                if store.claim(t.config, sweep):
                    store.fail(t.config, f"release: {type(exc).__name__}: {exc}", sweep)
                    self.counts["failed"] += 1
                self.told()
            return
        for t in trainings:
            if store.claim(t.config, sweep):
                self.train(t, release, timings)
            self.told()

    def train(self, t: Training, release: Any, timings: Any) -> None:
        """Train and record one claimed training (a failure is recorded, not raised)."""
        from .. import pipeline

        prepared = self.prepared
        try:
            cfg = RunConfig.from_mapping(t.config)
            record = pipeline.train_release(
                cfg,
                prepared.original,
                prepared.split,
                release,
                timings,
                self.num_threads,
                held_out=prepared.held_out,
            )
            record["phase"] = t.phase
            record["entry"] = t.entry
            self.store.finish(t.config, record, self.sweep)
            self.counts["trained"] += 1
        except Exception as exc:
            self.store.fail(t.config, f"{type(exc).__name__}: {exc}", self.sweep)
            self.counts["failed"] += 1


def _execute(
    units: list[Unit],
    store_path: str,
    sweep: str,
    workers: int,
    bar: Any,
    stats: PhaseStats,
    ray_address: str = "",
) -> None:
    def add(c: dict[str, int]) -> None:
        stats.collections += c["collections"]
        stats.reconstructions += c["reconstructions"]
        stats.trained += c["trained"]
        stats.failed += c["failed"]

    if ray_address:  # units as tasks on an existing Ray cluster (see on_ray)
        from .on_ray import execute_on_ray

        try:
            execute_on_ray(units, store_path, sweep, ray_address, bar, add, run_unit)
        except KeyboardInterrupt:  # this process claims and records every run of the cluster
            mark_interrupted(store_path, sweep, {os.getpid()})
            raise
        return
    tick = bar.update if bar is not None else None
    if workers <= 0:  # in this process (tests, debugging)
        try:
            for u in units:
                add(run_unit(u, store_path, sweep, 1, tick))
        except KeyboardInterrupt:
            mark_interrupted(store_path, sweep, {os.getpid()})
            raise
        return
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager:
        queue = manager.Queue()
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            try:
                futures = {pool.submit(run_unit, u, store_path, sweep, 1, queue) for u in units}
                while futures:
                    done, futures = wait(futures, timeout=0.5, return_when=FIRST_COMPLETED)
                    _drain(queue, bar)
                    for f in done:
                        add(f.result())
                _drain(queue, bar)
            except KeyboardInterrupt:
                _stop_pool(pool, store_path, sweep)
                raise


def _stop_pool(pool: ProcessPoolExecutor, store_path: str, sweep: str) -> None:
    """Ctrl-C: mark the runs this sweep's processes were running as interrupted at once, then
    stop the workers (ours, by pid) instead of waiting for their units to end."""
    workers = dict(getattr(pool, "_processes", None) or {})
    mark_interrupted(store_path, sweep, {os.getpid(), *workers})
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers.values():
        if process.is_alive():
            process.terminate()


def mark_interrupted(store_path: str, sweep: str, pids: set[int]) -> None:
    """Mark the 'running' rows of these processes as interrupted (never raises: the sweep is
    being stopped, and a row left 'running' is still taken over once its owner is gone)."""
    from ..results.store import ResultsStore

    try:
        with ResultsStore(store_path, create=False, timeout=5.0) as store:
            store.mark_interrupted(sweep, pids)
    except Exception:  # noqa: BLE001 - best effort while stopping
        pass


def _drain(queue: Any, bar: Any) -> None:
    import queue as q

    n = 0
    while True:
        try:
            n += queue.get_nowait()
        except q.Empty:
            break
    if bar is not None and n:
        bar.update(n)
