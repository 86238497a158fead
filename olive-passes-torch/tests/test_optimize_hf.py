"""``olive optimize`` on Hugging Face models (the ``HfModel`` type this distribution registers) and on ONNX models
with text data: the tiny 2-layer BERTs of conftest.py, saved with their tokenizers; nothing is downloaded.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import onnx
import pytest
from click.testing import CliRunner
from conftest import SENTENCES

from olive.cli.main import cli


def invoke(*args: str) -> Any:
    return CliRunner(env={"COLUMNS": "160"}).invoke(cli, list(args), catch_exceptions=False)


def printed_workflow(stdout: str) -> dict[str, Any]:
    lines = stdout.splitlines()
    start = lines.index("{")
    return json.loads("\n".join(lines[start : start + lines[start:].index("}") + 1]))


def one_line_error(result: Any) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def sentences(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("text") / "sentences.txt"
    path.write_text("\n".join(SENTENCES * 3) + "\n")
    return path


@pytest.fixture(scope="module")
def optimized(tmp_path_factory, bert_dir: Path, sentences: Path) -> tuple[Any, Path]:
    """``olive optimize FOLDER --data sentences.txt``, run once for the module."""
    out = tmp_path_factory.mktemp("optimized") / "out"
    result = invoke(
        "optimize", str(bert_dir), "--data", str(sentences), "-o", str(out), "--cache-dir", str(out.parent / "c")
    )
    return result, out


def test_a_hugging_face_folder_with_text_data_is_converted_fused_and_quantized(optimized) -> None:
    result, out = optimized
    assert result.exit_code == 0, result.output
    assert "Model:  HfModel transformer; task feature-extraction" in result.stdout
    assert "convert (OnnxConversion) > quantize (OnnxAccuracyGuardedQuantization)" in result.stdout
    assert "(against the input model as converted to ONNX)" in result.stdout
    footprint = json.loads((out / "footprint.json").read_text())
    nodes = {n["pass_key"]: n for n in footprint["nodes"] if n["pass_key"]}
    assert footprint["reference_model_id"] == nodes["convert"]["model_id"]
    workflow = json.loads((out / "optimize_workflow.json").read_text())
    data = workflow["data_configs"][0]
    # 128 tokens by default, cut to the model's position table (64 in this tiny BERT)
    assert data["type"] == "TextDataContainer" and data["pre_process_data_config"]["max_length"] == 64
    agreement = next(m for m in workflow["evaluators"]["optimize"]["metrics"] if m["name"] == "agreement")
    assert agreement["pooling"] == "mean" and agreement["mask_input"] == "attention_mask"
    best = next(n for n in footprint["nodes"] if n["model_id"] == footprint["best_model_id"])
    assert best["metrics"]["agreement-cosine_min"]["value"] >= 0.97
    guard = json.loads((out / "model_config.json").read_text())["config"]["model_attributes"]["accuracy_guard"]
    # One half of the sentences fits (the guard), the other judges (the metrics).
    assert guard["num_samples"] == (3 * len(SENTENCES) + 1) // 2
    assert best["samples"]["agreement"] == 3 * len(SENTENCES) // 2


def test_an_onnx_model_with_its_tokenizer_beside_it_takes_text_data(tmp_path, optimized, bert_dir, sentences) -> None:
    _, out = optimized
    footprint = json.loads((out / "footprint.json").read_text())
    converted = next(n for n in footprint["nodes"] if n["pass_key"] == "convert")["model_json"]["config"]["model_path"]
    folder = tmp_path / "onnx"
    folder.mkdir()
    shutil.copy(converted, folder / "model.onnx")
    result = invoke("optimize", str(folder / "model.onnx"), "--data", str(sentences), "--max-length", "32", "--dry-run")
    line = one_line_error(result)
    assert "no tokenizer beside it; give --tokenizer DIR" in line
    result = invoke(
        "optimize",
        str(folder / "model.onnx"),
        "-d",
        str(sentences),
        "--tokenizer",
        str(bert_dir),
        "--max_seq_len",
        "32",
        "--dry-run",
    )
    assert result.exit_code == 0, result.output
    data = printed_workflow(result.stdout)["data_configs"][0]
    assert data["pre_process_data_config"]["tokenizer"] == str(bert_dir)
    assert data["pre_process_data_config"]["max_length"] == 32
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (bert_dir / name).is_file():
            shutil.copy(bert_dir / name, folder / name)
    out2 = tmp_path / "out"
    result = invoke(
        "optimize",
        str(folder / "model.onnx"),
        "--data",
        str(sentences),
        "--max-length",
        "32",
        "-o",
        str(out2),
        "--cache-dir",
        str(tmp_path / "c"),
    )
    assert result.exit_code == 0, result.output
    ops = {n.op_type for n in onnx.load(out2 / "model.onnx").graph.node}
    assert ops & {"MatMulInteger", "DynamicQuantizeMatMul", "QAttention"}


def test_a_classifier_keeps_its_predicted_class(bert_classifier_dir, sentences) -> None:
    result = invoke("optimize", str(bert_classifier_dir), "--data", str(sentences), "--dry-run")
    assert result.exit_code == 0, result.output
    # top1 at 0.99, or (judged on fewer than 100 sentences, where 0.99 allows no flip) at one flip, said in a note.
    kept = re.search(r"Goal:   the fastest model that keeps top1>=(0\.\d+)", result.stdout)
    assert kept, result.stdout
    if kept.group(1) != "0.99":
        assert f"top1 is kept at {kept.group(1)}, not 0.99" in result.stdout, result.stdout
    agreement = next(
        m for m in printed_workflow(result.stdout)["evaluators"]["optimize"]["metrics"] if m["name"] == "agreement"
    )
    assert [s["name"] for s in agreement["sub_types"]] == ["top1"] and "pooling" not in agreement


def test_a_task_the_model_cannot_do_is_exit_code_2(bert_dir) -> None:
    line = one_line_error(invoke("optimize", str(bert_dir), "--task", "summarization", "--dry-run"))
    assert line.startswith("Error: --task: ") and "'summarization'" in line
