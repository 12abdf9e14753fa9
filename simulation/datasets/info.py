"""What a dataset entry is: its size, its raw files, how to read and fetch them, and its
typed parameters."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the data root is found before any refusal: no NumPy for it
    from ldpgraph.protocols.graph import Graph


class DatasetError(ValueError):
    """A user error about a dataset: unknown name, missing files, bad parameters."""


@dataclass(frozen=True)
class Stats:
    """Size of a graph; ``edges`` counts undirected edges without self-loops."""

    nodes: int
    edges: int
    features: int
    classes: int

    def as_dict(self) -> dict[str, int]:
        return {
            "nodes": self.nodes,
            "edges": self.edges,
            "features": self.features,
            "classes": self.classes,
        }


Loader = Callable[[Path, "DatasetInfo"], "Graph"]
Fetcher = Callable[[Path, "DatasetInfo"], None]


@dataclass(frozen=True)
class DatasetInfo:
    """One registry entry.

    ``raw_files`` are relative to the data root (the mirror's layout). ``loader`` reads them from a
    root and returns the graph; ``fetch`` downloads them into a root with the same layout.
    ``mirrored`` is False for datasets the shared mirror cannot hold: those fall back to a download
    even when a data root is configured. ``params`` maps each accepted parameter to its default.
    """

    name: str
    description: str
    expected: Stats | None
    raw_files: tuple[str, ...]
    loader: Loader | None
    fetch: Fetcher | None = None
    mirrored: bool = True
    params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


def coerce_param(dataset: str, key: str, value: Any, default: Any) -> Any:
    """Convert a parameter to its default's type (int or float), refusing lossy conversions."""
    import numpy as np

    bad = DatasetError(
        f"{dataset}: parameter {key}={value!r} is not a valid {type(default).__name__}"
    )
    if isinstance(value, bool):
        raise bad
    if isinstance(value, str):
        text = value.strip()
        exact_int = isinstance(default, int) and text.lstrip("+-").isdigit()
        try:
            value = int(text) if exact_int else float(text)
        except ValueError:
            raise bad from None
    if isinstance(default, int):
        if isinstance(value, (int, np.integer)):
            return int(value)
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            return int(value)
        raise bad
    if isinstance(value, (int, float, np.integer, np.floating)) and np.isfinite(value):
        return float(value)
    raise bad
