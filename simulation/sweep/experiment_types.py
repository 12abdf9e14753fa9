"""What an experiment file describes once it is read: its protocol entries, search grids and
cells (dataset, protocol entry, model, ε), and the configurations of each cell.

:mod:`.experiment` reads and checks a file into an :class:`Experiment`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ..config import ConfigError

#: Keys a sweep sets per cell or per run itself; they cannot be fixed or searched.
CELL_KEYS = {"dataset", "protocol", "model", "epsilon", "seed"}
#: The seed of final run i is ``seed + FINAL_SEED_OFFSET + i``.
FINAL_SEED_OFFSET = 1000


class ExperimentError(ConfigError):
    """A bad experiment file; one line naming the file and the key."""


@dataclass(frozen=True)
class Entry:
    """A protocol entry: its label (cell name), protocol and fixed keys."""

    label: str
    protocol: str
    fixed: dict[str, Any] = field(default_factory=dict)
    models: tuple[str, ...] | None = None
    epsilons: tuple[float, ...] | None = None
    datasets: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Grid:
    name: str
    shared: dict[str, list[Any]]
    per_entry: dict[str, dict[str, list[Any]]]
    runs_per_config: int | None = None
    final_runs: int | None = None


@dataclass(frozen=True)
class Cell:
    dataset: str
    entry: Entry
    model: str
    epsilon: float

    @property
    def label(self) -> str:
        return f"{self.dataset}/{self.entry.label}/{self.model}/ε={self.epsilon:g}"


@dataclass
class Experiment:
    path: str
    name: str
    description: str
    datasets: list[str]
    entries: list[Entry]
    models: list[str]
    epsilons: list[float]
    runs_per_config: int
    final_runs: int
    seed: int
    backend: str
    store: str
    fixed: dict[str, Any]
    grids: dict[str, Grid]
    per_dataset: dict[str, dict[str, Any]] = field(default_factory=dict)

    def grid(self, name: str) -> Grid:
        if name not in self.grids:
            have = ", ".join(self.grids) or "none"
            raise ExperimentError(f"{self.path}: no [grid.{name}] (grids: {have})")
        return self.grids[name]

    def runs(self, grid: Grid) -> tuple[int, int]:
        """(runs per configuration in the search, final runs) under ``grid``."""
        return (grid.runs_per_config or self.runs_per_config, grid.final_runs or self.final_runs)

    def cells(self) -> list[Cell]:
        out = []
        for ds in self.datasets:
            for entry in self.entries:
                if entry.datasets is not None and ds not in entry.datasets:
                    continue
                for model in entry.models or self.models:
                    for eps in entry.epsilons or self.epsilons:
                        out.append(Cell(ds, entry, model, eps))
        return out

    def configurations(self, grid: Grid, cell: Cell) -> list[dict[str, Any]]:
        """The search configurations of ``cell`` in grid order: only the searched keys."""
        space = {**grid.per_entry.get(cell.entry.label, {})}
        if cell.entry.label not in grid.per_entry:
            space.update(grid.per_entry.get(cell.entry.protocol, {}))
        space.update({k: v for k, v in grid.shared.items() if k not in space})
        keys = list(space)
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*space.values())]

    def base_config(self, cell: Cell) -> dict[str, Any]:
        """The cell's configuration before the searched keys and the seed. An experiment's
        runs are seeded (its seeds are in the file: central releases are replayable) unless
        the file fixes ``seeded = false``."""
        return {
            "seeded": True,
            **self.fixed,
            **self.per_dataset.get(cell.dataset, {}),
            **cell.entry.fixed,
            "backend": self.backend,
            "dataset": cell.dataset,
            "protocol": cell.entry.protocol,
            "model": cell.model,
            "epsilon": cell.epsilon,
        }

    def check_protocols(self) -> None:
        """Raise if a protocol entry names a protocol that is not registered (yet)."""
        from ldpgraph.protocols.registry import protocol_names

        names = protocol_names()
        for e in self.entries:
            if e.protocol not in names:
                raise ExperimentError(
                    f"{self.path}: protocol {e.protocol!r} (entry {e.label!r}) is not registered "
                    f"in this ldpgraph; registered: {', '.join(names)}"
                )
