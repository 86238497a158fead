"""OnnxStaticQuantization: calibrated int8 on the tiny BERT-like model, in both formats."""

from __future__ import annotations

import pytest
from helpers import op_types, run_model, weight_bytes

from olive.testing.models import output_cosine
from olive_passes_quant.static import OnnxStaticQuantization


@pytest.mark.parametrize(
    ("quant_format", "precision", "activation_type"),
    [("QDQ", "int8", "int8"), ("QDQ", "uint8", "uint8"), ("QOperator", "uint8", "uint8")],
)
def test_static_int8(run_pass, bert, bert_inputs, calib_npz, quant_format, precision, activation_type):
    config = {
        "data_config": str(calib_npz),
        "quant_format": quant_format,
        "precision": precision,
        "activation_type": activation_type,
    }
    result = run_pass(OnnxStaticQuantization, bert, config)

    ops = op_types(result)
    if quant_format == "QDQ":
        assert ops.get("QuantizeLinear", 0) > 0 and ops.get("DequantizeLinear", 0) > ops["QuantizeLinear"], ops
        assert ops.get("MatMul", 0) >= 12  # the MatMuls stay, fed by DequantizeLinear
    else:
        assert ops.get("QLinearMatMul", 0) + ops.get("MatMulInteger", 0) >= 12, ops
    assert weight_bytes(bert) / weight_bytes(result) >= 3.0
    cosine = output_cosine(run_model(bert, bert_inputs), run_model(result, bert_inputs))
    assert cosine >= 0.98, cosine


def test_calibration_sampling_size_and_methods(run_pass, bert, bert_inputs, calib_npz):
    reference = run_model(bert, bert_inputs)
    for method in ("MinMax", "Entropy", "Percentile"):
        config = {"data_config": str(calib_npz), "calibrate_method": method, "calibration_sampling_size": 4}
        result = run_pass(OnnxStaticQuantization, bert, config)
        assert output_cosine(reference, run_model(result, bert_inputs)) >= 0.95, method


def test_data_config_as_dict_and_data_config_object(run_pass, bert, calib_npz):
    from olive.data.config import DataConfig

    as_json = {
        "name": "calib",
        "type": "NpzDataContainer",
        "load_dataset_config": {"data_path": str(calib_npz)},
        "dataloader_config": {"batch_size": 4},
    }
    for value in (as_json, DataConfig.from_json(as_json, json_path="data_configs[0]")):
        result = run_pass(OnnxStaticQuantization, bert, {"data_config": value})
        assert op_types(result).get("QuantizeLinear", 0) > 0


def test_static_is_not_accelerator_agnostic():
    from olive.hardware import DEFAULT_CPU_ACCELERATOR

    assert OnnxStaticQuantization.is_accelerator_agnostic(DEFAULT_CPU_ACCELERATOR) is False
