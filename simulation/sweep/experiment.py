"""Experiment files: what ``ldpgraph sweep FILE`` runs.

An experiment file is TOML. Every configuration key is a :class:`RunConfig` field (the one
configuration schema), written with hyphens or underscores::

    name = "hogs-table3"                  # the sweep name recorded with every run
    description = "..."
    datasets = ["cora", "citeseer"]       # dataset names or synthetic specs
    protocols = ["hogs-edge", "blink-hard", "none-raw"]   # protocol names or variant names
    models = ["gcn", "sage", "gat"]
    epsilons = [3, 4, 5]
    runs_per_config = 5                   # search: seeds seed .. seed+runs-1 (default 5)
    final_runs = 10                       # final: seeds seed+1000 .. (default 10)
    seed = 0                              # base seed (default 0)
    backend = "local"                     # collection backend (default local)
    store = "results/hogs-table3.db"      # default results/<name>.db

    [fixed]                               # RunConfig keys fixed for every run
    epochs = 300
    [fixed.train]                         # or grouped by the schema's sections (data,
    lr = 0.01                             # protocol, train, nodes, metrics, run), anywhere
                                          # keys go; dotted keys (train.lr) work too

    [per_dataset.cora-ml]                 # keys fixed for one data set's cells (after
    delta = 2e-3                          # [fixed], before a variant's own keys)

    [variants.none-raw]                   # a protocol entry with its own fixed keys
    protocol = "none"
    trust_curator = true
    models = ["gcn"]                      # optional: this entry's models
    epsilons = [8]                        # optional: this entry's ε values (one for a
                                          # protocol that spends none)
    datasets = ["cora"]                   # optional: this entry's data sets (each listed
                                          # in datasets)

    [grid.paper]                          # a search space, chosen with --grid paper
    dropout = [0.1, 0.01, 0.001, 0.0]     # grid keys: RunConfig keys, each a non-empty list
    lr = [0.1, 0.01, 0.001]
    runs_per_config = 5                   # optional per-grid overrides of the run counts
    final_runs = 10
    [grid.paper.hogs-edge]                # keys searched only for this protocol entry
    tau = [0.5, 0.7, 0.9]

Grid order (ties go to the first) is the product of the protocol entry's keys, then the shared
keys, each in file order, the last key varying fastest.
"""

from __future__ import annotations

import itertools
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import MODELS, SECTIONS, ConfigError, RunConfig, flatten_sections, key_names

TOP_KEYS = {
    "name",
    "description",
    "datasets",
    "protocols",
    "models",
    "epsilons",
    "runs_per_config",
    "final_runs",
    "seed",
    "backend",
    "store",
    "fixed",
    "per_dataset",
    "variants",
    "grid",
}
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


def _key(name: str) -> str:
    return str(name).replace("-", "_")


def _fail(path: str, where: str, msg: str) -> ExperimentError:
    return ExperimentError(f"{path}: {where}: {msg}")


def _check_value(path: str, where: str, key: str, value: Any) -> Any:
    """Coerce one RunConfig value to its field's type (the combined configuration is checked by
    RunConfig.validate later, in :func:`_check_cells`)."""
    name = _key(key)
    if name not in key_names():
        raise _fail(path, where, f"unknown key {key!r} (not a run configuration key)")
    kind = type(getattr(RunConfig(), name))
    ok = isinstance(value, bool) if kind is bool else not isinstance(value, bool)
    if kind is int:
        ok = ok and (isinstance(value, int) or (isinstance(value, float) and value.is_integer()))
    elif kind is float:
        ok = ok and isinstance(value, int | float)
    elif kind is str:
        ok = ok and isinstance(value, str)
    if not ok:
        raise _fail(path, where, f"must be of type {kind.__name__}, got {value!r}")
    value = kind(value)
    if kind is float and not math.isfinite(value):
        raise _fail(path, where, f"must be finite, got {value!r}")
    if name == "backend":
        from ..config import BACKENDS

        if value not in BACKENDS:
            raise _fail(path, where, f"unknown backend {value!r}; choose from {BACKENDS}")
    return value


def _list(path: str, where: str, value: Any, kind: type | tuple[type, ...]) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise _fail(path, where, "must be a non-empty list")
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for v in value:
        if not isinstance(v, kind) or (isinstance(v, bool) and bool not in kinds):
            raise _fail(path, where, f"bad entry {v!r}")
    if len(set(map(repr, value))) != len(value):
        raise _fail(path, where, "has duplicate entries")
    return list(value)


