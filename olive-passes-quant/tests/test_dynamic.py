"""OnnxDynamicQuantization on the tiny BERT-like model: int8 ops, smaller weights, outputs kept."""

from __future__ import annotations

import onnx
import pytest
from helpers import op_types, run_model, weight_bytes

from olive.testing.models import output_cosine
from olive_passes_quant.dynamic import OnnxDynamicQuantization


@pytest.mark.parametrize("precision", ["int8", "uint8"])
def test_dynamic_int8_shrinks_weights_and_keeps_outputs(run_pass, bert, bert_inputs, precision):
    result = run_pass(OnnxDynamicQuantization, bert, {"precision": precision})

    ops = op_types(result)
    assert ops.get("MatMulInteger", 0) >= 12, ops  # every linear layer of both encoder layers
    assert ops.get("DynamicQuantizeLinear", 0) > 0, ops
    assert ops.get("MatMul", 0) <= 4  # only the activation x activation attention MatMuls stay float
    assert weight_bytes(bert) / weight_bytes(result) >= 3.0
    assert result.size_on_disk < bert.size_on_disk
    cosine = output_cosine(run_model(bert, bert_inputs), run_model(result, bert_inputs))
    assert cosine >= 0.98, cosine


def test_per_channel_is_the_default_and_is_per_channel(run_pass, bert):
    assert OnnxDynamicQuantization.default_config(None)["per_channel"].default_value is True
    per_channel = onnx.load(run_pass(OnnxDynamicQuantization, bert).model_path)
    per_tensor = onnx.load(run_pass(OnnxDynamicQuantization, bert, {"per_channel": False}).model_path)

    def scale_size(proto: onnx.ModelProto) -> int:
        scales = {i.name: i for i in proto.graph.initializer}
        name = "encoder.layer.0.ffn.output.weight_scale"
        return int(onnx.numpy_helper.to_array(scales[name]).size)

    assert scale_size(per_channel) == 64  # one scale per output channel
    assert scale_size(per_tensor) == 1


def test_nodes_to_exclude_and_op_types_to_exclude(run_pass, bert):
    name = "/encoder/layer.0/ffn/output/MatMul"
    result = onnx.load(run_pass(OnnxDynamicQuantization, bert, {"nodes_to_exclude": [name]}).model_path)
    assert any(n.name == name and n.op_type == "MatMul" for n in result.graph.node)
    assert sum(n.op_type == "MatMulInteger" for n in result.graph.node) == 11

    no_gather = run_pass(OnnxDynamicQuantization, bert, {"op_types_to_exclude": ["Gather"]})
    initializers = {i.name: i for i in onnx.load(no_gather.model_path).graph.initializer}
    assert initializers["embeddings.word_embeddings.weight"].data_type == onnx.TensorProto.FLOAT
    assert op_types(no_gather).get("MatMulInteger") == 12


def test_op_types_to_quantize_limits_quantization(run_pass, bert):
    result = run_pass(OnnxDynamicQuantization, bert, {"op_types_to_quantize": ["MatMul"]})
    initializers = {i.name: i for i in onnx.load(result.model_path).graph.initializer}
    assert initializers["embeddings.word_embeddings.weight"].data_type == onnx.TensorProto.FLOAT
    assert op_types(result).get("MatMulInteger") == 12


def test_fused_transformer_graph_gets_default_tensor_type(run_pass, tmp_path, bert, bert_inputs):
    # A graph fused by onnxruntime's transformer optimizer has contrib ops whose outputs shape inference
    # cannot type; quantize_dynamic fails on it unless extra_options carries DefaultTensorType.
    from onnxruntime.transformers.optimizer import optimize_model

    from olive.model.handler import ONNXModelHandler

    fused_path = tmp_path / "fused" / "model.onnx"
    fused_path.parent.mkdir()
    optimize_model(bert.model_path, model_type="bert", num_heads=4, hidden_size=64, opt_level=0).save_model_to_file(
        str(fused_path)
    )
    fused = ONNXModelHandler(model_path=str(fused_path))
    assert "Attention" in op_types(fused)

    result = run_pass(OnnxDynamicQuantization, fused, {"quant_preprocess": False})
    ops = op_types(result)
    assert ops.get("QAttention") == 2 and ops.get("MatMulInteger", 0) > 0, ops
    assert output_cosine(run_model(bert, bert_inputs), run_model(result, bert_inputs)) >= 0.98
