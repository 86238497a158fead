"""Small ONNX models built by olive.testing, their OpenVINO IRs and calibration data: nothing is downloaded.
Session-scoped: tests only read them (each pass writes into a fresh folder of its own)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def bert(tmp_path_factory):
    """olive.testing's BERT-like encoder (2 layers, hidden 64) as an ONNX model."""
    from olive.testing.models import bert_like_model, save_model

    return save_model(bert_like_model(), tmp_path_factory.mktemp("bert"))


@pytest.fixture(scope="session")
def calibration(bert, tmp_path_factory) -> Path:
    """32 samples for the encoder, labelled with its own predictions (the unmodified model scores 1.0)."""
    from olive.testing.models import write_npz_dataset

    return write_npz_dataset(tmp_path_factory.mktemp("data") / "calib.npz", bert, num_samples=32, with_labels=True)


@pytest.fixture(scope="session")
def ir_fp32(bert, tmp_path_factory):
    """The encoder converted with float32 weights (compress_to_fp16 off)."""
    from olive_passes_openvino.conversion import OpenVINOConversion

    from olive.testing.runner import run_pass

    return run_pass(OpenVINOConversion, bert, {"compress_to_fp16": False}, output_dir=tmp_path_factory.mktemp("ir"))


@pytest.fixture(scope="session")
def feeds(bert):
    from olive.testing.models import random_inputs

    return random_inputs(bert, batch_size=4, sequence_length=16, seed=3)


@pytest.fixture(scope="session")
def reference(bert, feeds):
    """onnxruntime's outputs of the ONNX encoder on ``feeds``."""
    from olive.measure import create_session

    return create_session(bert.model_path).run(None, feeds)


@pytest.fixture(scope="session")
def f32() -> dict:
    """Settings that compile in float32: OpenVINO's own precision on CPUs that compute in bf16 would blur
    comparisons of what a pass did."""
    return {"ov_config": {"INFERENCE_PRECISION_HINT": "f32"}}
