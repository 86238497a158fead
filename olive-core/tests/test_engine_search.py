"""The search: conditional spaces, objectives and goals, pruning, failures, orders, limits, hooks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from engine_support import (
    AddMatMuls,
    agreement_metric,
    base_workflow,
    count_matmuls,
    ran_passes,
    searched,
    size_metric,
    with_evaluator,
    write_calibration,
)

import olive
from olive.exceptions import PassConfigError, PassParamError, PassRunError
from olive.plugins.manager import new_plugin_manager, use_plugin_manager
from olive.plugins.markers import hookimpl

pytestmark = pytest.mark.usefixtures("engine_registry")


def _with_evaluator(tmp_path: Path, data: dict, *metrics: dict) -> dict:
    return with_evaluator(data, *metrics, data=write_calibration(tmp_path / "calib.npz"))


def _config_of(node: Any, *keys: str) -> tuple:
    return tuple(node.config[k] for k in keys)


def test_conditional_space_runs_exactly_the_valid_points_and_picks_the_measured_best(tmp_path: Path) -> None:
    data = _with_evaluator(
        tmp_path, base_workflow(tmp_path, search_strategy={"execution_order": "joint"}), size_metric()
    )
    output = olive.run(data)
    ran = [n for n in output.footprint if n.pass_key == "add"]
    assert sorted(_config_of(n, "n", "extra") for n in ran) == [(0, False), (1, False), (1, True)]
    assert all(n.status == "ok" and n.is_candidate for n in ran)
    sizes = {n.model_id: Path(n.model_path).stat().st_size for n in ran}
    assert output.best.model_id == min(sizes, key=sizes.get)
    assert output.best.metric_values()["size-bytes"] == min(sizes.values())
    assert count_matmuls(output.output_dir / "model.onnx") == 2
    footprint = json.loads((output.output_dir / "footprint.json").read_text())
    assert footprint["best_model_id"] == output.best.model_id
    assert {n["model_id"] for n in footprint["nodes"]} == {"input_model", *sizes}
    frontier = {n.model_id for n in output.pareto_frontier()}
    assert frontier == {output.best.model_id}


def test_goals_filter_the_candidates(tmp_path: Path) -> None:
    def run(goal: float | None, sub: str) -> Any:
        data = base_workflow(
            tmp_path,
            passes={"scale": {"type": "ScaleOutput"}},
            search_strategy={"execution_order": "joint"},
            output_dir=str(tmp_path / sub),
        )
        return olive.run(_with_evaluator(tmp_path, data, size_metric(), agreement_metric(goal)))

    free = run(None, "free")
    # Smallest file wins without goals: the truncated model (whose outputs point the other way).
    assert _config_of(free.best, "scale", "truncate") == (1.0, True)
    assert free.best.metric_values()["agree-cosine_mean"] < 0
    guarded = run(0.99, "guarded")
    candidates = guarded.get_output_models()
    assert len(candidates) == 4
    met = [n for n in candidates if n.metric_values()["agree-cosine_mean"] >= 0.99]
    assert {n.model_id for n in met} == {n.model_id for n in candidates if n.meets_goals}
    assert free.best.model_id not in {n.model_id for n in met}
    # The best is the smallest of the models that really meet the goal.
    assert guarded.best.model_id == min(met, key=lambda n: n.metric_values()["size-bytes"]).model_id
    impossible = run(1.5, "impossible")
    assert impossible.best is None and "no candidate met the goals" in impossible.reason
    assert "agree-cosine_mean" in impossible.reason
    assert not (tmp_path / "impossible" / "model.onnx").exists()
    assert (tmp_path / "impossible" / "footprint.json").exists()


def test_stop_when_goals_met_stops_at_the_first_good_point(tmp_path: Path) -> None:
    data = base_workflow(
        tmp_path,
        search_strategy={"execution_order": "joint", "stop_when_goals_met": True},
        passes={"scale": {"type": "ScaleOutput"}},
    )
    output = olive.run(_with_evaluator(tmp_path, data, size_metric(), agreement_metric(0.99)))
    assert [n.model_id == "input_model" or n.pass_key for n in output.footprint] == [True, "scale"]
    assert output.best.meets_goals


def test_pruned_points_are_recorded_and_not_counted(tmp_path: Path) -> None:
    data = base_workflow(
        tmp_path,
        passes={"add": {"type": "AddMatMuls", "n": 1, "extra": False, "marker": searched("a", "prune-me", "b", "c")}},
        search_strategy={"execution_order": "joint", "max_samples": 2},
    )
    output = olive.run(data)
    statuses = [(n.config["marker"], n.status) for n in output.footprint[1:]]
    assert statuses == [("a", "ok"), ("prune-me", "pruned"), ("b", "ok")]
    assert "validate_config" in output.footprint[2].error


class _NoTwoMarkers(AddMatMuls):
    """AddMatMuls that rejects, as a whole config, n=2 together with the marker "clash"."""

    @classmethod
    def _check_config(cls, config: Any, accelerator_spec: Any) -> None:
        if config.n == 2 and config.marker == "clash":
            raise PassParamError(
                "params 'n' and 'marker': n=2 and marker 'clash' do not go together", params=("n", "marker")
            )


def test_check_config_fails_fixed_values_and_prunes_search_points(tmp_path: Path, engine_registry) -> None:
    engine_registry.register(_NoTwoMarkers, name="NoTwoMarkers")
    fixed = base_workflow(tmp_path, passes={"add": {"type": "NoTwoMarkers", "n": 2, "marker": "clash"}})
    with pytest.raises(PassConfigError, match=r"add.*NoTwoMarkers.*n=2 and marker 'clash'"):
        olive.run(fixed)
    assert not list((tmp_path / "cache").glob("**/model.onnx"))
    search = base_workflow(
        tmp_path,
        passes={"add": {"type": "NoTwoMarkers", "n": 2, "extra": False, "marker": searched("ok", "clash")}},
        search_strategy={"execution_order": "joint"},
    )
    output = olive.run(search)
    statuses = [(n.config["marker"], n.status) for n in output.footprint[1:]]
    assert statuses == [("ok", "ok"), ("clash", "pruned")]
    assert "params 'n' and 'marker': n=2 and marker 'clash' do not go together" in output.footprint[2].error


def test_a_failing_point_is_recorded_and_the_search_goes_on(tmp_path: Path) -> None:
    data = base_workflow(
        tmp_path,
        passes={"add": {"type": "AddMatMuls", "n": 1, "extra": False, "fail": searched(True, False)}},
        search_strategy={"execution_order": "joint"},
    )
    output = olive.run(data)
    failed, ok = output.footprint[1:]
    assert failed.status == "failed" and failed.error == "RuntimeError: AddMatMuls was told to fail"
    assert ok.status == "ok" and output.best.model_id == ok.model_id


def test_a_failing_pass_fails_a_run_withoutsearched(tmp_path: Path) -> None:
    with pytest.raises(PassRunError, match="pass 'add' \\(AddMatMuls\\) failed: RuntimeError"):
        olive.run(base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "fail": True}}))


def test_pass_by_pass_feeds_each_pass_the_best_of_the_previous(tmp_path: Path) -> None:
    data = base_workflow(
        tmp_path,
        passes={"add": {"type": "AddMatMuls"}, "scale": {"type": "ScaleOutput"}},
        search_strategy={"execution_order": "pass-by-pass"},
    )
    output = olive.run(_with_evaluator(tmp_path, data, size_metric()))
    adds = [n for n in output.footprint if n.pass_key == "add"]
    scales = [n for n in output.footprint if n.pass_key == "scale"]
    assert len(adds) == 3 and len(scales) == 4
    smallest_add = min(adds, key=lambda n: n.metric_values()["size-bytes"])
    assert _config_of(smallest_add, "n", "extra") == (0, False)
    assert {n.parent_model_id for n in scales} == {smallest_add.model_id}
    assert all(n.is_candidate for n in scales) and not any(n.is_candidate for n in adds)
    assert _config_of(output.best, "scale", "truncate") == (1.0, True)


@pytest.mark.parametrize("order", ["joint", "pass-by-pass"])
def test_max_iter_and_max_time_limit_both_orders(tmp_path: Path, order: str) -> None:
    passes = {"add": {"type": "AddMatMuls"}, "scale": {"type": "ScaleOutput"}}
    data = base_workflow(tmp_path, passes=passes, search_strategy={"execution_order": order, "max_iter": 2})
    output = olive.run(data)
    # joint: 2 chains sharing the first pass's run (3 runs); pass-by-pass: 2 runs of the first pass
    assert len(output.footprint) - 1 == (3 if order == "joint" else 2)
    assert len([n for n in output.footprint if n.is_candidate]) == (2 if order == "joint" else 0)
    data = base_workflow(tmp_path, passes=passes, search_strategy={"execution_order": order, "max_time": 0})
    output = olive.run(data)
    assert output.best is None and "search limits" in output.reason


def test_alternative_configs_of_a_pass_are_each_tried(tmp_path: Path) -> None:
    data = base_workflow(
        tmp_path,
        passes={"add": [{"type": "AddMatMuls", "n": 1}, {"type": "AddMatMuls", "n": 2}]},
    )
    output = olive.run(data)
    assert sorted(n.config["n"] for n in output.get_output_models()) == [1, 2]


def test_tpe_runs_max_samples_distinct_points(tmp_path: Path) -> None:
    data = base_workflow(
        tmp_path,
        passes={"add": {"type": "AddMatMuls"}, "scale": {"type": "ScaleOutput"}},
        search_strategy={"execution_order": "joint", "sampler": "tpe", "max_samples": 5, "seed": 3},
    )
    output = olive.run(_with_evaluator(tmp_path, data, size_metric()))
    chains = {(c.parent_model_id, c.model_id) for c in output.get_output_models()}
    assert len(chains) == 5


class _Recorder:
    def __init__(self) -> None:
        self.events: list[tuple] = []

    @hookimpl
    def olive_workflow_start(self, workflow: Any) -> None:
        self.events.append(("workflow_start", workflow.workflow_id))

    @hookimpl
    def olive_workflow_end(self, workflow: Any, output: Any, error: Any) -> None:
        self.events.append(("workflow_end", output.best.model_id if output and output.best else None, error))

    @hookimpl
    def olive_pass_start(self, pass_key: str, pass_name: str, config: dict, input_model: Any) -> None:
        self.events.append(("pass_start", pass_key, config["n"]))

    @hookimpl
    def olive_pass_end(self, pass_key: str, output_model: Any, cached: bool, error: Any, duration_s: float) -> None:
        self.events.append(("pass_end", pass_key, cached, error is None, Path(output_model.model_path).exists()))

    @hookimpl
    def olive_evaluation_end(self, model_id: str, model: Any, metrics: dict) -> None:
        self.events.append(("evaluation_end", model_id, sorted(metrics)))


def test_observer_hooks_fire_in_order(tmp_path: Path) -> None:
    recorder = _Recorder()
    pm = new_plugin_manager(entry_points=False)
    pm.register(recorder, "recorder")
    data = _with_evaluator(
        tmp_path, base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "n": 2}}), size_metric()
    )
    with use_plugin_manager(pm):
        output = olive.run(data)
        first = list(recorder.events)
        recorder.events.clear()
        olive.run(data)
    best = output.best.model_id
    assert first == [
        ("workflow_start", "default_workflow"),
        ("evaluation_end", "input_model", ["size-bytes"]),
        ("pass_start", "add", 2),
        ("pass_end", "add", False, True, True),
        ("evaluation_end", best, ["size-bytes"]),
        ("workflow_end", best, None),
    ]
    assert ("pass_end", "add", True, True, True) in recorder.events


class _StartLogger:
    """Writes each ``olive_pass_start`` into the run log, where every real pass run is logged too."""

    def __init__(self, log: Path) -> None:
        self.log = log

    @hookimpl
    def olive_pass_start(self, pass_key: str) -> None:
        with self.log.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"pass": f"start {pass_key}", "config": {}, "pid": 0}) + "\n")


def test_pass_start_fires_before_the_pass_runs(tmp_path: Path, run_log: Path) -> None:
    pm = new_plugin_manager(entry_points=False)
    pm.register(_StartLogger(run_log), "starts")
    data = base_workflow(tmp_path, passes={"add": {"type": "AddMatMuls", "n": 1}, "scale": {"type": "ScaleOutput"}})
    with use_plugin_manager(pm):
        olive.run(data)
    assert [name for name, _ in ran_passes(run_log)] == ["start add", "AddMatMuls", "start scale", "ScaleOutput"]
