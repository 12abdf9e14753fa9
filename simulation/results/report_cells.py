"""A report's cells: which runs count, what method a run is, and the mean ± std per cell.

A cell is (dataset, method, model, ε and any swept configuration keys); its value is the mean ±
sample std of the test accuracy in % of its final runs (rows a sweep marked ``phase = "final"``;
a store without phases uses every finished run).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

DATASET_LABELS = {
    "cora": "Cora",
    "citeseer": "CiteSeer",
    "lastfm": "LastFM",
    "facebook": "Facebook (LastFM substitute)",
}
#: The non-private bound and the feature-only floor: drawn dashed wherever a store has them.
REFERENCE_LINES = ("none", "features-only")


def final_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Finished rows of the final phase (all finished rows if no row carries a phase); a run
    without accuracy (``--metrics graph``) is one too."""
    done = [r for r in rows if r.get("status") == "done"]
    phased = [r for r in done if (r.get("extra") or {}).get("phase") == "final"]
    return phased if phased else done


def method_of(row: dict[str, Any]) -> str:
    """The row's method: the experiment entry it ran under (a variant label such as
    ``hogs-d0.3``), else its protocol."""
    return (row.get("extra") or {}).get("entry") or row["protocol"]


def method_label(method: str) -> str:
    """A legend label: the protocol's (the paper's name), or a readable one for sweep
    variants."""
    from ldpgraph.protocols.registry import protocol_info, protocol_names

    if method in protocol_names():
        return protocol_info(method).label
    prefixes = (("hogs-d", "HoGS δ="), ("hogs-t", "HoGS τ="), ("hogs-kprop-k", "TR + KProp K="))
    for prefix, name in prefixes:
        if method.startswith(prefix):
            return name + method[len(prefix) :]
    return method


def cell_key(row: dict[str, Any], by: Sequence[str] = ()) -> tuple:
    cfg = row.get("config") or {}
    return (
        row["dataset"],
        method_of(row),
        row["model"],
        float(row["epsilon"]),
        *(cfg.get(k) for k in by),
    )


def aggregate(rows: Iterable[dict[str, Any]], by: Sequence[str] = ()) -> dict[tuple, dict]:
    """Cell → {mean, std, n} of test accuracy in %, over the given rows that have one."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        if r.get("test_acc") is not None:
            groups[cell_key(r, by)].append(100.0 * float(r["test_acc"]))
    return {
        k: {
            "mean": statistics.fmean(v),
            "std": statistics.stdev(v) if len(v) > 1 else 0.0,
            "n": len(v),
        }
        for k, v in groups.items()
    }


def summary_rows(agg: dict[tuple, dict]) -> list[dict[str, Any]]:
    return [
        {
            "dataset": k[0],
            "protocol": k[1],
            "model": k[2],
            "epsilon": k[3],
            **({"param": k[4]} if len(k) > 4 else {}),
            **v,
        }
        for k, v in sorted(agg.items(), key=lambda kv: tuple(str(x) for x in kv[0]))
    ]
