"""The evaluator measures an OpenVINO model as it does an ONNX one: its own session, agreement with the ONNX
reference, latency timed against it in alternating rounds, and the same settings applied to both."""

from __future__ import annotations

import pytest

from olive.evaluator.evaluator import OliveEvaluator
from olive.evaluator.metric import parse_metrics
from olive.exceptions import OliveError


def _metrics(calibration, latency_config: dict | None = None, settings: dict | None = None) -> list:
    data = {
        "name": "calib",
        "type": "NpzDataContainer",
        "load_dataset_config": {"data_path": str(calibration)},
        "dataloader_config": {"batch_size": 4},
    }
    user_config = {"inference_settings": settings} if settings else {}
    return parse_metrics(
        [
            {
                "name": "agree",
                "type": "agreement",
                "data_config": data,
                "sub_types": ["cosine_mean", "cosine_min", "max_abs_diff"],
                "user_config": user_config,
            },
            {
                "name": "latency",
                "type": "latency",
                "data_config": data,
                "sub_types": ["ratio_p50", "p50"],
                "user_config": {"warmup_num": 1, "repeat_test_num": 10, **user_config, **(latency_config or {})},
            },
        ]
    )


def test_an_ir_is_scored_and_timed_against_its_onnx_reference(bert, ir_fp32, calibration):
    evaluator = OliveEvaluator(_metrics(calibration, settings={"session_options": {"intra_op_num_threads": 1}}))
    result = evaluator.evaluate(ir_fp32, reference_model=bert)
    # The float32 IR computes what the ONNX model computes, up to OpenVINO's own precision on this CPU.
    assert result["agree-cosine_mean"].value > 0.999
    assert 0 < result["agree-max_abs_diff"].value < 0.5
    assert result["latency-ratio_p50"].value > 0 and result["latency-p50"].value > 0
    timed = result.metadata["latency"]
    assert timed["providers"] == ["OpenVINO:CPU"]
    # The metric's onnxruntime thread count is the IR's thread count too: both runtimes get the same cores.
    assert timed["session_options"]["INFERENCE_NUM_THREADS"] == 1
    assert timed["paired_with"]["model"] == bert.model_path


def test_the_models_own_settings_win_over_the_metrics(ir_fp32, bert, calibration):
    from olive_passes_openvino.model import OpenVINOModelHandler

    f32 = OpenVINOModelHandler(
        ir_fp32.model_path, inference_settings={"ov_config": {"INFERENCE_PRECISION_HINT": "f32"}}
    )
    result = OliveEvaluator(_metrics(calibration)).evaluate(f32, reference_model=bert)
    assert result.metadata["agree"]["session_options"]["INFERENCE_PRECISION_HINT"] == "f32"
    assert result["agree-max_abs_diff"].value < 1e-4


def test_io_bind_on_an_openvino_session_is_one_clear_error(ir_fp32, bert, calibration):
    with pytest.raises(OliveError, match=r"io_bind is onnxruntime's IO binding, which model .* does not run on"):
        OliveEvaluator(_metrics(calibration, {"io_bind": True})).evaluate(ir_fp32, reference_model=bert)
