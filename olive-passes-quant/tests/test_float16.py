"""OnnxFloatToFloat16: half the weight bytes, outputs kept, io types and block lists honoured."""

from __future__ import annotations

import onnx
from helpers import run_model, weight_bytes

from olive.testing.models import output_cosine
from olive_passes_quant.float16 import OnnxFloatToFloat16


def test_fp16_keep_io_types(run_pass, bert, bert_inputs):
    result = run_pass(OnnxFloatToFloat16, bert, {"keep_io_types": True})
    proto = onnx.load(result.model_path)
    assert proto.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert any(i.data_type == onnx.TensorProto.FLOAT16 for i in proto.graph.initializer)
    assert weight_bytes(result) < 0.6 * weight_bytes(bert)
    assert output_cosine(run_model(bert, bert_inputs), run_model(result, bert_inputs)) >= 0.999


def test_fp16_io_and_block_lists(run_pass, bert, bert_inputs):
    name = "/encoder/layer.0/ffn/output/MatMul"
    result = run_pass(OnnxFloatToFloat16, bert, {"node_block_list": [name], "op_block_list": ["LayerNormalization"]})
    proto = onnx.load(result.model_path)
    assert proto.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
    initializers = {i.name: i.data_type for i in proto.graph.initializer}
    assert initializers["encoder.layer.0.ffn.output.weight"] == onnx.TensorProto.FLOAT
    assert initializers["encoder.layer.1.ffn.output.weight"] == onnx.TensorProto.FLOAT16
    outputs = run_model(result, bert_inputs)
    assert outputs[0].dtype.name == "float16"
