"""A user's journey, offline: a Hugging Face decoder folder and a text file in, `olive run` on a workflow JSON, an
onnxruntime-genai folder out that generates PyTorch's greedy tokens (fp32) or holds its perplexity (int4)."""

from __future__ import annotations

import json

import onnx
from conftest import genai_greedy, olive_run, torch_greedy, write_json

PROMPT = "The function returns a list of the names"


def _text_data(path):
    return {"name": "text", "type": "TextDataContainer", "load_dataset_config": {"data_path": str(path)}}


def _values(metrics):
    return {key: entry["value"] for key, entry in metrics.items()}


def _metric(kind, subs, **options):
    return {"name": kind, "type": kind, "data_config": "text", "sub_types": subs, "user_config": options}


def test_fp32_workflow_writes_a_folder_onnxruntime_genai_serves_with_pytorchs_greedy_tokens(
    qwen2_dir, held_out_file, tmp_path
):
    config = write_json(
        tmp_path / "workflow.json",
        {
            "input_model": {"type": "HfModel", "model_path": str(qwen2_dir)},
            "data_configs": [_text_data(held_out_file)],
            "evaluators": {
                "quality": {
                    "metrics": [
                        _metric("perplexity", [{"name": "perplexity"}], window=64, max_windows=4),
                        _metric("greedy_match", [{"name": "greedy_match"}], num_prompts=2, max_new_tokens=6),
                    ]
                }
            },
            "evaluator": "quality",
            "passes": {"build": {"type": "ModelBuilder", "precision": "fp32"}},
            "cache_dir": str(tmp_path / "cache"),
            "output_dir": str(tmp_path / "out"),
        },
    )
    result = olive_run(config)
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    model_config = json.loads((out / "model_config.json").read_text())
    assert model_config["type"] == "GenAIModel" and model_config["config"]["model_path"] == str(out)
    assert {"model.onnx", "model.onnx.data", "genai_config.json", "tokenizer.json"} <= set(model_config["files"])
    ids, tokens = genai_greedy(out, PROMPT, 16)
    assert tokens == torch_greedy(qwen2_dir, ids, 16)
    best = _values(json.loads((out / "metrics.json").read_text())["best"])
    # Random weights: perplexity near the vocabulary size; the model compared with itself matches exactly.
    assert 100 < best["perplexity-perplexity"] < 2000
    assert best["greedy_match-greedy_match"] == 1.0
    # A rerun is served from the cache and leaves the folder as it was.
    again = olive_run(config)
    assert again.exit_code == 0 and "(1 from cache)" in again.output


def test_int4_workflow_on_the_trained_decoder_holds_perplexity_against_the_fp32_build(
    trained_dir, held_out_file, tmp_path
):
    metrics = [
        _metric("perplexity", [{"name": "perplexity", "priority": 1}], window=128, max_windows=8),
        _metric("top1_agreement", [{"name": "top1_agreement"}], window=128, max_windows=8),
        _metric(
            "decode_tokens_per_s",
            [{"name": "decode_tokens_per_s"}, {"name": "ratio_decode_tokens_per_s"}],
            repeat=6,
            max_new_tokens=8,
            prompt_tokens=32,
        ),
    ]
    config = write_json(
        tmp_path / "workflow.json",
        {
            "input_model": {"type": "HfModel", "model_path": str(trained_dir)},
            "data_configs": [_text_data(held_out_file)],
            "evaluators": {"quality": {"metrics": metrics}},
            "evaluator": "quality",
            "passes": {
                "build": {"type": "ModelBuilder", "precision": "fp32"},
                "int4": {"type": "OnnxKQuantQuantization", "block_size": 32},
            },
            "cache_dir": str(tmp_path / "cache"),
            "output_dir": str(tmp_path / "out"),
        },
    )
    result = olive_run(config)
    assert result.exit_code == 0, result.output
    out = tmp_path / "out"
    ops = [n.op_type for n in onnx.load(out / "model.onnx", load_external_data=False).graph.node]
    assert ops.count("MatMulNBits") >= 9 and "MatMul" not in ops
    _, tokens = genai_greedy(out, PROMPT, 8)
    assert len(tokens) == 8
    recorded = json.loads((out / "metrics.json").read_text())
    best, fp32 = _values(recorded["best"]), _values(recorded["reference"]["metrics"])
    assert best["perplexity-perplexity"] <= 1.05 * fp32["perplexity-perplexity"], (best, fp32)
    assert best["top1_agreement-top1_agreement"] >= 0.85
    assert fp32["top1_agreement-top1_agreement"] == 1.0
    assert best["decode_tokens_per_s-ratio_decode_tokens_per_s"] > 0


def test_olive_quant_weight_only_passes_run_by_name_on_a_genai_folder_workflow(
    trained_dir, trained_fp32, held_out_file, tmp_path
):
    # The weight-only passes are olive-passes-quant's; a workflow names them as before and gets a servable folder.
    passes = {
        "gptq": {"type": "OnnxGptqQuantization", "data_config": "text", "max_windows": 4},
        "hqq": {"type": "OnnxHqqQuantization", "block_size": 32},
    }
    perplexity = _metric("perplexity", [{"name": "perplexity"}], max_windows=4)
    # A GenAIModel input names the tokenizer its text data is measured with.
    text = {**_text_data(held_out_file), "pre_process_data_config": {"tokenizer": str(trained_dir)}}
    for key, spec in passes.items():
        (tmp_path / key).mkdir()
        config = write_json(
            tmp_path / key / "workflow.json",
            {
                "input_model": {"type": "GenAIModel", "model_path": str(trained_fp32.folder)},
                "data_configs": [text],
                "evaluators": {"quality": {"metrics": [perplexity]}},
                "evaluator": "quality",
                "passes": {key: spec},
                "cache_dir": str(tmp_path / key / "cache"),
                "output_dir": str(tmp_path / key / "out"),
            },
        )
        result = olive_run(config)
        assert result.exit_code == 0, result.output
        out = tmp_path / key / "out"
        assert json.loads((out / "model_config.json").read_text())["type"] == "GenAIModel"
        ops = [n.op_type for n in onnx.load(out / "model.onnx", load_external_data=False).graph.node]
        assert ops.count("MatMulNBits") >= 9 and "MatMul" not in ops
        _, tokens = genai_greedy(out, PROMPT, 4)
        assert len(tokens) == 4
