"""Checks of single values of an experiment file, each failing with one line that names the
file and the key (:class:`~.experiment_types.ExperimentError`)."""

from __future__ import annotations

import math
from typing import Any

from ..config import ConfigError, flatten_sections, key_choices, key_default, key_names
from .experiment_types import CELL_KEYS, ExperimentError


def key_name(name: str) -> str:
    return str(name).replace("-", "_")


def fail(path: str, where: str, msg: str) -> ExperimentError:
    return ExperimentError(f"{path}: {where}: {msg}")


def check_value(path: str, where: str, key: str, value: Any) -> Any:
    """Coerce one configuration value to its key's type (the combined configuration is checked by
    RunConfig.validate later, in :func:`.experiment._check_cells`)."""
    name = key_name(key)
    if name not in key_names():
        raise fail(path, where, f"unknown key {key!r} (not a run configuration key)")
    kind = type(key_default(name))
    ok = isinstance(value, bool) if kind is bool else not isinstance(value, bool)
    if kind is int:
        ok = ok and (isinstance(value, int) or (isinstance(value, float) and value.is_integer()))
    elif kind is float:
        ok = ok and isinstance(value, int | float)
    elif kind is str:
        ok = ok and isinstance(value, str)
    if not ok:
        raise fail(path, where, f"must be of type {kind.__name__}, got {value!r}")
    value = kind(value)
    if kind is float and not math.isfinite(value):
        raise fail(path, where, f"must be finite, got {value!r}")
    if name == "backend":
        backends = key_choices("backend")
        if value not in backends:
            raise fail(path, where, f"unknown backend {value!r}; choose from {backends}")
    return value


def check_list(path: str, where: str, value: Any, kind: type | tuple[type, ...]) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise fail(path, where, "must be a non-empty list")
    kinds = kind if isinstance(kind, tuple) else (kind,)
    for v in value:
        if not isinstance(v, kind) or (isinstance(v, bool) and bool not in kinds):
            raise fail(path, where, f"bad entry {v!r}")
    if len(set(map(repr, value))) != len(value):
        raise fail(path, where, "has duplicate entries")
    return list(value)


def check_count(path: str, key: str, value: Any, lo: int, hi: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise fail(path, key, f"must be an integer in [{lo}, {hi}], got {value!r}")
    return value


def flat_keys(path: str, where: str, table: dict[str, Any]) -> dict[str, Any]:
    """A table's configuration keys, flat: section tables (``[fixed.train]``) and dotted keys
    (``train.lr = ...``) as the configuration schema reads them."""
    try:
        return flatten_sections(table)
    except ConfigError as exc:
        raise fail(path, where, str(exc)) from None


def grid_table(path: str, where: str, table: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for k, v in flat_keys(path, where, table).items():
        name = key_name(k)
        if name in CELL_KEYS:
            raise fail(path, f"{where}.{k}", "is set by the sweep itself; it cannot be searched")
        values = check_list(path, f"{where}.{k}", v, (int, float, str, bool))
        out[name] = [check_value(path, f"{where}.{k}", k, x) for x in values]
    return out
