"""The built-in protocols' and metrics' declarations, readable without importing their modules.

Listing the configuration's keys (``ldpgraph run``'s flags, its ``--help``, the run identity)
needs every protocol's parameters and every metric's settings. They are declared in the
protocol and metric modules, which import NumPy and SciPy: seconds before a one-line refusal
of a bad ``--store`` could be printed. So the declarations of the built-in ones are also kept
as a generated table (:mod:`.schema_table`), which this module reads, and which a test holds
equal to what the modules declare. After changing anything under ``protocols/`` or
``server/evaluation/`` run::

    python -m ldpgraph.simulation.schema_generate --write   # rewrite simulation/schema_table.py
    python -m ldpgraph.simulation.schema_generate --check   # exit 1 when it is out of date

(``python -m ldpgraph.simulation.flwr_table --write``, the step after adding a key, runs the
first too.)

A protocol or metric whose module is already imported, and every plug-in's or test's, is read
from the live registry instead (then the table is not needed, and a plug-in is never in it);
so is everything while the protocol and metric packages' sources differ from those the table
was generated from (:func:`source_hash`): a stale table costs time, never a wrong answer.
Standard library only.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ldpgraph.protocols.params import Param, declarations_by_name

_METRICS_MODULE = "ldpgraph.server.evaluation.base"


@dataclass(frozen=True)
class ProtocolEntry:
    """What listing a protocol's keys and help needs: its parameters, summary and privacy
    model (``ldp``, ``central``, ``none``, ``empirical``)."""

    name: str
    params: tuple[Param, ...]
    summary: str
    privacy_model: str

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)


#: The packages whose modules declare the table's contents (protocol parameters, metric
#: settings): the table is used only while their sources hash to what it was generated from.
SOURCES = ("ldpgraph.protocols", "ldpgraph.server.evaluation")
#: Single modules the early checks' figures also come from (the clients' smallest charge, the
#: run configuration's defaults, the synthetic graph's sizes), relative to the package root:
#: read as files, so hashing them imports nothing (a package's ``__init__`` may import NumPy).
SOURCE_FILES = ("client/refusals.py", "simulation/config.py", "simulation/datasets/synthetic.py")
_FRESH: list[bool] = []


def source_hash() -> str:
    """SHA-256 of every module of :data:`SOURCES` (relative path and text, sorted) and of
    :data:`SOURCE_FILES`: what the table was generated from. Found without importing them
    (~10 ms for ~100 files)."""
    import hashlib
    import importlib.util

    digest = hashlib.sha256()
    for package in SOURCES:
        spec = importlib.util.find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            root = Path(folder)
            for path in sorted(root.rglob("*.py")):
                digest.update(f"{package}/{path.relative_to(root).as_posix()}\0".encode())
                digest.update(path.read_bytes())
    root = Path(__file__).resolve().parent.parent
    for name in SOURCE_FILES:
        digest.update(f"ldpgraph/{name}\0".encode())
        digest.update((root / name).read_bytes())
    return digest.hexdigest()


def _table() -> Any:
    """The generated table, or None while it lags the sources (a declaration changed and the
    table was not regenerated): then everything is read from the modules, slower and right."""
    from . import schema_table

    if not _FRESH:
        _FRESH.append(getattr(schema_table, "SOURCE_HASH", None) == source_hash())
    return schema_table if _FRESH[0] else None


def _live_entry(name: str) -> ProtocolEntry:
    from ldpgraph.protocols import registry

    info = registry.protocol_info(name)
    # By name: one class may register a private name and its non-private reference
    # (dpar-gm / dpar-nodp). Nothing is built (a run builds its protocol once).
    cls = info.resolve()
    of = getattr(cls, "privacy_model_of", None)
    model = of(name) if of is not None else getattr(cls, "privacy_model", "ldp")
    return ProtocolEntry(name, info.params, info.summary, model)


def protocol_entry(name: str) -> ProtocolEntry:
    """Protocol ``name``'s entry: the live registry's when its module is loaded (or it is no
    built-in), else the table's (no import). An unknown name raises the registry's error."""
    from ldpgraph.protocols import registry

    table = getattr(_table(), "PROTOCOLS", {})
    if name in registry.BUILTIN and name in table and not registry.is_loaded(name):
        params, summary, model = table[name]
        return ProtocolEntry(name, params, summary, model)
    return _live_entry(name)


def protocol_entries() -> list[ProtocolEntry]:
    """Every protocol's entry, in the registry's order (built-in ones first)."""
    from ldpgraph.protocols import registry

    return [protocol_entry(name) for name in registry.protocol_names()]


def parameters() -> dict[str, tuple[Param, list[str]]]:
    """Every protocol parameter name: its most common declaration and the protocols that
    declare it (as :func:`ldpgraph.protocols.registry.parameters`, without the imports)."""
    return declarations_by_name((entry.name, entry.params) for entry in protocol_entries())


def _metrics_live() -> bool:
    """Whether to ask the metric registry: it is loaded (a run, a test, a metric plug-in: then
    it is the truth, and asking it costs no further import worth avoiding), or the table
    lags the sources."""
    return _METRICS_MODULE in sys.modules or _table() is None


def metric_names() -> tuple[str, ...]:
    """Every metric's name (registry order)."""
    if _metrics_live():
        from ldpgraph.server.evaluation import base

        return base.metric_names()
    return tuple(_table().METRIC_NAMES)


def metric_settings() -> dict[str, Param]:
    """Every metric's settings by name (as :func:`~ldpgraph.server.evaluation.base.
    metric_settings`)."""
    if _metrics_live():
        from ldpgraph.server.evaluation import base

        return base.metric_settings()
    return dict(_table().METRIC_SETTINGS)


# --- generating the table ---------------------------------------------------------------
