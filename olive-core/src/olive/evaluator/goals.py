"""Goals, Pareto frontier and ranking over evaluation results.

A goal is resolved once against the input model's result (the baseline) into an absolute threshold:

====================== =============================== ===============================
goal type               higher is better                lower is better
====================== =============================== ===============================
threshold               value >= v                      value <= v
min-improvement         value >= base + v               value <= base - v
percent-min-improvement value >= base * (1 + v/100)     value <= base * (1 - v/100)
max-degradation         value >= base - v               value <= base + v
percent-max-degradation value >= base * (1 - v/100)     value <= base * (1 + v/100)
====================== =============================== ===============================
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from olive.evaluator.result import joint_key
from olive.exceptions import OliveError

if TYPE_CHECKING:
    from olive.evaluator.metric import Metric, MetricGoal
    from olive.evaluator.result import MetricResult


def goal_threshold(goal: MetricGoal, higher_is_better: bool, baseline: float | None) -> float:
    """The absolute value ``goal`` asks for, given the baseline value (needed for all but ``threshold``)."""
    if goal.type == "threshold":
        return goal.value
    if baseline is None:
        raise OliveError(
            f"a '{goal.type}' goal is relative to the input model, which has no result; set "
            "evaluate_input_model to true or use a 'threshold' goal"
        )
    sign = 1.0 if higher_is_better else -1.0
    if goal.type == "min-improvement":
        return baseline + sign * goal.value
    if goal.type == "max-degradation":
        return baseline - sign * goal.value
    # Percentages are of the baseline's magnitude, so a negative baseline still moves the right way.
    step = abs(baseline) * goal.value / 100.0
    if goal.type == "percent-min-improvement":
        return baseline + sign * step
    if goal.type == "percent-max-degradation":
        return baseline - sign * step
    raise OliveError(f"unknown goal type '{goal.type}'")


def resolve_goals(metrics: Sequence[Metric], baseline: MetricResult | None) -> dict[str, float]:
    """``{"metric-sub_type": threshold}`` for every sub metric with a goal."""
    thresholds: dict[str, float] = {}
    for metric in metrics:
        for sub in metric.sub_types:
            if sub.goal is None:
                continue
            key = joint_key(metric.name, sub.name)
            base = None
            if baseline is not None and key in baseline:
                base = baseline[key].value
            elif sub.goal.type != "threshold":
                raise OliveError(
                    f"goal of {key} ({sub.goal.type}) is relative to the input model, but the input model has no "
                    f"'{key}' result; set evaluate_input_model to true or use a 'threshold' goal"
                )
            thresholds[key] = goal_threshold(sub.goal, sub.higher_is_better, base)
    return thresholds


def _meets(value: float, threshold: float, higher_is_better: bool) -> bool:
    return value >= threshold if higher_is_better else value <= threshold


def unmet_goals(result: MetricResult, thresholds: Mapping[str, float]) -> list[str]:
    """One line per goal ``result`` misses, e.g. ``"latency-avg = 3.1 (needs <= 2.4)"``."""
    lines = []
    for key, threshold in thresholds.items():
        sub = result.get(key)
        if sub is None:
            lines.append(f"{key} was not measured (needs a value for its goal)")
        elif not _meets(sub.value, threshold, sub.higher_is_better):
            lines.append(f"{key} = {sub.value:.6g} (needs {'>=' if sub.higher_is_better else '<='} {threshold:.6g})")
    return lines


def meets_goals(result: MetricResult, thresholds: Mapping[str, float]) -> bool:
    """True when ``result`` meets every threshold (a missing value meets none)."""
    return not unmet_goals(result, thresholds)


def objectives_of(metrics: Sequence[Metric]) -> list[str]:
    """Keys of the sub metrics with priority > 0, most important (priority 1) first."""
    ranked = [
        (sub.priority, joint_key(metric.name, sub.name))
        for metric in metrics
        for sub in metric.sub_types
        if sub.priority > 0
    ]
    return [key for _, key in sorted(ranked)]


def _objectives_from_results(results: Mapping[str, MetricResult]) -> list[str]:
    ranked: dict[str, int] = {}
    for result in results.values():
        for key, sub in result.items():
            if sub.priority > 0:
                ranked[key] = sub.priority
    return sorted(ranked, key=lambda k: ranked[k])


def _score_vector(result: MetricResult, objectives: Sequence[str]) -> tuple[float, ...] | None:
    # Flip lower-is-better values so that larger is always better.
    vector = []
    for key in objectives:
        sub = result.get(key)
        if sub is None:
            return None
        vector.append(sub.value if sub.higher_is_better else -sub.value)
    return tuple(vector)


def pareto_frontier(results: Mapping[str, MetricResult], objectives: Iterable[str] | None = None) -> set[str]:
    """Ids of the results no other result dominates (at least as good on every objective, better on one).

    :param objectives: metric keys to compare; default: every sub metric with priority > 0. A result
        lacking any objective is left out.
    """
    keys = list(objectives) if objectives is not None else _objectives_from_results(results)
    if not keys:
        return set(results)
    vectors = {model_id: _score_vector(result, keys) for model_id, result in results.items()}
    vectors = {model_id: vector for model_id, vector in vectors.items() if vector is not None}
    frontier = set()
    for model_id, vector in vectors.items():
        dominated = any(
            all(o >= v for o, v in zip(other, vector, strict=True)) and other != vector
            for other_id, other in vectors.items()
            if other_id != model_id
        )
        if not dominated:
            frontier.add(model_id)
    return frontier


def rank_candidates(
    results: Mapping[str, MetricResult],
    objectives: Iterable[str] | None = None,
    thresholds: Mapping[str, float] | None = None,
) -> list[str]:
    """Ids best first: by the priority-1 objective, ties broken by priority 2, and so on.

    With ``thresholds``, results meeting every goal come before those that do not. Results lacking an
    objective come last.
    """
    keys = list(objectives) if objectives is not None else _objectives_from_results(results)

    def sort_key(model_id: str) -> tuple:
        result = results[model_id]
        vector = _score_vector(result, keys)
        met = meets_goals(result, thresholds) if thresholds else True
        return (not met, vector is None, tuple(-v for v in vector) if vector is not None else ())

    return sorted(results, key=sort_key)
