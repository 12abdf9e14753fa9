"""The public entry: load a dataset by name or spec, check a spec, list the datasets."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ldpgraph.protocols import progress
from ldpgraph.protocols.graph import Graph

from .build import cache_paths, graph_stats, load_processed, raw_fingerprint
from .info import DatasetError, DatasetInfo
from .locations import download_root, locate, missing_files, resolve_data_root
from .registry import DATASETS, check_params, parse_dataset_spec
from .synthetic import SYNTHETIC_DEFAULTS, synthetic_graph, validate_synthetic


def check_dataset(name: str) -> None:
    """Raise DatasetError for a dataset name or spec :func:`load_dataset` would refuse (unknown
    name, bad or out-of-range parameters), without loading anything."""
    key, spec_params = parse_dataset_spec(name)
    merged = check_params(DATASETS[key], spec_params)
    if key == "synthetic":
        validate_synthetic(dict(SYNTHETIC_DEFAULTS) | merged)


def load_dataset(
    name: str,
    data_root: str | os.PathLike[str] | None = None,
    *,
    download: bool | None = None,
    **params: Any,
) -> Graph:
    """Load a dataset by name or spec (``"synthetic:n=2000,homophily=0.9"``) as a ``Graph``.

    ``download``: None (default) downloads only when no data root is configured or the dataset
    is not mirrorable (PubMed, LastFM); True also falls back to a download when the data root
    lacks the files; False never downloads.
    """
    key, spec_params = parse_dataset_spec(name)
    clash = sorted(set(spec_params) & set(params))
    if clash:
        raise DatasetError(
            f"parameter(s) {', '.join(clash)} given both in {name!r} and as keyword arguments"
        )
    info = DATASETS[key]
    merged = spec_params | check_params(info, params)
    if key == "synthetic":
        graph = synthetic_graph(**(dict(SYNTHETIC_DEFAULTS) | merged))
        graph.meta.update({"dataset": "synthetic", "source": None, "cache": None})
        return graph
    root = locate(info, resolve_data_root(data_root), download)
    return load_processed(info, root)


def dataset_catalog(
    data_root: str | os.PathLike[str] | None = None, compute: bool = True
) -> list[dict[str, Any]]:
    """One row per dataset: expected stats, whether it is available offline, measured stats.

    Offline means every raw file is present under the data root, or, failing that, already in
    the download cache. Measured stats come from the cache's sidecar when it has one, so
    repeated catalogs are fast.
    """
    root = resolve_data_root(data_root)
    dl_root = download_root()
    rows = []
    for i, info in enumerate(DATASETS.values(), 1):
        row: dict[str, Any] = {
            "name": info.name,
            "description": info.description,
            "expected": info.expected.as_dict() if info.expected else None,
            "raw_files": list(info.raw_files),
        }
        if info.name == "synthetic":
            row |= {"offline": True, "missing": [], "location": None}
        else:
            missing = missing_files(root, info) if root is not None else list(info.raw_files)
            location = root if root is not None and not missing else None
            if location is None and not missing_files(dl_root, info):
                location = dl_root
            row |= {
                "offline": location is not None,
                "missing": missing,
                "location": str(location) if location is not None else None,
            }
        if row["offline"] and compute:
            try:
                row["measured"] = _measure(info, Path(row["location"] or "."), (i, len(DATASETS)))
            except (DatasetError, OSError) as err:  # one bad dataset does not stop the list
                row["error"] = str(err)
        rows.append(row)
    return rows


def _measure(info: DatasetInfo, root: Path, place: tuple[int, int]) -> dict[str, Any]:
    """The statistics of a dataset: from the cache's sidecar, else by loading it (seconds to
    a minute the first time: a stage line says which; ``place``: its index and the count)."""
    if info.name == "synthetic":
        return graph_stats(synthetic_graph(**SYNTHETIC_DEFAULTS))
    _, json_path = cache_paths(info, raw_fingerprint(root, info))
    try:
        stats = json.loads(json_path.read_text())
        return {k: stats[k] for k in ("nodes", "edges", "features", "classes", "binary")}
    except (OSError, ValueError, KeyError):
        progress.stage(f"loading {info.name} to measure it ({place[0]}/{place[1]})")
        return graph_stats(load_processed(info, root))
