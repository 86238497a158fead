"""The MatMulNBits passes (RTN, HQQ, k-quant, GPTQ) on plain ONNX models: one set of checks, one choice of MatMuls
(adapter slots and empty weights left alone), one run, and the per-weight pieces the int4 guard assembles."""

from __future__ import annotations

from importlib.util import find_spec

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from olive.exceptions import PassConfigError, PassRunError
from olive.hardware import DEFAULT_CPU_ACCELERATOR as CPU
from olive.model.handler import ONNXModelHandler
from olive.testing import mlp_model, random_inputs, run_pass, save_model
from olive_passes_quant.blockwise import OnnxBlockWiseRtnQuantization
from olive_passes_quant.gptq import OnnxGptqQuantization
from olive_passes_quant.hqq import OnnxHqqQuantization
from olive_passes_quant.k_quant import OnnxKQuantQuantization
from olive_passes_quant.matmul_pieces import MatMulPieces
from olive_passes_quant.weight_only import MatMulNBitsPass, quantizable_matmuls

ONNX_PASSES = [OnnxBlockWiseRtnQuantization, OnnxHqqQuantization, OnnxKQuantQuantization]
#: onnxruntime's HQQ solver runs on torch: where torch is not installed (tox -e quant) HQQ's runs must stop with
#: the error that says so; tox -e genai, which has torch, runs these tests again with HQQ quantizing.
TORCH = find_spec("torch") is not None


def _runs_here(cls) -> bool:
    """Whether ``cls`` can quantize in this environment; if not, its run is checked to say why, and nothing more."""
    return TORCH or cls is not OnnxHqqQuantization


def _needs_torch(cls, model, tmp_path) -> None:
    with pytest.raises(PassRunError, match=r"OnnxHqqQuantization needs torch.*olive-passes-quant\[hqq\]"):
        run_pass(cls, model, {"block_size": 32}, output_dir=tmp_path / "no-torch")
    assert not (tmp_path / "no-torch" / "model.onnx").exists()


ALL_PASSES = [*ONNX_PASSES, OnnxGptqQuantization]


def _nodes(model) -> list[onnx.NodeProto]:
    return list(onnx.load(model.model_path, load_external_data=False).graph.node)


def _bits(model) -> dict[str, int]:
    return {n.name: {a.name: a.i for a in n.attribute}["bits"] for n in _nodes(model) if n.op_type == "MatMulNBits"}


@pytest.fixture
def mlp(tmp_path) -> ONNXModelHandler:
    return save_model(mlp_model(in_features=64, hidden=128, out_features=64), tmp_path / "mlp")


def _outputs(model, feeds) -> np.ndarray:
    return ort.InferenceSession(model.model_path).run(None, feeds)[0]


@pytest.mark.parametrize("cls", ALL_PASSES)
def test_every_weight_only_pass_shares_the_base_and_its_block_size_check(cls):
    assert issubclass(cls, MatMulNBitsPass)
    config = {"block_size": 48}
    if cls is OnnxGptqQuantization:
        config["data_path"] = "calib.txt"
    with pytest.raises(PassConfigError, match="param 'block_size' is 48, which MatMulNBits does not take"):
        cls.generate_config(CPU, config, disable_search=True)


@pytest.mark.parametrize("cls", ONNX_PASSES)
def test_a_plain_onnx_model_gives_a_plain_onnx_model_that_stays_close(cls, mlp, tmp_path):
    if not _runs_here(cls):
        return _needs_torch(cls, mlp, tmp_path)
    out = run_pass(cls, mlp, {"block_size": 32}, output_dir=tmp_path / "q")
    assert type(out) is ONNXModelHandler
    ops = [n.op_type for n in _nodes(out)]
    assert ops.count("MatMulNBits") == 2 and "MatMul" not in ops
    feeds = random_inputs(mlp, batch_size=4)
    ref, got = _outputs(mlp, feeds), _outputs(out, feeds)
    # 4-bit blocks of random weights: about 10% error on each output, in every method.
    assert np.abs(got - ref).mean() < 0.15 * np.abs(ref).mean()
    cosine = float((got * ref).sum() / np.linalg.norm(got) / np.linalg.norm(ref))
    assert cosine > 0.99
    if cls is OnnxHqqQuantization:
        assert np.abs(got - ref).max() < 0.1 * np.abs(ref).max()


@pytest.mark.parametrize("cls", ONNX_PASSES)
def test_accuracy_level_by_name_or_number_reaches_every_matmulnbits_node(cls, mlp, tmp_path):
    if not _runs_here(cls):
        return _needs_torch(cls, mlp, tmp_path)
    # onnxruntime's HQQ drops the accuracy level it is given; the run writes it.
    for level in ("int8", 4):
        out = run_pass(cls, mlp, {"block_size": 32, "accuracy_level": level}, output_dir=tmp_path / str(level))
        levels = [{a.name: a.i for a in n.attribute}.get("accuracy_level") for n in _nodes(out) if n.domain]
        assert levels == [4, 4]
    with pytest.raises(PassConfigError, match="param 'accuracy_level'"):
        cls.generate_config(CPU, {"accuracy_level": 7}, disable_search=True)


