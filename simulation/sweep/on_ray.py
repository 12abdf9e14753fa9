"""``ldpgraph sweep --ray-address``: the sweep's units as tasks on an existing Ray cluster.

The same units as the process pool (:func:`.execute.run_unit`), with one
difference that shapes this module: the results store is a SQLite file on the driver's machine,
which the cluster's machines cannot write. So the driver

* claims every pending training before it ships the unit (the row is 'running' under the
  driver's pid: a concurrent sweep on the same store skips it, and if the driver dies the next
  sweep finds the owner gone and redoes it);
* runs each unit as a Ray *generator* task that yields one result per training as soon as it is
  trained, then its counts;
* records each result in the store the moment it arrives (so an interrupted sweep keeps all
  that finished) and advances the progress bar.

What a task needs is what a pool worker gets: the unit (its trainings' full configurations), the
sweep's name and the function that runs a unit (the sweep's ``run_unit``, handed in: this module
knows units only by that function and their ``key``/``trainings``, so it imports no sweep).
The cluster's machines need ldpgraph installed and the datasets reachable
(``LDPGRAPH_DATA`` in the environment of ``ray start``, or ``data_root``); synthetic graphs
need no files. Only ``backend = "local"`` units run as tasks: a Flower simulation is itself a
Ray application and does not nest inside a task (use ``ldpgraph run --ray-address`` for that).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ..config import ConfigError

#: Seconds between checks for finished trainings (and for Ctrl-C).
POLL = 0.5


class _Outbox:
    """The results store as a task sees it: the driver has already dropped the finished
    trainings and claimed the rest, so everything is to do; results go back to the driver."""

    def __init__(self, out: queue.Queue) -> None:
        self.out = out

    def is_done(self, config: Any) -> bool:
        return False

    def claim(self, config: Any, sweep: str | None = None) -> bool:
        return True

    def finish(self, config: Any, record: dict[str, Any], sweep: str | None = None) -> int:
        self.out.put(("done", config, record))
        return 0

    def fail(self, config: Any, message: str, sweep: str | None = None) -> None:
        self.out.put(("failed", config, message))


#: Runs one unit: ``(unit, store, sweep name, threads, tick) -> counts``.
RunUnit = Callable[[Any, Any, str, int | None, Any], dict[str, int]]


def unit_results(unit: Any, sweep: str, run_unit: RunUnit) -> Iterator[tuple[str, Any, Any]]:
    """The task: run the unit, yielding ``("done", config, record)`` or ``("failed", config,
    message)`` per training as it ends, then ``("counts", None, counts)`` (or ``("error", None,
    message)`` if the unit itself broke). The unit runs in a thread so that each result can be
    yielded while the next training runs."""
    out: queue.Queue = queue.Queue()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["counts"] = run_unit(unit, _Outbox(out), sweep, 1, None)
        except BaseException as exc:  # reported to the driver, which marks the rest failed
            box["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            out.put(None)

    thread = threading.Thread(target=work, name="ldpgraph-unit", daemon=True)
    thread.start()
    while (item := out.get()) is not None:
        yield item
    thread.join()
    yield ("error", None, box["error"]) if "error" in box else ("counts", None, box["counts"])


def execute_on_ray(
    units: list[Any],
    store_path: str,
    sweep: str,
    address: str,
    bar: Any,
    add: Callable[[dict[str, int]], None],
    run_unit: RunUnit,
) -> None:
    """Run ``units`` as tasks (each ``run_unit`` of one unit) on the Ray cluster at
    ``address``; record results as they come."""
    from ..raycluster import connect
    from ..results.identity import run_key
    from ..results.store import ResultsStore

    flower = sorted({t.config.get("backend") for u in units for t in u.trainings} - {"local"})
    if flower:
        raise ConfigError(
            f'sweep --ray-address runs units as Ray tasks and needs backend = "local" (the '
            f"file sets {', '.join(map(str, flower))}); use --workers for this file, or "
            "`ldpgraph run --ray-address` for single Flower runs on the cluster"
        )
    tick = bar.update if bar is not None else (lambda _n: None)
    # connect imports Ray first: a loopback head needs Ray's switch set before that import.
    connect(address, logging_level="ERROR", log_to_driver=False)
    import ray

    running: dict[Any, dict[str, Any]] = {}  # generator -> {run_key: config} still to record
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(unit_results)
        with ResultsStore(store_path) as store:
            for unit in units:
                mine = []
                for t in unit.trainings:
                    if store.is_done(t.config):
                        continue
                    if store.claim(t.config, sweep):
                        mine.append(t)
                    else:  # a live process runs it; counted as the pool counts it
                        tick(1)
                if mine:
                    gen = task.remote(type(unit)(unit.key, mine), sweep, run_unit)
                    running[gen] = {run_key(t.config): t.config for t in mine}
            while running:
                ready, _ = ray.wait(list(running), num_returns=1, timeout=POLL)
                for gen in ready:
                    _take(gen, running, store, sweep, tick, add)
    finally:
        left = [cfg for todo in running.values() for cfg in todo.values()]
        for gen in running:
            try:
                ray.cancel(gen, force=True)
            except Exception:  # already finished or gone with the cluster
                pass
        if left:  # claimed but not recorded: failed, so the next sweep redoes them
            with ResultsStore(store_path) as store:
                for cfg in left:
                    store.fail(cfg, "sweep interrupted before this run finished", sweep)
        ray.shutdown()


def _take(
    gen: Any,
    running: dict[Any, dict[str, Any]],
    store: Any,
    sweep: str,
    tick: Callable[[int], None],
    add: Callable[[dict[str, int]], None],
) -> None:
    """Record the next result of one task (or its end)."""
    import ray

    from ..results.identity import run_key

    todo = running[gen]
    try:
        kind, config, payload = ray.get(next(gen))
    except StopIteration:
        kind, config, payload = "error", None, "the task ended without its counts"
    except ray.exceptions.RayError as exc:  # the task or its worker died
        first = str(exc).strip().splitlines()
        kind, config, payload = "error", None, f"Ray task failed: {first[-1] if first else exc}"
    if kind == "done":
        store.finish(config, payload, sweep)
    elif kind == "failed":
        store.fail(config, payload, sweep)
    if kind in ("done", "failed"):
        todo.pop(run_key(config), None)
        tick(1)
        return
    del running[gen]
    if kind == "counts":
        add(payload)
        return
    for cfg in todo.values():  # the unit broke: its unrecorded trainings fail, the sweep goes on
        store.fail(cfg, payload, sweep)
        tick(1)
    add({"collections": 0, "reconstructions": 0, "trained": 0, "failed": len(todo)})
