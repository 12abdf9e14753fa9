"""How a run's configuration and result record become a row of the results store, and back.

Nothing of a result record is dropped: the keys of :func:`ldpgraph.simulation.pipeline.run`'s
record go to their columns, every metric's section (``accuracy``, ``training``,
``graph_stats``, ``lp``, ``attack``, ``skipped_metrics``, …:
:func:`ldpgraph.server.record.metric_sections`) to the ``metrics`` column, anything else to
``extra``. Stores written before every section went to ``metrics`` kept the sections other than
accuracy and training in ``extra``: rows read from them show those sections under ``metrics``
too (:func:`row_from_db`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from .identity import config_hash, run_key
from .owners import iso

#: The record keys of ``pipeline.run`` that have their own JSON column (``metrics`` holds every
#: metric section); any other key of a record is kept in ``extra``.
RECORD_COLUMNS = ("privacy", "timings", "graph", "release", "versions")
_RECORD_KNOWN = {"config", "fingerprint", "command", *RECORD_COLUMNS}
JSON_COLUMNS = ("config", "metrics", *RECORD_COLUMNS, "extra")


def json_default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):  # numpy scalars and arrays
        return obj.tolist()
    if isinstance(obj, set | frozenset):
        return sorted(obj)
    return str(obj)


def dumps(obj: Any) -> str | None:
    if obj is None:
        return None
    return json.dumps(obj, default=json_default, ensure_ascii=False)


def to_float(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def config_fields(cfg: dict[str, Any]) -> dict[str, Any]:
    """The columns a canonical configuration fills: its identity and what rows are selected by."""
    seed = cfg.get("seed")
    return {
        "run_key": run_key(cfg),
        "config_hash": config_hash(cfg),
        "protocol": cfg.get("protocol"),
        "dataset": cfg.get("dataset"),
        "model": cfg.get("model"),
        "epsilon": to_float(cfg.get("epsilon")),
        "seed": int(seed) if isinstance(seed, int | float) else None,
        "config": dumps(cfg),
    }


def result_fields(result: dict[str, Any], finished: datetime) -> dict[str, Any]:
    """The columns a finished run's record fills (``finished``: when it was stored; it started
    its total time earlier)."""
    accuracy = result.get("accuracy") or {}
    total = to_float((result.get("timings") or {}).get("total"))
    started = finished.timestamp() - (total or 0.0)
    from ldpgraph.server.record import metric_sections  # NumPy: not for opening a store

    sections = metric_sections(result)
    extra = {k: v for k, v in result.items() if k not in _RECORD_KNOWN and k not in sections}
    metrics = {
        "accuracy": accuracy,
        "training": result.get("training") or {},
        **{k: v for k, v in sections.items() if k not in ("accuracy", "training")},
    }
    return {
        "started_at": iso(datetime.fromtimestamp(started, UTC)),
        "finished_at": iso(finished),
        "heartbeat_at": iso(finished),
        "val_acc": to_float(accuracy.get("val")),
        "test_acc": to_float(accuracy.get("test")),
        "metrics": dumps(metrics),
        **{c: dumps(result.get(c)) for c in RECORD_COLUMNS},
        "extra": dumps(extra) if extra else None,
        "fingerprint": result.get("fingerprint"),
        "command": result.get("command"),
        "error": None,
    }


def row_from_db(names: Sequence[str], values: Sequence[Any]) -> dict[str, Any]:
    """A row as read: a dict of the columns, the JSON columns parsed, ``git_dirty`` a bool."""
    row = dict(zip(names, values, strict=True))
    for c in JSON_COLUMNS:
        row[c] = json.loads(row[c]) if row[c] is not None else None
    _legacy_sections(row)
    if row["git_dirty"] is not None:
        row["git_dirty"] = bool(row["git_dirty"])
    return row


def _legacy_sections(row: dict[str, Any]) -> None:
    """A row written before every metric section went to ``metrics`` kept the sections other
    than accuracy and training in ``extra``: move them (every mapping there) to ``metrics``."""
    extra = row.get("extra")
    if not extra:
        return
    moved = {k: v for k, v in extra.items() if isinstance(v, dict)}
    if moved:
        row["metrics"] = {**(row.get("metrics") or {}), **moved}
        row["extra"] = {k: v for k, v in extra.items() if k not in moved} or None
