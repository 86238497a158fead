"""Metric configs in Microsoft Olive's JSON form, validated with the JSON path of every mistake.

::

    {"name": "latency", "type": "latency", "data_config": "calib",
     "sub_types": [{"name": "avg", "priority": 1, "goal": {"type": "percent-min-improvement", "value": 20}}],
     "user_config": {"warmup_num": 5, "repeat_test_num": 50}}

:func:`parse_metric` finds the metric's type in :mod:`olive.evaluator.metrics` (``latency``, ``throughput``,
``accuracy``, ``agreement``, ``size_on_disk``, ``custom`` and any metric type a plugin registers through the
``olive_register_metrics`` hook) and lets the type read the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from olive.config_errors import config_error, expect
from olive.evaluator.metrics.latency import LATENCY_SUB_TYPES, RATIO_PREFIX, RATIO_SUB_TYPES
from olive.evaluator.metrics.registry import BUILTIN_METRIC_TYPES, find_metric_type, metric_types
from olive.evaluator.metrics.spec import GOAL_TYPES, Metric, MetricGoal, SubMetric, parse_goal
from olive.exceptions import closest_match_hint

__all__ = [
    "BUILTIN_TYPES",
    "GOAL_TYPES",
    "LATENCY_SUB_TYPES",
    "RATIO_PREFIX",
    "RATIO_SUB_TYPES",
    "Metric",
    "MetricGoal",
    "SubMetric",
    "assign_priorities",
    "parse_goal",
    "parse_metric",
    "parse_metrics",
]

logger = logging.getLogger(__name__)

#: The built-in metric types' names, from the registry.
BUILTIN_TYPES = tuple(BUILTIN_METRIC_TYPES)


def parse_metric(
    data: Mapping[str, Any],
    json_path: str = "metrics[0]",
    data_config_names: Iterable[str] | None = None,
    base_dir: str | Path | None = None,
) -> Metric:
    """Validate one metric's JSON; every error names its JSON path and the fix.

    :param data_config_names: the names in the workflow's ``data_configs`` (``None``: not checked).
    :param base_dir: folder for relative paths of an inline data config.
    """
    path = json_path
    expect(data, Mapping, path, "a metric object")
    if "type" not in data or data["type"] in (None, ""):
        raise config_error(
            f"{path}.type",
            f"every metric needs a type; use one of {', '.join(BUILTIN_TYPES)} (or a metric type a plugin registers)",
        )
    kind = expect(data["type"], str, f"{path}.type", "a metric type string")
    metric_type = find_metric_type(kind)
    if metric_type is None:
        known = list(metric_types())
        raise config_error(
            f"{path}.type",
            f"unknown metric type {kind!r}{closest_match_hint(kind, known)}; "
            f"use one of {', '.join(known)} or install the plugin that provides it",
        )
    return metric_type.parse(data, path, data_config_names, base_dir)


def parse_metrics(
    data: Any,
    json_path: str = "evaluators.common.metrics",
    data_config_names: Iterable[str] | None = None,
    base_dir: str | Path | None = None,
) -> list[Metric]:
    """Validate an evaluator's ``metrics`` list: unique names, unique positive priorities.

    When no sub metric has a priority, the first one becomes the objective (priority 1), as Microsoft Olive
    does for a single metric.
    """
    expect(data, list, json_path, "a list of metrics")
    if not data:
        raise config_error(json_path, "empty; an evaluator needs at least one metric")
    metrics = [parse_metric(item, f"{json_path}[{i}]", data_config_names, base_dir) for i, item in enumerate(data)]
    seen: dict[str, int] = {}
    for index, metric in enumerate(metrics):
        if metric.name in seen:
            raise config_error(
                f"{json_path}[{index}].name",
                f"metric name '{metric.name}' is also used by "
                f"{json_path}[{seen[metric.name]}]; give each metric its own name",
            )
        seen[metric.name] = index
    return assign_priorities(metrics, json_path)


def assign_priorities(metrics: list[Metric], json_path: str = "metrics") -> list[Metric]:
    ranked: dict[int, str] = {}
    for metric in metrics:
        for sub in metric.sub_types:
            if sub.priority > 0:
                key = f"{metric.name}-{sub.name}"
                if sub.priority in ranked:
                    raise config_error(
                        json_path,
                        f"priority {sub.priority} is given to both {ranked[sub.priority]} and "
                        f"{key}; priorities rank objectives and must differ",
                    )
                ranked[sub.priority] = key
    if ranked:
        return metrics
    first = metrics[0]
    logger.debug("no metric has a priority; %s-%s becomes the objective", first.name, first.sub_types[0].name)
    subs = [attrs.evolve(first.sub_types[0], priority=1), *first.sub_types[1:]]
    return [attrs.evolve(first, sub_types=subs), *metrics[1:]]
