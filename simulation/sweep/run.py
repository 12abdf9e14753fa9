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

This module drives the phases; :mod:`.plan` makes the runs and the units, :mod:`.execute` runs
them, :mod:`.estimate` times a dry run and :mod:`.report` formats the result. Their public names
are importable from here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..config import ConfigError, key_default
from .estimate import COLLECT_SECONDS, RECONSTRUCT_SECONDS, TRAIN_SECONDS, estimate_seconds
from .execute import run_unit
from .experiment_types import Cell, Experiment, Grid
from .plan import (
    CELL_FILTERS,
    PHASES,
    SERVER_KEYS,
    TRAIN_KEYS,
    Training,
    Unit,
    _canon_cfg,
    best_point,
    final_runs,
    group_units,
    node_spending,
    search_runs,
    select_cells,
)
from .report import PhaseStats, SweepResult, _final_stats, format_dry_run, format_summary

__all__ = [
    "CELL_FILTERS",
    "COLLECT_SECONDS",
    "PHASES",
    "RECONSTRUCT_SECONDS",
    "SERVER_KEYS",
    "TRAIN_KEYS",
    "TRAIN_SECONDS",
    "PhaseStats",
    "SweepResult",
    "Training",
    "Unit",
    "best_point",
    "estimate_seconds",
    "final_runs",
    "format_dry_run",
    "format_summary",
    "group_units",
    "node_spending",
    "run_sweep",
    "run_unit",
    "search_runs",
    "select_cells",
]


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

    for key, former in CHANGED_DEFAULTS.items():
        for label in dict.fromkeys(c.entry.label for c in cells):
            cell = next(c for c in cells if c.entry.label == label)
            if key in exp.base_config(cell) or any(
                key in point for point in exp.configurations(grid, cell)
            ):
                continue  # the file states it
            if key_default(key) == former or not store.count_with_value(
                exp.name, label, key, former
            ):
                continue
            msg = (
                f"{exp.path}: the store holds runs of entry {label!r} made with {key} = "
                f"{_toml_value(former)}, a former default; the file leaves "
                f"{key} to the default, now {_toml_value(key_default(key))}: state "
                f"`{key} = {_toml_value(former)}` in [fixed] to resume them (or the new value "
                "to start over)"
            )
            if warn is None:
                raise ConfigError(msg)
            warn(f"warning: {msg}")


def _toml_value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else repr(value)


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *_a: object) -> None:
        return None


