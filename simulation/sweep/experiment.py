"""Experiment files: what ``ldpgraph sweep FILE`` runs.

An experiment file is TOML. Every configuration key is a key of the run configuration
(:mod:`ldpgraph.simulation.config`, the one schema), written with hyphens or underscores::

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

    [fixed]                               # configuration keys fixed for every run
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
    dropout = [0.1, 0.01, 0.001, 0.0]     # grid keys: configuration keys, each a non-empty list
    lr = [0.1, 0.01, 0.001]
    runs_per_config = 5                   # optional per-grid overrides of the run counts
    final_runs = 10
    [grid.paper.hogs-edge]                # keys searched only for this protocol entry
    tau = [0.5, 0.7, 0.9]

Grid order (ties go to the first) is the product of the protocol entry's keys, then the shared
keys, each in file order, the last key varying fastest.

This module reads and checks a file section by section; what it builds (:class:`Experiment`,
its entries, grids and cells) is in :mod:`.experiment_types`, the checks of single values in
:mod:`.checks`. The types are importable from here.
"""

from __future__ import annotations

import itertools
import math
import tomllib
from pathlib import Path
from typing import Any

from ..config import SECTIONS, ConfigError, RunConfig, key_choices
from .checks import check_count, check_list, check_value, fail, flat_keys, grid_table, key_name
from .experiment_types import (
    CELL_KEYS,
    FINAL_SEED_OFFSET,
    Cell,
    Entry,
    Experiment,
    ExperimentError,
    Grid,
)

__all__ = [
    "CELL_KEYS",
    "FINAL_SEED_OFFSET",
    "TOP_KEYS",
    "Cell",
    "Entry",
    "Experiment",
    "ExperimentError",
    "Grid",
    "load_experiment",
    "parse_experiment",
]

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


def parse_experiment(data: dict[str, Any], path: str = "<experiment>") -> Experiment:
    """Validate a parsed experiment file (protocol names are checked by :meth:`check_protocols`
    so that files naming protocols still being written can be read, counted and listed)."""
    from ..datasets import load_dataset  # noqa: F401  (dataset names checked below)

    unknown = [k for k in data if key_name(k) not in TOP_KEYS]
    if unknown:
        raise fail(path, unknown[0], f"unknown key; known: {', '.join(sorted(TOP_KEYS))}")
    data = {key_name(k): v for k, v in data.items()}
    head = _header(data, path)
    fixed = _fixed(data, path)
    per_dataset = _per_dataset(data, path, head["datasets"])
    entries = _entries(data, path, head["datasets"])
    exp = Experiment(
        path=path,
        **head,
        entries=entries,
        fixed=fixed,
        grids=_grids(data, path, entries),
        per_dataset=per_dataset,
    )
    _check_cells(exp)
    return exp


def _header(data: dict[str, Any], path: str) -> dict[str, Any]:
    """The top-level keys: name, description, the cell lists, the run counts, seed, backend
    and store."""
    name = data.get("name")
    if not isinstance(name, str) or not name.strip() or "/" in name:
        raise fail(path, "name", "must be a non-empty string without '/'")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise fail(path, "description", "must be a string")
    for key in ("datasets", "protocols", "epsilons"):
        if key not in data:
            raise fail(path, key, "is required")
    datasets, models, epsilons = _cell_lists(data, path)
    runs = check_count(
        path, "runs_per_config", data.get("runs_per_config", 5), 1, FINAL_SEED_OFFSET
    )
    final = check_count(path, "final_runs", data.get("final_runs", 10), 0, 100_000)
    seed = check_count(path, "seed", data.get("seed", 0), 0, 2**62)
    backend = check_value(path, "backend", "backend", data.get("backend", "local"))
    store = data.get("store", str(Path("results") / f"{name}.db"))
    if not isinstance(store, str) or not store:
        raise fail(path, "store", "must be a path")
    return {
        "name": name,
        "description": description,
        "datasets": datasets,
        "models": models,
        "epsilons": epsilons,
        "runs_per_config": runs,
        "final_runs": final,
        "seed": seed,
        "backend": backend,
        "store": store,
    }


