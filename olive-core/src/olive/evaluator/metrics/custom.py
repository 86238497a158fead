"""``custom``: a function of the workflow's ``user_script`` computes the value (Microsoft Olive's custom metric).

``user_config.evaluate_func(model, ...)`` returns the values itself; ``user_config.metric_func(model_output,
targets, ...)`` scores the model's predictions on the metric's data.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from olive.config_errors import config_error
from olive.evaluator.metrics.base import Measured, MetricType, user_values
from olive.evaluator.metrics.spec import Metric

if TYPE_CHECKING:
    from olive.evaluator.metrics.run import MetricRun


class CustomMetric(MetricType):
    """Sub types are the user's: each names its direction (``higher_is_better``)."""

    name = "custom"

    def check_sub_config(self, metric_config: Mapping[str, Any], path: str) -> None:
        """A custom metric's ``metric_config`` is the user's function's business."""

    def check(self, data_config: str | None, user_config: Mapping[str, Any], path: str) -> None:
        if not (user_config.get("evaluate_func") or user_config.get("metric_func")):
            raise config_error(
                f"{path}.user_config.evaluate_func",
                "a custom metric needs user_config.evaluate_func (a "
                "function in user_script that returns the value) or user_config.metric_func",
            )

    def measure(self, run: MetricRun, metric: Metric) -> Measured:
        data_config = run.data_config(metric)
        if metric.user_config.get("evaluate_func"):
            func = run.user_function(metric, "evaluate_func")
            data_dir = metric.user_config.get("data_dir")
            available = {
                "data": data_config.create_dataloader() if data_config else None,
                "data_config": data_config,
                "data_dir": str(run.path(data_dir)) if data_dir else None,
                "batch_size": metric.user_config.get("batch_size", 1),
                "device": "cpu",
                "execution_providers": run.execution_providers,
                "reference_model": run.reference,
            }
            kwargs = dict(metric.user_config.get("evaluate_func_kwargs") or {})
            raw = run.call_user(func, metric, "evaluate_func", (run.model,), _fit_kwargs(func, available, kwargs))
            name = "evaluate_func"
        else:
            import numpy as np

            func = run.user_function(metric, "metric_func")
            preds, raws, labels, _ = run.predictions(metric)
            targets = None if any(lab is None for lab in labels) else np.concatenate(labels)
            model_output = (np.concatenate(preds), np.concatenate(raws))
            kwargs = dict(metric.user_config.get("metric_func_kwargs") or {})
            raw = run.call_user(func, metric, "metric_func", (model_output, targets), kwargs)
            name = "metric_func"
        values = user_values(raw, metric, name)
        return values, {"data_config": data_config.name if data_config else None, "function": name}


def _fit_kwargs(func: Callable[..., Any], available: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """Pass the optional arguments the function declares (all of Olive's when it takes ``**kwargs``)."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return given
    names = list(params)[1:]  # the first parameter receives the model
    takes_var = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs = {k: v for k, v in available.items() if k in names and k not in given}
    if takes_var:
        kwargs.update({k: available[k] for k in ("device", "execution_providers") if k not in given})
    return {**kwargs, **given}
