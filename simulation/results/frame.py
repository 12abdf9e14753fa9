"""A results store as a table: ``ldpgraph.results.load(path)`` gives one row per run, the
configuration and the record's sections flattened to dotted columns (``config.epsilon``,
``accuracy.test``, ``privacy.epsilon``, ``privacy.paper_epsilon``), as a pandas DataFrame when
pandas is installed (``pip install pandas``), else a list of dicts with ``as_frame=False``.
The store is opened read-only: reading never changes it, and a store on a read-only mount
reads too."""

from __future__ import annotations

import os
from typing import Any

from .store import ResultsStore

#: The columns every row starts with, in this order.
LEAD = ("id", "status", "protocol", "dataset", "model", "epsilon", "seed", "sweep", "run_key")


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), inner, out)
    else:
        out[prefix] = value


def flat_rows(path: str | os.PathLike[str] | None = None, **filters: Any) -> list[dict[str, Any]]:
    """The runs of the store at ``path`` (filters as :meth:`ResultsStore.rows`: protocol,
    dataset, model, epsilon, sweep, status, seed), each flattened to dotted keys."""
    with ResultsStore(path, read_only=True) as store:
        rows = store.rows(**filters)
    out = []
    for row in rows:
        flat: dict[str, Any] = {k: row.get(k) for k in LEAD if k in row}
        for key, value in row.items():
            if key in flat:
                continue
            # The metric sections read as in the run's record: accuracy.test, graph.…
            _flatten("" if key == "metrics" else key, value, flat)
        out.append(flat)
    return out


def load(
    path: str | os.PathLike[str] | None = None, *, as_frame: bool = True, **filters: Any
) -> Any:
    """The store's runs as a pandas DataFrame (``as_frame=False``: a list of dicts)."""
    rows = flat_rows(path, **filters)
    if not as_frame:
        return rows
    try:
        import pandas as pd
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "ldpgraph.results.load needs pandas for a DataFrame: pip install 'ldpgraph[frames]' "
            "(or pass as_frame=False for a list of dicts)",
            name="pandas",
        ) from None
    return pd.DataFrame(rows)