def _cell_lists(data: dict[str, Any], path: str) -> tuple[list[str], list[str], list[float]]:
    """The data sets, models and ε values every entry's cells range over (unless it names
    its own)."""
    models_known = key_choices("model")
    datasets = check_list(path, "datasets", data["datasets"], str)
    for ds in datasets:
        _check_dataset(path, ds)
    models = check_list(path, "models", data.get("models", ["gcn"]), str)
    for m in models:
        if m not in models_known:
            raise fail(
                path, "models", f"unknown model {m!r}; choose from {', '.join(models_known)}"
            )
    epsilons = [float(e) for e in check_list(path, "epsilons", data["epsilons"], (int, float))]
    for e in epsilons:
        if not (math.isfinite(e) and e > 0):
            raise fail(path, "epsilons", f"ε must be a finite number > 0, got {e}")
    return datasets, models, epsilons


def _fixed(data: dict[str, Any], path: str) -> dict[str, Any]:
    """``[fixed]``: keys fixed for every run."""
    fixed_raw = data.get("fixed", {})
    if not isinstance(fixed_raw, dict):
        raise fail(path, "fixed", "must be a table")
    fixed = {}
    for k, v in flat_keys(path, "fixed", fixed_raw).items():
        if key_name(k) in CELL_KEYS:
            raise fail(path, f"fixed.{k}", "is set by the sweep itself (use the top-level lists)")
        fixed[key_name(k)] = check_value(path, f"fixed.{k}", k, v)
    return fixed


def _per_dataset(data: dict[str, Any], path: str, datasets: list[str]) -> dict[str, dict[str, Any]]:
    """``[per_dataset.NAME]``: keys fixed for one data set's cells."""
    per_dataset_raw = data.get("per_dataset", {})
    if not isinstance(per_dataset_raw, dict):
        raise fail(path, "per_dataset", "must be a table of tables, one per data set")
    per_dataset: dict[str, dict[str, Any]] = {}
    for ds, table in per_dataset_raw.items():
        where = f"per_dataset.{ds}"
        if ds not in datasets:
            raise fail(path, where, "is not listed in datasets")
        if not isinstance(table, dict):
            raise fail(path, where, "must be a table")
        per_dataset[ds] = {}
        for k, v in flat_keys(path, where, table).items():
            if key_name(k) in CELL_KEYS:
                raise fail(path, f"{where}.{k}", "is set by the sweep itself")
            per_dataset[ds][key_name(k)] = check_value(path, f"{where}.{k}", k, v)
    return per_dataset


def _entries(data: dict[str, Any], path: str, datasets: list[str]) -> list[Entry]:
    """The protocol entries: each name of ``protocols``, a protocol or a ``[variants.NAME]``."""
    variants = data.get("variants", {})
    if not isinstance(variants, dict):
        raise fail(path, "variants", "must be a table of tables")
    entries = []
    for label in check_list(path, "protocols", data["protocols"], str):
        v = variants.get(label)
        entries.append(Entry(label, label) if v is None else _variant(path, label, v, datasets))
    extra = set(variants) - {e.label for e in entries}
    if extra:
        raise fail(path, f"variants.{sorted(extra)[0]}", "is not listed in protocols")
    return entries


