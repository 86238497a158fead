"""Metric types: each one a :class:`MetricType` object, with how its config is read and how it is measured.

One module per built-in type (:mod:`~olive.evaluator.metrics.latency`, ``throughput``, ``accuracy``,
``agreement``, ``size_on_disk``, ``custom``), so "how is this number computed?" has one answer: that module's
``measure``. :mod:`~olive.evaluator.metrics.registry` finds a type by name, built in or registered by a plugin
through the ``olive_register_metrics`` hook (a built-in name always wins; see that module).

A plugin registers either a function ``evaluate(model, metric_json, data_config)`` (any sub type names, each
with its direction) or an instance of a :class:`MetricType` subclass that declares its sub types::

    from olive.evaluator.metrics import MetricType
    from olive.plugins import hookimpl

    class Perplexity(MetricType):
        name = "perplexity"
        sub_types = {"perplexity": False}          # sub type -> higher is better
        default_sub_type = "perplexity"

        def measure(self, run, metric):            # a MetricRun: run.model, run.reference, run.data_config(metric)...
            return {"perplexity": ...}, {"num_samples": ...}

    @hookimpl
    def olive_register_metrics(register):
        register("perplexity", Perplexity())
"""

from __future__ import annotations

from olive.evaluator.metrics.base import Measured, MetricType, user_values
from olive.evaluator.metrics.registry import (
    BUILTIN_METRIC_TYPES,
    find_metric_type,
    metric_types,
    plugin_metric_types,
)
from olive.evaluator.metrics.run import MetricRun
from olive.evaluator.metrics.spec import Metric, MetricGoal, SubMetric

__all__ = [
    "BUILTIN_METRIC_TYPES",
    "Measured",
    "Metric",
    "MetricGoal",
    "MetricRun",
    "MetricType",
    "SubMetric",
    "find_metric_type",
    "metric_types",
    "plugin_metric_types",
    "user_values",
]
