"""OpenVINOConversion: the IR computes what the ONNX model computes, as onnxruntime runs it."""

from __future__ import annotations

import numpy as np
import pytest
from olive_passes_openvino.conversion import OpenVINOConversion

from olive.exceptions import PassConfigError, PassParamError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.measure import cosine_similarities
from olive.testing.runner import run_pass


def test_float32_weights_give_onnxruntimes_outputs(ir_fp32, feeds, reference, f32):
    assert ir_fp32.xml_path.name == "ov_model.xml"
    assert ir_fp32.model_attributes["openvino_source"] == {"type": "ONNXModel", "file": "model.onnx"}
    out = ir_fp32.prepare_session(f32).run(None, feeds)
    assert np.abs(out[0] - reference[0]).max() < 1e-4


def test_float16_weights_by_default_halve_the_file_and_stay_close(bert, ir_fp32, feeds, reference, tmp_path, f32):
    fp16 = run_pass(OpenVINOConversion, bert, {"model_name": "encoder"}, output_dir=tmp_path)
    assert fp16.xml_path.name == "encoder.xml"
    assert fp16.xml_path.with_suffix(".bin").stat().st_size < 0.6 * ir_fp32.xml_path.with_suffix(".bin").stat().st_size
    out = fp16.prepare_session(f32).run(None, feeds)[0]
    cosines = cosine_similarities(out.reshape(len(out), -1), reference[0].reshape(len(out), -1))
    assert cosines.min() > 0.9999
    assert not np.array_equal(out, reference[0])


def test_static_input_shapes_fix_the_irs_shapes(bert, tmp_path):
    static = run_pass(OpenVINOConversion, bert, {"input_shapes": [[1, 8], [1, 8], [1, 8]]}, output_dir=tmp_path)
    assert static.get_io_config()["input_shapes"] == [[1, 8]] * 3
    dynamic = run_pass(OpenVINOConversion, bert, {"input_shapes": [[1, 8]] * 3, "static": False}, output_dir=tmp_path)
    assert dynamic.get_io_config()["input_shapes"] == [["?", "?"]] * 3


def test_extra_configs_reach_convert_model_and_unknown_ones_are_named(bert, tmp_path):
    one_output = run_pass(
        OpenVINOConversion, bert, {"extra_configs": {"output": ["last_hidden_state"]}}, output_dir=tmp_path
    )
    assert one_output.get_io_config()["output_names"] == ["last_hidden_state"]
    with pytest.raises(PassParamError, match=r"'extra_configs' has 'outptu', which ov.convert_model does not take"):
        run_pass(OpenVINOConversion, bert, {"extra_configs": {"outptu": []}}, output_dir=tmp_path)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"input_shapes": [[1, "x"]]}, r"param 'input_shapes' is \[\[1, 'x'\]\]; give one list of whole numbers"),
        ({"model_name": "../escape"}, r"param 'model_name' is '../escape'; give a plain file name"),
    ],
)
def test_bad_params_fail_before_running(config, message):
    with pytest.raises(PassConfigError, match=message):
        OpenVINOConversion.generate_config(DEFAULT_CPU_ACCELERATOR, config, disable_search=True)
