"""The tiny model factories of olive.testing, checked with real onnxruntime sessions and tools."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from olive.model.handler import ONNXModelHandler
from olive.testing.models import (
    bert_like_model,
    conv_model,
    mlp_model,
    output_cosine,
    planted_node_name,
    random_inputs,
    save_model,
    write_npz_dataset,
)

FACTORIES = {
    "mlp": (mlp_model, {"output": ["batch", 8]}),
    "conv": (conv_model, {"output": ["batch", 10]}),
    "bert": (bert_like_model, {"last_hidden_state": ["batch", "sequence", 64]}),
}


def _session(model: ONNXModelHandler | onnx.ModelProto) -> ort.InferenceSession:
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model.model_path
    return ort.InferenceSession(source, providers=["CPUExecutionProvider"])


def _run(model, inputs):
    session = _session(model)
    return dict(zip([o.name for o in session.get_outputs()], session.run(None, inputs), strict=True))


@pytest.mark.parametrize("kind", sorted(FACTORIES))
@pytest.mark.parametrize(("batch_size", "sequence_length"), [(1, 5), (3, 16)])
def test_factory_runs_with_documented_shapes(tmp_path, kind, batch_size, sequence_length):
    factory, expected = FACTORIES[kind]
    proto = factory()
    assert proto.opset_import[0].version == 17
    assert proto.ir_version <= 10
    handler = save_model(proto, tmp_path / kind)
    assert handler.get_io_config()["output_names"] == list(expected)
    inputs = random_inputs(handler, batch_size=batch_size, sequence_length=sequence_length)
    outputs = _run(handler, inputs)
    sizes = {"batch": batch_size, "sequence": sequence_length}
    for name, dims in expected.items():
        assert outputs[name].shape == tuple(sizes.get(d, d) for d in dims)
        assert outputs[name].dtype == np.float32
        assert np.isfinite(outputs[name]).all()
        assert np.std(outputs[name]) > 0.1  # not a collapsed, constant network


@pytest.mark.parametrize("kind", sorted(FACTORIES))
def test_same_seed_same_bytes_other_seed_other_weights(kind):
    factory, _ = FACTORIES[kind]
    assert factory(seed=3).SerializeToString() == factory(seed=3).SerializeToString()
    first = {i.name: onnx.numpy_helper.to_array(i) for i in factory(seed=3).graph.initializer}
    second = {i.name: onnx.numpy_helper.to_array(i) for i in factory(seed=4).graph.initializer}
    assert first.keys() == second.keys()
    weights = [name for name in first if name.endswith(".weight")]
    assert weights
    assert all(not np.array_equal(first[name], second[name]) for name in weights)


def test_bert_io_and_node_names():
    proto = bert_like_model(num_layers=3)
    inputs = {i.name: i.type.tensor_type for i in proto.graph.input}
    assert list(inputs) == ["input_ids", "attention_mask", "token_type_ids"]
    for tensor_type in inputs.values():
        assert tensor_type.elem_type == onnx.TensorProto.INT64
        assert [d.dim_param for d in tensor_type.shape.dim] == ["batch", "sequence"]
    names = [n.name for n in proto.graph.node]
    assert len(names) == len(set(names)), "node names must be unique"
    for layer in range(3):
        assert planted_node_name(layer) in names
        assert f"/encoder/layer.{layer}/attention/self/query/MatMul" in names
    assert planted_node_name(1) == "/encoder/layer.1/ffn/output/MatMul"


def test_bert_rejects_bad_arguments():
    with pytest.raises(ValueError, match="multiple of num_heads"):
        bert_like_model(hidden_size=30, num_heads=4)
    with pytest.raises(ValueError, match="plant_outlier_layer"):
        bert_like_model(num_layers=2, plant_outlier_layer=2)


def test_bert_attention_mask_masks_padding():
    proto = bert_like_model()
    inputs = random_inputs(proto, batch_size=1, sequence_length=8)
    changed_tail = {**inputs, "input_ids": inputs["input_ids"].copy()}
    changed_tail["input_ids"][:, 6:] = (inputs["input_ids"][:, 6:] + 1) % 100
    mask = inputs["attention_mask"].copy()
    mask[:, 6:] = 0
    # With the tail masked, its ids cannot change what the first six positions see; unmasked, they do.
    masked = _run(proto, {**inputs, "attention_mask": mask})["last_hidden_state"]
    masked_changed = _run(proto, {**changed_tail, "attention_mask": mask})["last_hidden_state"]
    np.testing.assert_allclose(masked_changed[:, :6], masked[:, :6], atol=1e-5)
    unmasked = _run(proto, inputs)["last_hidden_state"]
    unmasked_changed = _run(proto, changed_tail)["last_hidden_state"]
    assert not np.allclose(unmasked_changed[:, :6], unmasked[:, :6], atol=1e-3)


def test_random_inputs_respect_embedding_tables():
    proto = bert_like_model(vocab_size=37)
    inputs = random_inputs(proto, batch_size=4, sequence_length=32, seed=1)
    assert inputs["input_ids"].dtype == np.int64
    assert inputs["input_ids"].shape == (4, 32)
    assert inputs["input_ids"].min() >= 0 and inputs["input_ids"].max() < 37
    assert inputs["input_ids"].max() > 20  # drawn over the whole table, not a fixed small range
    assert set(np.unique(inputs["token_type_ids"])) <= {0, 1}
    assert (inputs["attention_mask"] == 1).all()
    again = random_inputs(proto, batch_size=4, sequence_length=32, seed=1)
    other = random_inputs(proto, batch_size=4, sequence_length=32, seed=2)
    assert all(np.array_equal(inputs[k], again[k]) for k in inputs)
    assert not np.array_equal(inputs["input_ids"], other["input_ids"])


def test_random_inputs_float_model_from_handler(tmp_path):
    handler = save_model(conv_model(channels=2, height=8, width=8), tmp_path / "nested" / "dir", "conv.onnx")
    assert isinstance(handler, ONNXModelHandler)
    assert handler.model_path == str(tmp_path / "nested" / "dir" / "conv.onnx")
    inputs = random_inputs(handler, batch_size=5, seed=7)
    assert list(inputs) == ["input"]
    assert inputs["input"].shape == (5, 2, 8, 8)
    assert inputs["input"].dtype == np.float32
    assert abs(float(inputs["input"].mean())) < 0.3 and 0.7 < float(inputs["input"].std()) < 1.3


@pytest.fixture(scope="module")
def bert_path(tmp_path_factory):
    return save_model(bert_like_model(), tmp_path_factory.mktemp("bert")).model_path


def test_bert_fuses_in_transformer_optimizer(bert_path, tmp_path):
    # The transformer optimizer's shape inference needs sympy (but not torch at opt_level 0).
    pytest.importorskip("sympy", reason="onnxruntime's transformer optimizer needs sympy")
    from onnxruntime.transformers.optimizer import optimize_model

    optimized = optimize_model(bert_path, model_type="bert", num_heads=4, hidden_size=64, opt_level=0)
    counts = optimized.get_fused_operator_statistics()
    assert counts["EmbedLayerNormalization"] == 1
    assert counts["Attention"] == 2
    assert counts["Gelu"] + counts["FastGelu"] + counts["BiasGelu"] == 2
    # Both residual LayerNorms of each layer become SkipLayerNormalization; the embedding LayerNorm
    # is absorbed by EmbedLayerNormalization.
    assert counts["SkipLayerNormalization"] == 4
    original = onnx.load(bert_path)
    assert len(optimized.model.graph.node) < len(original.graph.node) // 3

    fused_path = tmp_path / "fused.onnx"
    optimized.save_model_to_file(str(fused_path))
    for seed in (0, 1):
        inputs = random_inputs(original, batch_size=2, sequence_length=24, seed=seed)
        inputs["attention_mask"][1, 20:] = 0
        expected = _run(original, inputs)["last_hidden_state"]
        got = _run(ONNXModelHandler(fused_path), inputs)["last_hidden_state"]
        np.testing.assert_allclose(got[:, :20], expected[:, :20], atol=1e-4)
        # random_inputs reads the vocabulary through EmbedLayerNormalization too.
        fused_inputs = random_inputs(ONNXModelHandler(fused_path), batch_size=2, seed=seed)
        assert fused_inputs["input_ids"].max() < 100 and set(np.unique(fused_inputs["token_type_ids"])) <= {0, 1}


def _weight_matmuls(proto: onnx.ModelProto) -> list[str]:
    weights = {i.name for i in proto.graph.initializer}
    return [n.name for n in proto.graph.node if n.op_type == "MatMul" and n.input[1] in weights]


@pytest.mark.parametrize("layer", [0, 1])
def test_planted_outlier_dominates_dynamic_int8_error(tmp_path, layer):
    from onnxruntime.quantization import quantize_dynamic

    proto = bert_like_model(plant_outlier_layer=layer)
    source = save_model(proto, tmp_path).model_path
    batches = [random_inputs(proto, batch_size=4, sequence_length=16, seed=seed) for seed in (0, 1, 2)]
    reference = [_run(proto, batch) for batch in batches]

    def cosine(**options) -> float:
        target = tmp_path / "quantized.onnx"
        quantize_dynamic(source, str(target), per_channel=False, **options)
        quantized = ONNXModelHandler(target)
        return float(np.mean([output_cosine(r, _run(quantized, b)) for r, b in zip(reference, batches, strict=True)]))

    planted = planted_node_name(layer)
    everything = cosine()
    all_but_planted = cosine(nodes_to_exclude=[planted])
    assert everything < 0.985
    assert all_but_planted >= 0.995
    assert all_but_planted - everything > 0.01

    only_planted = cosine(nodes_to_quantize=[planted])
    others = {name: cosine(nodes_to_quantize=[name]) for name in _weight_matmuls(proto) if name != planted}
    assert len(others) == 11
    assert only_planted < 0.99
    assert only_planted < min(others.values()) - 0.005, others


def test_unplanted_model_quantizes_well(tmp_path):
    from onnxruntime.quantization import quantize_dynamic

    proto = bert_like_model()
    source = save_model(proto, tmp_path).model_path
    quantize_dynamic(source, str(tmp_path / "q.onnx"))
    inputs = random_inputs(proto, batch_size=4)
    assert output_cosine(_run(proto, inputs), _run(ONNXModelHandler(tmp_path / "q.onnx"), inputs)) > 0.995


@pytest.mark.parametrize("kind", sorted(FACTORIES))
def test_write_npz_dataset_matches_model_inputs(tmp_path, kind):
    factory, _ = FACTORIES[kind]
    handler = save_model(factory(), tmp_path / "model")
    path = write_npz_dataset(tmp_path / "data" / "calib.npz", handler, num_samples=6, sequence_length=12, seed=3)
    assert path == tmp_path / "data" / "calib.npz"
    assert [p.name for p in path.parent.iterdir()] == ["calib.npz"]
    io = handler.get_io_config()
    with np.load(path) as data:
        arrays = dict(data)
    assert list(arrays) == io["input_names"]
    for name, dims, dtype in zip(io["input_names"], io["input_shapes"], io["input_types"], strict=True):
        assert arrays[name].dtype == np.dtype(dtype)
        assert arrays[name].shape[0] == 6
        assert arrays[name].shape[1:] == tuple(12 if isinstance(d, str) else d for d in dims[1:])
    # A slice of samples is a valid batch for the model.
    outputs = _run(handler, {name: array[:2] for name, array in arrays.items()})
    assert next(iter(outputs.values())).shape[0] == 2
    again = write_npz_dataset(tmp_path / "again.npz", handler, num_samples=6, sequence_length=12, seed=3)
    with np.load(again) as data:
        assert all(np.array_equal(arrays[k], data[k]) for k in arrays)


def test_write_npz_dataset_labels_are_model_predictions(tmp_path):
    handler = save_model(mlp_model(), tmp_path)
    path = write_npz_dataset(tmp_path / "labelled.npz", handler, num_samples=32, with_labels=True)
    with np.load(path) as data:
        labels, inputs = data["labels"], {"input": data["input"]}
    assert labels.shape == (32,) and labels.dtype == np.int64
    np.testing.assert_array_equal(labels, np.argmax(_run(handler, inputs)["output"], axis=-1))
    assert len(np.unique(labels)) > 1


def test_output_cosine():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 3, 5)).astype(np.float32)
    assert output_cosine({"y": a}, {"y": a}) == pytest.approx(1.0)
    assert output_cosine([a], [-a]) == pytest.approx(-1.0)
    assert output_cosine([a], [2 * a]) == pytest.approx(1.0)
    noisy = a + 0.5 * rng.standard_normal(a.shape).astype(np.float32)
    per_sample = [
        float(np.dot(a[i].ravel(), noisy[i].ravel()) / (np.linalg.norm(a[i]) * np.linalg.norm(noisy[i])))
        for i in range(4)
    ]
    assert output_cosine([a], [noisy]) == pytest.approx(np.mean(per_sample))
    # Several outputs: each sample is compared over all of them at once.
    b = rng.standard_normal((4, 2)).astype(np.float32)
    assert output_cosine({"y": a, "z": b}, {"z": b, "y": a}) == pytest.approx(1.0)
    assert output_cosine([np.zeros((2, 3))], [np.zeros((2, 3))]) == 1.0
    with pytest.raises(ValueError, match="shapes differ"):
        output_cosine([a], [a[:2]])
    with pytest.raises(KeyError, match="missing"):
        output_cosine({"y": a}, {"z": a})
