"""ldpgraph: private graph learning where every graph node is a client.

The package's code lives in four sub-packages (``ldpgraph.protocols``: the mechanisms and
strategies; ``ldpgraph.client`` and ``ldpgraph.server``: the Flower apps;
``ldpgraph.simulation``: datasets, runs, sweeps, results and the CLI). This module is the
façade: the version, and nothing that imports torch or Flower on ``import ldpgraph``.
"""

from __future__ import annotations

import pkgutil
from importlib import metadata

# A checkout's ``ldpgraph/`` folder may shadow an installed (non-editable) ldpgraph when Python
# runs from the repository root: extend the package path so the sub-packages are found there.
__path__ = pkgutil.extend_path(__path__, __name__)

try:
    __version__: str = metadata.version("ldpgraph")
except metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
