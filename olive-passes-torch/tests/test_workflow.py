"""Workflows whose input model is a Hugging Face or PyTorch model, written as plain workflow JSON and run through
``olive.run`` and ``olive run``: the engine compares every model with the conversion; a rerun does no work; bad
input exits 2 (config) or 1 (run) naming the field, before anything is cached."""

from __future__ import annotations

import json
import logging
import re
import shutil
import textwrap
from pathlib import Path
from typing import Any

import onnx
import pytest
from click.testing import CliRunner
from conftest import SENTENCES, save_bert

import olive
from olive.cli.main import cli
from olive.exceptions import PassRunError, WorkflowConfigError
from olive.workflows.run import prepare

CONVERTED = "converted HfModel"


def _sentences(tmp_path: Path) -> Path:
    path = tmp_path / "sentences.txt"
    path.write_text("\n".join(SENTENCES) + "\n")
    return path


def _workflow(tmp_path: Path, model_dir: Path, name: str = "", **input_fields: Any) -> dict[str, Any]:
    """Conversion and graph fusion of ``model_dir`` with a text data config that names no tokenizer (the input
    model's is used)."""
    return {
        "input_model": {"type": "HfModel", "model_path": str(model_dir), **input_fields},
        "data_configs": [
            {
                "name": "sentences",
                "type": "TextDataContainer",
                "load_dataset_config": {"data_path": str(_sentences(tmp_path))},
                "pre_process_data_config": {"max_length": 16},
            }
        ],
        "passes": {
            "convert": {"type": "OnnxConversion", "data_config": "sentences"},
            "fuse": {"type": "OrtTransformersOptimization"},
        },
        "output_dir": str(tmp_path / f"out{name}"),
        "cache_dir": str(tmp_path / "cache"),
    }


def _evaluator(workflow: dict[str, Any], *metrics: dict[str, Any]) -> dict[str, Any]:
    workflow["evaluators"] = {"common": {"metrics": list(metrics)}}
    workflow["evaluator"] = "common"
    return workflow


AGREEMENT = {
    "name": "agree",
    "type": "agreement",
    "data_config": "sentences",
    "pooling": "mean",
    "mask_input": "attention_mask",
    "sub_types": [{"name": "cosine_mean", "priority": 1}, {"name": "cosine_min"}],
}
LATENCY = {
    "name": "latency",
    "type": "latency",
    "data_config": "sentences",
    "warmup_num": 1,
    "repeat_test_num": 6,
    "sub_types": [{"name": "ratio_p50", "priority": 2}],
}


def _runs(cache: Path) -> list[Path]:
    return sorted(cache.glob("runs/*/*")) if cache.exists() else []


def _conversions(caplog: pytest.LogCaptureFixture) -> int:
    return sum(CONVERTED in r.getMessage() for r in caplog.records if r.name.startswith("olive_passes_torch"))


def _write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data))
    return path


def _olive_run(config: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["run", str(config), *args], catch_exceptions=False)


# ------------------------------------------------------------------------------------------------ the cache


def test_converting_the_same_folder_again_does_no_work(bert_dir, tmp_path, caplog):
    caplog.set_level(logging.INFO)
    folder = tmp_path / "model"
    shutil.copytree(bert_dir, folder)
    first = olive.run(_workflow(tmp_path, folder, "1"))
    assert _conversions(caplog) == 1
    nodes = {n.pass_key: n for n in first.footprint if n.pass_key}
    assert [n.cached for n in nodes.values()] == [False, False]
    ops = {n.op_type for n in onnx.load(first.get_best_candidate().model_path).graph.node}
    assert "Attention" in ops or "MultiHeadAttention" in ops  # fused: the export has the pattern onnxruntime knows
    check = nodes["convert"].create_model().model_attributes["conversion_check"]
    # The data config names no tokenizer: the input model's folder gave it.
    assert check["passed"] and "data config 'sentences'" in check["source"] and check["samples"] == len(SENTENCES)
    assert check["input"] == {"type": "HfModel", "model_path": str(folder), "task": "feature-extraction"}
    assert json.loads((tmp_path / "out1" / "model_config.json").read_text())["type"] == "ONNXModel"
    entries = _runs(tmp_path / "cache")

    # The same folder again, and a copy of it elsewhere: no conversion, every run from the cache. (The model is
    # keyed by content; the data config by its files' paths, so the copy's run names the same tokenizer folder.)
    again = olive.run(_workflow(tmp_path, folder, "2"))
    shutil.copytree(folder, tmp_path / "copy")
    workflow = _workflow(tmp_path, tmp_path / "copy", "3")
    workflow["data_configs"][0]["pre_process_data_config"]["tokenizer"] = str(folder)
    copied = olive.run(workflow)
    assert _conversions(caplog) == 1
    assert all(n.cached for output in (again, copied) for n in output.footprint if n.pass_key)
    assert _runs(tmp_path / "cache") == entries

    # One weight file changed in place: converted again.
    save_bert(tmp_path / "other", seed=7)
    shutil.copyfile(tmp_path / "other" / "model.safetensors", folder / "model.safetensors")
    changed = olive.run(_workflow(tmp_path, folder, "4"))
    assert _conversions(caplog) == 2
    assert not any(n.cached for n in changed.footprint if n.pass_key)
    assert len(_runs(tmp_path / "cache")) == len(entries) + 2


