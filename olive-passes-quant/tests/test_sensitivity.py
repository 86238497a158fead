"""OnnxSensitivityAnalysis on a tiny BERT-like encoder with one planted sensitive node."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from olive.exceptions import OliveError, PassConfigError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.testing.contract import assert_pass_contract
from olive.testing.models import bert_like_model, planted_node_name, save_model, write_npz_dataset
from olive_passes_quant.sensitivity import OnnxSensitivityAnalysis


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory):
    """A 2-layer encoder whose layer-1 FFN output projection int8 quantizes badly, plus 16 samples for it."""
    root = tmp_path_factory.mktemp("planted")
    model = save_model(bert_like_model(plant_outlier_layer=1), root / "model")
    data = write_npz_dataset(root / "data.npz", model, num_samples=16, sequence_length=16, seed=1)
    return model, data


def _run(model, config: dict, out: Path):
    return OnnxSensitivityAnalysis(DEFAULT_CPU_ACCELERATOR, config).run(model, out)


@pytest.mark.parametrize("method", ["exclude_one", "quantize_one"])
def test_ranks_the_planted_node_first(planted, tmp_path, method):
    model, data = planted
    out = _run(model, {"data_config": str(data), "sensitivity_method": method}, tmp_path / "out")
    table = out.model_attributes["quantization_sensitivity"]
    nodes = table["nodes"]
    assert nodes[0]["node"] == planted_node_name(1)
    # Far ahead of the rest, not a near tie.
    assert nodes[0]["score"] > 10 * max(n["score"] for n in nodes[1:])
    # Every quantizable MatMul (4 attention + 2 FFN per layer) was measured; embeddings were not candidates.
    assert len(nodes) == 12 and all(n["exact"] and n["op_type"] == "MatMul" for n in nodes)
    assert [n["rank"] for n in nodes] == list(range(1, 13))
    assert table["method"] == method and table["num_samples"] == 16
    # The fully quantized model plus one variant per node; variants are derived from the first by graph
    # edits, so the quantizer runs only twice (the full model, and one variant to check the edits against).
    assert table["variants_scored"] == 13
    assert table["quantizations"] == 2
    json.dumps(out.model_attributes)


def test_exclude_one_gain_is_what_keeping_the_node_in_float_buys(planted, tmp_path):
    model, data = planted
    table = _run(model, {"data_config": str(data)}, tmp_path / "out").model_attributes["quantization_sensitivity"]
    full, top = table["fully_quantized"], table["nodes"][0]
    assert full["cosine_mean"] < 0.99 < top["agreement"]["cosine_mean"]
    assert top["score"] == pytest.approx(top["agreement"]["cosine_mean"] - full["cosine_mean"], abs=1e-5)


@pytest.mark.parametrize("layer", [0, 1])
def test_finds_the_planted_node_in_either_layer(tmp_path, layer):
    model = save_model(bert_like_model(seed=3, plant_outlier_layer=layer), tmp_path / "model")
    data = write_npz_dataset(tmp_path / "data.npz", model, num_samples=8, seed=2)
    table = _run(model, {"data_config": str(data), "metric": "cosine_min"}, tmp_path / "out").model_attributes[
        "quantization_sensitivity"
    ]
    assert table["metric"] == "cosine_min"
    assert table["nodes"][0]["node"] == planted_node_name(layer)


def test_local_error_proxy_preranks_and_verifies_only_the_top(planted, tmp_path):
    model, data = planted
    config = {"data_config": str(data), "sensitivity_method": "local_error", "verify_top_k": 2}
    table = _run(model, config, tmp_path / "out").model_attributes["quantization_sensitivity"]
    nodes = table["nodes"]
    assert nodes[0]["node"] == planted_node_name(1)
    assert [n["exact"] for n in nodes] == [True, True] + [False] * 10
    assert all("local_error" in n for n in nodes)
    # Fully quantized model + the two verified nodes; nothing for the other ten.
    assert table["variants_scored"] == 3
    # Scratch files (the activation probe, variants) never land beside the input model.
    assert [p.name for p in Path(model.model_path).parent.iterdir()] == ["model.onnx"]


def test_model_is_unchanged_and_attributes_are_kept(planted, tmp_path):
    from olive.model.handler import ONNXModelHandler

    model, data = planted
    source = ONNXModelHandler(model.model_path, model_attributes={"from_earlier_pass": 1})
    out = _run(source, {"data_config": str(data)}, tmp_path / "out")
    assert Path(out.model_path).parent == tmp_path / "out"
    assert onnx.load(out.model_path).graph == onnx.load(model.model_path).graph
    assert out.model_attributes["from_earlier_pass"] == 1


def test_mean_pooling_with_mask(planted, tmp_path):
    model, data = planted
    config = {"data_config": str(data), "pooling": "mean", "mask_input": "attention_mask"}
    table = _run(model, config, tmp_path / "out").model_attributes["quantization_sensitivity"]
    assert table["nodes"][0]["node"] == planted_node_name(1)


def test_contract(planted, tmp_path):
    model, data = planted
    # The entry-point name is checked against installed metadata once the distribution declares it.
    report = assert_pass_contract(
        OnnxSensitivityAnalysis,
        model=model,
        config={"data_config": str(data)},
        entry_point_name="OnnxSensitivityAnalysis",
        output_dir=tmp_path,
    )
    assert report["ran"] == 1


# -------------------------------------------------------------------------------------------- bad input


def test_data_whose_inputs_do_not_match_is_a_clear_error(planted, tmp_path):
    model, _ = planted
    bad = tmp_path / "bad.npz"
    np.savez(
        bad,
        ids=np.zeros((4, 8), np.int64),
        attention_mask=np.ones((4, 8), np.int64),
        token_type_ids=np.zeros((4, 8), np.int64),
    )
    with pytest.raises(PassConfigError, match=r"'input_ids'") as info:
        _run(model, {"data_config": str(bad)}, tmp_path / "out")
    assert "data_config" in str(info.value)
    assert not (tmp_path / "out").exists()


def test_model_with_nothing_to_quantize_is_a_clear_error(tmp_path):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"), helper.make_node("Add", ["r", "b"], ["y"], name="add")],
        "no_matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor("b", TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0])],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    model = save_model(proto, tmp_path / "model")
    data = write_npz_dataset(tmp_path / "data.npz", model, num_samples=4)
    with pytest.raises(OliveError, match="nothing to quantize"):
        _run(model, {"data_config": str(data)}, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_pooling_a_two_dimensional_output_is_a_clear_error(tiny_mlp, tmp_path):
    data = write_npz_dataset(tmp_path / "data.npz", tiny_mlp, num_samples=4)
    with pytest.raises(OliveError, match=r"pooling 'mean' needs outputs shaped \[batch, sequence"):
        _run(tiny_mlp, {"data_config": str(data), "pooling": "mean"}, tmp_path / "out")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"metric": "cosine"}, r"metric 'cosine' is unknown \(did you mean 'cosine_min'\?\)"),
        ({"sensitivity_method": "exclude"}, r"param 'sensitivity_method' expects .*got 'exclude' \(did you mean"),
        ({"pooling": "max"}, r"pooling 'max' is unknown"),
        ({"mask_input": "attention_mask"}, r"mask_input 'attention_mask' only applies with pooling 'mean'"),
        ({"max_samples": 0}, r"param 'max_samples' expects a whole number of 1 or more, got 0"),
        ({"data_config": "calib"}, r"data config name is only resolved inside a workflow"),
    ],
)
def test_bad_config_values_name_the_param(planted, tmp_path, config, message):
    model, data = planted
    with pytest.raises(PassConfigError, match=message):
        _run(model, {"data_config": str(data), **config}, tmp_path / "out")


def test_output_name_that_does_not_exist(planted, tmp_path):
    model, data = planted
    with pytest.raises(PassConfigError, match=r"output_name 'last_hidden' is not an output.*did you mean"):
        _run(model, {"data_config": str(data), "output_name": "last_hidden"}, tmp_path / "out")


def test_config_validation_imports_neither_onnxruntime_nor_numpy():
    code = (
        "import sys\n"
        "from olive.hardware import DEFAULT_CPU_ACCELERATOR as CPU\n"
        "from olive_passes_quant.sensitivity import OnnxSensitivityAnalysis as A\n"
        "from olive_passes_quant.accuracy_guarded import OnnxAccuracyGuardedQuantization as G\n"
        "for P in (A, G):\n"
        "    P.default_config(CPU)\n"
        "    P.validate_config(P.generate_config(CPU, {'data_config': 'calib.npz'}, disable_search=True), CPU)\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in ('onnxruntime', 'numpy', 'onnx'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == ""


def test_derived_variants_match_the_quantizer_exactly(planted, tmp_path):
    """Variants built by putting float nodes back into the int8 model equal what quantize_dynamic makes."""
    import onnxruntime as ort

    from olive.testing.models import random_inputs
    from olive_passes_quant._int8_variants import QuantSettings, quantize, restore_float_nodes

    model, _ = planted
    settings = QuantSettings()
    quantize(model.model_path, tmp_path / "all.onnx", settings)
    int8, original = onnx.load(str(tmp_path / "all.onnx")), onnx.load(model.model_path)
    inputs = random_inputs(model, batch_size=3, sequence_length=10, seed=5)
    float_sets = [
        [planted_node_name(1)],
        ["/encoder/layer.0/attention/self/query/MatMul", "/encoder/layer.0/attention/self/key/MatMul"],
        [
            name
            for name in (n.name for n in original.graph.node)
            if name.endswith("MatMul") and "self/MatMul" not in name
        ],
    ]
    for index, names in enumerate(float_sets):
        quantize(model.model_path, tmp_path / f"real{index}.onnx", settings, nodes_to_exclude=names)
        real = ort.InferenceSession(str(tmp_path / f"real{index}.onnx"), providers=["CPUExecutionProvider"])
        derived_proto = restore_float_nodes(int8, original, names)
        derived = ort.InferenceSession(derived_proto.SerializeToString(), providers=["CPUExecutionProvider"])
        np.testing.assert_allclose(derived.run(None, inputs)[0], real.run(None, inputs)[0], rtol=0, atol=1e-6)
        kept = {n.name for n in derived_proto.graph.node if n.op_type == "MatMul"}
        assert set(names) <= kept
        # What only the restored nodes used is gone: no dangling int8 weights.
        used = {i for n in derived_proto.graph.node for i in n.input}
        assert all(init.name in used for init in derived_proto.graph.initializer)


def test_nodes_to_exclude_must_exist(planted, tmp_path):
    model, data = planted
    config = {"data_config": str(data), "nodes_to_exclude": ["/encoder/layer.1/ffn/output/Matmul"]}
    with pytest.raises(PassConfigError, match=r"not in the model \(did you mean '/encoder/layer.1/ffn/output/MatMul'"):
        _run(model, config, tmp_path / "out")


def test_quantize_embeddings_adds_the_embedding_tables(planted, tmp_path):
    model, data = planted
    config = {"data_config": str(data), "quantize_embeddings": True}
    table = _run(model, config, tmp_path / "out").model_attributes["quantization_sensitivity"]
    gathers = sorted(n["node"] for n in table["nodes"] if n["op_type"] == "Gather")
    # The three tables; the Gather that reads the sequence length from a shape is not a candidate.
    assert gathers == [
        "/embeddings/position_embeddings/Gather",
        "/embeddings/token_type_embeddings/Gather",
        "/embeddings/word_embeddings/Gather",
    ]
    assert table["nodes"][0]["node"] == planted_node_name(1)


def test_candidates_the_quantizer_skips_are_not_measured(tmp_path):
    """Dynamic quantization has no int8 Add: with Add asked for, it is dropped; an Add-only choice is an error."""
    rng = np.random.default_rng(0)
    weights = [helper.make_tensor(n, TensorProto.FLOAT, [8, 8], rng.standard_normal(64).tolist()) for n in "BV"]
    nodes = [
        helper.make_node("Add", ["x", "B"], ["a"], name="add"),
        helper.make_node("MatMul", ["a", "V"], ["y"], name="matmul"),
    ]
    graph = helper.make_graph(
        nodes,
        "add_matmul",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
        weights,
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    model = save_model(proto, tmp_path / "model")
    data = write_npz_dataset(tmp_path / "data.npz", model, num_samples=4)
    config = {"data_config": str(data), "op_types_to_quantize": ["MatMul", "Add"]}
    table = _run(model, config, tmp_path / "out").model_attributes["quantization_sensitivity"]
    assert [n["node"] for n in table["nodes"]] == ["matmul"]
    with pytest.raises(OliveError, match="quantizes none of the Add nodes"):
        _run(model, {"data_config": str(data), "op_types_to_quantize": ["Add"]}, tmp_path / "out2")


def test_unnamed_nodes_get_names_the_table_and_output_model_share(tmp_path):
    from olive.testing.models import mlp_model

    proto = mlp_model()
    for node in proto.graph.node:
        node.name = ""
    model = save_model(proto, tmp_path / "model")
    data = write_npz_dataset(tmp_path / "data.npz", model, num_samples=4)
    out = _run(model, {"data_config": str(data)}, tmp_path / "out")
    ranked = {n["node"] for n in out.model_attributes["quantization_sensitivity"]["nodes"]}
    assert len(ranked) == 2
    assert ranked <= {n.name for n in onnx.load(out.model_path).graph.node}
