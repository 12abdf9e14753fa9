"""How ldpgraph finds its components: one mechanism for protocols, metrics and datasets.

Each registry keeps an explicit table of its built-in components, ``name -> "module:attr"``
(:data:`ldpgraph.protocols.registry.BUILTIN`, :data:`ldpgraph.server.evaluation.base.BUILTIN`,
:data:`ldpgraph.simulation.datasets.registry.BUILTIN`), in the shape of PyG's and Opacus's
registries. A lookup imports only the module its table names, so choosing ``hogs`` never
imports torch or a central strategy; a test imports every module of the packages and holds
the table equal to what they register, so a component missing from the table (or a table line
whose module registers nothing) fails loudly instead of being skipped.

A component outside the package (a plug-in, a test's toy) registers at runtime with its
registry's ``register`` function; to make it known to every process of a run (the Flower
backend's node processes, sweep workers) name its module in the ``LDPGRAPH_PLUGINS``
environment variable (comma-separated module names, importable on ``sys.path`` /
``PYTHONPATH``): every registry imports them before its first answer. Standard library only
(the client imports this).
"""

from __future__ import annotations

import importlib
import os
from typing import Any

#: Comma-separated modules imported before any registry answers (each registers its
#: components with ``register``/``register_metric``/``register_dataset``).
PLUGINS_ENV = "LDPGRAPH_PLUGINS"

_LOADED: set[str] = set()


class PluginError(ImportError):
    """A module named in ``LDPGRAPH_PLUGINS`` that cannot be imported."""


def load_plugins() -> None:
    """Import the modules of ``$LDPGRAPH_PLUGINS`` not imported yet (a failure names the
    variable: a typo there would otherwise look like an unknown protocol)."""
    for module in os.environ.get(PLUGINS_ENV, "").split(","):
        module = module.strip()
        if not module or module in _LOADED:
            continue
        _LOADED.add(module)
        try:
            importlib.import_module(module)
        except ImportError as exc:
            _LOADED.discard(module)
            raise PluginError(f"{PLUGINS_ENV}: cannot import plug-in {module!r}: {exc}") from exc


def resolve(path: str) -> Any:
    """The object at ``"module:qualname"`` (importing the module)."""
    module, _, qualname = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def path_of(obj: Any) -> str:
    """``"module:qualname"`` of a class (a path passes through)."""
    return obj if isinstance(obj, str) else f"{obj.__module__}:{obj.__qualname__}"


def table_mismatches(table: dict[str, str], registered: dict[str, str]) -> list[str]:
    """What differs between a registry's table and what its modules register (both
    ``name -> "module:attr"``), one line each, naming the line to add, change or remove."""
    out = []
    for name, path in registered.items():
        if name not in table:
            out.append(f"add {name!r}: {path!r} (registered by its module, missing from the table)")
        elif table[name] != path:
            out.append(f"change {name!r}: {table[name]!r} -> {path!r}")
    for name, path in table.items():
        if name not in registered:
            out.append(f"remove {name!r}: {path!r} (its module registers no such name)")
    return out
