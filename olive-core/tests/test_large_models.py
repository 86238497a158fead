"""Models past protobuf's 2 GB limit, exercised on small real models with their weights forced outside.

The mechanisms that make a 2.2 GB model work (weights streamed into external data by the test kit, the
graph loaded without its weights, weights linked into a scratch folder and copied into the output one
tensor at a time, the inline writer that never serializes the whole model, the size check that refuses
a tool before work) are the same at any size; ``benchmarks/bench_scale.py`` runs them at 2.2 GB.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper
from onnx.external_data_helper import ExternalDataInfo, uses_external_data

from olive.exceptions import ModelLoadError, PassRunError
from olive.model.handler import ONNXModelHandler
from olive.passes.onnx import common
from olive.passes.onnx.common import (
    copy_external_data,
    load_without_weights,
    model_proto_to_file,
    model_proto_to_olive_model,
    require_protobuf_size,
)
from olive.testing.models import bert_like_model, bert_like_model_files, bert_like_weight_bytes, random_inputs


def _weights(proto: onnx.ModelProto, base_dir: str | None = None) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t, base_dir or "") for t in proto.graph.initializer}


def _outputs(path: str, proto: onnx.ModelProto) -> np.ndarray:
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, random_inputs(proto, batch_size=2, sequence_length=8))[0]


# --------------------------------------------------------------------------------------------------
# The test kit's streaming factory
# --------------------------------------------------------------------------------------------------
def test_streamed_model_has_the_weights_of_the_in_memory_one(tmp_path):
    handler = bert_like_model_files(tmp_path, intermediate_size=128, seed=3)
    on_disk = onnx.load(handler.model_path)
    in_memory = bert_like_model(seed=3)
    assert _weights(on_disk).keys() == _weights(in_memory).keys()
    for name, value in _weights(in_memory).items():
        np.testing.assert_array_equal(_weights(on_disk)[name], value)
    np.testing.assert_array_equal(_outputs(handler.model_path, in_memory), _outputs_of(in_memory))


def _outputs_of(proto: onnx.ModelProto) -> np.ndarray:
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, random_inputs(proto, batch_size=2, sequence_length=8))[0]


def test_streamed_model_keeps_the_graph_small_and_the_weights_outside(tmp_path):
    handler = bert_like_model_files(tmp_path, num_layers=3, hidden_size=128, size_threshold=0)
    graph_file = tmp_path / "model.onnx"
    data_file = tmp_path / "model.onnx.data"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx", "model.onnx.data"]
    # Every tensor went to the data file (size_threshold=0); the graph file holds names and offsets only.
    proto = onnx.load(str(graph_file), load_external_data=False)
    assert all(uses_external_data(t) for t in proto.graph.initializer)
    assert graph_file.stat().st_size < 50_000 < data_file.stat().st_size
    weights = bert_like_weight_bytes(3, 128)
    assert weights <= data_file.stat().st_size < weights + 4096 * len(proto.graph.initializer)
    assert handler.size_on_disk == graph_file.stat().st_size + data_file.stat().st_size


def test_streamed_model_is_seeded(tmp_path):
    first = bert_like_model_files(tmp_path / "a", hidden_size=128, seed=1)
    again = bert_like_model_files(tmp_path / "b", hidden_size=128, seed=1)
    other = bert_like_model_files(tmp_path / "c", hidden_size=128, seed=2)
    data = [(tmp_path / d / "model.onnx.data").read_bytes() for d in ("a", "b", "c")]
    assert data[0] == data[1] != data[2]
    assert first.size_on_disk == again.size_on_disk == other.size_on_disk


# --------------------------------------------------------------------------------------------------
# Saving: the inline writer and the automatic switch to external data
# --------------------------------------------------------------------------------------------------
def test_inline_writer_gives_the_message_onnx_writes(tmp_path):
    proto = bert_like_model()
    proto.metadata_props.add(key="origin", value="test")
    assert model_proto_to_file(proto, tmp_path / "ours.onnx") is False
    onnx.save_model(proto, str(tmp_path / "onnx.onnx"))
    ours, reference = onnx.load(str(tmp_path / "ours.onnx")), onnx.load(str(tmp_path / "onnx.onnx"))
    assert ours == reference
    assert (tmp_path / "ours.onnx").stat().st_size == (tmp_path / "onnx.onnx").stat().st_size
    onnx.checker.check_model(str(tmp_path / "ours.onnx"), full_check=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["onnx.onnx", "ours.onnx"]  # no temporary left


def test_a_model_past_the_limit_goes_to_external_data_without_being_asked(tmp_path, monkeypatch):
    proto = bert_like_model()
    # The real limit is 2 GB; lowered here, the same code path takes a model of a few hundred KB.
    monkeypatch.setattr(common, "_PROTOBUF_LIMIT", 100_000)
    handler = model_proto_to_olive_model(proto, tmp_path / "out", {"save_as_external_data": False})
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["model.onnx", "model.onnx.data"]
    saved = onnx.load(handler.model_path)
    assert _weights(saved).keys() == _weights(bert_like_model()).keys()
    np.testing.assert_array_equal(_outputs(handler.model_path, saved), _outputs_of(bert_like_model()))


# --------------------------------------------------------------------------------------------------
# Working on the graph while the weights stay on disk
# --------------------------------------------------------------------------------------------------
@pytest.fixture
def external_model(tmp_path):
    # Weights in external data, as a model past 2 GB must keep them (onnxruntime wants the few-byte shape
    # constants inline, as exporters write them).
    return bert_like_model_files(tmp_path / "input", hidden_size=128)


def test_graph_without_weights_loads_only_small_tensors(external_model):
    on_disk = {
        t.name: ExternalDataInfo(t).length
        for t in onnx.load(external_model.model_path, load_external_data=False).graph.initializer
        if uses_external_data(t)
    }
    graph = load_without_weights(external_model, inline_below=64 * 1024)
    kept_outside = {t.name for t in graph.graph.initializer if uses_external_data(t)}
    assert kept_outside == {name for name, length in on_disk.items() if length >= 64 * 1024}
    assert {name for name, length in on_disk.items() if length < 64 * 1024} - kept_outside  # small ones loaded
    assert graph.ByteSize() < 100_000 < external_model.size_on_disk


def test_graph_without_weights_names_a_file_that_is_not_onnx(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(ModelLoadError, match=r"bad\.onnx"):
        load_without_weights(bad)


@pytest.mark.parametrize("external", [False, True])
def test_a_graph_without_weights_is_saved_with_them(tmp_path, external_model, external):
    graph = load_without_weights(external_model)
    handler = model_proto_to_olive_model(
        graph, tmp_path / "out", {"save_as_external_data": external}, weights_dir=tmp_path / "input"
    )
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == (["model.onnx", "model.onnx.data"] if external else ["model.onnx"])
    saved = onnx.load(handler.model_path)
    original = onnx.load(external_model.model_path)
    for name, value in _weights(original).items():
        np.testing.assert_array_equal(_weights(saved)[name], value)
    onnx.checker.check_model(handler.model_path, full_check=True)
    np.testing.assert_array_equal(_outputs(handler.model_path, saved), _outputs(external_model.model_path, original))


def test_copied_weights_serve_a_graph_saved_elsewhere(tmp_path, external_model):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    copied = copy_external_data(external_model.model_path, scratch)
    assert [p.name for p in copied] == ["model.onnx.data"]
    # A copy, not a link: onnx would refuse to read the input's own file while it had a second link.
    assert copied[0].stat().st_ino != (tmp_path / "input" / "model.onnx.data").stat().st_ino
    assert (tmp_path / "input" / "model.onnx.data").stat().st_nlink == 1
    graph = load_without_weights(external_model)
    onnx.save_model(graph, str(scratch / "graph.onnx"))
    original = onnx.load(external_model.model_path)
    np.testing.assert_array_equal(_outputs(str(scratch / "graph.onnx"), original), _outputs_of(original))


def test_copying_names_missing_external_data(tmp_path, external_model):
    (tmp_path / "input" / "model.onnx.data").unlink()
    with pytest.raises(ModelLoadError, match=r"model\.onnx\.data"):
        copy_external_data(external_model.model_path, tmp_path)


# --------------------------------------------------------------------------------------------------
# The size check for tools that take the whole model as one message
# --------------------------------------------------------------------------------------------------
def test_size_check_refuses_a_model_at_the_limit_and_says_what_to_do(tmp_path, monkeypatch):
    handler = bert_like_model_files(tmp_path, hidden_size=128)
    require_protobuf_size(handler, "some tool", "do something else")  # well under 2 GB
    monkeypatch.setattr(common, "_PROTOBUF_LIMIT", handler.size_on_disk)
    with pytest.raises(PassRunError, match=r"some tool takes the whole model.*2 GB.*do something else"):
        require_protobuf_size(handler, "some tool", "do something else")


def test_size_check_counts_external_data(tmp_path, monkeypatch):
    handler = bert_like_model_files(tmp_path, hidden_size=128, size_threshold=0)
    graph_only = (tmp_path / "model.onnx").stat().st_size
    monkeypatch.setattr(common, "_PROTOBUF_LIMIT", graph_only + 1)
    with pytest.raises(PassRunError):
        require_protobuf_size(ONNXModelHandler(handler.model_path), "a tool", "a fix")
