"""Shared fixtures: a tiny BERT-like model, seeded inputs and calibration data for it."""

from __future__ import annotations

from pathlib import Path

import pytest

PASS_NAMES = {
    "OnnxDynamicQuantization": "olive_passes_quant.dynamic",
    "OnnxStaticQuantization": "olive_passes_quant.static",
    "OnnxQuantization": "olive_passes_quant.quantization",
    "OnnxQuantizationPreprocess": "olive_passes_quant.preprocess",
    "OnnxBlockWiseRtnQuantization": "olive_passes_quant.blockwise",
    "OnnxHqqQuantization": "olive_passes_quant.hqq",
    "OnnxKQuantQuantization": "olive_passes_quant.k_quant",
    "OnnxGptqQuantization": "olive_passes_quant.gptq",
    "OnnxFloatToFloat16": "olive_passes_quant.float16",
    "OnnxSensitivityAnalysis": "olive_passes_quant.sensitivity",
    "OnnxAccuracyGuardedQuantization": "olive_passes_quant.accuracy_guarded",
    "MatMulNBitsToQDQ": "olive_passes_quant.mnb_to_qdq",
    "SelectiveMixedPrecision": "olive_passes_quant.selective_mixed_precision",
}


@pytest.fixture(scope="session")
def bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved tiny BERT-like model plus an .npz calibration set for it (shared: nothing writes there)."""
    from olive.testing.models import bert_like_model, save_model, write_npz_dataset

    root = tmp_path_factory.mktemp("bert")
    model = save_model(bert_like_model(), root / "model")
    write_npz_dataset(root / "calib.npz", model, num_samples=16, sequence_length=16, seed=1)
    return root


@pytest.fixture
def bert(bert_dir: Path):
    from olive.model.handler import ONNXModelHandler

    return ONNXModelHandler(model_path=str(bert_dir / "model" / "model.onnx"))


@pytest.fixture
def calib_npz(bert_dir: Path) -> Path:
    return bert_dir / "calib.npz"


@pytest.fixture(scope="session")
def bert_inputs(bert_dir: Path):
    """Seeded evaluation inputs (different from the calibration samples)."""
    from olive.model.handler import ONNXModelHandler
    from olive.testing.models import random_inputs

    return random_inputs(ONNXModelHandler(model_path=str(bert_dir / "model" / "model.onnx")), 4, 24, seed=7)