def test_k_quant_at_8_bits_writes_8_bit_blocks_closer_than_4_bit_ones(mlp, tmp_path):
    # onnxruntime's k-quant takes 4 bits for every node unless told per node: bits=8 used to write 4-bit blocks.
    eight = run_pass(OnnxKQuantQuantization, mlp, {"bits": 8}, output_dir=tmp_path / "8")
    four = run_pass(OnnxKQuantQuantization, mlp, {"bits": 4}, output_dir=tmp_path / "4")
    assert set(_bits(eight).values()) == {8} and set(_bits(four).values()) == {4}
    feeds = random_inputs(mlp, batch_size=4)
    ref = _outputs(mlp, feeds)
    assert np.abs(_outputs(eight, feeds) - ref).max() < 0.2 * np.abs(_outputs(four, feeds) - ref).max()


def test_nodes_to_include_restricts_hqq_to_those_matmuls(mlp, tmp_path):
    if not _runs_here(OnnxHqqQuantization):
        return _needs_torch(OnnxHqqQuantization, mlp, tmp_path)
    first = next(n.name for n in _nodes(mlp) if n.op_type == "MatMul")
    out = run_pass(OnnxHqqQuantization, mlp, {"block_size": 32, "nodes_to_include": [first]}, output_dir=tmp_path)
    assert [n.op_type for n in _nodes(out)].count("MatMul") == 1
    assert list(_bits(out)) == [f"{first}_Q4"]


def _slot_and_empty_model() -> onnx.ModelProto:
    """A constant weight, a weight that is also a graph input (an adapter slot a run may feed) and an empty one."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "W")
    slot = numpy_helper.from_array(np.zeros((64, 64), np.float32), "slot")
    empty = numpy_helper.from_array(np.zeros((0, 64), np.float32), "empty")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "W"], ["h"], name="constant"),
            helper.make_node("MatMul", ["h", "slot"], ["y"], name="adapter"),
            helper.make_node("MatMul", ["z", "empty"], ["e"], name="empty"),
        ],
        "g",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64]),
            helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 0]),
            helper.make_tensor_value_info("slot", TensorProto.FLOAT, [64, 64]),
        ],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64]),
            helper.make_tensor_value_info("e", TensorProto.FLOAT, [1, 64]),
        ],
        [weight, slot, empty],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("cls", ONNX_PASSES)
def test_weights_a_run_may_feed_and_empty_weights_stay_as_they_are(cls, tmp_path):
    proto = _slot_and_empty_model()
    assert quantizable_matmuls(proto) == {"constant": 64}
    onnx.save(proto, tmp_path / "model.onnx")
    if not _runs_here(cls):
        return _needs_torch(cls, ONNXModelHandler(str(tmp_path / "model.onnx")), tmp_path)
    out = run_pass(cls, ONNXModelHandler(str(tmp_path / "model.onnx")), {"block_size": 32}, output_dir=tmp_path / "q")
    assert {n.name: n.op_type for n in _nodes(out)} == {
        "constant_Q4": "MatMulNBits",
        "adapter": "MatMul",
        "empty": "MatMul",
    }


def test_gptq_on_a_model_type_without_a_tokenizer_says_what_it_needs(mlp, tmp_path):
    with pytest.raises(PassRunError, match=r"GPTQ calibrates on text through the model's own tokenizer.*GenAIModel"):
        OnnxGptqQuantization(CPU, {"data_path": str(tmp_path / "calib.txt")}).run(mlp, str(tmp_path / "out"))


def test_pieces_assembled_are_the_whole_model_quantized_with_the_same_settings(mlp, tmp_path):
    names = [n.name for n in _nodes(mlp) if n.op_type == "MatMul"]
    config = {"block_size": 32, "accuracy_level": 4, "customized_weight_config": {names[1]: {"bits": 8}}}
    whole = run_pass(OnnxKQuantQuantization, mlp, config, output_dir=tmp_path / "whole")
    pieces = MatMulPieces(mlp, block_size=32, accuracy_level=4, owner="test")
    assert list(pieces.targets) == names
    mixed = pieces.assemble({names[0]: 4, names[1]: 8}, tmp_path / "mixed", {})
    assert type(mixed) is ONNXModelHandler
    assert _bits(mixed) == _bits(whole) == {f"{names[0]}_Q4": 4, f"{names[1]}_Q8": 8}
    got = {i.name: numpy_helper.to_array(i) for i in onnx.load(mixed.model_path).graph.initializer}
    expected = {i.name: numpy_helper.to_array(i) for i in onnx.load(whole.model_path).graph.initializer}
    assert got.keys() == expected.keys()
    assert all(np.array_equal(got[k], expected[k]) for k in got)
    # The dequantized piece is what the MatMulNBits node multiplies by: close to the float weight.
    weight = pieces.weight(names[0])
    assert np.abs(pieces.dequantized(names[0]) - weight).max() < 0.2 * np.abs(weight).max()
