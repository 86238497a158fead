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


def test_the_engine_sections_ignored_keys_are_named_too(tmp_path: Path, caplog) -> None:
    workflow = base_workflow(tmp_path)
    workflow["engine"] = {"log_to_file": True, "ort_log_severity_level": 3}
    with caplog.at_level(logging.WARNING, logger="olive"):
        load_workflow_config(workflow)
    warnings = [r.getMessage() for r in caplog.records if "have no effect" in r.getMessage()]
    assert len(warnings) == 1 and "engine.log_to_file, engine.ort_log_severity_level" in warnings[0]


def test_no_warning_when_every_key_takes_effect(tmp_path: Path, caplog) -> None:
    with caplog.at_level(logging.WARNING, logger="olive"):
        load_workflow_config(_with_evaluator(tmp_path, {"type": "OnnxEvaluator"}))
    assert not [r for r in caplog.records if "have no effect" in r.getMessage()]
