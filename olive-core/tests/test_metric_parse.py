"""Metric JSON (Microsoft Olive's form): parsing, defaults, and errors that name the JSON path."""

from __future__ import annotations

import pytest

from olive.evaluator.metric import parse_metric, parse_metrics
from olive.exceptions import WorkflowConfigError

PATH = "evaluators.common.metrics"


def test_latency_metric_with_goal_and_options():
    metric = parse_metric(
        {
            "name": "latency",
            "type": "latency",
            "sub_types": [
                {"name": "avg", "priority": 1, "goal": {"type": "percent-min-improvement", "value": 20}},
                {"name": "p90"},
            ],
            "data_config": "calib",
            "user_config": {"warmup_num": 3, "repeat_test_num": 7, "sleep_num": 0.001},
        },
        f"{PATH}[0]",
        {"calib"},
    )
    assert metric.keys() == ["latency-avg", "latency-p90"]
    avg, p90 = metric.sub_types
    assert (avg.priority, avg.higher_is_better, avg.goal.type, avg.goal.value) == (
        1,
        False,
        "percent-min-improvement",
        20,
    )
    assert p90.priority == -1 and p90.goal is None
    assert (metric.warmup_num, metric.repeat_test_num, metric.sleep_num) == (3, 7, 0.001)


def test_direction_defaults_per_type():
    def direction(kind, sub):
        return (
            parse_metric({"name": "m", "type": kind, "sub_types": [{"name": sub}], "data_config": "d"}, "m", {"d"})
            .sub_types[0]
            .higher_is_better
        )

    assert direction("latency", "p99") is False
    assert direction("throughput", "avg") is True
    assert direction("accuracy", "f1_score") is True
    assert direction("size_on_disk", "bytes") is False
    assert direction("agreement", "cosine_min") is True
    assert direction("agreement", "max_abs_diff") is False
    assert direction("agreement", "top1") is True


def test_options_at_top_level_and_agreement_pooling():
    metric = parse_metric(
        {
            "name": "agree",
            "type": "agreement",
            "warmup_num": 0,
            "pooling": "mean",
            "mask_input": "mask",
            "output_name": "last_hidden_state",
            "data_config": "d",
        },
        "m",
        {"d"},
    )
    assert [s.name for s in metric.sub_types] == ["cosine_mean"]
    assert (metric.pooling, metric.mask_input, metric.output_name, metric.warmup_num) == (
        "mean",
        "mask",
        "last_hidden_state",
        0,
    )


