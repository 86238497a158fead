"""``accuracy``: the model's predictions scored against the labels of the metric's data."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from olive.config_errors import check_keys, choice, config_error, expect, json_path, whole_number
from olive.evaluator.metrics.base import Measured, MetricType
from olive.evaluator.metrics.spec import Metric
from olive.evaluator.scores import classification_scores
from olive.exceptions import OliveError, WorkflowConfigError

if TYPE_CHECKING:
    from olive.evaluator.metrics.run import MetricRun

_METRIC_CONFIG = ("average", "pos_label", "num_classes", "task", "multiclass")
_AVERAGES = ("binary", "macro", "micro", "weighted")
_TASKS = ("binary", "multiclass", "multilabel")


class AccuracyMetric(MetricType):
    """``accuracy_score``, ``f1_score``, ``precision``, ``recall``, computed as torchmetrics computes them."""

    name = "accuracy"
    sub_types: ClassVar = {"accuracy_score": True, "f1_score": True, "precision": True, "recall": True}
    default_sub_type = "accuracy_score"
    # Deterministic on CPU, but a difference of 1e-4 in a mean over a few dozen samples is below what the
    # sample can tell apart.
    default_tolerance = 1e-4

    def check_sub_config(self, metric_config: Mapping[str, Any], path: str) -> None:
        check_keys(metric_config, _METRIC_CONFIG, path, "metric_config key")
        if metric_config.get("average") is not None:
            choice(metric_config["average"], _AVERAGES, json_path(path, "average"), "average")
        if metric_config.get("task") is not None:
            choice(metric_config["task"], _TASKS, json_path(path, "task"), "task")
        if metric_config.get("num_classes") is not None:
            whole_number(metric_config["num_classes"], json_path(path, "num_classes"), minimum=1)
        if metric_config.get("multiclass") is not None:
            expect(metric_config["multiclass"], bool, json_path(path, "multiclass"), "true or false")
        if metric_config.get("pos_label") is not None:
            where = json_path(path, "pos_label")
            expect(metric_config["pos_label"], (int, str), where, "a label (a whole number or a string)")

    def check(self, data_config: str | None, user_config: Mapping[str, Any], path: str) -> None:
        if data_config is None and "dataloader_func" not in user_config:
            raise config_error(
                f"{path}.data_config",
                "an accuracy metric needs labelled data; name a data config whose "
                "batches carry labels (e.g. an NpzDataContainer with a 'labels' array)",
            )

    def measure(self, run: MetricRun, metric: Metric) -> Measured:
        import numpy as np

        preds, _, labels, count = run.predictions(metric)
        where = run.data_config(metric)
        if any(label is None for label in labels):
            # The workflow pairs a labelled metric with unlabelled data: a config error, like a missing input.
            raise WorkflowConfigError(
                f"metric '{metric.name}' ({metric.json_path}) needs labels, but "
                f"{where.where if where else 'its data'} yields batches without them; add a 'labels' array to "
                "the .npz or return (inputs, label) from the dataset"
            )
        y_pred = np.concatenate([p.reshape(-1) for p in preds])
        y_true = np.concatenate([lab.reshape(-1) for lab in labels])
        if y_pred.shape != y_true.shape:
            raise OliveError(
                f"metric '{metric.name}': {y_pred.size} predictions but {y_true.size} labels; the labels need one "
                "entry per prediction (use post_process_data_config to turn outputs into class ids)"
            )
        values = {
            sub.name: classification_scores(y_true, y_pred, sub.name, sub.metric_config) for sub in metric.sub_types
        }
        return values, run.metadata(metric, run.model, num_samples=count)
