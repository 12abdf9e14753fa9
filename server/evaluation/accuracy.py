"""Node-classification accuracy on the true labels: train a GNN on a graph release (the
training protocol of :mod:`ldpgraph.server.training`), or score a model release's predictions."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import EvaluationContext, Metric, register_metric

#: What of the training result goes into the record's ``training`` section.
TRAINING_FIELDS = (
    "best_epoch",
    "epochs_run",
    "device",
    "val_loss",
    "selection",
    "collapsed",
    "top_class_share",
    "majority_rate",
)


@register_metric
class Accuracy(Metric):
    """``accuracy``: train/val/test accuracy at the selected epoch (graph release), or of the
    released model's predictions (model release); test labels are used here only."""

    name = "accuracy"
    kinds = ("graph", "model")

    def evaluate(self, ctx: EvaluationContext) -> dict[str, Any]:
        if ctx.release.kind == "model":
            return self._score_model(ctx)
        from ldpgraph.server.training import train_and_evaluate

        release = ctx.release
        metrics = train_and_evaluate(
            release.edges,
            release.x,
            ctx.graph.y,
            ctx.split,
            ctx.train_config,
            ctx.seed,
            device=ctx.device,
            edge_weight=release.edge_weight,
            num_classes=ctx.graph.num_classes,
            num_threads=ctx.num_threads,
            progress=ctx.progress,
        )
        return {
            "accuracy": {
                "val": metrics["val_acc"],
                "test": metrics["test_acc"],
                "train": metrics["train_acc"],
            },
            "training": {k: metrics[k] for k in TRAINING_FIELDS if k in metrics},
        }

    @staticmethod
    def _score_model(ctx: EvaluationContext) -> dict[str, Any]:
        model, y = ctx.release.model, np.asarray(ctx.graph.y)
        assert model is not None
        scores: dict[str, float] = {}
        for part in ("val", "test", "train"):
            nodes = np.asarray(getattr(ctx.split, part), dtype=np.int64)
            if nodes.size == 0:
                scores[part] = float("nan")
                continue
            predicted = np.asarray(model.predict(nodes))
            if predicted.shape != nodes.shape:
                raise RuntimeError(
                    f"the released model gave {predicted.shape} predictions for {nodes.size} nodes"
                )
            # -1: the release holds no prediction for the node (DPAR's training nodes); a part
            # with none released is left out of the record (nothing was measured there).
            given = predicted >= 0
            if not given.any():
                continue
            scores[part] = float((predicted[given] == y[nodes][given]).mean())
        return {"accuracy": scores, "training": {"selection": "released model"}}
