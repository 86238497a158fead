"""OnnxBlockWiseRtnQuantization: 4-bit MatMulNBits, smaller than int8, still runs and agrees."""

from __future__ import annotations

import logging

import onnx
import pytest
from helpers import op_types, run_model, weight_bytes

from olive.exceptions import PassConfigError, PassParamError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.testing.models import output_cosine
from olive_passes_quant.blockwise import OnnxBlockWiseRtnQuantization
from olive_passes_quant.dynamic import OnnxDynamicQuantization


def test_4bit_matmulnbits_smaller_than_int8(run_pass, bert, bert_inputs):
    int4 = run_pass(OnnxBlockWiseRtnQuantization, bert, {"block_size": 32})
    int8 = run_pass(OnnxDynamicQuantization, bert, {"op_types_to_quantize": ["MatMul"]})

    ops = op_types(int4)
    assert ops.get("MatMulNBits") == 12, ops
    proto = onnx.load(int4.model_path)
    node = next(n for n in proto.graph.node if n.op_type == "MatMulNBits")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    assert attrs["bits"] == 4 and attrs["block_size"] == 32 and attrs["K"] == 64

    def matmul_weight_bytes(model) -> int:
        # bytes of everything that replaced the fp32 MatMul weights (packed weights, scales, zero points)
        p = onnx.load(model.model_path)
        return sum(
            onnx.numpy_helper.to_array(i).nbytes
            for i in p.graph.initializer
            if i.name.startswith("encoder.") and "weight" in i.name
        )

    assert matmul_weight_bytes(int4) < matmul_weight_bytes(int8)
    assert weight_bytes(int4) < weight_bytes(bert)
    cosine = output_cosine(run_model(bert, bert_inputs), run_model(int4, bert_inputs))
    assert cosine >= 0.97, cosine


def test_8bit_is_more_accurate_than_4bit(run_pass, bert, bert_inputs):
    reference = run_model(bert, bert_inputs)
    int4 = run_pass(OnnxBlockWiseRtnQuantization, bert, {"block_size": 32, "bits": 4})
    int8 = run_pass(OnnxBlockWiseRtnQuantization, bert, {"block_size": 32, "bits": 8, "accuracy_level": "int8"})
    assert op_types(int8).get("MatMulNBits") == 12
    cosine_8 = output_cosine(reference, run_model(int8, bert_inputs))
    assert cosine_8 > output_cosine(reference, run_model(int4, bert_inputs))


def test_nodes_to_include_and_exclude(run_pass, bert):
    first = "/encoder/layer.0/ffn/output/MatMul"
    only = run_pass(OnnxBlockWiseRtnQuantization, bert, {"block_size": 16, "nodes_to_include": [first]})
    assert op_types(only).get("MatMulNBits") == 1
    without = run_pass(OnnxBlockWiseRtnQuantization, bert, {"block_size": 16, "nodes_to_exclude": [first]})
    assert op_types(without).get("MatMulNBits") == 11


@pytest.mark.parametrize("block_size", [8, 24, 0])
def test_block_sizes_matmulnbits_cannot_take_are_rejected(block_size):
    cpu = DEFAULT_CPU_ACCELERATOR
    # Given by the workflow: a config error naming the param and the fix, before any run.
    with pytest.raises(PassConfigError, match=rf"param 'block_size' is {block_size}, .*power of two"):
        OnnxBlockWiseRtnQuantization.generate_config(cpu, {"block_size": block_size}, disable_search=True)
    # Searched: that point is pruned, saying why; the other points stay.
    support = {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": [block_size, 32]}
    resolved = OnnxBlockWiseRtnQuantization.get_config_params(cpu, {"block_size": support})
    with pytest.raises(PassParamError, match="power of two") as info:
        OnnxBlockWiseRtnQuantization.config_for_point(cpu, resolved, {"block_size": block_size})
    assert info.value.params == ("block_size",)
    config = OnnxBlockWiseRtnQuantization.config_for_point(cpu, resolved, {"block_size": 32})
    assert OnnxBlockWiseRtnQuantization.validate_config(config, cpu)


def test_block_size_larger_than_k_warns(run_pass, bert, caplog):
    # K is 64 for most MatMuls: a block of 128 pads every one of them.
    with caplog.at_level(logging.WARNING, logger="olive_passes_quant"):
        result = run_pass(OnnxBlockWiseRtnQuantization, bert, {"block_size": 128})
    assert op_types(result).get("MatMulNBits") == 12
    assert "not a multiple of block_size 128" in caplog.text