# ------------------------------------------------------------------------------------------------ the reference


def test_metrics_compare_with_the_conversion_which_the_footprint_and_report_name(bert_dir, tmp_path):
    workflow = _evaluator(
        _workflow(tmp_path, bert_dir),
        AGREEMENT,
        LATENCY,
        {
            "name": "size",
            "type": "size_on_disk",
            "sub_types": [{"name": "bytes", "goal": {"type": "percent-max-degradation", "value": 50}}],
        },
    )
    workflow["passes"]["quantize"] = {"type": "OnnxDynamicQuantization"}
    output = olive.run(workflow)
    nodes = {n.pass_key: n for n in output.footprint if n.pass_key}
    assert output.footprint[0].metrics is None  # a Hugging Face model is not run in onnxruntime
    reference = nodes["convert"]
    assert output.reference_model_id == reference.model_id
    # The conversion compared with itself; the quantized model with the conversion.
    assert reference.metric_values()["agree-cosine_mean"] == 1.0
    assert reference.metric_values()["latency-ratio_p50"] == 1.0
    quantized = nodes["quantize"].metric_values()
    assert 0.9 < quantized["agree-cosine_min"] <= quantized["agree-cosine_mean"] < 1.0
    assert quantized["latency-ratio_p50"] != 1.0  # timed in pairs with the conversion
    # The size goal is relative to the conversion's size (the input folder is not what is compared).
    assert nodes["quantize"].meets_goals is True

    out = tmp_path / "out"
    footprint = json.loads((out / "footprint.json").read_text())
    assert footprint["reference_model_id"] == reference.model_id
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["reference"]["model_id"] == reference.model_id and "input_model" not in metrics
    page = (out / "report.html").read_text()
    assert "<strong>HfModel</strong>" in page and "task <code>feature-extraction</code>" in page
    assert f"compares with <code>{reference.model_id}</code>" in page
    check = reference.create_model().model_attributes["conversion_check"]
    assert f"max abs diff {check['max_abs_diff']:.3g}" in page and "reference (baseline)" in page


def test_process_workers_compare_with_the_same_conversion(bert_dir, tmp_path):
    def searched(executor: dict[str, Any] | None, name: str) -> dict[str, Any]:
        workflow = _evaluator(_workflow(tmp_path, bert_dir, name), AGREEMENT)
        workflow["passes"] = {
            "convert": workflow["passes"]["convert"],
            "quantize": {"type": "OnnxDynamicQuantization"},
        }
        workflow["search_strategy"] = {"execution_order": "joint", "sampler": "sequential", "max_samples": 3}
        if executor is not None:
            workflow["search_strategy"]["executor"] = executor
        workflow["cache_dir"] = str(tmp_path / f"cache{name}")
        return workflow

    def content(output: Any) -> dict[str, Any]:
        return {
            n.model_id: (
                n.parent_model_id,
                n.pass_key,
                json.dumps(n.config, sort_keys=True),
                n.status,
                json.dumps(n.metrics, sort_keys=True),
                n.is_candidate,
            )
            for n in output.footprint
        }

    sequential = olive.run(searched(None, "seq"))
    parallel = olive.run(searched({"type": "process", "max_workers": 2}, "proc"))
    assert sum(n.is_candidate for n in sequential.footprint) == 3
    assert content(parallel) == content(sequential)
    assert parallel.reference_model_id == sequential.reference_model_id


