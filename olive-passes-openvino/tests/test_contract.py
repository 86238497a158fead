"""Each pass keeps the Pass contract (olive.testing.assert_pass_contract): declared params, every point run, the
entry point's name. ONNX-taking passes run on the ONNX encoder, the others on its IR."""

from __future__ import annotations

import pytest
from olive_passes_openvino.compression import OpenVINOWeightCompression
from olive_passes_openvino.conversion import OpenVINOConversion
from olive_passes_openvino.io_update import OpenVINOIoUpdate
from olive_passes_openvino.quantization import OpenVINOQuantization, OpenVINOQuantizationWithAccuracy

from olive.testing import assert_pass_contract

PASSES = {
    "OpenVINOConversion": (OpenVINOConversion, "onnx", {}),
    "OpenVINOQuantization": (OpenVINOQuantization, "ir", {"data_config": None}),
    "OpenVINOQuantizationWithAccuracy": (OpenVINOQuantizationWithAccuracy, "ir", {"data_config": None}),
    "OpenVINOWeightCompression": (OpenVINOWeightCompression, "ir", {}),
    "OpenVINOIoUpdate": (OpenVINOIoUpdate, "ir", {}),
}


@pytest.mark.parametrize("name", sorted(PASSES))
def test_the_pass_keeps_the_contract(name, bert, ir_fp32, calibration, tmp_path):
    pass_class, kind, config = PASSES[name]
    if "data_config" in config:
        config = {**config, "data_config": str(calibration)}
    report = assert_pass_contract(
        pass_class,
        model=bert if kind == "onnx" else ir_fp32,
        entry_point_name=name,
        config=config,
        output_dir=tmp_path,
    )
    assert report["ran"] >= 1
