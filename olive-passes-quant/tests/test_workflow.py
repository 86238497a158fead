"""The passes inside real workflows (olive.workflows.run): search pruning, data config names, failures."""

from __future__ import annotations

from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest

import olive.workflows
from olive.exceptions import OliveError


def _workflow(model, data_path: Path, root: Path, passes: dict, search: bool) -> dict:
    workflow = {
        "input_model": {"type": "ONNXModel", "model_path": str(model.model_path)},
        "data_configs": [
            {
                "name": "calib",
                "type": "NpzDataContainer",
                "load_dataset_config": {"data_path": str(data_path)},
                "dataloader_config": {"batch_size": 4},
            }
        ],
        "evaluators": {
            "common": {
                "metrics": [
                    {
                        "name": "agree",
                        "type": "agreement",
                        "data_config": "calib",
                        "sub_types": [{"name": "cosine_mean", "priority": 1}],
                    }
                ]
            }
        },
        "evaluator": "common",
        "passes": passes,
        "cache_dir": str(root / "cache"),
        "output_dir": str(root / "out"),
    }
    if search:
        workflow["search_strategy"] = {"execution_order": "joint", "sampler": "sequential", "max_samples": 0}
    return workflow


def test_static_search_visits_only_valid_points(tmp_path, bert, calib_npz):
    passes = {
        "quantize": {
            "type": "OnnxStaticQuantization",
            "data_config": "calib",
            # pin the rest so the search is over (quant_format, precision, activation_type) only
            "per_channel": True,
            "reduce_range": False,
            "quant_preprocess": False,
            "calibrate_method": "MinMax",
        }
    }
    output = olive.workflows.run(_workflow(bert, calib_npz, tmp_path, passes, search=True))
    tried = [n for n in output.footprint if n.pass_name == "OnnxStaticQuantization"]
    combos = {(n.config["quant_format"], n.config["precision"], n.config["activation_type"]) for n in tried}
    assert combos == {("QDQ", "int8", "int8"), ("QDQ", "uint8", "uint8"), ("QOperator", "uint8", "uint8")}
    assert all(n.status == "ok" for n in tried)
    for node in tried:
        assert node.metrics["agree-cosine_mean"]["value"] >= 0.98


def test_dynamic_and_4bit_in_one_workflow(tmp_path, bert, calib_npz):
    passes = {
        "quantize": [
            {"type": "OnnxDynamicQuantization"},
            {"type": "OnnxBlockWiseRtnQuantization", "block_size": 32},
        ]
    }
    output = olive.workflows.run(_workflow(bert, calib_npz, tmp_path, passes, search=True))
    names = {n.pass_name for n in output.footprint if n.status == "ok"}
    assert {"OnnxDynamicQuantization", "OnnxBlockWiseRtnQuantization"} <= names
    assert (tmp_path / "out" / "model.onnx").is_file()


def test_every_weight_only_pass_of_an_onnx_model_runs_by_name_in_a_workflow(tmp_path, bert, calib_npz):
    passes = {
        "int4": [
            {"type": "OnnxBlockWiseRtnQuantization", "block_size": 32},
            {"type": "OnnxHqqQuantization", "block_size": 32},
            {"type": "OnnxKQuantQuantization", "block_size": 32, "accuracy_level": 4},
        ]
    }
    output = olive.workflows.run(_workflow(bert, calib_npz, tmp_path, passes, search=True))
    ran = {n.pass_name: n for n in output.footprint if n.status == "ok"}
    expected = {"OnnxBlockWiseRtnQuantization", "OnnxHqqQuantization", "OnnxKQuantQuantization"}
    if find_spec("torch") is None:
        # onnxruntime's HQQ solver runs on torch: without it HQQ's run fails, saying so, and the others go on.
        expected.discard("OnnxHqqQuantization")
        [hqq] = [n for n in output.footprint if n.pass_name == "OnnxHqqQuantization"]
        assert hqq.status == "failed" and "needs torch" in hqq.error, hqq.error
    assert expected <= set(ran)
    for node in ran.values():
        assert node.metrics["agree-cosine_mean"]["value"] >= 0.95
    import onnx

    ops = [n.op_type for n in onnx.load(str(tmp_path / "out" / "model.onnx")).graph.node]
    assert "MatMulNBits" in ops


def test_failed_calibration_leaves_nothing_in_cache_or_output(tmp_path, bert):
    bad = tmp_path / "bad.npz"
    rows = np.ones((4, 16), dtype=np.int64)
    np.savez(bad, input_id=rows, attention_mask=rows, token_type_ids=rows)
    passes = {"quantize": {"type": "OnnxStaticQuantization", "data_config": "calib"}}
    with pytest.raises(OliveError, match="input_ids"):
        olive.workflows.run(_workflow(bert, bad, tmp_path, passes, search=False))
    assert not list((tmp_path / "cache").rglob("*.onnx"))
    assert not (tmp_path / "out" / "model.onnx").exists()


