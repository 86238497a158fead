"""Goals resolved against a baseline, the Pareto frontier and ranking, on hand-built results."""

from __future__ import annotations

import pytest

from olive.evaluator.goals import (
    Tolerance,
    meets_goals,
    objectives_of,
    pareto_frontier,
    rank_candidates,
    ranking_rule,
    resolve_goals,
    tolerances_of,
    unmet_goals,
)
from olive.evaluator.metric import parse_metrics
from olive.evaluator.result import MetricResult, SubMetricResult
from olive.exceptions import OliveError, WorkflowConfigError


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


# --------------------------------------------------------------------------------------------------
# Ranking tolerance: differences below what the measurement can tell apart are ties
# --------------------------------------------------------------------------------------------------
def _cosine_then_latency(cosine: float, latency_ms: float) -> MetricResult:
    return MetricResult(
        {
            "agreement-cosine_mean": SubMetricResult(cosine, 1, True),
            "latency-p50": SubMetricResult(latency_ms, 2, False),
        }
    )


def _objectives(cosine_tolerance: float | None, latency_tolerance: float | None) -> list[dict]:
    subs_cos = {"name": "cosine_mean", "priority": 1, "goal": {"type": "threshold", "value": 0.99}}
    subs_lat = {"name": "p50", "priority": 2}
    if cosine_tolerance is not None:
        subs_cos["tolerance"] = cosine_tolerance
    if latency_tolerance is not None:
        subs_lat["tolerance"] = latency_tolerance
    metrics = parse_metrics(
        [
            {"name": "agreement", "type": "agreement", "sub_types": [subs_cos], "data_config": "d"},
            {"name": "latency", "type": "latency", "sub_types": [subs_lat]},
        ],
        data_config_names={"d"},
    )
    subs = {f"{m.name}-{s.name}": s for m in metrics for s in m.sub_types}
    return [
        {
            "key": key,
            "priority": subs[key].priority,
            "higher_is_better": subs[key].higher_is_better,
            "tolerance": subs[key].tolerance,
            "relative_tolerance": subs[key].relative_tolerance,
        }
        for key in objectives_of(metrics)
    ]


# The all-MiniLM-L6-v2 case: the first model is 1.9x slower for a cosine 0.0001 higher.
SLOW_BUT_A_HAIR_CLOSER = {
    "slow": _cosine_then_latency(0.9952, 19.0),
    "fast": _cosine_then_latency(0.9951, 10.0),
    "fast_but_worse": _cosine_then_latency(0.9930, 9.0),
}


def test_default_tolerance_lets_a_tie_on_cosine_fall_through_to_latency():
    objectives = _objectives(None, None)
    keys = [o["key"] for o in objectives]
    tolerant = rank_candidates(SLOW_BUT_A_HAIR_CLOSER, keys, tolerances=tolerances_of(objectives))
    exact = rank_candidates(SLOW_BUT_A_HAIR_CLOSER, keys)
    assert tolerant == ["fast", "slow", "fast_but_worse"]
    assert exact == ["slow", "fast", "fast_but_worse"]


def test_tolerance_zero_is_microsoft_olives_exact_order():
    objectives = _objectives(0, 0)
    keys = [o["key"] for o in objectives]
    assert rank_candidates(SLOW_BUT_A_HAIR_CLOSER, keys, tolerances=tolerances_of(objectives)) == [
        "slow",
        "fast",
        "fast_but_worse",
    ]


def test_relative_latency_tolerance_ties_close_latencies_and_the_next_priority_decides():
    def result(latency_ms: float, cosine: float) -> MetricResult:
        return MetricResult(
            {
                "latency-p50": SubMetricResult(latency_ms, 1, False),
                "agreement-cosine_mean": SubMetricResult(cosine, 2, True),
            }
        )

    results = {"a": result(10.0, 0.991), "b": result(10.4, 0.999), "c": result(11.0, 1.0)}
    keys = ["latency-p50", "agreement-cosine_mean"]
    five_percent = {"latency-p50": Tolerance(0.05, relative=True)}
    # b is within 5% of a (10.4 <= 10.5) and agrees better; c is 10% slower: a real difference.
    assert rank_candidates(results, keys, tolerances=five_percent) == ["b", "a", "c"]
    assert rank_candidates(results, keys) == ["a", "b", "c"]


def test_tolerance_defaults_and_validation():
    objectives = {o["key"]: o for o in _objectives(None, None)}
    assert objectives["latency-p50"]["relative_tolerance"] is True
    assert objectives["latency-p50"]["tolerance"] > 0
    assert objectives["agreement-cosine_mean"] == {**objectives["agreement-cosine_mean"], "tolerance": 1e-4}
    size = parse_metrics([{"name": "size", "type": "size_on_disk", "sub_types": [{"name": "bytes", "priority": 1}]}])
    assert size[0].sub_types[0].tolerance == 0.0
    with pytest.raises(WorkflowConfigError, match=r"sub_types\[0\]\.tolerance"):
        _objectives(-0.1, None)
    with pytest.raises(WorkflowConfigError, match=r"tolerance.*fraction"):
        _objectives(None, 5)


def test_the_ranking_rule_says_what_ties():
    rule = ranking_rule(_objectives(None, 0))
    assert rule.startswith("by agreement-cosine_mean (higher is better, within 0.0001 ties), then latency-p50")
    assert "latency-p50 (lower is better, exact)" in rule
    assert "falls through to the next priority" in rule
    assert "ties" not in ranking_rule(_objectives(0, 0)).replace("exact", "")