def _count(path: str, key: str, value: Any, lo: int, hi: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise _fail(path, key, f"must be an integer in [{lo}, {hi}], got {value!r}")
    return value


def _flat(path: str, where: str, table: dict[str, Any]) -> dict[str, Any]:
    """A table's configuration keys, flat: section tables (``[fixed.train]``) and dotted keys
    (``train.lr = ...``) as the configuration schema reads them."""
    try:
        return flatten_sections(table)
    except ConfigError as exc:
        raise _fail(path, where, str(exc)) from None


def _grid_table(path: str, where: str, table: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for k, v in _flat(path, where, table).items():
        name = _key(k)
        if name in CELL_KEYS:
            raise _fail(path, f"{where}.{k}", "is set by the sweep itself; it cannot be searched")
        values = _list(path, f"{where}.{k}", v, (int, float, str, bool))
        out[name] = [_check_value(path, f"{where}.{k}", k, x) for x in values]
    return out


def parse_experiment(data: dict[str, Any], path: str = "<experiment>") -> Experiment:
    """Validate a parsed experiment file (protocol names are checked by :meth:`check_protocols`
    so that files naming protocols still being written can be read, counted and listed)."""
    from ..datasets import load_dataset  # noqa: F401  (dataset names checked below)

    unknown = [k for k in data if _key(k) not in TOP_KEYS]
    if unknown:
        raise _fail(path, unknown[0], f"unknown key; known: {', '.join(sorted(TOP_KEYS))}")
    data = {_key(k): v for k, v in data.items()}
    name = data.get("name")
    if not isinstance(name, str) or not name.strip() or "/" in name:
        raise _fail(path, "name", "must be a non-empty string without '/'")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise _fail(path, "description", "must be a string")
    for key in ("datasets", "protocols", "epsilons"):
        if key not in data:
            raise _fail(path, key, "is required")
    datasets = _list(path, "datasets", data["datasets"], str)
    for ds in datasets:
        _check_dataset(path, ds)
    models = _list(path, "models", data.get("models", ["gcn"]), str)
    for m in models:
        if m not in MODELS:
            raise _fail(path, "models", f"unknown model {m!r}; choose from {', '.join(MODELS)}")
    epsilons = [float(e) for e in _list(path, "epsilons", data["epsilons"], (int, float))]
    for e in epsilons:
        if not (math.isfinite(e) and e > 0):
            raise _fail(path, "epsilons", f"ε must be a finite number > 0, got {e}")
    runs = _count(path, "runs_per_config", data.get("runs_per_config", 5), 1, FINAL_SEED_OFFSET)
    final = _count(path, "final_runs", data.get("final_runs", 10), 0, 100_000)
    seed = _count(path, "seed", data.get("seed", 0), 0, 2**62)
    backend = _check_value(path, "backend", "backend", data.get("backend", "local"))
    store = data.get("store", str(Path("results") / f"{name}.db"))
    if not isinstance(store, str) or not store:
        raise _fail(path, "store", "must be a path")

    fixed_raw = data.get("fixed", {})
    if not isinstance(fixed_raw, dict):
        raise _fail(path, "fixed", "must be a table")
    fixed = {}
    for k, v in _flat(path, "fixed", fixed_raw).items():
        if _key(k) in CELL_KEYS:
            raise _fail(path, f"fixed.{k}", "is set by the sweep itself (use the top-level lists)")
        fixed[_key(k)] = _check_value(path, f"fixed.{k}", k, v)

    per_dataset_raw = data.get("per_dataset", {})
    if not isinstance(per_dataset_raw, dict):
        raise _fail(path, "per_dataset", "must be a table of tables, one per data set")
    per_dataset: dict[str, dict[str, Any]] = {}
    for ds, table in per_dataset_raw.items():
        where = f"per_dataset.{ds}"
        if ds not in datasets:
            raise _fail(path, where, "is not listed in datasets")
        if not isinstance(table, dict):
            raise _fail(path, where, "must be a table")
        per_dataset[ds] = {}
        for k, v in _flat(path, where, table).items():
            if _key(k) in CELL_KEYS:
                raise _fail(path, f"{where}.{k}", "is set by the sweep itself")
            per_dataset[ds][_key(k)] = _check_value(path, f"{where}.{k}", k, v)

    variants = data.get("variants", {})
    if not isinstance(variants, dict):
        raise _fail(path, "variants", "must be a table of tables")
    entries = []
    for label in _list(path, "protocols", data["protocols"], str):
        v = variants.get(label)
        if v is None:
            entries.append(Entry(label, label))
            continue
        where = f"variants.{label}"
        if not isinstance(v, dict) or not isinstance(v.get("protocol"), str):
            raise _fail(path, where, "must be a table with protocol = NAME")
        vf, vmodels, veps, vdata = {}, None, None, None
        if "datasets" in v:
            vdata = tuple(_list(path, f"{where}.datasets", v["datasets"], str))
            missing = [d for d in vdata if d not in datasets]
            if missing:
                raise _fail(path, f"{where}.datasets", f"{missing[0]!r} is not listed in datasets")
        if "epsilons" in v:
            veps = tuple(
                float(e) for e in _list(path, f"{where}.epsilons", v["epsilons"], (int, float))
            )
            if not all(math.isfinite(e) and e > 0 for e in veps):
                raise _fail(path, f"{where}.epsilons", "ε must be finite numbers > 0")
        if "models" in v:
            vmodels = tuple(_list(path, f"{where}.models", v["models"], str))
            bad = [m for m in vmodels if m not in MODELS]
            if bad:
                raise _fail(path, f"{where}.models", f"unknown model {bad[0]!r}")
        own = ("protocol", "models", "epsilons", "datasets")
        keys = {k: val for k, val in v.items() if k not in own}
        for k, val in _flat(path, where, keys).items():
            if _key(k) in CELL_KEYS:
                raise _fail(path, f"{where}.{k}", "is set by the sweep itself")
            vf[_key(k)] = _check_value(path, f"{where}.{k}", k, val)
        entries.append(Entry(label, v["protocol"], vf, vmodels, veps, vdata))
    extra = set(variants) - {e.label for e in entries}
    if extra:
        raise _fail(path, f"variants.{sorted(extra)[0]}", "is not listed in protocols")

    grids_raw = data.get("grid", {})
    if not isinstance(grids_raw, dict) or not grids_raw:
        raise _fail(path, "grid", "needs at least one search space, e.g. [grid.paper]")
    labels = {e.label for e in entries} | {e.protocol for e in entries}
    grids = {}
    for gname, table in grids_raw.items():
        where = f"grid.{gname}"
        if not isinstance(table, dict):
            raise _fail(path, where, "must be a table")
        shared_raw, per_entry, counts = {}, {}, {}
        for k, v in table.items():
            if isinstance(v, dict) and k in SECTIONS and k not in labels:
                shared_raw[k] = v  # a section table of shared keys, e.g. [grid.paper.train]
            elif isinstance(v, dict):
                if k not in labels:
                    raise _fail(path, f"{where}.{k}", "names no protocol entry of this file")
                per_entry[k] = _grid_table(path, f"{where}.{k}", v)
                if not per_entry[k]:
                    raise _fail(path, f"{where}.{k}", "is empty")
            elif _key(k) in ("runs_per_config", "final_runs"):
                hi = FINAL_SEED_OFFSET if _key(k) == "runs_per_config" else 100_000
                counts[_key(k)] = _count(path, f"{where}.{k}", v, 1 if hi < 10**4 else 0, hi)
            else:
                shared_raw[k] = v
        shared = _grid_table(path, where, shared_raw)
        grids[gname] = Grid(gname, shared, per_entry, **counts)

    exp = Experiment(
        path=path,
        name=name,
        description=description,
        datasets=datasets,
        entries=entries,
        models=models,
        epsilons=epsilons,
        runs_per_config=runs,
        final_runs=final,
        seed=seed,
        backend=backend,
        store=store,
        fixed=fixed,
        grids=grids,
        per_dataset=per_dataset,
    )
    _check_cells(exp)
    return exp


def _check_dataset(path: str, ds: str) -> None:
    from ..datasets import DatasetError, parse_dataset_spec

    try:
        parse_dataset_spec(ds)
    except (DatasetError, ValueError) as exc:
        raise _fail(path, "datasets", str(exc)) from None


def _check_cells(exp: Experiment) -> None:
    """Every configuration a grid can produce must be a valid RunConfig (protocol names are
    left to :meth:`Experiment.check_protocols`)."""
    from ldpgraph.protocols.registry import protocol_names

    names = protocol_names()
    for grid, entry, ds in itertools.product(exp.grids.values(), exp.entries, exp.datasets):
        if entry.datasets is not None and ds not in entry.datasets:
            continue
        first = (entry.datasets or exp.datasets)[0]
        if ds != first and ds not in exp.per_dataset:
            continue  # the same keys as the first data set's
        cell = Cell(ds, entry, (entry.models or exp.models)[0], exp.epsilons[0])
        base = exp.base_config(cell)
        if entry.protocol not in names:
            base["protocol"] = "hogs"
        for point in exp.configurations(grid, cell):
            try:
                RunConfig.from_mapping({**base, **point})
            except ConfigError as exc:
                where = f"grid.{grid.name} (protocol {entry.label}, dataset {ds})"
                raise _fail(exp.path, where, str(exc)) from None


def load_experiment(path: str | Path, *, check_protocols: bool = True) -> Experiment:
    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ExperimentError(f"{p}: no such experiment file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ExperimentError(f"{p}: not valid TOML: {exc}") from None
    exp = parse_experiment(data, str(p))
    if check_protocols:
        exp.check_protocols()
    return exp
