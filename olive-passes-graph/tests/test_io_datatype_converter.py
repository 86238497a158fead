from __future__ import annotations

import numpy as np
import pytest
from conftest import op_counts, run_outputs

from olive.exceptions import PassConfigError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.testing.models import save_model
from olive_passes_graph.io_datatype_converter import OnnxIODataTypeConverter


def half_model():
    """float16 ``input_ids_embeds`` -> MatMul -> ``logits`` (also read by a second output's Relu)."""
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float16), "w")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["embeds", "w"], ["logits"], name="head"),
            helper.make_node("Relu", ["logits"], ["hidden"], name="relu"),
        ],
        "half",
        [helper.make_tensor_value_info("embeds", TensorProto.FLOAT16, ["n", 4])],
        [
            helper.make_tensor_value_info("logits", TensorProto.FLOAT16, ["n", 3]),
            helper.make_tensor_value_info("hidden", TensorProto.FLOAT16, ["n", 3]),
        ],
        initializer=[w],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def types(model):
    graph = model.load_model().graph
    return {v.name: v.type.tensor_type.elem_type for v in (*graph.input, *graph.output)}


def test_default_converts_logits_to_float(tmp_path, run_pass):
    model = save_model(half_model(), tmp_path / "half")
    result = run_pass(OnnxIODataTypeConverter, model)
    assert types(result) == {"embeds": 10, "logits": 1, "hidden": 10}
    assert op_counts(result) == {"MatMul": 1, "Relu": 1, "Cast": 1}
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float16)
    before, after = run_outputs(model, {"embeds": x}), run_outputs(result, {"embeds": x})
    assert after[0].dtype == np.float32 and after[1].dtype == np.float16
    # onnxruntime computes float16 MatMuls in float on CPU: the float output skips the last float16 rounding.
    np.testing.assert_allclose(after[0], before[0].astype(np.float32), rtol=2e-3, atol=1e-3)
    np.testing.assert_allclose(after[1], before[1], rtol=2e-3, atol=1e-3)


def test_every_io_with_an_empty_pattern(tmp_path, run_pass):
    model = save_model(half_model(), tmp_path / "half")
    result = run_pass(OnnxIODataTypeConverter, model, {"name_pattern": ""})
    assert types(result) == {"embeds": 1, "logits": 1, "hidden": 1}
    assert op_counts(result)["Cast"] == 3
    x = np.random.default_rng(2).standard_normal((2, 4)).astype(np.float16)
    before = run_outputs(model, {"embeds": x})
    after = run_outputs(result, {"embeds": x.astype(np.float32)})
    for a, b in zip(after, before, strict=True):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b.astype(np.float32), rtol=2e-3, atol=1e-3)


def test_nothing_matching_leaves_the_graph(tiny_mlp, run_pass):
    result = run_pass(OnnxIODataTypeConverter, tiny_mlp)
    assert op_counts(result) == op_counts(tiny_mlp)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"source_dtype": 99}, "param 'source_dtype' is 99, which is not an ONNX element type"),
        ({"source_dtype": 1, "target_dtype": 1}, "nothing would change"),
        ({"name_pattern": "logits("}, "is not a regular expression"),
    ],
)
def test_config_errors(config, message):
    with pytest.raises(PassConfigError, match=message):
        OnnxIODataTypeConverter.generate_config(DEFAULT_CPU_ACCELERATOR, config)