def test_a_searched_first_pass_with_a_torch_input_is_a_config_error(bert_dir, tmp_path):
    workflow = _evaluator(_workflow(tmp_path, bert_dir), AGREEMENT)
    convert = workflow["passes"]["convert"]
    workflow["passes"]["convert"] = [{**convert, "target_opset": 17}, {**convert, "target_opset": 18}]
    workflow["search_strategy"] = {"execution_order": "joint"}
    with pytest.raises(WorkflowConfigError, match=r"^passes\.convert: searches 2 configs, but with a HfModel input"):
        prepare(workflow)
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(
    ("input_type", "first", "message"),
    [
        (
            "HfModel",
            "OnnxDynamicQuantization",
            r"passes\.first\.type: OnnxDynamicQuantization takes ONNXModel models, but the input model is a HfModel; "
            r'put a pass that converts HfModel models to ONNX first \(e\.g\. "convert": \{"type": "OnnxConversion"\}',
        ),
        (
            "ONNXModel",
            "OnnxConversion",
            r"passes\.first\.type: OnnxConversion takes HfModel or PyTorchModel models, but the input model is a "
            r"ONNXModel; the model is ONNX already",
        ),
    ],
)
def test_the_first_pass_must_take_the_input_models_type(bert_dir, tmp_path, input_type, first, message):
    workflow = _workflow(tmp_path, bert_dir)
    if input_type == "ONNXModel":
        from olive.testing.models import mlp_model, save_model

        workflow["input_model"] = {
            "type": "ONNXModel",
            "model_path": save_model(mlp_model(), tmp_path / "m").model_path,
        }
    workflow["passes"] = {"first": {"type": first}}
    result = _olive_run(_write(tmp_path / "wf.json", workflow))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: ") and re.search(message, result.stderr)
    assert not (tmp_path / "cache").exists()


# ------------------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("fields", "owner", "reason"),
    [
        ({"task": "fill-mask"}, "input_model.task", "cannot do task 'fill-mask'"),  # GPT-2 has no masked-LM head
        (
            {"io_config": {"input_names": ["input_ids", "pixel_values"]}},
            "input_model.io_config.input_names",
            "'pixel_values' not in the model's forward signature",
        ),
    ],
)
def test_bad_input_models_exit_2_before_anything_is_cached(gpt2_dir, tmp_path, fields, owner, reason):
    config = _write(tmp_path / "wf.json", _workflow(tmp_path, gpt2_dir, **fields))
    for args in ((), ("--dry-run",)):
        result = _olive_run(config, *args)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"Error: {owner}: ") and reason in result.stderr
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


def test_a_folder_that_is_not_a_model_exits_2_before_anything_is_cached(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "config.txt").write_text("not a model")
    result = _olive_run(_write(tmp_path / "wf.json", _workflow(tmp_path, tmp_path / "notes")))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: input_model.model_path: ") and "no config.json" in result.stderr
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize(("task", "head"), [("token-classification", "classifier."), ("text-generation", "cls.")])
def test_a_checkpoint_without_the_tasks_weights_is_a_config_error_before_anything_runs(bert_dir, tmp_path, task, head):
    workflow = _workflow(tmp_path, bert_dir, task=task)
    with pytest.raises(WorkflowConfigError, match=rf"input_model\.task: .*weights for {head}.*randomly initialized"):
        olive.run(workflow)
    assert not (tmp_path / "cache").exists()
    # --dry-run finds it too: the checkpoint's tensor names against the task's model built on the meta device.
    result = _olive_run(_write(tmp_path / "wf.json", workflow), "--dry-run")
    assert result.exit_code == 2 and result.stderr.startswith("Error: input_model.task: the checkpoint"), result.output


def test_a_checkpoint_with_the_tasks_weights_passes_the_check(bert_masked_dir, bert_classifier_dir, tmp_path):
    from olive_passes_torch.hf_model import HfModelHandler

    # A masked-LM checkpoint has the head a causal-LM BERT loads (its decoder tied to the embeddings); a classifier
    # checkpoint holds the base model under the task model's prefix.
    for folder, task in (
        (bert_masked_dir, "fill-mask"),
        (bert_masked_dir, "feature-extraction"),
        (bert_classifier_dir, "text-classification"),
        (bert_classifier_dir, "feature-extraction"),
    ):
        handler = HfModelHandler(str(folder), task)
        handler.json_path = "input_model"
        handler.validate()


LOADERS = """
import torch


def load(model_path):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))


def broken(model_path):
    raise OSError("disk quota exceeded while unpacking")
"""


def _loader_workflow(tmp_path: Path, loader: str) -> dict[str, Any]:
    (tmp_path / "script.py").write_text(textwrap.dedent(LOADERS))
    return {
        # No model_path: the loader builds the module itself.
        "input_model": {
            "type": "PyTorchModel",
            "model_loader": loader,
            "model_script": "script.py",
            "io_config": {
                "input_names": ["x"],
                "input_shapes": [[2, 4]],
                "output_names": ["y"],
                "dynamic_axes": {"x": {"0": "batch"}, "y": {"0": "batch"}},
            },
        },
        "passes": {"convert": {"type": "OnnxConversion"}},
        "output_dir": "out",
        "cache_dir": "cache",
    }


