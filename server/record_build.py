"""The result record of one run, built in one place (:func:`build_record`).

The record is what ``ldpgraph run --json`` prints, what the ServerApp writes and logs, and what
the results store keeps (one row per record: its keys map to the store's columns, so their
names and shapes are part of every existing store): the configuration (seed included), the
accuracy and training outcome, the privacy report, the original and released graph's sizes,
the release's statistics (each round's counts of nodes asked, replied, refused, rejected and
missing), the fingerprint of the release, timings and versions.
"""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from typing import Any, Protocol

from ldpgraph.protocols.types import Release

_PACKAGES = (
    "ldpgraph",
    "numpy",
    "scipy",
    "torch",
    "torch-geometric",
    "flwr",
    "ray",
    "dp-accounting",
    "scikit-learn",
)


#: The record's own keys (:func:`build_record`); every other key holding a mapping is the
#: section of a metric (``accuracy``, ``training``, ``graph_stats``, ``lp``, ``attack``,
#: ``skipped_metrics``, …: :func:`metric_sections`).
RECORD_KEYS = (
    "config",
    "release_kind",
    "privacy",
    "graph",
    "release",
    "fingerprint",
    "timings",
    "versions",
    "command",
)


def metric_sections(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The sections the metrics filled, by name, in record order: every key of ``record`` that
    is not one of :data:`RECORD_KEYS` and holds a mapping (a sweep's ``phase`` and ``entry``
    are plain values)."""
    return {k: v for k, v in record.items() if k not in RECORD_KEYS and isinstance(v, dict)}


class GraphSizes(Protocol):
    """The original graph as the server knows it (a loaded Graph, or a deployment's curator
    file, which may not know the edge count)."""

    num_nodes: int
    num_edges: int | None
    num_features: int
    num_classes: int


def versions() -> dict[str, str]:
    """Python's and every installed package's version that can change a result."""
    out = {"python": platform.python_version()}
    for pkg in _PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def build_record(
    config: dict[str, Any],
    graph: GraphSizes,
    release: Release,
    sections: dict[str, Any],
    timings: dict[str, float],
) -> dict[str, Any]:
    """The result record (JSON-serialisable) of a run of ``config`` (its full mapping) whose
    ``release`` of ``graph`` the metrics measured into ``sections`` (``accuracy`` and
    ``training`` from the accuracy metric, one section per other metric) in ``timings``
    seconds per stage."""
    clash = set(sections) & set(RECORD_KEYS)
    if clash:
        raise RuntimeError(f"metric sections {sorted(clash)} would overwrite the record's own")
    return {
        "config": config,
        **sections,
        "release_kind": release.kind,
        "privacy": release.privacy.to_dict(),
        "graph": {
            "original": {
                "nodes": graph.num_nodes,
                "edges": graph.num_edges,
                "features": graph.num_features,
                "classes": graph.num_classes,
            },
            "synthetic": {
                "nodes": release.num_nodes,
                "edges": release.num_edges,
                "features": int(release.x.shape[1]),
            },
        },
        "release": release.stats,
        "fingerprint": release.fingerprint(),
        "timings": {k: round(v, 4) for k, v in timings.items()},
        "versions": versions(),
        "command": " ".join(sys.argv),
    }
