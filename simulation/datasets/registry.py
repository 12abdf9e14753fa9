"""The names of the datasets and the ``name:key=value,...`` specs that choose one and its
parameters.

The built-in datasets are listed in :data:`BUILTIN` (``name -> "module:ENTRIES"``: the family
module whose ``ENTRIES`` declares it), the registration table every registry of ldpgraph keeps
(:mod:`ldpgraph.protocols.catalog`); a test holds it equal to what the family modules declare.
:data:`DATASETS` imports the family modules on its first use; a plug-in (a module named in
``LDPGRAPH_PLUGINS``) adds its own with :func:`register_dataset`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from ldpgraph.protocols.catalog import load_plugins

from .info import DatasetError, DatasetInfo, coerce_param

_HERE = "ldpgraph.simulation.datasets."
#: The built-in datasets, in the order ``ldpgraph datasets`` lists them.
BUILTIN: dict[str, str] = {
    **dict.fromkeys(("cora", "citeseer", "pubmed"), _HERE + "planetoid:ENTRIES"),
    "facebook": _HERE + "facebook:ENTRIES",
    **dict.fromkeys(
        ("cora-ml", "coauthor-cs", "coauthor-physics", "amazon-photo", "amazon-computers"),
        _HERE + "gnn_benchmark:ENTRIES",
    ),
    "lastfm": _HERE + "lastfm:ENTRIES",
    "polblogs": _HERE + "polblogs:ENTRIES",
    **dict.fromkeys(
        ("privdpr-cora", "privdpr-citeseer", "privdpr-p2p", "privdpr-chicago"),
        _HERE + "privdpr:ENTRIES",
    ),
    **dict.fromkeys(
        ("dblp-collection", "imdb-collection", "dblp-new-collection", "imdb-new-collection"),
        _HERE + "graph_collections:ENTRIES",
    ),
    "synthetic": _HERE + "synthetic:ENTRIES",
}


def declared_by(path: str) -> dict[str, DatasetInfo]:
    """The datasets a family module declares (its ``ENTRIES``), by name."""
    module, _, attr = path.partition(":")
    return {info.name: info for info in getattr(importlib.import_module(module), attr)}


class _Datasets(MutableMapping[str, DatasetInfo]):
    """Dataset names → :class:`DatasetInfo`: the built-in ones (their family modules imported
    on first use), then those a plug-in registered."""

    def __init__(self) -> None:
        self._infos: dict[str, DatasetInfo] | None = None

    def _all(self) -> dict[str, DatasetInfo]:
        if self._infos is None:
            infos: dict[str, DatasetInfo] = {}
            for path in dict.fromkeys(BUILTIN.values()):
                infos.update(declared_by(path))
            missing = [name for name in BUILTIN if name not in infos]
            if missing:
                raise RuntimeError(f"datasets {missing} of registry.BUILTIN are declared nowhere")
            self._infos = {name: infos[name] for name in BUILTIN}
        load_plugins()
        return self._infos

    def __getitem__(self, name: str) -> DatasetInfo:
        return self._all()[name]

    def __setitem__(self, name: str, info: DatasetInfo) -> None:
        self._all()[name] = info

    def __delitem__(self, name: str) -> None:
        del self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


DATASETS: MutableMapping[str, DatasetInfo] = _Datasets()


def register_dataset(info: DatasetInfo) -> DatasetInfo:
    """Make a plug-in's dataset known under ``info.name`` (a built-in name is refused)."""
    if info.name in BUILTIN:
        raise ValueError(f"dataset {info.name!r} is built in ({BUILTIN[info.name]})")
    DATASETS[info.name] = info
    return info


def _known() -> str:
    return ", ".join(DATASETS)


def _normalise_name(name: str) -> str:
    key = name.strip().lower().replace("_", "-")
    if key not in DATASETS:
        raise DatasetError(f"unknown dataset {name!r}; known datasets: {_known()}")
    return key


def parse_dataset_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Split ``"name:key=value,..."`` into the dataset name and typed parameters."""
    if not isinstance(spec, str) or not spec.strip():
        raise DatasetError(f"empty dataset spec {spec!r}; known datasets: {_known()}")
    head, sep, tail = spec.partition(":")
    name = _normalise_name(head)
    params: dict[str, Any] = {}
    if sep and tail.strip():
        for item in tail.split(","):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or not key or not value.strip():
                raise DatasetError(f"bad item {item!r} in dataset spec {spec!r}: want key=value")
            if key in params:
                raise DatasetError(f"parameter {key!r} given twice in dataset spec {spec!r}")
            params[key] = value.strip()
    return name, check_params(DATASETS[name], params)


def check_params(info: DatasetInfo, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` typed as the dataset's defaults; an unknown parameter is an error."""
    unknown = sorted(set(params) - set(info.params))
    if unknown:
        allowed = ", ".join(info.params) if info.params else "none"
        raise DatasetError(
            f"{info.name}: unknown parameter(s) {', '.join(unknown)}; allowed: {allowed}"
        )
    return {k: coerce_param(info.name, k, v, info.params[k]) for k, v in params.items()}
