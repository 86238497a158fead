"""Goals resolved against a baseline, the Pareto frontier and ranking, on hand-built results."""

from __future__ import annotations

import pytest

from olive.evaluator.goals import (
    meets_goals,
    objectives_of,
    pareto_frontier,
    rank_candidates,
    resolve_goals,
    unmet_goals,
)
from olive.evaluator.metric import parse_metrics
from olive.evaluator.result import MetricResult, SubMetricResult
from olive.exceptions import OliveError


def _result(latency=None, accuracy=None, size=None):
    values = {}
    if latency is not None:
        values["latency-avg"] = SubMetricResult(latency, 1, False)
    if accuracy is not None:
        values["accuracy-accuracy_score"] = SubMetricResult(accuracy, 2, True)
    if size is not None:
        values["size-bytes"] = SubMetricResult(size, 3, False)
    return MetricResult(values)


def _metrics(latency_goal=None, accuracy_goal=None):
    lat = {"name": "avg", "priority": 1}
    acc = {"name": "accuracy_score", "priority": 2}
    if latency_goal:
        lat["goal"] = latency_goal
    if accuracy_goal:
        acc["goal"] = accuracy_goal
    return parse_metrics(
        [
            {"name": "latency", "type": "latency", "sub_types": [lat]},
            {"name": "accuracy", "type": "accuracy", "sub_types": [acc], "data_config": "d"},
        ],
        data_config_names={"d"},
    )


BASELINE = _result(latency=10.0, accuracy=0.80)


@pytest.mark.parametrize(
    ("goal", "threshold", "accepted", "rejected"),
    [
        ({"type": "threshold", "value": 7}, 7.0, 7.0, 7.01),
        ({"type": "min-improvement", "value": 2}, 8.0, 7.9, 8.1),
        ({"type": "percent-min-improvement", "value": 20}, 8.0, 8.0, 8.5),
        ({"type": "max-degradation", "value": 1}, 11.0, 10.9, 11.2),
        ({"type": "percent-max-degradation", "value": 50}, 15.0, 14.9, 15.1),
    ],
)
def test_latency_goals_lower_is_better(goal, threshold, accepted, rejected):
    thresholds = resolve_goals(_metrics(latency_goal=goal), BASELINE)
    assert thresholds == {"latency-avg": pytest.approx(threshold)}
    assert meets_goals(_result(latency=accepted, accuracy=0.5), thresholds)
    assert not meets_goals(_result(latency=rejected, accuracy=0.99), thresholds)


@pytest.mark.parametrize(
    ("goal", "threshold", "accepted", "rejected"),
    [
        ({"type": "threshold", "value": 0.9}, 0.9, 0.9, 0.89),
        ({"type": "min-improvement", "value": 0.05}, 0.85, 0.86, 0.84),
        ({"type": "percent-min-improvement", "value": 10}, 0.88, 0.89, 0.87),
        ({"type": "max-degradation", "value": 0.01}, 0.79, 0.795, 0.785),
        ({"type": "percent-max-degradation", "value": 5}, 0.76, 0.77, 0.75),
    ],
)
def test_accuracy_goals_higher_is_better(goal, threshold, accepted, rejected):
    thresholds = resolve_goals(_metrics(accuracy_goal=goal), BASELINE)
    assert thresholds == {"accuracy-accuracy_score": pytest.approx(threshold)}
    assert meets_goals(_result(latency=100.0, accuracy=accepted), thresholds)
    assert not meets_goals(_result(latency=1.0, accuracy=rejected), thresholds)


def test_all_goals_must_be_met_and_unmet_ones_are_explained():
    thresholds = resolve_goals(
        _metrics(
            latency_goal={"type": "percent-min-improvement", "value": 20},
            accuracy_goal={"type": "max-degradation", "value": 0.01},
        ),
        BASELINE,
    )
    assert meets_goals(_result(latency=7.0, accuracy=0.80), thresholds)
    slow = _result(latency=9.0, accuracy=0.80)
    assert not meets_goals(slow, thresholds)
    assert unmet_goals(slow, thresholds) == ["latency-avg = 9 (needs <= 8)"]
    assert unmet_goals(_result(latency=7.0), thresholds) == [
        "accuracy-accuracy_score was not measured (needs a value for its goal)"
    ]


def test_relative_goal_without_baseline_is_a_clear_error():
    with pytest.raises(OliveError, match=r"latency-avg .*relative to the input model.*evaluate_input_model"):
        resolve_goals(_metrics(latency_goal={"type": "max-degradation", "value": 1}), None)
    assert resolve_goals(_metrics(latency_goal={"type": "threshold", "value": 3}), None) == {"latency-avg": 3.0}


def test_no_goals_means_everything_meets_them():
    assert resolve_goals(_metrics(), BASELINE) == {}
    assert meets_goals(_result(latency=1e9, accuracy=0.0), {})


def test_pareto_frontier_on_a_hand_built_set():
    results = {
        "fast_inaccurate": _result(latency=2.0, accuracy=0.70),
        "slow_accurate": _result(latency=9.0, accuracy=0.95),
        "balanced": _result(latency=5.0, accuracy=0.90),
        "dominated": _result(latency=6.0, accuracy=0.85),  # balanced is faster and more accurate
        "tie_of_balanced": _result(latency=5.0, accuracy=0.90),  # equal points do not dominate each other
        "worst": _result(latency=10.0, accuracy=0.60),
        "unmeasured": _result(latency=1.0),  # lacks an objective
    }
    frontier = pareto_frontier(results, ["latency-avg", "accuracy-accuracy_score"])
    assert frontier == {"fast_inaccurate", "slow_accurate", "balanced", "tie_of_balanced"}
    # default objectives: the sub metrics with priority > 0 (all three here, size only on one result)
    assert pareto_frontier({k: v for k, v in results.items() if k != "unmeasured"}) == frontier
    assert pareto_frontier(results, ["latency-avg"]) == {"unmeasured"}


def test_rank_by_priority_then_next_priority():
    results = {
        "a": _result(latency=5.0, accuracy=0.80),
        "b": _result(latency=4.0, accuracy=0.70),
        "c": _result(latency=4.0, accuracy=0.90),
        "d": _result(accuracy=0.99),
    }
    assert rank_candidates(results) == ["c", "b", "a", "d"]
    # a result lacking an objective ranks after every complete one
    assert rank_candidates(results, ["accuracy-accuracy_score", "latency-avg"]) == ["c", "a", "b", "d"]
    thresholds = {"accuracy-accuracy_score": 0.75}
    assert rank_candidates(results, thresholds=thresholds) == ["c", "a", "d", "b"]


def test_objectives_in_priority_order():
    metrics = parse_metrics(
        [
            {"name": "size", "type": "size_on_disk", "sub_types": [{"name": "bytes", "priority": 2}]},
            {"name": "latency", "type": "latency", "sub_types": [{"name": "avg", "priority": 1}, {"name": "max"}]},
        ]
    )
    assert objectives_of(metrics) == ["latency-avg", "size-bytes"]


def test_result_json_round_trip():
    result = _result(latency=3.5, accuracy=0.9)
    result.metadata["latency"] = {"providers": ["CPUExecutionProvider"]}
    data = result.to_json()
    assert data["latency-avg"] == {"value": 3.5, "priority": 1, "higher_is_better": False}
    again = MetricResult.from_json(data)
    assert again == result
    assert MetricResult.from_json(result.to_json(include_metadata=True)).metadata == result.metadata