def _variant(path: str, label: str, v: Any, datasets: list[str]) -> Entry:
    """``[variants.LABEL]``: a protocol with its own fixed keys, and optionally its own data
    sets, ε values and models."""
    where = f"variants.{label}"
    if not isinstance(v, dict) or not isinstance(v.get("protocol"), str):
        raise fail(path, where, "must be a table with protocol = NAME")
    vf, vmodels, veps, vdata = {}, None, None, None
    if "datasets" in v:
        vdata = tuple(check_list(path, f"{where}.datasets", v["datasets"], str))
        missing = [d for d in vdata if d not in datasets]
        if missing:
            raise fail(path, f"{where}.datasets", f"{missing[0]!r} is not listed in datasets")
    if "epsilons" in v:
        veps = tuple(
            float(e) for e in check_list(path, f"{where}.epsilons", v["epsilons"], (int, float))
        )
        if not all(math.isfinite(e) and e > 0 for e in veps):
            raise fail(path, f"{where}.epsilons", "ε must be finite numbers > 0")
    if "models" in v:
        vmodels = tuple(check_list(path, f"{where}.models", v["models"], str))
        bad = [m for m in vmodels if m not in key_choices("model")]
        if bad:
            raise fail(path, f"{where}.models", f"unknown model {bad[0]!r}")
    own = ("protocol", "models", "epsilons", "datasets")
    keys = {k: val for k, val in v.items() if k not in own}
    for k, val in flat_keys(path, where, keys).items():
        if key_name(k) in CELL_KEYS:
            raise fail(path, f"{where}.{k}", "is set by the sweep itself")
        vf[key_name(k)] = check_value(path, f"{where}.{k}", k, val)
    return Entry(label, v["protocol"], vf, vmodels, veps, vdata)


def _grids(data: dict[str, Any], path: str, entries: list[Entry]) -> dict[str, Grid]:
    """``[grid.NAME]``: the search spaces, each with keys shared by every entry and keys of
    one entry (``[grid.NAME.ENTRY]``), and optionally its own run counts."""
    grids_raw = data.get("grid", {})
    if not isinstance(grids_raw, dict) or not grids_raw:
        raise fail(path, "grid", "needs at least one search space, e.g. [grid.paper]")
    labels = {e.label for e in entries} | {e.protocol for e in entries}
    grids = {}
    for gname, table in grids_raw.items():
        where = f"grid.{gname}"
        if not isinstance(table, dict):
            raise fail(path, where, "must be a table")
        shared_raw, per_entry, counts = {}, {}, {}
        for k, v in table.items():
            if isinstance(v, dict) and k in SECTIONS and k not in labels:
                shared_raw[k] = v  # a section table of shared keys, e.g. [grid.paper.train]
            elif isinstance(v, dict):
                if k not in labels:
                    raise fail(path, f"{where}.{k}", "names no protocol entry of this file")
                per_entry[k] = grid_table(path, f"{where}.{k}", v)
                if not per_entry[k]:
                    raise fail(path, f"{where}.{k}", "is empty")
            elif key_name(k) in ("runs_per_config", "final_runs"):
                hi = FINAL_SEED_OFFSET if key_name(k) == "runs_per_config" else 100_000
                counts[key_name(k)] = check_count(
                    path, f"{where}.{k}", v, 1 if hi < 10**4 else 0, hi
                )
            else:
                shared_raw[k] = v
        shared = grid_table(path, where, shared_raw)
        grids[gname] = Grid(gname, shared, per_entry, **counts)
    return grids


def _check_dataset(path: str, ds: str) -> None:
    from ..datasets import DatasetError, parse_dataset_spec

    try:
        parse_dataset_spec(ds)
    except (DatasetError, ValueError) as exc:
        raise fail(path, "datasets", str(exc)) from None


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
            where = f"grid.{grid.name} (protocol {entry.label}, dataset {ds})"
            try:
                config = RunConfig.from_mapping({**base, **point})
            except ConfigError as exc:
                raise fail(exp.path, where, str(exc)) from None
            if entry.protocol in names:
                _check_cell_before_loading(exp.path, where, config)


def _check_cell_before_loading(path: str, where: str, config: RunConfig) -> None:
    """What a run checks before loading its dataset (a collection for a protocol that wants
    one graph or the reverse, metrics that cannot score the release, reports that cannot fit
    in memory), checked for the whole file at once: a sweep, dry or not, refuses the file
    rather than fail cell after cell."""
    from ..checks import check_collection, check_memory
    from ..pipeline import build_protocol

    try:
        check_collection(config)
        check_memory(config, build_protocol(config))
    except ValueError as exc:
        raise fail(path, where, str(exc)) from None


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
