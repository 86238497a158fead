"""Shared helpers: models with planted clean-up targets, and a CPU accelerator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


def planted_model():
    """An MLP with work a peephole optimizer must remove without changing the output.

    Planted: an Identity chain on the input, a constant sub-graph (Constant -> Mul -> Add on initializers)
    feeding a bias, a float->float Cast chain, and a dead branch whose result nothing reads.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((16, 32)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((32, 8)).astype(np.float32), "w2")
    half = numpy_helper.from_array(rng.standard_normal((32,)).astype(np.float32), "bias_half")
    nodes = [
        helper.make_node("Identity", ["input"], ["id1"], name="planted/Identity_0"),
        helper.make_node("Identity", ["id1"], ["id2"], name="planted/Identity_1"),
        helper.make_node(
            "Constant", [], ["two"], name="planted/Constant", value=numpy_helper.from_array(np.float32(2.0))
        ),
        helper.make_node("Mul", ["bias_half", "two"], ["bias_doubled"], name="planted/fold/Mul"),
        helper.make_node("Sub", ["bias_doubled", "bias_half"], ["bias"], name="planted/fold/Sub"),
        helper.make_node("MatMul", ["id2", "w1"], ["h"], name="/fc1/MatMul"),
        helper.make_node("Add", ["h", "bias"], ["hb"], name="/fc1/Add"),
        helper.make_node("Cast", ["hb"], ["c1"], name="planted/Cast_0", to=TensorProto.FLOAT),
        helper.make_node("Cast", ["c1"], ["c2"], name="planted/Cast_1", to=TensorProto.FLOAT),
        helper.make_node("Relu", ["c2"], ["r"], name="/act/Relu"),
        helper.make_node("Neg", ["r"], ["dead1"], name="planted/dead/Neg"),
        helper.make_node("Abs", ["dead1"], ["dead2"], name="planted/dead/Abs"),
        helper.make_node("MatMul", ["r", "w2"], ["output"], name="/fc2/MatMul"),
    ]
    graph = helper.make_graph(
        nodes,
        "planted",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 16])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 8])],
        initializer=[w1, w2, half],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model


@pytest.fixture
def planted(tmp_path: Path):
    from olive.testing.models import save_model

    return save_model(planted_model(), tmp_path / "planted")


def run_outputs(model, inputs, settings=None) -> list[np.ndarray]:
    """Outputs of ``model`` on ``inputs`` in a real onnxruntime session."""
    return model.prepare_session(inference_settings=settings).run(None, inputs)


def op_counts(model) -> dict[str, int]:
    from collections import Counter

    return dict(Counter(node.op_type for node in model.load_model().graph.node))


def files_under(path: Path) -> list[Path]:
    return sorted(p for p in Path(path).rglob("*") if p.is_file()) if Path(path).exists() else []
