"""Metrics, evaluation of models on real onnxruntime sessions, and goals.

Names are loaded lazily so that validating a workflow imports neither numpy nor onnxruntime.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "Metric",
    "MetricGoal",
    "MetricResult",
    "OliveEvaluator",
    "SubMetric",
    "SubMetricResult",
    "meets_goals",
    "pareto_frontier",
    "parse_metric",
    "rank_candidates",
    "resolve_goals",
]

_EXPORTS = {
    "Metric": "olive.evaluator.metric",
    "MetricGoal": "olive.evaluator.metric",
    "SubMetric": "olive.evaluator.metric",
    "parse_metric": "olive.evaluator.metric",
    "MetricResult": "olive.evaluator.result",
    "SubMetricResult": "olive.evaluator.result",
    "OliveEvaluator": "olive.evaluator.evaluator",
    "resolve_goals": "olive.evaluator.goals",
    "meets_goals": "olive.evaluator.goals",
    "pareto_frontier": "olive.evaluator.goals",
    "rank_candidates": "olive.evaluator.goals",
}


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'olive.evaluator' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module_name), name)
