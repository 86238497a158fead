"""Workflows from JSON: transformer fusion then dynamic quantization with a search, and tuned settings in use."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from olive.testing import write_npz_dataset


def _search(*values):
    return {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": list(values)}


def _workflow(tmp_path: Path, model, passes: dict, metrics: list[dict]) -> dict:
    data = write_npz_dataset(tmp_path / "eval.npz", model, num_samples=4)
    return {
        "workflow_id": "graph-quant",
        "input_model": {"type": "ONNXModel", "model_path": str(model.model_path)},
        "systems": {
            "local": {
                "type": "LocalSystem",
                "accelerators": [{"device": "cpu", "execution_providers": ["CPUExecutionProvider"]}],
            }
        },
        "target": "local",
        "data_configs": [
            {
                "name": "eval",
                "type": "NpzDataContainer",
                "load_dataset_config": {"data_path": str(data)},
                "dataloader_config": {"batch_size": 2},
            }
        ],
        "evaluators": {"common": {"metrics": metrics}},
        "evaluator": "common",
        "passes": passes,
        "search_strategy": {"execution_order": "joint", "sampler": "sequential"},
        "cache_dir": str(tmp_path / "cache"),
        "output_dir": str(tmp_path / "out"),
        "evaluate_input_model": False,
    }


AGREEMENT = {
    "name": "agree",
    "type": "agreement",
    "data_config": "eval",
    "sub_types": [{"name": "cosine_mean", "priority": 1, "goal": {"type": "threshold", "value": 0.98}}],
}
LATENCY = {
    "name": "latency",
    "type": "latency",
    "data_config": "eval",
    "sub_types": [{"name": "avg", "priority": 2}],
    "user_config": {"warmup_num": 1, "repeat_test_num": 3},
}


def test_transformer_optimization_then_dynamic_quantization_with_search(tiny_bert, tmp_path):
    import olive

    passes = {
        "fuse": {"type": "OrtTransformersOptimization", "model_type": "bert", "opt_level": _search(0, 99)},
        "quantize": {
            "type": "OnnxDynamicQuantization",
            "precision": "int8",
            "reduce_range": False,
            "quant_preprocess": False,
            "per_channel": _search(True, False),
        },
    }
    path = tmp_path / "workflow.json"
    path.write_text(json.dumps(_workflow(tmp_path, tiny_bert, passes, [AGREEMENT, LATENCY])))

    output = olive.run(str(path))

    quantized = [n for n in output.footprint if n.pass_name == "OnnxDynamicQuantization" and n.status == "ok"]
    fused = [n for n in output.footprint if n.pass_name == "OrtTransformersOptimization" and n.status == "ok"]
    # Both passes were searched: every combination of opt_level x per_channel produced a model.
    assert {n.config["opt_level"] for n in fused} == {0, 99}
    assert len(quantized) == 4
    assert {(n.config["per_channel"]) for n in quantized} == {True, False}
    best = output.get_best_candidate()
    assert best is not None and best.pass_name == "OnnxDynamicQuantization"
    # The best model is fused and quantized, and its outputs still agree with the input model's.
    import onnx

    ops = Counter(node.op_type for node in onnx.load(str(Path(output.output_dir) / "model.onnx")).graph.node)
    assert ops["Attention"] + ops["SkipLayerNormalization"] > 0
    assert ops["DynamicQuantizeMatMul"] + ops["MatMulInteger"] + ops["QAttention"] > 0, ops
    assert best.metric_values()["agree-cosine_mean"] >= 0.98


def test_same_workflow_through_the_cli(tiny_bert, tmp_path):
    passes = {
        "fuse": {"type": "OrtTransformersOptimization", "model_type": "bert", "opt_level": 0},
        "quantize": {
            "type": "OnnxDynamicQuantization",
            "quant_preprocess": False,
            "reduce_range": False,
            "precision": "int8",
            "per_channel": True,
        },
    }
    path = tmp_path / "workflow.json"
    path.write_text(json.dumps(_workflow(tmp_path, tiny_bert, passes, [AGREEMENT])))
    result = subprocess.run(
        [sys.executable, "-m", "olive.cli.main", "run", "--config", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert (tmp_path / "out" / "model.onnx").is_file()


def test_unknown_model_type_in_workflow_fails_before_running(tiny_bert, tmp_path):
    import olive
    from olive.exceptions import PassConfigError

    passes = {"fuse": {"type": "OrtTransformersOptimization", "model_type": "bertt"}}
    with pytest.raises(PassConfigError, match=r"passes\.fuse .*'bertt' \(did you mean 'bert'\?\)"):
        olive.run(_workflow(tmp_path, tiny_bert, passes, [AGREEMENT]))
    assert not (tmp_path / "out" / "model.onnx").exists()


def test_model_type_from_input_model_attributes(tiny_bert, tmp_path):
    # An Olive workflow for an ONNX model that carries its Hugging Face config's facts, with no model_type.
    import olive

    workflow = _workflow(
        tmp_path, tiny_bert, {"fuse": {"type": "OrtTransformersOptimization", "opt_level": 0}}, [AGREEMENT]
    )
    workflow["input_model"]["model_attributes"] = {"model_type": "bert", "num_attention_heads": 4, "hidden_size": 64}
    output = olive.run(workflow)
    (node,) = [n for n in output.footprint if n.pass_key == "fuse" and n.status == "ok"]
    assert node.config["model_type"] is None
    import onnx

    fused = onnx.load(str(tmp_path / "out" / "model.onnx"), load_external_data=False)
    assert Counter(n.op_type for n in fused.graph.node)["Attention"] == 2


def test_tuned_settings_are_used_by_the_evaluator(tiny_bert, tmp_path):
    from olive.data.config import DataConfig
    from olive.evaluator.evaluator import OliveEvaluator
    from olive.evaluator.metric import parse_metric
    from olive.testing import run_pass
    from olive_passes_graph.session_params_tuning import OrtSessionParamsTuning

    tuned = run_pass(
        OrtSessionParamsTuning,
        tiny_bert,
        {"intra_thread_num_list": [1, 2], "warmup_num": 1, "repeat_test_num": 3},
        output_dir=tmp_path / "tuned",
    )
    chosen = tuned.inference_settings["session_options"]["intra_op_num_threads"]
    data = write_npz_dataset(tmp_path / "eval.npz", tiny_bert, num_samples=4)
    data_config = DataConfig.from_json(
        {"name": "eval", "type": "NpzDataContainer", "load_dataset_config": {"data_path": str(data)}}
    )
    metric = parse_metric(LATENCY, "metrics[0]", {"eval"})
    evaluator = OliveEvaluator([metric], {"eval": data_config})
    result = evaluator.evaluate(tuned)
    assert result["latency-avg"].value > 0
    # The evaluator reports the options of the session it really built and timed.
    used = result.metadata["latency"]["session_options"]
    assert chosen in (1, 2)  # not onnxruntime's default (0), so a session ignoring the settings would differ
    assert used["intra_op_num_threads"] == chosen
    assert result.metadata["latency"]["inference_settings"] == tuned.inference_settings


def test_conflicting_fixed_shape_params_in_workflow_fail_before_running(tiny_bert, tmp_path):
    import olive
    from olive.exceptions import PassConfigError

    passes = {
        "fix": {
            "type": "DynamicToFixedShape",
            "dim_param": ["batch"],
            "dim_value": [1],
            "input_name": ["input_ids"],
            "input_shape": [[1, 16]],
        }
    }
    with pytest.raises(PassConfigError, match=r"passes\.fix .*not both"):
        olive.run(_workflow(tmp_path, tiny_bert, passes, [AGREEMENT]))
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.onnx"))
    assert not (tmp_path / "out").exists()


def test_session_tuning_in_a_workflow_keeps_its_settings(tiny_bert, tmp_path):
    import olive

    passes = {
        "tune": {
            "type": "OrtSessionParamsTuning",
            "data_config": "eval",
            "intra_thread_num_list": [1, 2],
            "warmup_num": 1,
            "repeat_test_num": 3,
        }
    }
    workflow = _workflow(tmp_path, tiny_bert, passes, [LATENCY])
    del workflow["search_strategy"]
    output = olive.run(workflow)
    best = output.get_best_candidate()
    assert best is not None and best.pass_name == "OrtSessionParamsTuning"
    saved = json.loads((Path(output.output_dir) / "model_config.json").read_text())
    settings = saved.get("config", saved).get("inference_settings")
    assert settings is not None, saved
    assert settings["session_options"]["intra_op_num_threads"] in (1, 2)
    assert settings["execution_provider"] == ["CPUExecutionProvider"]


def test_a_search_point_with_both_peephole_tools_off_is_pruned_not_run(tiny_bert, tmp_path):
    import olive

    passes = {
        "peep": {
            "type": "OnnxPeepholeOptimizer",
            "onnxscript_optimize": _search(True, False),
            "onnxoptimizer_optimize": False,
        }
    }
    output = olive.run(_workflow(tmp_path, tiny_bert, passes, [AGREEMENT]))
    statuses = {n.config["onnxscript_optimize"]: n.status for n in output.footprint if n.pass_key == "peep"}
    assert statuses == {True: "ok", False: "pruned"}
    pruned = next(n for n in output.footprint if n.status == "pruned")
    assert "would do nothing" in pruned.error


def test_a_lower_case_pass_type_is_the_pass_as_in_microsoft_olive(tiny_bert, tmp_path):
    # Olive's registry ignores case; its examples write "orttransformersoptimization".
    import olive

    passes = {"fuse": {"type": "orttransformersoptimization", "model_type": "bert", "opt_level": 0}}
    output = olive.run(_workflow(tmp_path, tiny_bert, passes, [AGREEMENT]))
    (node,) = [n for n in output.footprint if n.pass_key == "fuse" and n.status == "ok"]
    assert node.pass_name == "OrtTransformersOptimization"
    import onnx

    fused = onnx.load(str(tmp_path / "out" / "model.onnx"), load_external_data=False)
    assert Counter(n.op_type for n in fused.graph.node)["Attention"] == 2
