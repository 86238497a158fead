"""MatMulNBitsToQDQ: MatMulNBits becomes DequantizeLinear + MatMul with the same integers, and the outputs agree."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import op_types, run_model

from olive.testing import random_inputs
from olive.testing.models import bert_like_model_files, mlp_model, save_model
from olive_passes_quant.blockwise import OnnxBlockWiseRtnQuantization
from olive_passes_quant.mnb_to_qdq import MatMulNBitsToQDQ


def _exact_run(model, inputs) -> list:
    import onnxruntime as ort

    # onnxruntime's optimizer would fuse DequantizeLinear + MatMul back into MatMulNBits computing with int8
    # activations (its qdq_matmulnbits_accuracy_level default): the rewrite itself is compared unoptimized.
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(model.model_path), options, providers=["CPUExecutionProvider"])
    return session.run(None, inputs)


def _close(a, b, inputs):
    for x, y in zip(_exact_run(a, inputs), _exact_run(b, inputs), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-4, atol=1e-4)
    # As deployed (optimized session), the QDQ model still runs.
    assert run_model(b, inputs)[0].shape == run_model(a, inputs)[0].shape


def _dq_nodes(model):
    return [n for n in onnx.load(model.model_path).graph.node if n.op_type == "DequantizeLinear"]


def _initializer_types(model):
    return {i.name: i.data_type for i in onnx.load(model.model_path).graph.initializer}


@pytest.mark.parametrize(
    ("config", "weight_type", "has_zero_point"),
    [
        ({}, onnx.TensorProto.UINT4, True),
        ({"use_int4": True}, onnx.TensorProto.INT4, False),
        ({"use_signed_int": True, "add_zero_point": True}, onnx.TensorProto.INT4, True),
        ({"use_transpose_op": True}, onnx.TensorProto.UINT4, True),
    ],
)
def test_symmetric_4bit(run_pass, bert, bert_inputs, config, weight_type, has_zero_point):
    nbits = run_pass(OnnxBlockWiseRtnQuantization, bert, {"block_size": 32})
    count = op_types(nbits)["MatMulNBits"]
    qdq = run_pass(MatMulNBitsToQDQ, nbits, config)
    ops = op_types(qdq)
    assert "MatMulNBits" not in ops
    assert ops["DequantizeLinear"] == count
    assert ops["MatMul"] == op_types(nbits).get("MatMul", 0) + count
    assert ops.get("Transpose", 0) == op_types(nbits).get("Transpose", 0) + (
        count if config.get("use_transpose_op") else 0
    )
    dq = _dq_nodes(qdq)[0]
    types = _initializer_types(qdq)
    assert types[dq.input[0]] == weight_type
    assert (len(dq.input) == 3) == has_zero_point
    assert {a.name: onnx.helper.get_attribute_value(a) for a in dq.attribute}["block_size"] == 32
    opset = next(o.version for o in onnx.load(qdq.model_path).opset_import if o.domain in ("", "ai.onnx"))
    assert opset >= 21
    _close(nbits, qdq, bert_inputs)


@pytest.mark.parametrize("signed", [False, True])
def test_asymmetric_keeps_its_zero_points(run_pass, bert, bert_inputs, signed):
    nbits = run_pass(OnnxBlockWiseRtnQuantization, bert, {"block_size": 32, "is_symmetric": False})
    qdq = run_pass(MatMulNBitsToQDQ, nbits, {"use_signed_int": signed})
    assert all(len(n.input) == 3 for n in _dq_nodes(qdq))
    _close(nbits, qdq, bert_inputs)


def test_8bit_and_per_axis(tmp_path, run_pass):
    # fc1 has K = 16: with block_size 32 it is one block per column, a per-axis DequantizeLinear.
    model = save_model(mlp_model(), tmp_path / "mlp")
    nbits = run_pass(OnnxBlockWiseRtnQuantization, model, {"block_size": 32, "bits": 8})
    qdq = run_pass(MatMulNBitsToQDQ, nbits)
    dq = {n.name: n for n in _dq_nodes(qdq)}
    fc1 = next(n for name, n in dq.items() if "fc1" in name)
    attributes = {a.name: onnx.helper.get_attribute_value(a) for a in fc1.attribute}
    assert "block_size" not in attributes and attributes["axis"] == 1
    assert _initializer_types(qdq)[fc1.input[0]] == onnx.TensorProto.UINT8
    _close(nbits, qdq, random_inputs(model))


def test_excluded_nodes_stay(run_pass, bert, bert_inputs):
    nbits = run_pass(OnnxBlockWiseRtnQuantization, bert, {"block_size": 32})
    names = [n.name for n in onnx.load(nbits.model_path).graph.node if n.op_type == "MatMulNBits"]
    qdq = run_pass(MatMulNBitsToQDQ, nbits, {"nodes_to_exclude": names[:2]})
    assert op_types(qdq)["MatMulNBits"] == 2
    assert op_types(qdq)["DequantizeLinear"] == len(names) - 2
    _close(nbits, qdq, bert_inputs)


def test_external_data_model(tmp_path, run_pass):
    model = bert_like_model_files(tmp_path / "ext")
    nbits = run_pass(OnnxBlockWiseRtnQuantization, model, {"block_size": 32, "save_as_external_data": True})
    qdq = run_pass(MatMulNBitsToQDQ, nbits, {"save_as_external_data": True})
    assert qdq.external_data_files()
    assert "MatMulNBits" not in op_types(qdq)
    _close(nbits, qdq, random_inputs(model))
