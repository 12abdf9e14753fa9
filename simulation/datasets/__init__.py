"""The dataset layer: every graph ldpgraph runs on, loaded offline from a mirror or downloaded.

One module per job (:mod:`.registry` names the datasets, :mod:`.locations` finds their raw
files, :mod:`.download` fetches them, :mod:`.build` turns them into a cached ``Graph``,
:mod:`.load` is the public entry) and one per family of datasets (:mod:`.planetoid`,
:mod:`.facebook`, :mod:`.gnn_benchmark`, :mod:`.lastfm`, :mod:`.privdpr`, :mod:`.synthetic`).

Where the raw files come from
    ``data_root`` (``--data-root``), else the ``LDPGRAPH_DATA`` environment variable, else none
    (the ``ldpgraph`` command also falls back to the data root ``make`` recorded in its virtual
    environment: :func:`recorded_data_root`).
    With a data root the raw files are read from ``<data_root>/<Folder>/.../raw/`` exactly as
    PyG lays them out (each dataset's ``DatasetInfo.raw_files`` names them) and nothing is
    downloaded, except for the datasets the mirror cannot hold (``pubmed``, ``lastfm``), which
    fall back to a download. Without a data root every dataset is downloaded from its usual
    public URL into the cache.

Where the output goes
    Only into :func:`cache_dir` (``LDPGRAPH_CACHE``, else ``~/.cache/ldpgraph``), never into the
    data root: PyG (used for Planetoid) gets symlinks to the raw files under ``<cache>/pyg/`` and
    writes its ``processed/`` there, and every load leaves a compact ``.npz`` under
    ``<cache>/graphs/`` keyed by the dataset name and the raw files' sizes and mtimes, so later
    loads neither import torch nor touch PyG.

What every graph looks like
    A :class:`~ldpgraph.protocols.graph.Graph`: undirected, no self-loops, no duplicate edges
    (``canonical_edges``), ``x`` uint8 when every feature is 0/1 (else float32), ``y`` int64
    (structure-only graphs, :mod:`.privdpr`: N×0 features and every label −1). The
    gnn-benchmark npz datasets (CitationFull, Coauthor, Amazon) are read as PyG's ``read_npz``
    reads them: features set to 1 where the stored value is positive (Coauthor stores counts,
    CitationFull TF-IDF weights), self-loops dropped, edges made undirected.
"""

import importlib
from typing import Any

#: Where each public name lives, imported on first use (PEP 562): the ``ldpgraph`` command
#: reads the recorded data root (:mod:`.locations`) before any refusal, and the family and
#: build modules import NumPy, which a one-line refusal should not wait for.
_WHERE = {
    "LOADER_VERSION": "build",
    **dict.fromkeys(("DatasetError", "DatasetInfo", "Fetcher", "Loader", "Stats"), "info"),
    **dict.fromkeys(("check_dataset", "dataset_catalog", "load_dataset"), "load"),
    **dict.fromkeys(
        (
            "DATA_HINT",
            "DATA_ROOT_FILE",
            "ENV_CACHE",
            "ENV_DATA",
            "cache_dir",
            "recorded_data_root",
            "resolve_data_root",
        ),
        "locations",
    ),
    **dict.fromkeys(("DATASETS", "parse_dataset_spec", "register_dataset"), "registry"),
    **dict.fromkeys(("SYNTHETIC_DEFAULTS", "synthetic_graph"), "synthetic"),
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})


__all__ = [
    "DATASETS",
    "DATA_HINT",
    "DATA_ROOT_FILE",
    "ENV_CACHE",
    "ENV_DATA",
    "LOADER_VERSION",
    "SYNTHETIC_DEFAULTS",
    "DatasetError",
    "DatasetInfo",
    "Fetcher",
    "Loader",
    "Stats",
    "cache_dir",
    "check_dataset",
    "dataset_catalog",
    "load_dataset",
    "parse_dataset_spec",
    "recorded_data_root",
    "register_dataset",
    "resolve_data_root",
    "synthetic_graph",
]
