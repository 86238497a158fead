"""OpenVINOConversion + OpenVINOQuantization through the engine (``olive run``): the IR folder is the chosen
model, measured by the same metrics as the ONNX input model it is compared with, and carried by the cache and
the outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def _workflow(bert, calibration: Path, root: Path) -> dict:
    return {
        "input_model": {"type": "ONNXModel", "model_path": str(bert.model_path)},
        "data_configs": [
            {
                "name": "calib",
                "type": "NpzDataContainer",
                "load_dataset_config": {"data_path": str(calibration)},
                "dataloader_config": {"batch_size": 4},
            }
        ],
        "evaluators": {
            "common": {
                "metrics": [
                    {
                        "name": "agreement",
                        "type": "agreement",
                        "data_config": "calib",
                        "sub_types": [{"name": "cosine_mean", "priority": 2}, {"name": "cosine_min"}],
                    },
                    {
                        "name": "latency",
                        "type": "latency",
                        "data_config": "calib",
                        "sub_types": [{"name": "ratio_p50", "priority": 1}],
                        "user_config": {"warmup_num": 1, "repeat_test_num": 10},
                    },
                ]
            }
        },
        "evaluator": "common",
        "passes": {
            "convert": {"type": "OpenVINOConversion"},
            "quantize": {"type": "OpenVINOQuantization", "data_config": "calib", "model_type": "TRANSFORMER"},
        },
        "cache_dir": str(root / "cache"),
        "output_dir": str(root / "out"),
    }


def _olive(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from olive.cli.main import main; main()", *args], capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def run(bert, calibration, tmp_path_factory):
    root = tmp_path_factory.mktemp("workflow")
    file = root / "workflow.json"
    file.write_text(json.dumps(_workflow(bert, calibration, root)))
    result = _olive("run", str(file))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return root, file, result


def test_the_int8_ir_is_the_output_and_loads_back_from_model_config(run, feeds, reference):
    from olive.measure import cosine_similarities
    from olive.model.types import model_from_json

    root, _, _ = run
    out = root / "out"
    assert {"ov_model_quant.xml", "ov_model_quant.bin", "model_config.json", "metrics.json"} <= {
        p.name for p in out.iterdir()
    }
    config = json.loads((out / "model_config.json").read_text())
    assert config["type"] == "OpenVINOModel" and config["files"] == ["ov_model_quant.bin", "ov_model_quant.xml"]
    assert [p["pass_name"] for p in config["produced_by"]] == ["OpenVINOConversion", "OpenVINOQuantization"]
    assert config["distributions"] == {"olive-passes-openvino": "0.1.0"}
    model = model_from_json(config)
    assert Path(model.model_path) == out
    result = model.prepare_session().run(None, feeds)[0]
    cosines = cosine_similarities(result.reshape(len(result), -1), reference[0].reshape(len(result), -1))
    assert cosines.min() > 0.98


def test_the_metrics_compare_the_ir_with_the_onnx_input_model(run):
    root, _, _ = run
    metrics = json.loads((root / "out" / "metrics.json").read_text())
    best = metrics["best"]
    assert metrics["input_model"]["agreement-cosine_mean"]["value"] == 1.0
    assert 0.99 < best["agreement-cosine_mean"]["value"] < 1.0
    assert best["agreement-cosine_min"]["value"] > 0.98
    # Timed against the ONNX model in alternating rounds: a ratio, with the spread of its rounds.
    assert best["latency-ratio_p50"]["value"] > 0 and "noise" in best["latency-ratio_p50"]


def test_a_second_run_takes_both_passes_from_the_cache(run):
    _, file, _ = run
    again = _olive("run", str(file))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "2 pass run(s) (2 from cache)" in again.stdout


def test_an_ir_input_model_is_evaluated_itself_and_is_the_reference(ir_fp32, calibration, tmp_path):
    from olive.workflows import run as olive_run

    workflow = _workflow(ir_fp32, calibration, tmp_path)
    workflow["input_model"] = {"type": "OpenVINOModel", "model_path": ir_fp32.model_path}
    workflow["evaluate_input_model"] = True
    del workflow["passes"]["convert"]
    output = olive_run(workflow)
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    # The IR itself is measured (agreement 1.0 with itself) and the int8 IR is compared with it, not with itself.
    assert metrics["input_model"]["agreement-cosine_mean"]["value"] == 1.0
    assert metrics["input_model"]["latency-ratio_p50"]["value"] == 1.0
    assert 0.99 < metrics["best"]["agreement-cosine_mean"]["value"] < 1.0
    assert output.best.pass_name == "OpenVINOQuantization"


def test_an_ir_input_model_before_an_onnx_pass_is_told_what_to_put_first(ir_fp32, calibration, tmp_path):
    from olive.exceptions import WorkflowConfigError
    from olive.workflows import run as olive_run

    workflow = _workflow(ir_fp32, calibration, tmp_path)
    workflow["input_model"] = {"type": "OpenVINOModel", "model_path": ir_fp32.model_path}
    workflow["passes"] = {"fuse": {"type": "OpenVINOConversion"}}
    with pytest.raises(WorkflowConfigError, match=r"start with a pass that takes OpenVINOModel models"):
        olive_run(workflow)
