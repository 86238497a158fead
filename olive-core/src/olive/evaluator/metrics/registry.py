"""Metric types by name: the built-in ones and those plugins register, in one registry with one clash policy.

Built-in names resolve without asking the plugins; the ``olive_register_metrics`` hook fires on the first
name that is not built in (once per plugin manager). A plugin name that is built in is left out with a
warning (:func:`olive.plugins.manager.plugin_registrations`): ``latency`` always means Olive's latency.
"""

from __future__ import annotations

import weakref
from typing import Any

from olive.evaluator.metrics.accuracy import AccuracyMetric
from olive.evaluator.metrics.agreement import AgreementMetric
from olive.evaluator.metrics.base import MetricType
from olive.evaluator.metrics.custom import CustomMetric
from olive.evaluator.metrics.latency import LatencyMetric
from olive.evaluator.metrics.plugin import PluginMetric
from olive.evaluator.metrics.size_on_disk import SizeOnDiskMetric
from olive.evaluator.metrics.throughput import ThroughputMetric
from olive.exceptions import PluginLoadError
from olive.plugins.manager import OlivePluginManager, get_plugin_manager, plugin_registrations

#: The built-in metric types, in the order error messages list them.
BUILTIN_METRIC_TYPES: dict[str, MetricType] = {
    kind.name: kind
    for kind in (
        LatencyMetric(),
        ThroughputMetric(),
        AccuracyMetric(),
        AgreementMetric(),
        SizeOnDiskMetric(),
        CustomMetric(),
    )
}

_HOOK = "olive_register_metrics"
_by_manager: weakref.WeakKeyDictionary[OlivePluginManager, dict[str, MetricType]] = weakref.WeakKeyDictionary()


def plugin_metric_types(pm: OlivePluginManager | None = None) -> dict[str, MetricType]:
    """The metric types installed plugins register (name -> type), built once per plugin manager.

    Raises :class:`~olive.exceptions.PluginLoadError` when a plugin's hook raises, two plugins register one
    name, or a registered object is neither a function nor a :class:`MetricType`.
    """
    pm = pm or get_plugin_manager()
    known = _by_manager.get(pm)
    if known is None:
        registered = plugin_registrations(_HOOK, BUILTIN_METRIC_TYPES, "metric type", pm)
        known = {name: _metric_type(name, reg.obj, reg.plugin) for name, reg in registered.items()}
        _by_manager[pm] = known
    return known


def find_metric_type(name: str) -> MetricType | None:
    """The metric type called ``name``, or None; the plugins are asked only for a name that is not built in."""
    return BUILTIN_METRIC_TYPES.get(name) or plugin_metric_types().get(name)


def metric_types() -> dict[str, MetricType]:
    """Every metric type a workflow can name: the built-in ones first, then the plugins'."""
    return {**BUILTIN_METRIC_TYPES, **plugin_metric_types()}


def _metric_type(name: str, obj: Any, plugin: str) -> MetricType:
    if isinstance(obj, MetricType):
        if obj.name != name:
            raise PluginLoadError(
                f"plugin {plugin}: {_HOOK} registered a metric type called '{obj.name}' under the name '{name}'; "
                "register it under its own name"
            )
        return obj
    if callable(obj):
        return PluginMetric(name, obj, plugin)
    raise PluginLoadError(
        f"plugin {plugin}: {_HOOK} registered {type(obj).__name__} for metric type '{name}'; register a function "
        "evaluate(model, metric, data) or an olive.evaluator.metrics.MetricType"
    )
