"""Workflows with a Hugging Face or PyTorch input model run in the engine; a rerun does no work; bad input fails
before anything is cached."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import onnx
import pytest
from conftest import SENTENCES, save_bert
from helpers import workflow_with_input_model

from olive.exceptions import PassConfigError, PassRunError, WorkflowConfigError
from olive.workflows.run import prepare, run


def _workflow(tmp_path: Path, model_dir: Path, tokenizer: Path | None = None, **input_fields) -> dict:
    (tmp_path / "sentences.txt").write_text("\n".join(SENTENCES) + "\n")
    return {
        "input_model": {"type": "HfModel", "model_path": str(model_dir), **input_fields},
        "data_configs": [
            {
                "name": "sentences",
                "type": "TextDataContainer",
                "load_dataset_config": {"data_path": str(tmp_path / "sentences.txt")},
                # Until the engine binds the input model's tokenizer to data configs (see the README), name it.
                "pre_process_data_config": {"tokenizer": str(tokenizer or model_dir), "max_length": 16},
            }
        ],
        "passes": {
            "convert": {"type": "OnnxConversion", "data_config": "sentences"},
            "fuse": {"type": "OrtTransformersOptimization"},
        },
        "output_dir": str(tmp_path / "out"),
        "cache_dir": str(tmp_path / "cache"),
    }


def _runs(cache: Path) -> list[Path]:
    return sorted(cache.glob("runs/*/*")) if cache.exists() else []


def test_converting_the_same_folder_again_does_no_work(bert_dir, tmp_path):
    workflow = _workflow(tmp_path, bert_dir)
    first = run(workflow_with_input_model(workflow, tmp_path))
    nodes = {n.pass_key: n for n in first.footprint if n.pass_key}
    assert [n.cached for n in nodes.values()] == [False, False]
    best = first.get_best_candidate()
    ops = {n.op_type for n in onnx.load(best.model_path).graph.node}
    assert "Attention" in ops or "MultiHeadAttention" in ops  # fused: the export has the pattern onnxruntime knows
    check = nodes["convert"].create_model().model_attributes["conversion_check"]
    assert check["passed"] and "data config 'sentences'" in check["source"]
    assert json.loads((tmp_path / "out" / "model_config.json").read_text())["type"] == "ONNXModel"
    entries = _runs(tmp_path / "cache")

    # The same weights in another folder: the cache is keyed by content, not by path.
    shutil.copytree(bert_dir, tmp_path / "copy")
    workflow = _workflow(tmp_path, tmp_path / "copy", tokenizer=bert_dir)  # the same data config
    workflow["output_dir"] = str(tmp_path / "out2")
    again = run(workflow_with_input_model(workflow, tmp_path))
    assert all(n.cached for n in again.footprint if n.pass_key)
    assert _runs(tmp_path / "cache") == entries

    # Other weights: converted again.
    save_bert(tmp_path / "other", seed=7)
    workflow = _workflow(tmp_path, tmp_path / "other")
    workflow["output_dir"] = str(tmp_path / "out3")
    other = run(workflow_with_input_model(workflow, tmp_path))
    assert not any(n.cached for n in other.footprint if n.pass_key)
    assert len(_runs(tmp_path / "cache")) == len(entries) + 2


@pytest.mark.parametrize(
    ("fields", "error", "owner"),
    [
        ({"task": "fill-mask"}, WorkflowConfigError, "input_model.task"),  # GPT-2 has no masked-LM head class
        (
            {"io_config": {"input_names": ["input_ids", "pixel_values"]}},
            WorkflowConfigError,
            "input_model.io_config.input_names",
        ),
    ],
)
def test_bad_input_models_fail_before_anything_is_cached(gpt2_dir, tmp_path, fields, error, owner):
    workflow = _workflow(tmp_path, gpt2_dir, **fields)
    with pytest.raises(error) as caught:
        prepare(workflow_with_input_model(workflow, tmp_path))
    assert caught.value.owner == owner
    assert not (tmp_path / "cache").exists()


def test_a_folder_that_is_not_a_model_fails_before_anything_is_cached(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "config.txt").write_text("not a model")
    workflow = _workflow(tmp_path, tmp_path / "notes")
    with pytest.raises(WorkflowConfigError, match=r"input_model\.model_path: .*no config\.json"):
        prepare(workflow_with_input_model(workflow, tmp_path))
    assert not (tmp_path / "cache").exists()


def test_a_checkpoint_without_the_tasks_weights_fails_the_pass_as_a_config_error(bert_dir, tmp_path):
    workflow = _workflow(tmp_path, bert_dir, task="token-classification")
    with pytest.raises(PassConfigError, match=r"pass 'convert' \(OnnxConversion\): .*randomly initialized"):
        run(workflow_with_input_model(workflow, tmp_path))
    assert _runs(tmp_path / "cache") == [] and list((tmp_path / "cache" / "tmp").iterdir()) == []


def test_a_model_loader_that_raises_is_a_run_error_and_nothing_is_cached(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"\0" * 16)
    (tmp_path / "script.py").write_text(
        textwrap.dedent(
            """
            def load(model_path):
                raise OSError("disk quota exceeded while unpacking")
            """
        )
    )
    workflow = {
        "input_model": {
            "type": "PyTorchModel",
            # (a model_loader without model_path works in the pass; the workflow runner still needs a path)
            "model_path": "weights.bin",
            "model_loader": "load",
            "model_script": "script.py",
            "io_config": {"input_names": ["x"], "input_shapes": [[1, 4]], "output_names": ["y"]},
        },
        "passes": {"convert": {"type": "OnnxConversion"}},
        "output_dir": str(tmp_path / "out"),
        "cache_dir": str(tmp_path / "cache"),
    }
    with pytest.raises(PassRunError, match=r"pass 'convert' \(OnnxConversion\) failed: .*model_loader.*disk quota"):
        run(workflow_with_input_model(workflow, tmp_path))
    assert _runs(tmp_path / "cache") == []
