"""Reading an ONNX file's graph facts without its weights: the same answers as onnx, fewer reads."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import numpy as np
import onnx
import pytest
from engine_support import edit_in_place
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import _get_all_tensors, uses_external_data

from olive.cache import store
from olive.model.handler import ONNXModelHandler
from olive.model.onnx_scan import NUMPY_DTYPES, SCANS, scan_onnx_file
from olive.testing.models import bert_like_model, bert_like_model_files, conv_model, mlp_model, save_model


def _onnx_io(proto: onnx.ModelProto) -> dict:
    """get_io_config as onnx answers it (the handler's reading before the scan)."""
    initializers = {init.name for init in proto.graph.initializer}

    def describe(values):
        names, shapes, types = [], [], []
        for value in values:
            if value.name in initializers:
                continue
            tensor_type = value.type.tensor_type
            names.append(value.name)
            shapes.append(
                [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in tensor_type.shape.dim]
            )
            types.append(str(helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)))
        return names, shapes, types

    i = describe(proto.graph.input)
    o = describe(proto.graph.output)
    keys = ("names", "shapes", "types")
    return {
        **{f"input_{k}": v for k, v in zip(keys, i, strict=True)},
        **{f"output_{k}": v for k, v in zip(keys, o, strict=True)},
    }


def _onnx_locations(proto: onnx.ModelProto) -> list[str]:
    found: list[str] = []
    for tensor in _get_all_tensors(proto):
        if uses_external_data(tensor):
            for entry in tensor.external_data:
                if entry.key == "location" and entry.value not in found:
                    found.append(entry.value)
    return found


def _with_subgraph_and_constants() -> onnx.ModelProto:
    """An If whose branches hold initializers and a Constant node: tensors outside graph.initializer."""
    weight = numpy_helper.from_array(np.ones((4, 4), np.float32), "then_w")
    const = helper.make_node(
        "Constant", [], ["c"], value=numpy_helper.from_array(np.full((4,), 2.0, np.float32), "c_value")
    )
    then = helper.make_graph(
        [const, helper.make_node("MatMul", ["x", "then_w"], ["m"]), helper.make_node("Add", ["m", "c"], ["y_then"])],
        "then",
        [],
        [helper.make_tensor_value_info("y_then", TensorProto.FLOAT, [2, 4])],
        [weight],
    )
    other = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y_else"])],
        "else",
        [],
        [helper.make_tensor_value_info("y_else", TensorProto.FLOAT, [2, 4])],
    )
    graph = helper.make_graph(
        [helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)],
        "g",
        [
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1, 4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("external", [False, True])
@pytest.mark.parametrize("make", [mlp_model, conv_model, _with_subgraph_and_constants, bert_like_model])
def test_the_scan_answers_as_onnx_does(tmp_path: Path, make, external: bool) -> None:
    proto = make()
    path = tmp_path / "model.onnx"
    if external:
        # one file per tensor, and the tiny ones too: every tensor in the graph and its subgraphs moves out
        onnx.save_model(proto, path, save_as_external_data=True, all_tensors_to_one_file=False, size_threshold=0)
    else:
        onnx.save_model(proto, path)
    loaded = onnx.load(path, load_external_data=False)
    facts = scan_onnx_file(path)
    assert facts.has_graph
    assert list(facts.external_locations) == _onnx_locations(loaded)
    assert bool(facts.external_locations) == external
    assert ONNXModelHandler(path).get_io_config() == _onnx_io(loaded)
    assert ONNXModelHandler(path).external_data_files() == [str(tmp_path / loc) for loc in _onnx_locations(loaded)]


def test_the_dtype_names_are_onnxs() -> None:
    for elem_type, name in NUMPY_DTYPES.items():
        assert str(helper.tensor_dtype_to_np_dtype(elem_type)) == name


def test_a_type_the_scan_does_not_name_is_left_to_onnx(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT8E4M3FN, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT8E4M3FN, [3])],
    )
    path = tmp_path / "f8.onnx"
    onnx.save_model(helper.make_model(graph), path)
    assert ONNXModelHandler(path).get_io_config()["input_types"] == ["float8_e4m3fn"]


def test_the_scan_reads_the_graph_not_the_weights(tmp_path: Path) -> None:
    """An inline model's weights are stepped over: the scan allocates a small fraction of the file, where onnx's
    parse allocates all of it."""
    handler = save_model(bert_like_model(num_layers=2, hidden_size=256, num_heads=4), tmp_path)
    size = Path(handler.model_path).stat().st_size
    assert size > 2 * 2**20
    tracemalloc.start()
    try:
        scan_onnx_file(handler.model_path)
        _, scan_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert scan_peak < size / 20


def test_a_file_is_scanned_once_per_signature_and_again_when_it_changes(tmp_path: Path, monkeypatch) -> None:
    path = Path(save_model(mlp_model(), tmp_path).model_path)
    # A file changed within the last seconds is never remembered (a same-tick rewrite could go unseen): the
    # clock is moved past that window instead of waiting.
    monkeypatch.setattr(store, "_now", lambda: time.time() + 60)
    before = SCANS.get(str(path), 0)
    for _ in range(3):
        handler = ONNXModelHandler(path)
        handler.validate()
        handler.get_io_config()
        handler.external_data_files()
        _ = handler.size_on_disk
    assert SCANS[str(path)] - before == 1
    # Same path, size, inode and mtime, other content: the ctime moved, so the file is read again.
    other = mlp_model()
    renamed = other.graph.output[0].name[::-1]  # same length
    other.graph.output[0].name = other.graph.node[-1].output[0] = renamed
    edit_in_place(path, other.SerializeToString())
    assert ONNXModelHandler(path).get_io_config()["output_names"] == [renamed]
    assert SCANS[str(path)] - before == 2


def test_a_file_changed_just_now_is_read_every_time(tmp_path: Path) -> None:
    path = save_model(mlp_model(), tmp_path).model_path
    before = SCANS.get(path, 0)
    ONNXModelHandler(path).get_io_config()
    ONNXModelHandler(path).get_io_config()
    assert SCANS[path] - before == 2


def test_files_with_many_tensors_in_a_folder(tmp_path: Path) -> None:
    """bert_like_model_files writes weights straight into model.onnx.data: one location, as onnx reads it."""
    path = bert_like_model_files(tmp_path, num_layers=1, hidden_size=64, num_heads=2).model_path
    loaded = onnx.load(path, load_external_data=False)
    assert list(scan_onnx_file(path).external_locations) == _onnx_locations(loaded) == ["model.onnx.data"]


def test_subgraphs_nested_past_the_stack_are_one_model_error(tmp_path):
    from olive.exceptions import ModelLoadError
    from olive.model.handler import ONNXModelHandler

    def field(number: int, payload: bytes) -> bytes:
        def varint(value: int) -> bytes:
            out = bytearray()
            while True:
                out.append((value & 0x7F) | (0x80 if value > 0x7F else 0))
                value >>= 7
                if not value:
                    return bytes(out)

        return varint(number << 3 | 2) + varint(len(payload)) + payload

    graph = b""
    for _ in range(5000):  # graph.node -> node.attribute -> attribute.g -> graph ...
        graph = field(1, field(5, field(6, graph)))
    path = tmp_path / "deep.onnx"
    path.write_bytes(field(7, graph))
    with pytest.raises(ModelLoadError, match="is not a valid ONNX model"):
        ONNXModelHandler(str(path)).validate()
