"""num_heads/hidden_size from the head-splitting Reshapes that PyTorch exports compute at run time."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from conftest import files_under, op_counts, run_outputs

from olive.exceptions import PassConfigError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.testing import bert_like_model, random_inputs, save_model
from olive_passes_graph.attention_dims import count_attention_blocks, infer_attention_dims
from olive_passes_graph.transformer_optimization import OrtTransformersOptimization, infer_num_heads_and_hidden_size

HIDDEN, HEADS, LAYERS = 96, 6, 2


def torch_style(proto, *, head_entry="infer", constants="node", head_size_entry="constant"):
    """Rewrite ``bert_like_model``'s constant Reshape shapes the way ``torch.onnx.export`` writes them.

    Each Reshape target becomes ``Concat(Unsqueeze(Gather(Shape(x), 0)), Unsqueeze(Gather(Shape(x), 1)),
    heads, head_size)`` (merging heads: ``..., hidden``), as in a real all-MiniLM-L6-v2 export.

    :param head_entry: "infer" writes -1 for the head count (what torch writes for BERT), "count" writes it.
    :param constants: "node" makes the constants ``Constant`` nodes (opset 13+ exports), "initializer"
        makes them initializers (what onnxruntime's constant folding leaves).
    :param head_size_entry: "constant", or "runtime" to compute the head size from the projection's shape
        (a graph whose split nobody can read).
    """
    import onnx
    from onnx import helper, numpy_helper

    shapes = {init.name: numpy_helper.to_array(init) for init in proto.graph.initializer}
    nodes: list[onnx.NodeProto] = []
    initializers = list(proto.graph.initializer)
    counter = iter(range(10_000))

    def const(value) -> str:
        name = f"/torch_style/Constant_{next(counter)}_output_0"
        tensor = numpy_helper.from_array(np.asarray(value, dtype=np.int64), name)
        if constants == "node":
            nodes.append(helper.make_node("Constant", [], [name], value=tensor))
        else:
            initializers.append(tensor)
        return name

    def dim(source: str, index: int) -> str:
        i = next(counter)
        shape, gathered, unsqueezed = (f"/torch_style/{op}_{i}_output_0" for op in ("Shape", "Gather", "Unsqueeze"))
        nodes.append(helper.make_node("Shape", [source], [shape]))
        nodes.append(helper.make_node("Gather", [shape, const(index)], [gathered], axis=0))
        nodes.append(helper.make_node("Unsqueeze", [gathered, const([0])], [unsqueezed]))
        return unsqueezed

    for node in proto.graph.node:
        if node.op_type == "Reshape" and node.input[1] in shapes:
            target = shapes[node.input[1]]
            parts = [dim(node.input[0], 0), dim(node.input[0], 1)]
            if len(target) == 4:
                heads, head_size = int(target[2]), int(target[3])
                parts.append(const([heads if head_entry == "count" else -1]))
                if head_size_entry == "constant":
                    parts.append(const([head_size]))
                else:
                    i = next(counter)
                    width = dim(node.input[0], 2)
                    quotient = f"/torch_style/Div_{i}_output_0"
                    nodes.append(helper.make_node("Div", [width, const([heads])], [quotient]))
                    parts.append(quotient)
            else:
                parts.append(const([int(target[2])]))
            concat = f"/torch_style/Concat_{next(counter)}_output_0"
            nodes.append(helper.make_node("Concat", parts, [concat], axis=0))
            node.input[1] = concat
        nodes.append(node)
    used = {name for node in nodes for name in node.input}
    graph = helper.make_graph(
        nodes,
        proto.graph.name,
        list(proto.graph.input),
        list(proto.graph.output),
        [init for init in initializers if init.name in used],
    )
    model = helper.make_model(graph, opset_imports=list(proto.opset_import), ir_version=proto.ir_version)
    onnx.checker.check_model(model)
    return model


def tiny(**kwargs):
    return torch_style(bert_like_model(num_layers=LAYERS, hidden_size=HIDDEN, num_heads=HEADS), **kwargs)


@pytest.mark.parametrize("constants", ["node", "initializer"])
@pytest.mark.parametrize("head_entry", ["infer", "count"])
def test_reads_heads_from_run_time_reshape_shapes(constants, head_entry):
    proto = tiny(constants=constants, head_entry=head_entry)
    dims = infer_attention_dims(proto)
    assert (dims.num_heads, dims.head_size, dims.hidden_size) == (HEADS, HIDDEN // HEADS, HIDDEN)
    assert dims.count == 3 * LAYERS  # Q, K and V of every layer agree; the merge Reshapes are no candidates
    assert dims.uniform
    assert infer_num_heads_and_hidden_size(proto) == (HEADS, HIDDEN)


def test_unreadable_split_is_none_but_attention_is_still_counted():
    proto = tiny(head_size_entry="runtime")
    assert infer_attention_dims(proto) is None
    assert count_attention_blocks(proto) == LAYERS


def _projection_graph(widths: dict[str, tuple[int, int]], fused_qkv: bool = False):
    """Projections of one [batch, seq, 64] input, each split into heads by a run-time Concat shape.

    :param widths: name -> (heads, head_size) per projection; with ``fused_qkv`` one MatMul makes them all
        and a Split cuts it.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    nodes, inits = [], []

    def const(name, value, dtype=np.int64):
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    nodes.append(helper.make_node("Shape", ["x"], ["shape"]))
    for i in (0, 1):
        nodes.append(helper.make_node("Gather", ["shape", const(f"i{i}", i)], [f"d{i}"], axis=0))
        nodes.append(helper.make_node("Unsqueeze", [f"d{i}", const(f"ax{i}", [0])], [f"u{i}"]))
    total = sum(h * d for h, d in widths.values())
    if fused_qkv:
        nodes.append(helper.make_node("MatMul", ["x", const("w", rng.standard_normal((64, total)), np.float32)], ["p"]))
        nodes.append(helper.make_node("Add", ["p", const("b", np.zeros(total), np.float32)], ["pb"]))
        sizes = [h * d for h, d in widths.values()]
        nodes.append(helper.make_node("Split", ["pb", const("sizes", sizes)], list(widths), axis=2))
    outputs = []
    for name, (heads, head_size) in widths.items():
        if not fused_qkv:
            w = const(f"w_{name}", rng.standard_normal((64, heads * head_size)), np.float32)
            nodes.append(helper.make_node("MatMul", ["x", w], [f"{name}_mm"]))
            nodes.append(
                helper.make_node(
                    "Add", [const(f"b_{name}", np.zeros(heads * head_size), np.float32), f"{name}_mm"], [name]
                )
            )
        parts = ["u0", "u1", const(f"{name}_h", [-1]), const(f"{name}_d", [head_size])]
        nodes.append(helper.make_node("Concat", parts, [f"{name}_shape"], axis=0))
        nodes.append(helper.make_node("Reshape", [name, f"{name}_shape"], [f"{name}_heads"]))
        outputs.append(
            helper.make_tensor_value_info(f"{name}_heads", TensorProto.FLOAT, ["batch", "seq", heads, head_size])
        )
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 64])
    graph = helper.make_graph(nodes, "projections", [x], outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    onnx.checker.check_model(model)
    return model


def test_fused_qkv_projection_is_read_through_its_split():
    proto = _projection_graph({"q": (4, 16), "k": (4, 16), "v": (4, 16)}, fused_qkv=True)
    assert infer_num_heads_and_hidden_size(proto) == (4, 64)


def test_grouped_query_attention_takes_the_query_heads():
    # K and V have fewer heads than Q; the head count onnxruntime needs is Q's.
    for fused in (False, True):
        proto = _projection_graph({"q": (8, 8), "k": (2, 8), "v": (2, 8)}, fused_qkv=fused)
        assert infer_num_heads_and_hidden_size(proto) == (8, 64)
        assert not infer_attention_dims(proto).uniform


@pytest.mark.parametrize("opt_level", [0, 1, 99])
def test_torch_style_export_fuses_attention(tmp_path, run_pass, opt_level):
    # onnxruntime alone cannot read "-1 heads" from the Concat and fuses no Attention here.
    model = save_model(tiny(), tmp_path / "torch_style")
    result = run_pass(OrtTransformersOptimization, model, {"model_type": "bert", "opt_level": opt_level})
    after = op_counts(result)
    assert after.get("Attention") == LAYERS, after
    assert after.get("EmbedLayerNormalization") == 1, after
    assert "Softmax" not in after
    assert result.model_attributes["num_heads"] == HEADS
    assert result.model_attributes["hidden_size"] == HIDDEN
    assert "unfused_attention" not in result.model_attributes
    for batch, sequence in ((1, 7), (3, 16)):
        inputs = random_inputs(model, batch_size=batch, sequence_length=sequence)
        np.testing.assert_allclose(run_outputs(result, inputs)[0], run_outputs(model, inputs)[0], atol=1e-4)


def test_explicit_values_against_the_graph_are_a_config_error(tmp_path):
    model = save_model(tiny(), tmp_path / "torch_style")
    out = tmp_path / "out"
    config = {"model_type": "bert", "num_heads": 4, "hidden_size": HIDDEN}
    with pytest.raises(PassConfigError, match=r"num_heads=4, hidden_size=96 is configured.*set num_heads=6 and"):
        OrtTransformersOptimization(DEFAULT_CPU_ACCELERATOR, config).run(model, out)
    assert files_under(out) == []


def test_other_model_types_warn_about_a_mismatch(tmp_path, caplog):
    # gpt2's fusions are not held to the graph's values, but a head count that cannot split the hidden
    # size is still an error, before anything is written.
    model = save_model(tiny(), tmp_path / "torch_style")
    out = tmp_path / "out"
    with caplog.at_level(logging.WARNING), pytest.raises(PassConfigError, match="num_heads=5 does not divide"):
        OrtTransformersOptimization(DEFAULT_CPU_ACCELERATOR, {"model_type": "gpt2", "num_heads": 5}).run(model, out)
    assert any("num_heads=5 is configured" in r.getMessage() for r in caplog.records)
    assert files_under(out) == []


def test_explicit_values_that_match_are_used(tmp_path, run_pass):
    model = save_model(tiny(head_size_entry="runtime"), tmp_path / "unreadable")
    config = {"model_type": "bert", "num_heads": HEADS, "hidden_size": HIDDEN}
    result = run_pass(OrtTransformersOptimization, model, config)
    assert op_counts(result).get("Attention") == LAYERS
    inputs = random_inputs(model, batch_size=2, sequence_length=9)
    np.testing.assert_allclose(run_outputs(result, inputs)[0], run_outputs(model, inputs)[0], atol=1e-4)


def test_unfused_attention_is_reported_once(tmp_path, run_pass, caplog):
    model = save_model(tiny(head_size_entry="runtime"), tmp_path / "unreadable")
    with caplog.at_level(logging.WARNING):
        result = run_pass(OrtTransformersOptimization, model, {"model_type": "bert"})
    assert "Attention" not in op_counts(result)
    record = result.model_attributes["unfused_attention"]
    assert record["attention_blocks"] == LAYERS
    assert (record["num_heads"], record["hidden_size"], record["inferred"]) == (0, 0, None)
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("olive_passes_graph")]
    assert len(ours) == 1, ours
    assert "2 attention block(s)" in ours[0]
    assert "tried num_heads=0, hidden_size=0" in ours[0]
    assert "set num_heads and hidden_size" in ours[0]
    # onnxruntime says "Failed to detect num_heads" once per layer; one copy gets through.
    theirs = [r for r in caplog.records if "Failed to detect num_heads" in r.getMessage()]
    assert len(theirs) <= 1


def test_attention_switched_off_is_not_reported(tmp_path, run_pass, caplog):
    model = save_model(tiny(), tmp_path / "torch_style")
    config = {"model_type": "bert", "optimization_options": {"enable_attention": False}}
    with caplog.at_level(logging.WARNING):
        result = run_pass(OrtTransformersOptimization, model, config)
    assert "Attention" not in op_counts(result)
    assert "unfused_attention" not in result.model_attributes
    assert not [r for r in caplog.records if r.name.startswith("olive_passes_graph")]
