"""ldpgraph: private graph learning where every graph node is a client.

The package's code lives in four sub-packages (``ldpgraph.protocols``: the mechanisms and
strategies; ``ldpgraph.client`` and ``ldpgraph.server``: the Flower apps;
``ldpgraph.simulation``: datasets, runs, sweeps, results and the CLI). This module is the
façade: the version and the library's functions (``run``, ``release``, ``train``,
``load_dataset``, ``transforms``, ``results``), loaded on first use: ``import ldpgraph``
imports neither torch nor Flower.
"""

from __future__ import annotations

import pkgutil

# A checkout's ``ldpgraph/`` folder may shadow an installed (non-editable) ldpgraph when Python
# runs from the repository root: extend the package path so the sub-packages are found there.
__path__ = pkgutil.extend_path(__path__, __name__)


def _version() -> str:
    """The installed distribution's version (``__version__``, read on first use: the metadata
    machinery costs a one-line refusal of the ``ldpgraph`` command a tenth of its time)."""
    from importlib import metadata

    try:
        return metadata.version("ldpgraph")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


#: The library's functions (name -> module), imported on first use so ``import ldpgraph``
#: stays light; ``transforms`` and ``results`` are modules.
_API = {
    "run": "ldpgraph.simulation.api",
    "release": "ldpgraph.simulation.api",
    "train": "ldpgraph.simulation.api",
    "load_dataset": "ldpgraph.simulation.api",
    "RunResult": "ldpgraph.simulation.api",
    "transforms": "ldpgraph.transforms",
    "results": "ldpgraph.results",
}
_MODULES = ("transforms", "results")

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    import importlib

    if name == "__version__":
        globals()[name] = _version()
        return globals()[name]
    if name not in _API:
        raise AttributeError(f"module 'ldpgraph' has no attribute {name!r}")
    module = importlib.import_module(_API[name])
    value = module if name in _MODULES else getattr(module, name)
    globals()[name] = value
    return value
