"""``ldpgraph sweep FILE``: the paper's grid search, resumable, parallel, reusing releases.

For every cell (dataset, protocol entry, model, ε) of an experiment file
(:mod:`ldpgraph.simulation.sweep.experiment`):

* **search**: every configuration of the chosen grid runs ``runs_per_config`` times with seeds
  ``seed .. seed+runs-1``; the configuration with the best mean validation accuracy wins (ties:
  the first in grid order). Every search run of the cell must be done before its final runs.
* **final**: the winner runs ``final_runs`` times with seeds ``seed+1000 ..`` (fresh seeds, so
  the reported test accuracy is not measured on the runs that selected the configuration).

Each training is one row of the results store (sweep = the experiment's name; ``phase`` and
``entry`` go to the record's extra fields). The run seed fixes the split, the reports and the
model's initialisation, as in ``ldpgraph run``.

**Reuse.** Work is grouped into units by what determines the reports: the configuration
without the training keys (:data:`TRAIN_KEYS`) and the reconstruction keys
(:data:`SERVER_KEYS`) — i.e. (dataset, protocol, ε, privacy split, seed, …). A unit collects
the reports once, reconstructs once per (τ, l) from the same reports (post-processing, no
budget spent) and trains every (model, dropout, lr, weight decay) on each release. Protocols
with more than one round, and non-local backends, collect once per release instead.

**Resumption.** Before a unit starts, the runs already 'done' in the store are dropped; a unit
with nothing left collects nothing. Every training is ``claim``-ed (a 'running' row whose
process is gone, or a 'failed' one, is taken over) and ``finish``-ed as soon as it ends.
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
import statistics
import sys
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from ldpgraph.protocols.registry import server_side_keys

from ..config import ConfigError, RunConfig, key_names
from .experiment import FINAL_SEED_OFFSET, Cell, Experiment, Grid

#: Keys that only change the training, not the release.
TRAIN_KEYS = (
    "model",
    "lr",
    "dropout",
    "weight_decay",
    "epochs",
    "hidden",
    "device",
    "selection",
    "normalize_features",
    "center_features",
)
#: Keys used only by the server's reconstruction of a one-round protocol (τ, l, …): the same
#: reports serve every value. The parameters the protocols declare ``server_side``.
SERVER_KEYS = tuple(k for k in server_side_keys() if k in key_names())
PHASES = ("search", "final")
#: Seconds per training of 300 epochs on Cora, one thread (for --dry-run estimates), scaled
#: by epochs and by the size of the first layer's input (nodes × features) relative to Cora.
TRAIN_SECONDS = {"gcn": 2.0, "sage": 4.5, "gat": 8.0, "mlp": 1.0}
#: Seconds to collect / reconstruct on Cora (scaled by nodes, resp. by n·d for reconstruction).
COLLECT_SECONDS = 0.1
RECONSTRUCT_SECONDS = 0.2
_CORA = (2708, 1433)


@dataclass
class Training:
    config: dict[str, Any]  # full RunConfig mapping, underscore keys
    phase: str
    entry: str
    point: dict[str, Any]  # the searched keys of this configuration


@dataclass
class Unit:
    """Trainings that share one collection of reports."""

    key: str
    trainings: list[Training] = field(default_factory=list)

    @property
    def releases(self) -> int:
        return len({_server_key(t.config) for t in self.trainings})


@dataclass
class PhaseStats:
    units: int = 0
    releases: int = 0
    trainings: int = 0
    pending: int = 0
    seconds: float = 0.0
    collections: int = 0
    reconstructions: int = 0
    trained: int = 0
    failed: int = 0
    upper_bound: bool = False


@dataclass
class SweepResult:
    phases: dict[str, PhaseStats]
    summary: list[dict[str, Any]]

    def format(self) -> str:
        return format_summary(self.summary)


# --- planning ---------------------------------------------------------------------------------


def _canon_cfg(values: dict[str, Any], check: bool) -> dict[str, Any]:
    if check:
        return RunConfig.from_mapping(values).to_dict()
    cfg = RunConfig().to_dict()
    cfg.update(values)
    return cfg


def _collect_key(cfg: dict[str, Any]) -> str:
    drop = set(TRAIN_KEYS) | set(SERVER_KEYS)
    return json.dumps({k: v for k, v in sorted(cfg.items()) if k not in drop}, default=str)


def _server_key(cfg: dict[str, Any]) -> str:
    return json.dumps([cfg.get(k) for k in SERVER_KEYS], default=str)


def search_runs(exp: Experiment, grid: Grid, cell: Cell, check: bool = True) -> list[list[dict]]:
    """The search configurations of ``cell``: for each grid point, its runs' full configs. A
    cell with a single grid point has nothing to choose between: no search runs."""
    runs, _ = exp.runs(grid)
    base = exp.base_config(cell)
    points = exp.configurations(grid, cell)
    if len(points) == 1:
        return [[]]
    out = []
    for point in points:
        out.append(
            [_canon_cfg({**base, **point, "seed": exp.seed + i}, check) for i in range(runs)]
        )
    return out


def node_spending(cfgs: list[dict[str, Any]]) -> tuple[int, float]:
    """How many distinct report collections ``cfgs`` use, and the ε one node spends over all
    of them: every collection (privacy parameters × seed) asks every node for fresh reports,
    so tuning ε or the split is not free, and the costs add up (basic composition). Only
    server-side post-processing (τ, l, training) reuses a collection."""
    costs: dict[str, float] = {}
    for cfg in cfgs:
        costs.setdefault(_collect_key(cfg), float(cfg["epsilon"]))
    return len(costs), math.fsum(costs.values())


def final_runs(exp: Experiment, grid: Grid, cell: Cell, point: dict[str, Any]) -> list[dict]:
    _, n = exp.runs(grid)
    base = {**exp.base_config(cell), **point}
    return [_canon_cfg({**base, "seed": exp.seed + FINAL_SEED_OFFSET + i}, True) for i in range(n)]


#: ``run_sweep(only=...)`` keys and how a cell exposes each.
CELL_FILTERS: dict[str, Callable[[Cell], str]] = {
    "datasets": lambda c: c.dataset,
    "protocols": lambda c: c.entry.label,
    "models": lambda c: c.model,
    "epsilons": lambda c: f"{c.epsilon:g}",
}


def select_cells(cells: list[Cell], only: dict[str, list[str]]) -> list[Cell]:
    """The cells matching every filter of ``only`` (values as the file writes them; epsilons
    compared as numbers). A value no cell has is an error, so a typo never runs nothing."""
    for key, values in only.items():
        if key not in CELL_FILTERS:
            raise ValueError(f"unknown cell filter {key!r}; known: {', '.join(CELL_FILTERS)}")
        if not values:
            continue
        get = CELL_FILTERS[key]
        wanted = {f"{float(v):g}" for v in values} if key == "epsilons" else set(values)
        present = {get(c) for c in cells}
        missing = sorted(wanted - present)
        if missing:
            raise ValueError(
                f"--{key} {','.join(missing)}: not in the experiment (it has "
                f"{', '.join(sorted(present))})"
            )
        cells = [c for c in cells if get(c) in wanted]
    return cells


def group_units(trainings: list[Training]) -> list[Unit]:
    units: dict[str, Unit] = {}
    for t in trainings:
        key = _collect_key(t.config)
        units.setdefault(key, Unit(key)).trainings.append(t)
    return list(units.values())


def best_point(
    store: Any, exp: Experiment, grid: Grid, cell: Cell
) -> tuple[dict[str, Any] | None, float | None, str]:
    """The winning grid point of ``cell`` (None while its search is incomplete), its score and
    a note. The score is the mean validation accuracy (highest wins), or with
    ``selection = "val_loss"`` the mean validation loss (lowest wins, Blink_GNN's rule)."""
    points = exp.configurations(grid, cell)
    if len(points) == 1:
        return points[0], None, "one configuration: nothing to search"
    best, best_val, done, total = None, None, 0, 0
    for point, cfgs in zip(points, search_runs(exp, grid, cell), strict=True):
        by_loss = any(cfg.get("selection") == "val_loss" for cfg in cfgs)
        vals = []
        for cfg in cfgs:
            total += 1
            row = store.get(cfg)
            score = _score(row, by_loss) if row and row["status"] == "done" else None
            if score is not None:
                vals.append(score)
        done += len(vals)
        if len(vals) == len(cfgs):
            mean = statistics.fmean(vals)
            if best_val is None or (mean < best_val if by_loss else mean > best_val):
                best, best_val = point, mean
    if done < total:
        return None, None, f"search incomplete ({done}/{total} runs done)"
    return best, best_val, ""


def _score(row: dict[str, Any], by_loss: bool) -> float | None:
    """A finished run's selection score: validation loss or validation accuracy."""
    if not by_loss:
        return row.get("val_acc")
    loss = ((row.get("metrics") or {}).get("training") or {}).get("val_loss")
    return None if loss is None else float(loss)


# --- execution --------------------------------------------------------------------------------

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

    def told(n: int = 1) -> None:
        if tick is None:
            return
        (tick.put if hasattr(tick, "put") else tick)(n)

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
        for trainings in groups.values():
            cfg0 = RunConfig.from_mapping(trainings[0].config)
            collects = replay is None or replay.replies is None
            try:
                release, timings = pipeline.release(
                    cfg0, prepared.graph, replay=replay, split=prepared.split
                )
                counts["collections"] += collects
                counts["reconstructions"] += 1
            except Exception as exc:  # a bad release fails its trainings, the sweep goes on
                for t in trainings:
                    if store.claim(t.config, sweep):
                        store.fail(t.config, f"release: {type(exc).__name__}: {exc}", sweep)
                        counts["failed"] += 1
                    told()
                continue
            for t in trainings:
                if not store.claim(t.config, sweep):
                    told()
                    continue
                try:
                    cfg = RunConfig.from_mapping(t.config)
                    record = pipeline.train_release(
                        cfg,
                        prepared.original,
                        prepared.split,
                        release,
                        timings,
                        num_threads,
                        held_out=prepared.held_out,
                    )
                    record["phase"] = t.phase
                    record["entry"] = t.entry
                    store.finish(t.config, record, sweep)
                    counts["trained"] += 1
                except Exception as exc:
                    store.fail(t.config, f"{type(exc).__name__}: {exc}", sweep)
                    counts["failed"] += 1
                told()
    return counts


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

        execute_on_ray(units, store_path, sweep, ray_address, bar, add, run_unit)
        return
    tick = bar.update if bar is not None else None
    if workers <= 0:  # in this process (tests, debugging)
        for u in units:
            add(run_unit(u, store_path, sweep, 1, tick))
        return
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager:
        queue = manager.Queue()
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = {pool.submit(run_unit, u, store_path, sweep, 1, queue) for u in units}
            while futures:
                done, futures = wait(futures, timeout=0.5, return_when=FIRST_COMPLETED)
                _drain(queue, bar)
                for f in done:
                    add(f.result())
            _drain(queue, bar)


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


# --- estimates --------------------------------------------------------------------------------


def _size(dataset: str, data_root: str) -> tuple[int, int]:
    from ..datasets import DATASETS, parse_dataset_spec

    name, params = parse_dataset_spec(dataset)
    info = DATASETS[name]
    if info.expected is not None and not params:
        return info.expected.nodes, info.expected.features
    from ..datasets import load_dataset

    g = load_dataset(dataset, data_root or None)
    return g.num_nodes, g.num_features


def estimate_seconds(units: list[Unit], workers: int) -> float:
    sizes: dict[str, tuple[int, int]] = {}
    total = 0.0
    for u in units:
        cfg = u.trainings[0].config
        ds = cfg["dataset"]
        if ds not in sizes:
            sizes[ds] = _size(ds, cfg.get("data_root", ""))
        n, d = sizes[ds]
        scale = ((n * d) / (_CORA[0] * _CORA[1])) ** 1.1  # calibrated: Facebook GCN ≈ 37x Cora
        total += COLLECT_SECONDS * n / _CORA[0] + u.releases * RECONSTRUCT_SECONDS * scale
        for t in u.trainings:
            per = TRAIN_SECONDS.get(t.config["model"], 4.0) * t.config["epochs"] / 300
            total += per * max(1.0, scale)
    return total / max(1, workers)


def _hms(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m{seconds % 60:02d}s"


# --- the sweep --------------------------------------------------------------------------------


def _check_former_defaults(
    exp: Experiment,
    grid: Grid,
    cells: list[Cell],
    store: Any,
    warn: Callable[[str], None] | None,
) -> None:
    """Refuse (or with ``warn``, a dry run, warn) to resume a store whose runs of an entry were
    made under a former default (results.identity.CHANGED_DEFAULTS) that the file still leaves
    to the default: resuming would silently start over with the new value beside the old
    runs."""
    from ..results.identity import CHANGED_DEFAULTS

    current = RunConfig()
    for key, former in CHANGED_DEFAULTS.items():
        for label in dict.fromkeys(c.entry.label for c in cells):
            cell = next(c for c in cells if c.entry.label == label)
            if key in exp.base_config(cell) or any(
                key in point for point in exp.configurations(grid, cell)
            ):
                continue  # the file states it
            if getattr(current, key) == former or not store.count_with_value(
                exp.name, label, key, former
            ):
                continue
            msg = (
                f"{exp.path}: the store holds runs of entry {label!r} made with {key} = "
                f"{_toml_value(former)}, a former default; the file leaves "
                f"{key} to the default, now {_toml_value(getattr(current, key))}: state "
                f"`{key} = {_toml_value(former)}` in [fixed] to resume them (or the new value "
                "to start over)"
            )
            if warn is None:
                raise ConfigError(msg)
            warn(f"warning: {msg}")


def _toml_value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else repr(value)


def run_sweep(
    exp: Experiment,
    grid_name: str = "paper",
    *,
    store_path: str | None = None,
    workers: int | None = None,
    phases: tuple[str, ...] = PHASES,
    limit: int | None = None,
    only: dict[str, list[str]] | None = None,
    dry_run: bool = False,
    progress: bool = False,
    say: Callable[[str], None] = lambda _m: None,
    ray_address: str = "",
) -> SweepResult:
    """Run (or with ``dry_run`` count) the sweep of ``exp`` under grid ``grid_name``.

    ``only`` keeps the cells whose dataset / protocol (entry label) / model / epsilon is among
    the given values (see :func:`select_cells`); ``limit`` then keeps the first N of those.
    ``ray_address``: run the units as tasks on that Ray cluster instead of local processes."""
    from ..results.identity import config_hash
    from ..results.store import ResultsStore

    grid = exp.grid(grid_name)
    if not dry_run:
        exp.check_protocols()
    store_path = store_path or exp.store
    workers = (os.cpu_count() or 1) if workers is None else workers
    cells = select_cells(exp.cells(), only or {})
    if limit is not None:
        cells = cells[: max(0, limit)]
    check = not dry_run
    stats = {p: PhaseStats() for p in PHASES}
    exists = os.path.exists(store_path)

    def open_store():
        return ResultsStore(store_path, create=not dry_run)

    def pending(trainings: list[Training]) -> int:
        if not exists and dry_run:
            return len(trainings)
        with open_store() as store:
            return sum(not store.is_done(t.config) for t in trainings)

    def execute(phase: str, trainings: list[Training]) -> None:
        units = group_units(trainings)
        st = stats[phase]
        st.units, st.trainings = len(units), len(trainings)
        st.releases = sum(u.releases for u in units)
        st.pending = pending(trainings)
        todo = [u for u in units]
        st.seconds = estimate_seconds(todo, workers) * (st.pending / max(1, st.trainings))
        if dry_run or not trainings:
            return
        say(
            f"{phase}: {st.pending} of {st.trainings} trainings to run in {st.units} units "
            f"({st.releases} releases), "
            + (f"Ray cluster at {ray_address}" if ray_address else f"{workers or 1} worker(s)")
        )
        bar = None
        if progress and st.pending:
            from tqdm import tqdm

            bar = tqdm(total=st.pending, unit="run", desc=phase, file=sys.stderr, smoothing=0.05)
        try:
            _execute(todo, store_path, exp.name, workers, bar, st, ray_address)
        finally:
            if bar is not None:
                bar.close()

    if exists:
        with open_store() as store:
            _check_former_defaults(exp, grid, cells, store, say if dry_run else None)

    if "search" in phases:
        search = [
            Training(cfg, "search", cell.entry.label, point)
            for cell in cells
            for point, cfgs in zip(
                exp.configurations(grid, cell), search_runs(exp, grid, cell, check), strict=True
            )
            for cfg in cfgs
        ]
        execute("search", search)

    summary: list[dict[str, Any]] = []
    finals: list[Training] = []
    unknown = 0
    _, n_final = exp.runs(grid)
    readable = exists or not dry_run
    with open_store() if readable else _Null() as store:
        for cell in cells:
            single = len(exp.configurations(grid, cell)) == 1
            point, val, note = (
                best_point(store, exp, grid, cell) if store or single else (None, None, "not run")
            )
            # The same rule as best_point: the cell's configuration with the winning point.
            by_loss = {**exp.base_config(cell), **(point or {})}.get("selection") == "val_loss"
            used = [c for cfgs in search_runs(exp, grid, cell, check=False) for c in cfgs]
            if point is not None:
                used += final_runs(exp, grid, cell, point)
            collections, spent = node_spending(used)
            summary.append(
                {
                    "cell": cell.label,
                    "best": point,
                    "search_val": val,
                    "score": "val_loss" if by_loss else "val_acc",
                    "note": note,
                    "collections": collections,
                    "node_epsilon_spent": spent,
                }
            )
            if point is None:
                unknown += 1
                continue
            cfgs = final_runs(exp, grid, cell, point)
            if store and not dry_run and "final" in phases:
                store.supersede_finals(
                    exp.name,
                    cell.entry.label,
                    cell.dataset,
                    cell.model,
                    cell.epsilon,
                    config_hash(cfgs[0]),
                )
            for cfg in cfgs:
                finals.append(Training(cfg, "final", cell.entry.label, point))
    if "final" in phases:
        if dry_run and unknown:
            # Upper bound: every undecided cell is its own unit (no shared release).
            st = stats["final"]
            execute("final", finals)
            st.upper_bound = True
            st.units += unknown * n_final
            st.releases += unknown * n_final
            st.trainings += unknown * n_final
            st.pending += unknown * n_final
            guesses = [
                Training(
                    _canon_cfg(
                        {
                            **exp.base_config(c),
                            **exp.configurations(grid, c)[0],
                            "seed": exp.seed,
                        },
                        False,
                    ),
                    "",
                    "",
                    {},
                )
                for c in cells
            ]
            avg = estimate_seconds(group_units(guesses), workers)
            st.seconds += avg * n_final * unknown / max(1, len(cells))
        else:
            execute("final", finals)
    if not dry_run and "final" in phases:
        with open_store() as store:
            for row in summary:
                row.update(_final_stats(store, exp, grid, row, cells))
    return SweepResult(stats, summary)


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_a: object) -> None:
        return None


def _final_stats(
    store: Any, exp: Experiment, grid: Grid, row: dict[str, Any], cells: list[Cell]
) -> dict[str, Any]:
    if row["best"] is None:
        return {}
    cell = next(c for c in cells if c.label == row["cell"])
    tests = []
    for cfg in final_runs(exp, grid, cell, row["best"]):
        r = store.get(cfg)
        if r and r["status"] == "done" and r.get("test_acc") is not None:
            tests.append(r["test_acc"])
    return {
        "final_n": len(tests),
        "test_mean": statistics.fmean(tests) if tests else None,
        "test_std": statistics.stdev(tests) if len(tests) > 1 else None,
    }


def format_summary(summary: list[dict[str, Any]]) -> str:
    lines = []
    width = max((len(r["cell"]) for r in summary), default=4)
    for r in summary:
        best = ", ".join(
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in (r["best"] or {}).items()
        )
        if r["best"] is None:
            lines.append(f"{r['cell']:<{width}}  {r['note']}")
            continue
        test = "-"
        if r.get("test_mean") is not None:
            std = r.get("test_std")
            test = f"{100 * r['test_mean']:.1f}" + (
                f" ± {100 * std:.1f}" if std is not None and not math.isnan(std) else ""
            )
            test += f" (n={r['final_n']})"
        score = (
            "no search"
            if r["search_val"] is None
            else f"val loss {r['search_val']:.3f}"
            if r.get("score") == "val_loss"
            else f"val {100 * r['search_val']:.1f}"
        )
        spent = ""
        if r.get("collections"):
            spent = (
                f"  ε asked of each node: {r['node_epsilon_spent']:g} summed over "
                f"{r['collections']} collections (the proven figures: each run's privacy)"
            )
        lines.append(f"{r['cell']:<{width}}  {score}  test {test}  [{best}]{spent}")
    if any(r.get("collections", 0) > 1 for r in summary):
        lines.append(
            "(each run's ε is what one collection costs a node; selecting among collections "
            "costs their sum)"
        )
    return "\n".join(lines)


def format_dry_run(exp: Experiment, grid_name: str, result: SweepResult, workers: int) -> str:
    cells = len(result.summary) or len(exp.cells())
    lines = [f"sweep {exp.name} (grid {grid_name}, {cells} cells, {workers} workers)"]
    total = 0.0
    for phase, st in result.phases.items():
        bound = " (upper bound: search not done)" if st.upper_bound else ""
        lines.append(
            f"  {phase:<6}  units/collections {st.units}  releases {st.releases}  trainings "
            f"{st.trainings} ({st.pending} not done)  ≈ {_hms(st.seconds)}{bound}"
        )
        total += st.seconds
    lines.append(f"  total ≈ {_hms(total)} (estimate: {TRAIN_SECONDS} s per Cora training)")
    return "\n".join(lines)
