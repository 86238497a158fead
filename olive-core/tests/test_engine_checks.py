"""Checks before anything runs (evaluator functions), evaluation keys that follow data content, configs per
point, and where timing metrics were measured."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from engine_support import (
    AddMatMuls,
    ScaleOutput,
    agreement_metric,
    base_workflow,
    with_evaluator,
    write_calibration,
)

import olive
from olive.cli.main import cli
from olive.exceptions import WorkflowConfigError
from olive.hardware.accelerator import DEFAULT_CPU_ACCELERATOR

pytestmark = pytest.mark.usefixtures("engine_registry")


def test_a_custom_metric_naming_a_missing_function_fails_before_any_pass(tmp_path: Path, monkeypatch) -> None:
    log = tmp_path / "runs.log"
    monkeypatch.setenv("OLIVE_TEST_RUN_LOG", str(log))
    (tmp_path / "metrics.py").write_text("def score(model, data):\n    return {'v': 1.0}\n")
    metric = {
        "name": "custom",
        "type": "custom",
        "sub_types": [{"name": "v", "higher_is_better": True}],
        "user_config": {"user_script": str(tmp_path / "metrics.py"), "evaluate_func": "scores"},
    }
    # Without a baseline the first evaluation would come after the first pass.
    workflow = base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "n": 1}}, evaluate_input_model=False)
    workflow = with_evaluator(workflow, metric)
    with pytest.raises(WorkflowConfigError, match=r"evaluators\.common\.metrics\[0\]\.user_config\.evaluate_func"):
        olive.run(workflow)
    config = tmp_path / "wf.json"
    config.write_text(json.dumps(workflow))
    result = CliRunner().invoke(cli, ["run", "--config", str(config)], catch_exceptions=False)
    assert result.exit_code == 2
    assert "evaluate_func: function 'scores' is not defined" in result.stderr
    assert "did you mean 'score'" in result.stderr
    assert not log.exists()  # no pass ran
    assert not (tmp_path / "cache" / "runs").exists() or not list((tmp_path / "cache" / "runs").iterdir())


def test_editing_the_npz_recomputes_cached_metrics(tmp_path: Path) -> None:
    import numpy as np

    data = tmp_path / "calib.npz"
    rng = np.random.default_rng(0)
    np.savez(data, input=rng.standard_normal((8, 16)).astype(np.float32))
    metric = {
        "name": "agree",
        "type": "agreement",
        "data_config": "calib",
        "sub_types": [{"name": "max_abs_diff", "priority": 1, "higher_is_better": False}],
    }

    def run() -> Any:
        workflow = base_workflow(tmp_path, passes={"scale": {"type": "ScaleOutput", "scale": -1.0}})
        return olive.run(with_evaluator(workflow, metric, data=data)).footprint[-1]

    first = run()
    again = run()
    assert again.timings["evaluation_cached"] == 1.0 and again.metrics == first.metrics
    # Same path, same size, new content: tripled inputs, so the negated outputs are much further apart.
    arrays = dict(np.load(data))
    np.savez(data, input=arrays["input"] * 3.0)
    edited = run()
    assert edited.timings["evaluation_cached"] == 0.0
    value = edited.metric_values()["agree-max_abs_diff"]
    assert value > 2.0 * first.metric_values()["agree-max_abs_diff"]


def test_config_for_point_matches_generate_config() -> None:
    accelerator = DEFAULT_CPU_ACCELERATOR
    resolved = AddMatMuls.get_config_params(accelerator, {"marker": "m"}, disable_search=False, pass_key="add")
    for point in ({"n": 1, "extra": True}, {"n": 0, "extra": False}, {"n": 1}):
        made = AddMatMuls.config_for_point(accelerator, resolved, point, pass_key="add")
        assert made == AddMatMuls.generate_config(accelerator, {"marker": "m"}, point=point, pass_key="add")
    from olive.exceptions import PassConfigError

    with pytest.raises(PassConfigError, match=r"pass 'add' \(AddMatMuls\): search point has unknown param 'm'"):
        AddMatMuls.config_for_point(accelerator, resolved, {"m": 1}, pass_key="add")
    scale = ScaleOutput.get_config_params(accelerator, {}, disable_search=False)
    with pytest.raises(PassConfigError, match="param 'scale' expects"):
        ScaleOutput.config_for_point(accelerator, scale, {"scale": "big", "truncate": False})


@pytest.mark.parametrize("executor", [None, {"type": "process", "max_workers": 2}])
def test_timing_metrics_record_where_they_were_measured(tmp_path: Path, executor: dict | None) -> None:
    latency = {
        "name": "latency",
        "type": "latency",
        "sub_types": [{"name": "avg", "priority": 1}],
        "user_config": {},
        "warmup_num": 1,
        "repeat_test_num": 3,
    }
    strategy: dict[str, Any] = {"execution_order": "joint"}
    if executor is not None:
        strategy["executor"] = executor
    workflow = base_workflow(tmp_path, passes={"scale": {"type": "ScaleOutput"}}, search_strategy=strategy)
    output = olive.run(with_evaluator(workflow, latency))
    measured = [n for n in output.footprint if n.metrics]
    assert len(measured) == 5  # the input model and 4 points
    for node in measured:
        assert node.timings["measured_on"] == socket.gethostname()
        assert node.timings["measured_alone"] is True
    # The lock files live in the cache folder, which olive cache clean removes with it.
    assert any((tmp_path / "cache" / "locks").glob("host-*.lock"))


def _latency(goal: dict | None = None) -> dict:
    sub: dict[str, Any] = {"name": "avg", "priority": 1}
    if goal is not None:
        sub["goal"] = goal
    return {"name": "latency", "type": "latency", "sub_types": [sub], "warmup_num": 1, "repeat_test_num": 3}


@pytest.mark.parametrize("goal_first", [True, False], ids=["goal-then-agreement", "agreement-then-goal"])
def test_a_relative_goal_measures_the_input_model_whatever_the_metric_order(tmp_path: Path, goal_first: bool) -> None:
    data = write_calibration(tmp_path / "calib.npz", rows=4)
    # Any latency is within 1000000% of the input model's: the goal is met once it can be resolved.
    latency = _latency({"type": "percent-max-degradation", "value": 1_000_000})
    agreement = agreement_metric(priority=None)
    metrics = [latency, agreement] if goal_first else [agreement, latency]
    workflow = base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "n": 1}}, evaluate_input_model=False)
    output = olive.run(with_evaluator(workflow, *metrics, data=data))
    baseline = output.footprint[0]
    assert baseline.model_id == "input_model"
    assert sorted(baseline.metrics) == ["agree-cosine_mean", "latency-avg"]
    assert output.best is not None and output.best.meets_goals is True


def test_threshold_goals_leave_the_input_model_unmeasured_when_asked(tmp_path: Path) -> None:
    data = write_calibration(tmp_path / "calib.npz", rows=4)
    workflow = base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "n": 1}}, evaluate_input_model=False)
    output = olive.run(with_evaluator(workflow, _latency(), agreement_metric(0.9, priority=None), data=data))
    assert output.footprint[0].metrics is None
    assert output.best is not None and output.best.meets_goals is True


class _RecordsHost(AddMatMuls):
    """AddMatMuls that records the ``host_device`` it was given in its output model's attributes."""

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        result = super()._run_for_config(model, config, output_model_path)
        result.model_attributes["host_device"] = self.host_device
        return result


def test_passes_run_with_the_host_systems_device(tmp_path: Path, engine_registry: Any) -> None:
    engine_registry.register(_RecordsHost, name="RecordsHost")

    def host_device(**extra: Any) -> Any:
        workflow = base_workflow(tmp_path, passes={"add": {"type": "RecordsHost", "n": 1}}, **extra)
        return olive.run(workflow).best.model_json["config"]["model_attributes"]["host_device"]

    assert host_device() is None
    systems = {"here": {"type": "LocalSystem", "accelerators": [{"device": "npu"}]}}
    assert host_device(systems=systems, host="here", cache_dir=str(tmp_path / "other-cache")) == "npu"
