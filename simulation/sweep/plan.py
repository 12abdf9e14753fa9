"""Planning a sweep: the runs of each cell, which of them share a collection of reports, and
the winner of a cell's search.

Runs are grouped into units by what determines the reports: the configuration without the
training keys (:data:`TRAIN_KEYS`) and the reconstruction keys (:data:`SERVER_KEYS`). A unit
collects once and reconstructs once per distinct set of server keys (post-processing, no
budget spent); every training of the unit trains on one of those releases.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ldpgraph.protocols.registry import server_side_keys

from ..config import RunConfig, key_default, key_names
from .experiment_types import FINAL_SEED_OFFSET, Cell, Experiment, Grid

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


def _canon_cfg(values: dict[str, Any], check: bool) -> dict[str, Any]:
    """The full configuration mapping (every key, underscore form) of ``values``: checked, or
    (``check=False``, for counting) the defaults with ``values`` laid over them unchecked."""
    if check:
        return RunConfig.from_mapping(values).to_dict()
    cfg = {name: key_default(name) for name in key_names()}
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
