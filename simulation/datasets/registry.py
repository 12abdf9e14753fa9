"""The names of the datasets, family by family, and the ``name:key=value,...`` specs that
choose one and its parameters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import (
    facebook,
    gnn_benchmark,
    graph_collections,
    lastfm,
    planetoid,
    polblogs,
    privdpr,
    synthetic,
)
from .info import DatasetError, DatasetInfo, coerce_param

DATASETS: dict[str, DatasetInfo] = {
    info.name: info
    for family in (
        planetoid,
        facebook,
        gnn_benchmark,
        lastfm,
        polblogs,
        privdpr,
        graph_collections,
        synthetic,
    )
    for info in family.ENTRIES
}


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
