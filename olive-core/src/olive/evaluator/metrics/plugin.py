"""A metric type a plugin registers as a function through the ``olive_register_metrics`` hook.

``register(name, evaluate)``: ``evaluate(model, metric_json, data_config)`` returns ``{sub type: value}`` (or
one number for a metric of one sub type); one that declares ``reference_model`` also gets the model it is
compared with. Its sub types are named by the workflow; their direction comes
from the config's ``higher_is_better``, else from the function's ``higher_is_better`` attribute (a bool for
all, or ``{sub type: bool}``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.config_errors import config_error
from olive.evaluator.metrics.base import Measured, MetricType, user_values
from olive.evaluator.metrics.spec import Metric

if TYPE_CHECKING:
    from olive.evaluator.metrics.run import MetricRun


class PluginMetric(MetricType):
    """The metric type behind a plugin's ``evaluate`` function; ``plugin`` names who registered it."""

    def __init__(self, name: str, evaluate: Callable[..., Any], plugin: str = "") -> None:
        self.name = name
        self.evaluate = evaluate
        self.plugin = plugin

    def __repr__(self) -> str:
        return f"PluginMetric({self.name!r}, plugin={self.plugin!r})"

    def check_user_config(self, user_config: Mapping[str, Any], path: str, base_dir: str | Path | None) -> None:
        """A plugin's metric reads its ``user_config`` itself."""

    def check_sub_config(self, metric_config: Mapping[str, Any], path: str) -> None:
        """A plugin's metric reads its sub types' ``metric_config`` itself."""

    def direction(self, sub_name: str, given: bool | None, path: str) -> bool:
        if given is not None:
            return given
        declared = getattr(self.evaluate, "higher_is_better", None)
        if isinstance(declared, bool):
            return declared
        if isinstance(declared, Mapping) and sub_name in declared:
            return bool(declared[sub_name])
        raise config_error(
            f"{path}.higher_is_better",
            f"required for a {self.name} metric: true if larger '{sub_name}' values are better, false otherwise",
        )

    def measure(self, run: MetricRun, metric: Metric) -> Measured:
        what = f"plugin metric '{self.name}'"
        # A metric that compares with the input model (agreement, paired timing) declares reference_model.
        extra = {"reference_model": run.reference} if _declares(self.evaluate, "reference_model") else {}
        raw = run.call_user(self.evaluate, metric, what, (run.model, metric.json, run.data_config(metric)), extra)
        return user_values(raw, metric, what), {"plugin_metric": self.name}


def _declares(func: Callable[..., Any], name: str) -> bool:
    import inspect

    try:
        return name in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
