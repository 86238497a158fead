"""OnnxQuantizationPreprocess, and its retry without symbolic shape inference."""

from __future__ import annotations

import logging

import onnx
from helpers import run_model

from olive.testing.models import output_cosine
from olive_passes_quant import _preprocess
from olive_passes_quant.preprocess import OnnxQuantizationPreprocess


def test_preprocess_adds_shapes_and_keeps_outputs(run_pass, bert, bert_inputs):
    result = run_pass(OnnxQuantizationPreprocess, bert)
    proto = onnx.load(result.model_path)
    assert len(proto.graph.value_info) > len(onnx.load(bert.model_path).graph.value_info)
    assert output_cosine(run_model(bert, bert_inputs), run_model(result, bert_inputs)) > 0.99999


def test_symbolic_shape_failure_is_retried_without_it(tmp_path, bert, caplog, monkeypatch):
    # A model symbolic shape inference cannot finish: a contrib op it has no rule for, whose output feeds
    # a node that needs its shape. onnxruntime raises "Incomplete symbolic shape inference".
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["r"], name="relu"),
            helper.make_node("NotARealOp", ["r"], ["y0"], name="custom", domain="com.example"),
            helper.make_node("Relu", ["y0"], ["y"], name="relu_2"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)], ir_version=8
    )
    path = tmp_path / "custom.onnx"
    onnx.save(model, path)
    out = tmp_path / "out" / "model.onnx"
    out.parent.mkdir()
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    with caplog.at_level(logging.WARNING, logger="olive_passes_quant"):
        retried = _preprocess.quant_pre_process(path, out, skip_optimization=True)
    assert retried is True
    assert "retrying with skip_symbolic_shape=True" in caplog.text
    assert onnx.load(out).graph.node[1].op_type == "NotARealOp"
    # onnxruntime drops its partial model into the working directory when it gives up; not ours.
    assert list(cwd.iterdir()) == []
