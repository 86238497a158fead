"""ONNX model handlers and the helpers passes use to write models, on real files and sessions."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from olive.exceptions import ModelLoadError
from olive.model import ONNXModelHandler
from olive.model.types import model_from_json
from olive.passes.onnx.common import (
    get_external_data_config,
    model_proto_to_olive_model,
    resolve_onnx_path,
)


def _matmul_model(k: int = 64, n: int = 64) -> onnx.ModelProto:
    weight = numpy_helper.from_array(np.random.default_rng(0).standard_normal((k, n)).astype(np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="matmul")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", n])],
        [weight],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_resolve_onnx_path(tmp_path):
    assert resolve_onnx_path(tmp_path / "out") == str(tmp_path / "out" / "model.onnx")
    assert (tmp_path / "out").is_dir()
    assert resolve_onnx_path(tmp_path / "x" / "m.onnx") == str(tmp_path / "x" / "m.onnx")


def test_inline_model_round_trip_runs_in_onnxruntime(tmp_path):
    handler = model_proto_to_olive_model(_matmul_model(), tmp_path / "out", {})
    assert handler.model_path == str(tmp_path / "out" / "model.onnx")
    session = handler.prepare_session()
    x = np.ones((2, 64), np.float32)
    (y,) = session.run(None, {"x": x})
    assert y.shape == (2, 64)
    assert handler.size_on_disk == (tmp_path / "out" / "model.onnx").stat().st_size


def test_external_data_is_counted_and_loaded(tmp_path):
    config = {**{k: p.default_value for k, p in get_external_data_config().items()}, "save_as_external_data": True}
    handler = model_proto_to_olive_model(_matmul_model(256, 256), tmp_path / "out", config)
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == ["model.onnx", "model.onnx.data"]
    data_bytes = (tmp_path / "out" / "model.onnx.data").stat().st_size
    assert data_bytes >= 256 * 256 * 4
    assert handler.size_on_disk == data_bytes + (tmp_path / "out" / "model.onnx").stat().st_size
    # a folder handler finds the single .onnx file and loads the weights beside it
    folder = ONNXModelHandler(tmp_path / "out")
    assert folder.model_path.endswith("model.onnx")
    assert len(folder.load_model().graph.initializer[0].raw_data) == 256 * 256 * 4
    assert folder.prepare_session().run(None, {"x": np.ones((1, 256), np.float32)})[0].shape == (1, 256)


def test_io_config(tmp_path):
    handler = model_proto_to_olive_model(_matmul_model(), tmp_path / "m.onnx", None)
    io = handler.get_io_config()
    assert io["input_names"] == ["x"]
    assert io["input_shapes"] == [["batch", 64]]
    assert io["input_types"] == ["float32"]
    assert io["output_names"] == ["y"]


def test_inference_settings_reach_the_session(tmp_path):
    handler = model_proto_to_olive_model(_matmul_model(), tmp_path / "out", None)
    handler.inference_settings = {
        "execution_provider": ["CPUExecutionProvider"],
        "session_options": {"intra_op_num_threads": 1, "graph_optimization_level": "ORT_DISABLE_ALL"},
    }
    session = handler.prepare_session()
    assert session.get_session_options().intra_op_num_threads == 1
    assert int(session.get_session_options().graph_optimization_level) == 0
    assert session.get_providers() == ["CPUExecutionProvider"]


def test_json_round_trip(tmp_path):
    handler = model_proto_to_olive_model(_matmul_model(), tmp_path / "out", None)
    handler.model_attributes["note"] = "x"
    again = model_from_json(handler.to_json())
    assert isinstance(again, ONNXModelHandler)
    assert again.model_path == handler.model_path
    assert again.model_attributes == {"note": "x"}
    flat = model_from_json({"type": "ONNXModel", "model_path": handler.model_path})
    assert flat.model_path == handler.model_path


def test_missing_model_is_a_clear_error(tmp_path):
    with pytest.raises(ModelLoadError, match=r"ONNX model '.*nope.onnx' does not exist; check the model_path"):
        ONNXModelHandler(tmp_path / "nope.onnx").validate()


def test_not_onnx_is_a_clear_error(tmp_path):
    bogus = tmp_path / "model.onnx"
    bogus.write_text("this is not a protobuf")
    with pytest.raises(ModelLoadError, match="is not a valid ONNX model"):
        ONNXModelHandler(bogus).validate()


def test_empty_file_is_not_a_valid_model(tmp_path):
    # protobuf reads zero bytes as an empty ModelProto; validate() must not pass it on to onnxruntime.
    (tmp_path / "empty.onnx").write_bytes(b"")
    with pytest.raises(ModelLoadError, match=r"empty.onnx' is not a valid ONNX model \(it holds no graph\)"):
        ONNXModelHandler(tmp_path / "empty.onnx").validate()


def test_folder_with_several_models_needs_a_file_name(tmp_path):
    for name in ("a.onnx", "b.onnx"):
        onnx.save(_matmul_model(), tmp_path / name)
    with pytest.raises(ModelLoadError, match="set onnx_file_name"):
        _ = ONNXModelHandler(tmp_path).model_path
    assert ONNXModelHandler(tmp_path, onnx_file_name="b.onnx").model_path.endswith("b.onnx")


def test_missing_external_data_is_a_clear_error(tmp_path):
    config = {"save_as_external_data": True, "size_threshold": 0}
    handler = model_proto_to_olive_model(_matmul_model(), tmp_path / "out", config)
    (tmp_path / "out" / "model.onnx.data").unlink()
    with pytest.raises(ModelLoadError, match="external data"):
        ONNXModelHandler(handler.model_path).load_model()


def test_unknown_session_option_is_a_clear_error(tmp_path):
    handler = model_proto_to_olive_model(_matmul_model(), tmp_path / "out", None)
    with pytest.raises(ModelLoadError, match="unknown onnxruntime session option 'threads'"):
        handler.prepare_session({"session_options": {"threads": 2}})


def test_unknown_model_type():
    # (PyTorchModel, offered by olive-passes-torch when installed: test_plugin_types.py)
    with pytest.raises(ModelLoadError, match="unknown model type 'KerasModel'"):
        model_from_json({"type": "KerasModel", "config": {"model_path": "x"}})
