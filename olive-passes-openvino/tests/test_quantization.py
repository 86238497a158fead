"""NNCF int8: the IR holds int8 weights and FakeQuantize ops, is smaller, and its outputs stay close."""

from __future__ import annotations

import numpy as np
import pytest
from olive_passes_openvino.quantization import OpenVINOQuantization, OpenVINOQuantizationWithAccuracy

from olive.exceptions import PassConfigError, PassParamError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.measure import cosine_similarities
from olive.testing.runner import run_pass


def constants(model) -> tuple[dict[str, int], int]:
    """Elements of the IR's constants by element type, and its FakeQuantize count."""
    counts: dict[str, int] = {}
    fake_quantize = 0
    for op in model.load_model().get_ops():
        if op.get_type_name() == "Constant":
            kind = op.get_element_type().get_type_name()
            counts[kind] = counts.get(kind, 0) + int(np.prod(list(op.get_output_shape(0)) or [1]))
        fake_quantize += op.get_type_name() == "FakeQuantize"
    return counts, fake_quantize


def worst_cosine(out: np.ndarray, ref: np.ndarray) -> float:
    return float(cosine_similarities(out.reshape(len(out), -1), ref.reshape(len(ref), -1)).min())


@pytest.fixture(scope="module")
def int8(ir_fp32, calibration, tmp_path_factory):
    return run_pass(
        OpenVINOQuantization,
        ir_fp32,
        {"data_config": str(calibration), "model_type": "TRANSFORMER"},
        output_dir=tmp_path_factory.mktemp("int8"),
    )


def test_int8_weights_make_the_ir_smaller_and_outputs_stay_close(ir_fp32, int8, feeds, reference, f32):
    before, before_fq = constants(ir_fp32)
    after, after_fq = constants(int8)
    assert before_fq == 0 and "i8" not in before
    assert after_fq > 0 and after["i8"] > 0.9 * before["f32"]
    assert int8.size_on_disk < 0.6 * ir_fp32.size_on_disk
    assert int8.xml_path.name == "ov_model_quant.xml"
    assert int8.model_attributes["quantization"]["tool"] == "nncf"
    out = int8.prepare_session(f32).run(None, feeds)[0]
    assert not np.array_equal(out, reference[0])
    assert worst_cosine(out, reference[0]) > 0.99


def test_ignored_scope_keeps_those_ops_float(ir_fp32, int8, calibration, tmp_path):
    kept = run_pass(
        OpenVINOQuantization,
        ir_fp32,
        {"data_config": str(calibration), "ignored_scope": ["MatMul"], "ignored_scope_type": "types"},
        output_dir=tmp_path,
    )
    assert constants(kept)[0]["i8"] < 0.5 * constants(int8)[0]["i8"]


def test_an_onnx_model_in_gives_an_onnx_model_out_that_onnxruntime_runs(bert, calibration, feeds, reference, tmp_path):
    from olive.measure import create_session

    quantized = run_pass(OpenVINOQuantization, bert, {"data_config": str(calibration)}, output_dir=tmp_path)
    assert quantized.model_type == "ONNXModel"
    ops = {node.op_type for node in quantized.load_model(load_external_data=False).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    out = create_session(quantized.model_path).run(None, feeds)[0]
    assert worst_cosine(out, reference[0]) > 0.99


def test_extra_configs_reach_nncf(ir_fp32, calibration, tmp_path):
    extra = [{"subset_size": 4}, {"advanced_quantization_parameters": {"disable_bias_correction": True}}]
    run_pass(
        OpenVINOQuantization, ir_fp32, {"data_config": str(calibration), "extra_configs": extra}, output_dir=tmp_path
    )
    with pytest.raises(PassParamError, match=r"'extra_configs' has 'subset_sise', which nncf.quantize does not take"):
        run_pass(
            OpenVINOQuantization,
            ir_fp32,
            {"data_config": str(calibration), "extra_configs": [{"subset_sise": 4}]},
            output_dir=tmp_path,
        )


def test_accuracy_control_runs_the_validation_function_on_the_data(ir_fp32, calibration, tmp_path):
    seen = []

    def validate(compiled_model, data) -> float:
        items = list(data)
        seen.append(len(items))
        return 1.0

    result = run_pass(
        OpenVINOQuantizationWithAccuracy,
        ir_fp32,
        {"data_config": str(calibration), "validation_func": validate, "max_drop": 0.01},
        output_dir=tmp_path,
    )
    # NNCF validates the float model and the int8 one: both metrics are 1.0, nothing returns to float.
    assert len(seen) >= 2 and all(n > 0 for n in seen)
    assert constants(result)[1] > 0


def test_accuracy_control_with_labels_needs_no_function(ir_fp32, calibration, tmp_path):
    result = run_pass(
        OpenVINOQuantizationWithAccuracy,
        ir_fp32,
        {"data_config": str(calibration), "max_drop": 0.5},
        output_dir=tmp_path,
    )
    assert constants(result)[1] > 0


def test_accuracy_control_without_labels_says_what_to_give(ir_fp32, bert, tmp_path):
    from olive.testing.models import write_npz_dataset

    unlabelled = write_npz_dataset(tmp_path / "plain.npz", bert, num_samples=8)
    with pytest.raises(PassParamError, match=r"default validation_func scores top-1 accuracy .* data_config has none"):
        run_pass(OpenVINOQuantizationWithAccuracy, ir_fp32, {"data_config": str(unlabelled)}, output_dir=tmp_path)


def test_data_that_does_not_fit_the_model_is_named(ir_fp32, tmp_path):
    np.savez(tmp_path / "wrong.npz", pixels=np.zeros((4, 3), dtype=np.float32))
    with pytest.raises(
        PassConfigError, match=r"OpenVINOQuantization: data_config\) does not provide input\(s\) 'input_ids'"
    ):
        run_pass(OpenVINOQuantization, ir_fp32, {"data_config": str(tmp_path / "wrong.npz")}, output_dir=tmp_path)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"ignored_scope": ["MatMul"]}, r"'ignored_scope' and 'ignored_scope_type' go together"),
        ({"ignored_scope": ["x"], "ignored_scope_type": "nodes"}, r"'ignored_scope_type' has 'nodes'; use names"),
        ({"preset": "FAST"}, r"param 'preset' is 'FAST'; use PERFORMANCE or MIXED"),
        ({"model_type": "CNN"}, r"param 'model_type' is 'CNN'; use 'TRANSFORMER'"),
        ({"target_device": "tpu"}, r"param 'target_device' is 'tpu'"),
    ],
)
def test_bad_params_fail_before_running(calibration, config, message):
    with pytest.raises(PassConfigError, match=message):
        OpenVINOQuantization.generate_config(
            DEFAULT_CPU_ACCELERATOR, {"data_config": str(calibration), **config}, disable_search=True
        )
