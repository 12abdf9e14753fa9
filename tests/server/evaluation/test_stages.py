"""The metric loop says which metric runs, on what size of release, as each starts (a metric
can take minutes: issue 33's silent evaluation)."""

from __future__ import annotations

import numpy as np

from ldpgraph.protocols import progress
from ldpgraph.protocols.types import Release
from ldpgraph.server.evaluation import base

from .conftest import no_privacy


class _Toy(base.Metric):
    def __init__(self, name: str, kinds: tuple[str, ...]) -> None:
        self.name, self.kinds = name, kinds

    def evaluate(self, ctx: base.EvaluationContext) -> dict:
        progress.stage(f"inside {self.name}")
        return {self.name: {"done": True}}


def test_each_metric_that_runs_says_so_with_the_release_size(monkeypatch):
    toys = {
        "first": _Toy("first", ("graph",)),
        "model-only": _Toy("model-only", ("model",)),
        "second": _Toy("second", ("graph",)),
    }
    monkeypatch.setattr(base, "resolve_metrics", lambda names: tuple(names))
    monkeypatch.setattr(base, "get_metric", toys.__getitem__)
    edges = np.array([[0, 1], [1, 2], [2, 3]])
    release = Release(edges, np.zeros((5, 2), dtype=np.float32), no_privacy())
    ctx = base.EvaluationContext(None, None, release, None, 0)
    lines: list[str] = []
    with progress.listening(lines.append):
        out = base.evaluate(list(toys), ctx)
    assert lines == [
        "metric first (1/2) on a graph of 5 nodes, 3 edges",
        "inside first",
        "metric second (2/2) on a graph of 5 nodes, 3 edges",
        "inside second",
    ]
    assert out["skipped_metrics"] == {"model-only": "does not score a graph release"}
