"""``OliveEvaluator``: measures a model's metrics on real onnxruntime sessions."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.evaluator.metric import Metric, assign_priorities
from olive.evaluator.metrics.registry import find_metric_type
from olive.evaluator.metrics.run import MetricRun, MetricSources
from olive.evaluator.result import MetricResult, SubMetricResult, joint_key, recorded_noise
from olive.exceptions import OliveError, WorkflowConfigError, closest_match_hint

if TYPE_CHECKING:
    from olive.data.config import DataConfig
    from olive.model.handler import OliveModelHandler

# MetricRun is what metric types are given; it was defined here first and plugins may import it from here.
__all__ = ["MetricRun", "OliveEvaluator"]

logger = logging.getLogger(__name__)


class OliveEvaluator:
    """Evaluates models on a list of metrics.

    :param metrics: parsed metrics (:func:`olive.evaluator.metric.parse_metric`).
    :param data_configs: the workflow's data configs by name.
    :param user_script: the workflow's (or evaluator's) user script, used by custom metrics that name none.
    :param base_dir: folder that relative paths in metric ``user_config`` are resolved against.
    """

    def __init__(
        self,
        metrics: Sequence[Metric],
        data_configs: Mapping[str, DataConfig] | None = None,
        user_script: str | Path | None = None,
        base_dir: str | Path | None = None,
    ):
        if not metrics:
            raise WorkflowConfigError("an evaluator needs at least one metric")
        self.metrics = assign_priorities(list(metrics))
        self.sources = MetricSources(data_configs, user_script, base_dir)
        known = self.sources.data_configs
        for metric in self.metrics:
            if metric.inline_data_config is not None:
                known.setdefault(metric.inline_data_config.name, metric.inline_data_config)
            elif metric.data_config is not None and metric.data_config not in known:
                names = sorted(known)
                raise WorkflowConfigError(
                    f"{metric.json_path}.data_config: no data config named '{metric.data_config}'"
                    f"{closest_match_hint(metric.data_config, names)}; defined: {', '.join(names) or 'none'} "
                    "(add it to data_configs)"
                )
        self._validated = False

    # ------------------------------------------------------------------------------------------ checks

    def validate(self) -> None:
        """Import user scripts and check every function the metrics and their data configs name exists.

        Raises :class:`WorkflowConfigError` naming the JSON path; cheap to call again.
        """
        if self._validated:
            return
        for metric in self.metrics:
            for key in ("evaluate_func", "metric_func", "post_processing_func", "dataloader_func"):
                if metric.user_config.get(key):
                    self.sources.user_function(metric, key)
            if metric.data_config is not None:
                self.sources.data_configs[metric.data_config].check_user_script()
        self._validated = True

    # ------------------------------------------------------------------------------------------ evaluate

    def evaluate(
        self,
        model: OliveModelHandler,
        reference_model: OliveModelHandler | None = None,
        execution_providers: Sequence[str] | str | None = None,
        target_settings: Mapping[str, Any] | None = None,
    ) -> MetricResult:
        """Measure every metric on ``model``.

        :param reference_model: what ``agreement`` metrics compare against (the workflow's input model);
            ``None`` compares the model with itself.
        :param execution_providers: used when the model's ``inference_settings`` name none.
        :param target_settings: the target's settings (provider, its options and device,
            :meth:`AcceleratorSpec.inference_settings`), used for models whose settings name no provider.
        """
        self.validate()
        if isinstance(execution_providers, str):
            execution_providers = [execution_providers]
        run = MetricRun(
            self.sources, model, reference_model, list(execution_providers) if execution_providers else None
        )
        run.target_settings = dict(target_settings or {})
        result = MetricResult()
        for metric in self.metrics:
            metric_type = find_metric_type(metric.type)
            if metric_type is None:
                raise OliveError(
                    f"{metric.json_path}.type: metric type '{metric.type}' is no longer registered by any plugin; "
                    "reinstall the plugin that provides it"
                )
            values, metadata = metric_type.measure(run, metric)
            missing = [sub.name for sub in metric.sub_types if sub.name not in values]
            if missing:
                raise OliveError(
                    f"metric '{metric.name}' ({metric.json_path}) returned no value for sub type(s) "
                    f"{', '.join(missing)}; it returned {', '.join(values) or 'nothing'}"
                )
            for sub in metric.sub_types:
                result[joint_key(metric.name, sub.name)] = SubMetricResult(
                    float(values[sub.name]), sub.priority, sub.higher_is_better, recorded_noise(metadata, sub.name)
                )
            result.metadata[metric.name] = metadata
        return result

    def release(self) -> None:
        """Let go of the reference model's outputs kept for the comparisons of a search (call when it ends)."""
        self.sources.reference_outputs.clear()