def test_old_single_sub_type_form_is_accepted():
    metric = parse_metric(
        {
            "name": "acc",
            "type": "accuracy",
            "sub_type": "accuracy_score",
            "goal": {"type": "max-degradation", "value": 0.01},
            "priority": 1,
            "data_config": "d",
        },
        "m",
        {"d"},
    )
    assert metric.sub_types[0].name == "accuracy_score" and metric.sub_types[0].goal.value == 0.01


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        ({"name": "latency", "sub_types": [{"name": "avg"}]}, rf"{PATH}\[1\].type: every metric needs a type"),
        (
            {"name": "l", "type": "latncy"},
            rf"{PATH}\[1\].type: unknown metric type 'latncy' \(did you mean 'latency'\?\)",
        ),
        (
            {"name": "l", "type": "latency", "sub_types": [{"name": "avrg"}]},
            rf"{PATH}\[1\].sub_types\[0\].name: unknown latency sub type 'avrg' \(did you mean 'avg'\?\)",
        ),
        (
            {
                "name": "l",
                "type": "latency",
                "sub_types": [{"name": "avg", "goal": {"type": "percent-min-improvment", "value": 5}}],
            },
            rf"{PATH}\[1\].sub_types\[0\].goal.type: .*did you mean 'percent-min-improvement'",
        ),
        (
            {
                "name": "l",
                "type": "latency",
                "sub_types": [{"name": "avg", "goal": {"type": "min-improvement", "value": -1}}],
            },
            r"goal.value: must be >= 0",
        ),
        (
            {
                "name": "l",
                "type": "latency",
                "sub_types": [{"name": "avg", "goal": {"type": "percent-min-improvement", "value": 100}}],
            },
            r"goal.value: must be below 100",
        ),
        (
            {"name": "l", "type": "latency", "sub_types": [{"name": "avg", "goal": {"type": "threshold"}}]},
            r"goal.value: missing",
        ),
        (
            {"name": "l", "type": "latency", "data_config": "calbi"},
            rf"{PATH}\[1\].data_config: no data config named 'calbi' \(did you mean 'calib'\?\)",
        ),
        (
            {"name": "l", "type": "latency", "sub_types": [{"name": "avg", "higher_is_better": True}]},
            r"sub_types\[0\].higher_is_better: latency avg is lower-is-better",
        ),
        (
            {"name": "c", "type": "custom", "sub_types": [{"name": "score"}], "user_config": {"evaluate_func": "f"}},
            rf"{PATH}\[1\].sub_types\[0\].higher_is_better: required for a custom metric",
        ),
        (
            {"name": "c", "type": "custom", "sub_types": [{"name": "score", "higher_is_better": True}]},
            rf"{PATH}\[1\].user_config.evaluate_func: a custom metric needs",
        ),
        ({"name": "c", "type": "custom", "user_config": {"evaluate_func": "f"}}, rf"{PATH}\[1\].sub_types: missing"),
        ({"name": "a", "type": "accuracy"}, rf"{PATH}\[1\].data_config: an accuracy metric needs labelled data"),
        (
            {"name": "l", "type": "latency", "user_config": {"warmup": 3}},
            rf"{PATH}\[1\].user_config.warmup: unknown user_config key \(did you mean 'warmup_num'\?\)",
        ),
        (
            {"name": "l", "type": "latency", "repeat_test_num": 0},
            rf"{PATH}\[1\].repeat_test_num: expected a whole number from 1 to 1000000, got 0",
        ),
        (
            {"name": "l", "type": "latency", "goal": {"type": "threshold", "value": 1}},
            r"\.goal: belongs inside sub_types",
        ),
        (
            {"name": "l", "type": "latency", "sub_types": [{"name": "avg", "priorty": 1}]},
            r"sub_types\[0\].priorty: unknown sub type key \(did you mean 'priority'\?\)",
        ),
        ({"name": "a", "type": "agreement", "pooling": "max"}, r"\.pooling: unknown pooling 'max'"),
        (
            {"name": "a", "type": "accuracy", "data_config": "calib", "sub_types": [{"name": "auroc"}]},
            r"unknown accuracy sub type 'auroc'",
        ),
        ({"type": "latency"}, rf"{PATH}\[1\].name: every metric needs a name"),
    ],
)
def test_errors_name_the_json_path(metric, message):
    metrics = [{"name": "size", "type": "size_on_disk"}, metric]
    with pytest.raises(WorkflowConfigError, match=message):
        parse_metrics(metrics, PATH, {"calib"})


def test_priorities_must_differ_and_names_must_be_unique():
    with pytest.raises(WorkflowConfigError, match=r"priority 1 is given to both a-avg and b-bytes"):
        parse_metrics(
            [
                {"name": "a", "type": "latency", "sub_types": [{"name": "avg", "priority": 1}]},
                {"name": "b", "type": "size_on_disk", "sub_types": [{"name": "bytes", "priority": 1}]},
            ],
            PATH,
        )
    with pytest.raises(WorkflowConfigError, match=rf"{PATH}\[1\].name: metric name 'a' is also used by {PATH}\[0\]"):
        parse_metrics([{"name": "a", "type": "latency"}, {"name": "a", "type": "size_on_disk"}], PATH)


def test_first_sub_metric_becomes_the_objective_when_none_has_a_priority():
    metrics = parse_metrics(
        [{"name": "lat", "type": "latency", "sub_types": ["avg", "max"]}, {"name": "s", "type": "size_on_disk"}]
    )
    assert [s.priority for s in metrics[0].sub_types] == [1, -1]
    assert metrics[1].sub_types[0].priority == -1


def test_inline_data_config_is_parsed(tmp_path):
    import numpy as np

    np.savez(tmp_path / "d.npz", input=np.zeros((2, 4), np.float32))
    metric = parse_metric(
        {
            "name": "l",
            "type": "latency",
            "data_config": {
                "name": "inline",
                "type": "NpzDataContainer",
                "load_dataset_config": {"data_path": "d.npz"},
            },
        },
        "m",
        set(),
        base_dir=tmp_path,
    )
    assert metric.data_config == "inline" and metric.inline_data_config is not None


def test_parsing_imports_no_numpy_or_onnxruntime():
    import subprocess
    import sys

    code = (
        "import sys\nfrom olive.evaluator.metric import parse_metrics\n"
        "from olive.evaluator.goals import resolve_goals\n"
        "parse_metrics([{'name': 'l', 'type': 'latency', 'sub_types': [{'name': 'avg', 'priority': 1}]}])\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'onnxruntime', 'onnx'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"
