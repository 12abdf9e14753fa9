"""Evaluation of a release: one module per metric family, registered in :data:`METRICS`.

A metric sees the original graph, the split, the release and the training settings after the
release exists (:meth:`Metric.evaluate`), and may also act once *before* collection
(:meth:`Metric.prepare`): that is where link-prediction and attack metrics hide their edges, so
no node reports them and no mechanism ever sees them. Each metric returns whole sections of the
run record (``accuracy``, ``training``, …), so the record, the store and reports carry them
without knowing the metric.
"""

from .base import (
    DEFAULT_METRICS,
    METRICS,
    EvaluationContext,
    Metric,
    Prepared,
    UnknownMetricError,
    evaluate,
    get_metric,
    metric_names,
    metric_settings,
    prepare,
    register_metric,
    resolve_metrics,
)

__all__ = [
    "DEFAULT_METRICS",
    "METRICS",
    "EvaluationContext",
    "Metric",
    "Prepared",
    "UnknownMetricError",
    "evaluate",
    "get_metric",
    "metric_names",
    "metric_settings",
    "prepare",
    "register_metric",
    "resolve_metrics",
]