def test_a_pytorch_model_from_a_loader_alone_runs(tmp_path):
    config = _write(tmp_path / "wf.json", _loader_workflow(tmp_path, "load"))
    result = _olive_run(config)
    assert result.exit_code == 0, result.output
    converted = onnx.load(tmp_path / "out" / "model.onnx")
    assert [i.name for i in converted.graph.input] == ["x"]
    footprint = json.loads((tmp_path / "out" / "footprint.json").read_text())
    assert footprint["nodes"][0]["model_path"] is None and footprint["nodes"][0]["model_json"]["type"] == "PyTorchModel"


def test_a_model_loader_that_raises_exits_1_and_nothing_is_cached(tmp_path):
    config = _write(tmp_path / "wf.json", _loader_workflow(tmp_path, "broken"))
    result = _olive_run(config)
    assert result.exit_code == 1, result.output
    assert "pass 'convert' (OnnxConversion) failed" in result.stderr
    assert "model_loader 'broken'" in result.stderr and "disk quota exceeded" in result.stderr
    assert _runs(tmp_path / "cache") == [] and list((tmp_path / "cache" / "tmp").iterdir()) == []
    with pytest.raises(PassRunError):
        olive.run(config)


def test_a_model_script_that_fails_to_import_exits_2_before_anything_is_cached(tmp_path):
    workflow = _loader_workflow(tmp_path, "load")
    (tmp_path / "script.py").write_text("raise ImportError('no module named secret_layers')\n")
    result = _olive_run(_write(tmp_path / "wf.json", workflow), "--dry-run")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: input_model.model_script: ") and "secret_layers" in result.stderr
    assert not (tmp_path / "cache").exists()


def test_the_cli_shows_the_conversions_own_log(bert_dir, tmp_path):
    result = _olive_run(_write(tmp_path / "wf.json", _workflow(tmp_path, bert_dir)))
    assert result.exit_code == 0, result.output
    # INFO of the olive_passes_torch loggers shows as the olive logger's does.
    assert CONVERTED in result.stderr and "checked against PyTorch" in result.stderr


# ------------------------------------------------------------------------------------------------ olive run-pass


def test_run_pass_converts_a_hugging_face_folder(bert_classifier_dir, tmp_path):
    def run_pass(*args: str) -> Any:
        return CliRunner().invoke(cli, ["run-pass", *args], catch_exceptions=False)

    result = run_pass("--pass-name", "OnnxConversion", "-m", str(bert_classifier_dir), "-o", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    converted = onnx.load(tmp_path / "out" / "model.onnx")
    assert [o.name for o in converted.graph.output] == ["logits"]  # the task config.json was saved for

    result = run_pass(
        "--pass-name",
        "OnnxConversion",
        "-m",
        str(bert_classifier_dir),
        "--task",
        "fill-mask",
        "-o",
        str(tmp_path / "x"),
    )
    # The checkpoint has no masked-LM head: a config error naming the option, and nothing written.
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: --task: the checkpoint") and "randomly initialized" in result.stderr
    assert not (tmp_path / "x").exists()
    result = run_pass(
        "--pass-name", "OnnxDynamicQuantization", "-m", str(bert_classifier_dir), "-o", str(tmp_path / "q")
    )
    assert result.exit_code == 2, result.output
    assert (
        "--model: OnnxDynamicQuantization takes ONNXModel models" in result.stderr and "is a HfModel" in result.stderr
    )


def test_data_configs_everywhere_take_the_input_models_tokenizer(bert_dir, tmp_path):
    import pickle

    workflow = _workflow(tmp_path, bert_dir)
    inline = {"type": "TextDataContainer", "load_dataset_config": {"data_path": str(_sentences(tmp_path))}}
    workflow["passes"]["convert"]["data_config"] = inline
    prepared = prepare(workflow).workflow
    named = prepared.data_configs["sentences"].pre_process_data_config.params
    in_pass = prepared.passes["convert"][0].params["data_config"].pre_process_data_config.params
    assert named["tokenizer"] == in_pass["tokenizer"] == str(bert_dir)
    # The validated workflow travels to spawned workers without transformers' config object.
    handler = pickle.loads(pickle.dumps(prepared)).input_model.create_handler()
    assert "hf_config" not in vars(handler) and handler.resolved_task == "feature-extraction"