def test_olive_08_param_names_run_unchanged(tmp_path, bert, calib_npz):
    # The quantization block of an Olive 0.8 workflow: onnxruntime's type names and the extra_options keys
    # that were params of their own.
    passes = {
        "quantization": {
            "type": "OnnxQuantization",
            "config": {
                "quant_mode": "static",
                "quant_format": "QOperator",
                "weight_type": "QUInt8",
                "activation_type": "QUInt8",
                "WeightSymmetric": False,
                "ActivationSymmetric": False,
                "MatMulConstBOnly": True,
                "prepare_qnn_config": False,
                "quant_preprocess": False,
                "data_config": "calib",
            },
        }
    }
    output = olive.workflows.run(_workflow(bert, calib_npz, tmp_path, passes, search=False))
    (node,) = [n for n in output.footprint if n.pass_name == "OnnxQuantization"]
    assert node.status == "ok"
    assert (node.config["precision"], node.config["activation_type"]) == ("uint8", "uint8")
    assert node.config["weight_symmetric"] is False
    assert node.config["extra_options"] == {"MatMulConstBOnly": True}
    import onnx

    proto = onnx.load(str(tmp_path / "out" / "model.onnx"))
    assert any(n.op_type == "QLinearMatMul" for n in proto.graph.node)
    weights = [i for i in proto.graph.initializer if i.name.endswith("_quantized") and len(i.dims) == 2]
    assert weights and all(i.data_type == onnx.TensorProto.UINT8 for i in weights)


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"weight_type": "QInt16"}, r"'weight_type' is 'QInt16'; only 8-bit types"),
        ({"weight_type": "QInt8", "precision": "int8"}, r"'weight_type' \(the Olive 0.8 name\) and 'precision'"),
        ({"prepare_qnn_config": True}, r"'prepare_qnn_config' \(QNN execution provider\) is not supported"),
    ],
)
def test_olive_08_param_names_that_cannot_run(tmp_path, bert, calib_npz, params, message):
    passes = {"quantization": {"type": "OnnxDynamicQuantization", **params}}
    with pytest.raises(OliveError, match=message):
        olive.workflows.run(_workflow(bert, calib_npz, tmp_path, passes, search=False))
    assert not (tmp_path / "cache").exists() or not list((tmp_path / "cache").rglob("*.onnx"))


def test_blockwise_block_size_is_searched_only_when_asked(tmp_path, bert, calib_npz):
    # As in Olive: a search leaves block_size at its default unless the workflow asks for its values.
    output = olive.workflows.run(
        _workflow(bert, calib_npz, tmp_path / "a", {"rtn": {"type": "OnnxBlockWiseRtnQuantization"}}, search=True)
    )
    assert [n.config["block_size"] for n in output.footprint if n.pass_key == "rtn"] == [128]
    asked = {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": [32, 128]}
    passes = {"rtn": {"type": "OnnxBlockWiseRtnQuantization", "block_size": asked}}
    output = olive.workflows.run(_workflow(bert, calib_npz, tmp_path / "b", passes, search=True))
    assert sorted(n.config["block_size"] for n in output.footprint if n.pass_key == "rtn") == [32, 128]


def test_static_quantization_and_a_latency_metric_on_one_small_data_config_run_unsplit(tmp_path, bert):
    # Microsoft Olive's static quantization workflow: calibration and latency on the same 6 samples. The
    # latency metric only times its inputs, so nothing asks for a split and the run neither stops nor warns.
    import json

    import onnx
    from click.testing import CliRunner

    from olive.cli.main import cli
    from olive.testing.models import write_npz_dataset

    data = write_npz_dataset(tmp_path / "six.npz", bert, num_samples=6, sequence_length=16, seed=1)
    passes = {"quantize": {"type": "OnnxStaticQuantization", "data_config": "calib"}}
    workflow = _workflow(bert, data, tmp_path, passes, search=False)
    workflow["evaluators"]["common"]["metrics"] = [
        {"name": "latency", "type": "latency", "data_config": "calib", "sub_types": [{"name": "avg", "priority": 1}]}
    ]
    config = tmp_path / "wf.json"
    config.write_text(json.dumps(workflow))
    result = CliRunner().invoke(cli, ["run", str(config)])
    assert result.exit_code == 0, result.output
    assert "too few" not in result.output and "measure the fit" not in result.output
    quantized = onnx.load(str(tmp_path / "out" / "model.onnx"))
    assert any(node.op_type == "QuantizeLinear" for node in quantized.graph.node)
