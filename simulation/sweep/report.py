"""What a sweep reports: its counts per phase, the summary per cell and their text forms."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from .estimate import TRAIN_SECONDS
from .experiment_types import Cell, Experiment, Grid
from .plan import final_runs


@dataclass
class PhaseStats:
    units: int = 0
    releases: int = 0
    trainings: int = 0
    pending: int = 0
    seconds: float = 0.0
    collections: int = 0
    reconstructions: int = 0
    trained: int = 0
    failed: int = 0
    upper_bound: bool = False


@dataclass
class SweepResult:
    phases: dict[str, PhaseStats]
    summary: list[dict[str, Any]]

    def format(self) -> str:
        return format_summary(self.summary)


def _final_stats(
    store: Any, exp: Experiment, grid: Grid, row: dict[str, Any], cells: list[Cell]
) -> dict[str, Any]:
    if row["best"] is None:
        return {}
    cell = next(c for c in cells if c.label == row["cell"])
    tests = []
    for cfg in final_runs(exp, grid, cell, row["best"]):
        r = store.get(cfg)
        if r and r["status"] == "done" and r.get("test_acc") is not None:
            tests.append(r["test_acc"])
    return {
        "final_n": len(tests),
        "test_mean": statistics.fmean(tests) if tests else None,
        "test_std": statistics.stdev(tests) if len(tests) > 1 else None,
    }


def format_summary(summary: list[dict[str, Any]]) -> str:
    lines = []
    width = max((len(r["cell"]) for r in summary), default=4)
    for r in summary:
        best = ", ".join(
            f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
            for k, v in (r["best"] or {}).items()
        )
        if r["best"] is None:
            lines.append(f"{r['cell']:<{width}}  {r['note']}")
            continue
        test = "-"
        if r.get("test_mean") is not None:
            std = r.get("test_std")
            test = f"{100 * r['test_mean']:.1f}" + (
                f" ± {100 * std:.1f}" if std is not None and not math.isnan(std) else ""
            )
            test += f" (n={r['final_n']})"
        score = (
            "no search"
            if r["search_val"] is None
            else f"val loss {r['search_val']:.3f}"
            if r.get("score") == "val_loss"
            else f"val {100 * r['search_val']:.1f}"
        )
        spent = _spending(r) if r.get("collections") else ""
        lines.append(f"{r['cell']:<{width}}  {score}  test {test}  [{best}]{spent}")
    if any(
        r.get("collections", 0) > 1 and (r.get("privacy_model") or "ldp") == "ldp" for r in summary
    ):
        lines.append(
            "(each run's ε is what one collection costs a node; selecting among collections "
            "costs their sum)"
        )
    return "\n".join(lines)


def _spending(r: dict[str, Any]) -> str:
    """What the cell's collections asked of the nodes, as true for its privacy model: under
    LDP each collection asks every node for fresh reports at its ε (they add up); a central
    strategy or a non-private entry asks no ε of nodes (they upload raw data to the curator)."""
    n = r["collections"]
    model = r.get("privacy_model") or "ldp"
    if model == "ldp":
        return (
            f"  ε asked of each node: {r['node_epsilon_spent']:g} summed over "
            f"{n} collections (the proven figures: each run's privacy)"
        )
    if model == "central":
        return (
            f"  no ε asked of nodes: {n} raw uploads to a trusted curator "
            "(central DP: each release's ε is its run's privacy)"
        )
    return f"  non-private: no ε asked of nodes, {n} raw uploads to a trusted curator"


def _hms(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m{seconds % 60:02d}s"


def format_dry_run(exp: Experiment, grid_name: str, result: SweepResult, workers: int) -> str:
    cells = len(result.summary) or len(exp.cells())
    lines = [f"sweep {exp.name} (grid {grid_name}, {cells} cells, {workers} workers)"]
    total = 0.0
    for phase, st in result.phases.items():
        bound = " (upper bound: search not done)" if st.upper_bound else ""
        lines.append(
            f"  {phase:<6}  units/collections {st.units}  releases {st.releases}  trainings "
            f"{st.trainings} ({st.pending} not done)  ≈ {_hms(st.seconds)}{bound}"
        )
        total += st.seconds
    lines.append(f"  total ≈ {_hms(total)} (estimate: {TRAIN_SECONDS} s per Cora training)")
    return "\n".join(lines)
