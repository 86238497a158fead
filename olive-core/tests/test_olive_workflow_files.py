"""Microsoft Olive's workflow files as they are: its evaluator type names, and one warning naming the keys of its
schema that are accepted and have no effect here (never silence)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from engine_support import base_workflow

from olive.exceptions import WorkflowConfigError
from olive.workflows.config import load_workflow_config


def _with_evaluator(tmp_path: Path, evaluator: dict) -> dict:
    size = {"name": "size", "type": "size_on_disk", "sub_types": [{"name": "bytes", "priority": 1}]}
    return base_workflow(tmp_path, evaluators={"e": {"metrics": [size], **evaluator}}, evaluator="e")


@pytest.mark.parametrize("kind", ["OnnxEvaluator", "onnxevaluator", "ONNX", "OliveEvaluator", None])
def test_olives_names_of_the_onnx_evaluator_are_accepted(tmp_path: Path, kind: str | None) -> None:
    workflow = load_workflow_config(_with_evaluator(tmp_path, {"type": kind}))
    assert workflow.evaluator is not None and [m.name for m in workflow.evaluator.metrics] == ["size"]


def test_an_olive_evaluator_none_here_provides_is_said_plainly(tmp_path: Path) -> None:
    with pytest.raises(WorkflowConfigError) as caught:
        load_workflow_config(_with_evaluator(tmp_path, {"type": "LMEvaluator"}))
    message = str(caught.value)
    assert message.startswith("evaluators.e.type: 'LMEvaluator' is Microsoft Olive's evaluator for language-model")
    assert "'OnnxEvaluator' or 'OliveEvaluator'" in message and "unknown" not in message


def test_a_misspelled_evaluator_type_gets_a_did_you_mean(tmp_path: Path) -> None:
    with pytest.raises(WorkflowConfigError, match=r"unknown evaluator type 'OnxEvaluator' \(did you mean"):
        load_workflow_config(_with_evaluator(tmp_path, {"type": "OnxEvaluator"}))


def test_accepted_keys_without_effect_get_one_warning_naming_them(tmp_path: Path, caplog) -> None:
    workflow = _with_evaluator(tmp_path, {"type": "OnnxEvaluator", "type_args": {"x": 1}})
    workflow["evaluators"]["e"]["metrics"][0]["backend"] = "torch_metrics"
    workflow["search_strategy"] = {"execution_order": "joint", "sampler": "sequential", "output_model_num": 3}
    workflow["systems"] = {"local": {"type": "LocalSystem", "accelerators": [{"device": "cpu", "memory": 4096}]}}
    workflow["plot_pareto_frontier"] = True
    with caplog.at_level(logging.WARNING, logger="olive"):
        load_workflow_config(workflow)
    warnings = [r.getMessage() for r in caplog.records if "have no effect" in r.getMessage()]
    assert len(warnings) == 1, warnings
    for path in (
        "evaluators.e.type_args",
        "evaluators.e.metrics[0].backend",
        "search_strategy.output_model_num",
        "systems.local.accelerators[0].memory",
        "plot_pareto_frontier",
    ):
        assert path in warnings[0]


def test_keys_without_effect_are_named_by_their_whole_path_in_every_form(tmp_path: Path, caplog) -> None:
    # An accelerator in the older nested form, a system written in place as the target, a user_config key.
    workflow = _with_evaluator(tmp_path, {})
    workflow["evaluators"]["e"]["metrics"][0]["user_config"] = {"shared_kv_buffer": True}
    cpu = {"device": "cpu", "execution_providers": ["CPUExecutionProvider"]}
    workflow["systems"] = {"old": {"type": "LocalSystem", "config": {"accelerators": [cpu, {**cpu, "memory": 1}]}}}
    workflow["target"] = {"type": "LocalSystem", "accelerators": [{**cpu, "memory": 2}]}
    with caplog.at_level(logging.WARNING, logger="olive"):
        load_workflow_config(workflow)
    warnings = [r.getMessage() for r in caplog.records if "have no effect" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert warnings[0].endswith(
        ": systems.old.config.accelerators[1].memory, target.accelerators[0].memory, "
        "evaluators.e.metrics[0].user_config.shared_kv_buffer"
    )


def test_a_key_without_effect_left_off_or_empty_is_not_named(tmp_path: Path, caplog) -> None:
    workflow = _with_evaluator(tmp_path, {"type_args": {}})
    workflow.update({"log_to_file": False, "output_name": None, "plot_pareto_frontier": False})
    with caplog.at_level(logging.WARNING, logger="olive"):
        load_workflow_config(workflow)
    assert not [r for r in caplog.records if "have no effect" in r.getMessage()]


def test_the_engine_sections_ignored_keys_are_named_too(tmp_path: Path, caplog) -> None:
    workflow = base_workflow(tmp_path)
    workflow["engine"] = {"log_to_file": True, "ort_log_severity_level": 3}
    with caplog.at_level(logging.WARNING, logger="olive"):
        load_workflow_config(workflow)
    warnings = [r.getMessage() for r in caplog.records if "have no effect" in r.getMessage()]
    assert len(warnings) == 1 and "engine.log_to_file, engine.ort_log_severity_level" in warnings[0]


# Every key the deprecation warning may tell users to move: those ignored here, and some that take effect.
ENGINE_SECTION = {
    "log_to_file": True,
    "ort_log_severity_level": 3,
    "ort_py_log_severity_level": 3,
    "output_name": "best",
    "clean_cache": True,
    "evaluate_input_model": False,
    "log_severity_level": 2,
}


@pytest.mark.parametrize("spelling", ["engine", "top level"])
def test_every_key_the_engine_warning_says_to_move_works_in_both_places(tmp_path: Path, caplog, spelling) -> None:
    workflow = base_workflow(tmp_path)
    if spelling == "engine":
        workflow["engine"] = dict(ENGINE_SECTION)
    else:
        workflow.update(ENGINE_SECTION)
    with caplog.at_level(logging.WARNING, logger="olive"):
        config = load_workflow_config(workflow)
    assert (config.clean_cache, config.evaluate_input_model, config.log_severity_level) == (True, False, 2)
    messages = [r.getMessage() for r in caplog.records]
    moved = [m for m in messages if "'engine' section is deprecated" in m]
    if spelling == "engine":
        assert len(moved) == 1 and "log_to_file" in moved[0]
    else:
        assert not moved
    ignored = [m for m in messages if "have no effect" in m]
    prefix = "engine." if spelling == "engine" else ""
    assert len(ignored) == 1, messages
    for key in ("log_to_file", "ort_log_severity_level", "ort_py_log_severity_level", "output_name"):
        assert f"{prefix}{key}" in ignored[0]
    assert "clean_cache" not in ignored[0]


def test_a_key_given_in_the_engine_section_and_at_the_top_level_is_one_error(tmp_path: Path) -> None:
    workflow = {**base_workflow(tmp_path), "log_to_file": True, "engine": {"log_to_file": False}}
    with pytest.raises(WorkflowConfigError, match=r"engine\.log_to_file: also given at the top level"):
        load_workflow_config(workflow)


def test_olive_run_takes_the_moved_keys(tmp_path: Path, engine_registry) -> None:
    import json

    from click.testing import CliRunner

    from olive.cli.main import cli

    file = tmp_path / "wf.json"
    file.write_text(json.dumps({**base_workflow(tmp_path), "log_to_file": True, "ort_log_severity_level": 3}))
    result = CliRunner().invoke(cli, ["run", str(file), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "log_to_file" in result.stderr and "unknown" not in result.output


def test_no_warning_when_every_key_takes_effect(tmp_path: Path, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="olive"):
        load_workflow_config(_with_evaluator(tmp_path, {"type": "OnnxEvaluator"}))
    assert not [r for r in caplog.records if "have no effect" in r.getMessage()]


def test_unknown_pass_params_are_ignored_with_one_warning_each_as_in_olive(tmp_path: Path, engine_registry) -> None:
    # Microsoft Olive's pass configs drop keys the pass does not declare; its workflows run here the same way, and
    # each key is named once, with the param it was most likely meant to be.
    import json

    from click.testing import CliRunner
    from engine_support import count_matmuls

    from olive.cli.main import cli

    params = {"type": "AddMatMuls", "n": 2, "nn": 5, "max_concurrent_builds": 4}
    file = tmp_path / "wf.json"
    file.write_text(json.dumps(base_workflow(tmp_path, passes={"add": params})))
    result = CliRunner().invoke(cli, ["run", str(file)])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stderr.split())
    assert text.count("ignored, as Microsoft Olive ignores it") == 2, text
    assert "passes.add.nn: AddMatMuls has no param 'nn' (did you mean 'n'?); ignored" in text
    assert "passes.add.max_concurrent_builds: AddMatMuls has no param 'max_concurrent_builds'; ignored" in text
    input_model = Path(base_workflow(tmp_path)["input_model"]["model_path"])
    assert count_matmuls(tmp_path / "out" / "model.onnx") == count_matmuls(input_model) + 2


def test_outside_a_workflow_an_unknown_pass_param_is_still_refused(engine_registry) -> None:
    # The Python API and olive run-pass are ours: a typo there is an error naming the param meant.
    from engine_support import AddMatMuls

    from olive.exceptions import PassConfigError
    from olive.hardware import DEFAULT_CPU_ACCELERATOR

    with pytest.raises(PassConfigError, match=r"unknown param 'nn' \(did you mean 'n'\?\)"):
        AddMatMuls(DEFAULT_CPU_ACCELERATOR, {"nn": 5})
