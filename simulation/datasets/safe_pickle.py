"""Reading dataset pickles without running their code.

``pickle.load`` calls whatever a file names: a poisoned dataset folder (a ``__reduce__`` that
returns ``os.system``) runs code in whoever loads it. The dataset pickles this project reads
hold only plain data: Planetoid's ``ind.*`` files (numpy arrays, scipy CSR matrices, a
``defaultdict`` of lists) and DPGGAN's collections (lists of ``networkx.Graph``). The
unpickler below resolves exactly those classes (found by loading every mirrored pickle) and
refuses anything else with a one-line :class:`DatasetError`, before any object is built.
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import Any, BinaryIO

from .info import DatasetError

#: (module, name) an unpickled dataset may name: data containers only, nothing that runs code.
ALLOWED: frozenset[tuple[str, str]] = frozenset(
    {
        ("builtins", name)
        for name in ("list", "dict", "tuple", "set", "frozenset", "int", "float", "str", "bytes")
    }
    | {("collections", "defaultdict"), ("collections", "OrderedDict")}
    | {
        (module, name)
        for module in ("numpy.core.multiarray", "numpy._core.multiarray")
        for name in ("_reconstruct", "scalar")
    }
    | {("numpy", "ndarray"), ("numpy", "dtype")}
    | {
        (module, name)
        for name in ("csr_matrix", "csc_matrix", "coo_matrix")
        for module in (
            "scipy.sparse",
            f"scipy.sparse.{name[:3]}",
            f"scipy.sparse._{name[:3]}",
        )
    }
    | {("networkx.classes.graph", "Graph"), ("networkx.classes.digraph", "DiGraph")}
)


class _Restricted(pickle.Unpickler):
    def __init__(self, file: BinaryIO, where: str, **kwargs: Any) -> None:
        super().__init__(file, **kwargs)
        self.where = where

    def find_class(self, module: str, name: str) -> Any:
        # Python 2 pickles (Planetoid's) name the builtins module ``__builtin__``.
        if (module if module != "__builtin__" else "builtins", name) not in ALLOWED:
            raise DatasetError(
                f"{self.where}: refused to unpickle {module}.{name}: a dataset pickle may hold "
                "only numpy, scipy and networkx data (a poisoned or foreign file?)"
            )
        return super().find_class(module, name)


def load_pickle(path: str | Path, encoding: str = "ASCII") -> Any:
    """The object pickled in ``path``, built only from :data:`ALLOWED` classes. A damaged file
    raises the unpickler's own error (the dataset loader names the file in one line)."""
    path = Path(path)
    return _Restricted(io.BytesIO(path.read_bytes()), str(path), encoding=encoding).load()


__all__ = ["ALLOWED", "load_pickle"]