@dataclass
class _Sweep:
    """One sweep's settings and its counts per phase, shared by the phases."""

    exp: Experiment
    grid: Grid
    store_path: str
    workers: int
    dry_run: bool
    progress: bool
    say: Callable[[str], None]
    ray_address: str
    exists: bool
    stats: dict[str, PhaseStats] = field(default_factory=lambda: {p: PhaseStats() for p in PHASES})

    def open_store(self) -> Any:
        from ..results.store import ResultsStore

        return ResultsStore(self.store_path, create=not self.dry_run)

    def pending(self, trainings: list[Training]) -> int:
        if not self.exists and self.dry_run:
            return len(trainings)
        with self.open_store() as store:
            return sum(not store.is_done(t.config) for t in trainings)

    def execute(self, phase: str, trainings: list[Training]) -> None:
        """Count the phase's units, releases and trainings; unless a dry run, run them."""
        from .execute import _execute

        units = group_units(trainings)
        st = self.stats[phase]
        st.units, st.trainings = len(units), len(trainings)
        st.releases = sum(u.releases for u in units)
        st.pending = self.pending(trainings)
        st.seconds = estimate_seconds(units, self.workers) * (st.pending / max(1, st.trainings))
        if self.dry_run or not trainings:
            return
        where = (
            f"Ray cluster at {self.ray_address}"
            if self.ray_address
            else f"{self.workers or 1} worker(s)"
        )
        self.say(
            f"{phase}: {st.pending} of {st.trainings} trainings to run in {st.units} units "
            f"({st.releases} releases), " + where
        )
        bar = None
        if self.progress and st.pending:
            from tqdm import tqdm

            bar = tqdm(total=st.pending, unit="run", desc=phase, file=sys.stderr, smoothing=0.05)
        try:
            _execute(units, self.store_path, self.exp.name, self.workers, bar, st, self.ray_address)
        finally:
            if bar is not None:
                bar.close()

    def summary_row(self, store: Any, cell: Cell) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The cell's summary row and its winning point (None while its search is incomplete
        or, in a dry run without a store, not run)."""
        exp, grid = self.exp, self.grid
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
        row = {
            "privacy_model": _privacy_model(used[0]) if used else None,
            "cell": cell.label,
            "best": point,
            "search_val": val,
            "score": "val_loss" if by_loss else "val_acc",
            "note": note,
            "collections": collections,
            "node_epsilon_spent": spent,
        }
        return row, point

    def decide(
        self, cells: list[Cell], phases: tuple[str, ...]
    ) -> tuple[list[dict[str, Any]], list[Training], int]:
        """Every cell's summary row, the final trainings of the decided cells and how many
        cells are undecided. Running the final phase supersedes a cell's older finals."""
        from ..results.identity import config_hash

        summary: list[dict[str, Any]] = []
        finals: list[Training] = []
        unknown = 0
        readable = self.exists or not self.dry_run
        with self.open_store() if readable else _Null() as store:
            for cell in cells:
                row, point = self.summary_row(store, cell)
                summary.append(row)
                if point is None:
                    unknown += 1
                    continue
                cfgs = final_runs(self.exp, self.grid, cell, point)
                if store and not self.dry_run and "final" in phases:
                    store.supersede_finals(
                        self.exp.name,
                        cell.entry.label,
                        cell.dataset,
                        cell.model,
                        cell.epsilon,
                        config_hash(cfgs[0]),
                    )
                finals += [Training(cfg, "final", cell.entry.label, point) for cfg in cfgs]
        return summary, finals, unknown

    def add_undecided(self, cells: list[Cell], unknown: int) -> None:
        """A dry run's final phase as an upper bound: every undecided cell its own unit (no
        shared release), timed like the cells' first grid points."""
        exp, grid = self.exp, self.grid
        _, n_final = exp.runs(grid)
        st = self.stats["final"]
        st.upper_bound = True
        st.units += unknown * n_final
        st.releases += unknown * n_final
        st.trainings += unknown * n_final
        st.pending += unknown * n_final
        guesses = [
            Training(
                _canon_cfg(
                    {**exp.base_config(c), **exp.configurations(grid, c)[0], "seed": exp.seed},
                    False,
                ),
                "",
                "",
                {},
            )
            for c in cells
        ]
        avg = estimate_seconds(group_units(guesses), self.workers)
        st.seconds += avg * n_final * unknown / max(1, len(cells))


def _search_trainings(
    exp: Experiment, grid: Grid, cells: list[Cell], check: bool
) -> list[Training]:
    return [
        Training(cfg, "search", cell.entry.label, point)
        for cell in cells
        for point, cfgs in zip(
            exp.configurations(grid, cell), search_runs(exp, grid, cell, check), strict=True
        )
        for cfg in cfgs
    ]


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
    grid = exp.grid(grid_name)
    if not dry_run:
        exp.check_protocols()
    store_path = store_path or exp.store
    workers = (os.cpu_count() or 1) if workers is None else workers
    cells = select_cells(exp.cells(), only or {})
    if limit is not None:
        cells = cells[: max(0, limit)]
    sweep = _Sweep(
        exp, grid, store_path, workers, dry_run, progress, say, ray_address,
        exists=os.path.exists(store_path),
    )  # fmt: skip
    if sweep.exists:
        with sweep.open_store() as store:
            _check_former_defaults(exp, grid, cells, store, say if dry_run else None)
    if "search" in phases:
        sweep.execute("search", _search_trainings(exp, grid, cells, check=not dry_run))
    summary, finals, unknown = sweep.decide(cells, phases)
    if "final" in phases:
        sweep.execute("final", finals)
        if dry_run and unknown:
            sweep.add_undecided(cells, unknown)
    if not dry_run and "final" in phases:
        with sweep.open_store() as store:
            for row in summary:
                row.update(_final_stats(store, exp, grid, row, cells))
    return SweepResult(sweep.stats, summary)


def _privacy_model(cfg: dict[str, Any]) -> str:
    """The privacy model of the protocol ``cfg`` runs as configured (``ldp``, ``central``,
    ``none``, ``empirical``): a variant's (``dpar-nodp``, ``edge-delete``) can differ from its
    class's, so it is asked of the built protocol."""
    from ldpgraph.protocols.registry import protocol_from_config

    return str(protocol_from_config(cfg).privacy_model)
