"""onnxruntime's weight-only quantizers through ``run_quantizer``: any number of blocks per column quantizes, with the
quantizer's own numbers; a failure is one message naming the pass, the MatMul and the settings."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from olive.exceptions import PassRunError
from olive.model.handler import ONNXModelHandler
from olive.testing import run_pass
from olive_passes_quant.k_quant import OnnxKQuantQuantization
from olive_passes_quant.ort_quantizer import pack_zero_points, run_quantizer

BLOCK = 32


def _matmul(weight: np.ndarray) -> onnx.ModelProto:
    k, n = weight.shape
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="/mlp/down_proj/MatMul")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])],
        [numpy_helper.from_array(weight, "W")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _quantize(weight: np.ndarray, algorithm: str) -> onnx.ModelProto:
    from onnxruntime.quantization import matmul_nbits_quantizer as q

    config = {"k_quant": q.KQuantWeightOnlyQuantConfig, "rtn": q.RTNWeightOnlyQuantConfig}[algorithm]()
    quantizer = q.MatMulNBitsQuantizer(
        _matmul(weight), bits=4, block_size=BLOCK, is_symmetric=False, algo_config=config
    )
    return run_quantizer(quantizer, owner="test", settings=algorithm)


def _arrays(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return {init.name.rsplit("_", 1)[-1]: numpy_helper.to_array(init) for init in model.graph.initializer}


@pytest.mark.parametrize("algorithm", ["k_quant", "rtn"])
def test_an_odd_number_of_blocks_gives_the_blocks_of_the_same_weight_padded_to_an_even_number(algorithm):
    # K = 352 is 11 blocks of 32 (Qwen2.5-0.5B's 896 at block size 128 is 7): onnxruntime's own packing raises on it.
    weight = np.random.default_rng(0).standard_normal((352, 128)).astype(np.float32)
    padded = np.concatenate([weight, np.zeros((BLOCK, 128), np.float32)])
    odd, even = _arrays(_quantize(weight, algorithm)), _arrays(_quantize(padded, algorithm))
    # Blocks are quantized independently: the first 11 of the 12-block weight are the 11-block weight's.
    assert odd["Q4G32"].shape == (128, 11, 16)
    assert np.array_equal(odd["Q4G32"], even["Q4G32"][:, :11])
    assert np.array_equal(odd["scale"].reshape(128, -1), even["scale"].reshape(128, -1)[:, :11])
    # Each column's zero points in a row of their own: 6 bytes, the last one's high nibble unused (8).
    assert odd["zp"].shape == (128, 6)
    assert np.array_equal(odd["zp"][:, :5], even["zp"][:, :5])
    assert np.array_equal(odd["zp"][:, 5] & 0x0F, even["zp"][:, 5] & 0x0F) and set(odd["zp"][:, 5] >> 4) == {8}
    # onnxruntime runs it and computes what the padded weight computes on zero-padded inputs.
    x = np.random.default_rng(1).standard_normal((1, 352)).astype(np.float32)
    y = ort.InferenceSession(_quantize(weight, algorithm).SerializeToString()).run(None, {"x": x})[0]
    x_padded = np.concatenate([x, np.zeros((1, BLOCK), np.float32)], axis=1)
    y_padded = ort.InferenceSession(_quantize(padded, algorithm).SerializeToString()).run(None, {"x": x_padded})[0]
    # The same blocks, so the same products; the kernel may sum K in another order for another K.
    np.testing.assert_allclose(y, y_padded, rtol=1e-5, atol=1e-5)
    assert np.abs(y - x @ weight).mean() < 0.15 * np.abs(x @ weight).mean()


def test_zero_points_are_packed_a_column_a_row_two_blocks_a_byte():
    zero_points = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.uint8).reshape(-1, 1)
    assert pack_zero_points(zero_points, columns=2).tolist() == [[0x21, 0x83], [0x54, 0x86]]
    assert pack_zero_points(np.array([1, 2, 3, 4], dtype=np.uint8), columns=1).tolist() == [[0x21, 0x43]]


def test_a_quantizer_failure_names_the_pass_the_matmul_and_the_settings():
    from onnxruntime.quantization import matmul_nbits_quantizer as q

    # An empty weight (K = 0) is a graph onnxruntime's k-quant raises on (a numpy reshape deep in its code).
    quantizer = q.MatMulNBitsQuantizer(
        _matmul(np.zeros((0, 32), np.float32)), bits=4, block_size=BLOCK, algo_config=q.KQuantWeightOnlyQuantConfig()
    )
    with pytest.raises(PassRunError) as caught:
        run_quantizer(quantizer, owner="pass OnnxKQuantQuantization", settings="k-quant, 4 bits, block_size 32")
    message = str(caught.value)
    assert message.startswith("pass OnnxKQuantQuantization: ") and "MatMul '/mlp/down_proj/MatMul'" in message
    assert "k-quant, 4 bits, block_size 32" in message and "ValueError: cannot reshape" in message
    assert "nodes_to_exclude" in message and "-v shows the quantizer's traceback" in message
    assert isinstance(caught.value.__cause__, ValueError)  # the library's exception stays chained for -v


def test_the_passes_leave_an_empty_weight_as_it_is(tmp_path, caplog):
    import logging

    caplog.set_level(logging.WARNING)
    source = tmp_path / "model.onnx"
    onnx.save(_matmul(np.zeros((0, 32), np.float32)), source)
    out = run_pass(OnnxKQuantQuantization, ONNXModelHandler(str(source)), {}, output_dir=tmp_path / "q")
    assert [n.op_type for n in onnx.load(out.model_path).graph.node] == ["MatMul"]
    assert "no MatMul with a constant 2-D weight to quantize" in caplog.text
