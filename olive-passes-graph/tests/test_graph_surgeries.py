from __future__ import annotations

import logging

import numpy as np
import pytest
from conftest import files_under, op_counts, run_outputs

from olive.exceptions import PassConfigError, PassRunError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.testing import random_inputs
from olive.testing.models import bert_like_model_files, save_model
from olive_passes_graph.graph_surgeries import GraphSurgeries


def _model(nodes, inputs, outputs, initializers=(), opset=17):
    from onnx import helper

    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _info(name, shape):
    from onnx import TensorProto, helper

    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _init(name, array):
    from onnx import numpy_helper

    return numpy_helper.from_array(np.asarray(array, dtype=np.float32), name)


def _same_outputs(a, b, inputs=None, renamed=None, atol=1e-5):
    inputs = inputs if inputs is not None else random_inputs(a)
    b_inputs = {(renamed or {}).get(k, k): v for k, v in inputs.items()}
    for x, y in zip(run_outputs(a, inputs), run_outputs(b, b_inputs), strict=True):
        np.testing.assert_allclose(x, y, atol=atol, rtol=1e-5)


def surgeries(*items):
    return {"surgeries": list(items)}


def test_matmul_add_to_gemm_and_back(tiny_mlp, run_pass):
    assert op_counts(tiny_mlp) == {"MatMul": 2, "Add": 2, "Relu": 1}
    gemm = run_pass(GraphSurgeries, tiny_mlp, surgeries({"surgeon": "MatMulAddToGemm"}))
    assert op_counts(gemm) == {"Gemm": 2, "Relu": 1}
    _same_outputs(tiny_mlp, gemm)
    back = run_pass(GraphSurgeries, gemm, surgeries({"surgeon": "gemmtomatmuladd"}))
    assert op_counts(back) == {"MatMul": 2, "Add": 2, "Relu": 1}
    _same_outputs(tiny_mlp, back)


def test_matmul_add_to_gemm_reshapes_a_static_3d_input(tmp_path, run_pass):
    from onnx import helper

    rng = np.random.default_rng(0)
    proto = _model(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Add", ["h", "b"], ["y"])],
        [_info("x", [2, 3, 4])],
        [_info("y", [2, 3, 5])],
        [_init("w", rng.standard_normal((4, 5))), _init("b", rng.standard_normal(5))],
    )
    model = save_model(proto, tmp_path / "m3d")
    result = run_pass(GraphSurgeries, model, surgeries({"surgeon": "MatMulAddToGemm"}))
    assert op_counts(result) == {"Reshape": 2, "Gemm": 1}
    _same_outputs(model, result)


@pytest.mark.parametrize("constant_weight", [True, False])
def test_gemm_with_trans_b_to_matmul_add(tmp_path, run_pass, constant_weight):
    from onnx import helper

    rng = np.random.default_rng(1)
    w = rng.standard_normal((5, 4)).astype(np.float32)
    inputs = [_info("x", ["n", 4])] + ([] if constant_weight else [_info("w", [5, 4])])
    proto = _model(
        [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)],
        inputs,
        [_info("y", ["n", 5])],
        ([_init("w", w)] if constant_weight else []) + [_init("b", rng.standard_normal(5))],
    )
    model = save_model(proto, tmp_path / f"gemm{constant_weight}")
    result = run_pass(GraphSurgeries, model, surgeries({"surgeon": "GemmToMatMulAdd"}))
    expected = {"MatMul": 1, "Add": 1} if constant_weight else {"Transpose": 1, "MatMul": 1, "Add": 1}
    assert op_counts(result) == expected
    feed = {"x": rng.standard_normal((3, 4)).astype(np.float32)}
    if not constant_weight:
        feed["w"] = w
    _same_outputs(model, result, feed)


def test_renames_inputs_outputs_and_dims(tiny_mlp, run_pass):
    config = surgeries(
        {"surgeon": "RenameInputs", "old_names": ["input"], "new_names": ["features"]},
        {"surgeon": "RenameOutputs", "old_names": ["output"], "new_names": ["scores"]},
        {"surgeon": "RenameInputDims", "input_name": "features", "dim_idx": 0, "dim_name": "rows"},
        {"surgeon": "RenameOutputDims", "output_idx": 0, "dim_idx": 0, "dim_name": "rows"},
    )
    result = run_pass(GraphSurgeries, tiny_mlp, config)
    graph = result.load_model().graph
    assert [i.name for i in graph.input] == ["features"] and [o.name for o in graph.output] == ["scores"]
    assert graph.input[0].type.tensor_type.shape.dim[0].dim_param == "rows"
    assert graph.output[0].type.tensor_type.shape.dim[0].dim_param == "rows"
    _same_outputs(tiny_mlp, result, renamed={"input": "features"})


def test_replace_attention_mask_value(tiny_bert, run_pass):
    import onnx

    def mask_constant(model):
        proto = model.load_model()
        init = next(i for i in proto.graph.initializer if i.name == "/extended_mask/min_value")
        return float(onnx.numpy_helper.to_array(init))

    untouched = run_pass(GraphSurgeries, tiny_bert, surgeries({"surgeon": "ReplaceAttentionMaskValue"}))
    assert mask_constant(untouched) == -10000.0  # above Olive's default threshold of -3e30
    config = surgeries({"surgeon": "ReplaceAttentionMaskValue", "threshold": -5000, "replacement": -1000})
    result = run_pass(GraphSurgeries, tiny_bert, config)
    assert mask_constant(result) == -1000.0
    inputs = random_inputs(tiny_bert)
    inputs["attention_mask"][:, -2:] = 0
    # exp(-1000) and exp(-10000) are both 0 in float32: masked positions stay masked.
    _same_outputs(tiny_bert, result, inputs, atol=1e-4)


def test_reciprocal_mul_to_div(tmp_path, run_pass):
    from onnx import helper

    proto = _model(
        [
            helper.make_node("Sqrt", ["x"], ["s"]),
            helper.make_node("Reciprocal", ["s"], ["r"]),
            helper.make_node("Mul", ["r", "a"], ["y"]),
        ],
        [_info("x", [2, 3]), _info("a", [2, 3])],
        [_info("y", [2, 3])],
    )
    model = save_model(proto, tmp_path / "recip")
    result = run_pass(GraphSurgeries, model, surgeries({"surgeon": "ReciprocalMulToDiv"}))
    assert op_counts(result) == {"Sqrt": 1, "Div": 1}
    rng = np.random.default_rng(2)
    feed = {"x": rng.uniform(0.5, 2, (2, 3)).astype(np.float32), "a": rng.standard_normal((2, 3)).astype(np.float32)}
    _same_outputs(model, result, feed)


def test_tie_word_embeddings(tmp_path, run_pass):
    from onnx import TensorProto, helper

    rng = np.random.default_rng(3)
    table = rng.standard_normal((11, 6)).astype(np.float32)
    proto = _model(
        [
            helper.make_node("Gather", ["embed", "input_ids"], ["e"]),
            helper.make_node("Tanh", ["e"], ["h"]),
            helper.make_node("MatMul", ["h", "lm_head"], ["logits"]),
        ],
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [_info("logits", ["batch", "seq", 11])],
        [_init("embed", table), _init("lm_head", table.T.copy())],
    )
    model = save_model(proto, tmp_path / "lm")
    result = run_pass(GraphSurgeries, model, surgeries({"surgeon": "TieWordEmbeddings"}))
    initializers = {i.name for i in result.load_model().graph.initializer}
    assert "lm_head" not in initializers and "embed" in initializers
    assert "Gemm" in op_counts(result) and "MatMul" not in op_counts(result)
    _same_outputs(model, result, {"input_ids": rng.integers(0, 11, (2, 5))})


def test_deduplicate_nodes_makes_a_refused_model_load(tmp_path, run_pass):
    from onnx import TensorProto, helper

    proto = _model(
        [
            helper.make_node("Cast", ["x"], ["c"], to=TensorProto.FLOAT, name="first"),
            helper.make_node("Cast", ["x"], ["c"], to=TensorProto.FLOAT, name="duplicate"),
            helper.make_node("Relu", ["c"], ["y"]),
        ],
        [_info("x", [2])],
        [_info("y", [2])],
    )
    model = save_model(proto, tmp_path / "dup")
    result = run_pass(GraphSurgeries, model, surgeries({"surgeon": "DeduplicateNodes"}))
    assert [n.name for n in result.load_model().graph.node] == ["first", ""]
    out = run_outputs(result, {"x": np.array([-1.0, 2.0], dtype=np.float32)})[0]
    np.testing.assert_array_equal(out, [0.0, 2.0])


def test_remove_memcpy(tmp_path, run_pass):
    from onnx import helper

    proto = _model(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("MemcpyToHost", ["r"], ["r_host"]),
            helper.make_node("Neg", ["r_host"], ["y"]),
        ],
        [_info("x", [3])],
        [_info("y", [3])],
    )
    model = save_model(proto, tmp_path / "memcpy")
    result = run_pass(GraphSurgeries, model, surgeries({"surgeon": "RemoveMemcpy"}))
    assert op_counts(result) == {"Relu": 1, "Neg": 1}
    out = run_outputs(result, {"x": np.array([-1.0, 0.5, 2.0], dtype=np.float32)})[0]
    np.testing.assert_array_equal(out, [0.0, -0.5, -2.0])


def test_external_data_model(tmp_path, run_pass):
    model = bert_like_model_files(tmp_path / "ext")
    config = surgeries(
        {"surgeon": "ReplaceAttentionMaskValue", "threshold": -5000, "replacement": -1000},
        {"surgeon": "DeduplicateNodes"},
        {"surgeon": "RenameInputs", "old_names": ["token_type_ids"], "new_names": ["segment_ids"]},
    )
    result = run_pass(GraphSurgeries, model, config)
    _same_outputs(model, result, renamed={"token_type_ids": "segment_ids"}, atol=1e-4)


def test_unknown_param_is_ignored_with_a_warning(tiny_mlp, run_pass, caplog):
    with caplog.at_level(logging.WARNING):
        result = run_pass(GraphSurgeries, tiny_mlp, surgeries({"surgeon": "MatMulAddToGemm", "fuse_relu": True}))
    assert op_counts(result)["Gemm"] == 2
    assert "param 'fuse_relu' is not one it takes; ignored" in caplog.text


@pytest.mark.parametrize(
    ("surgery", "message"),
    [
        ({"surgeon": "PackedAttentionToLoopMHA"}, "is a Microsoft Olive surgeon that GraphSurgeries here does not"),
        ({"surgeon": "MatMulAddToGem"}, "did you mean 'MatMulAddToGemm'"),
        ({"old_names": ["a"]}, 'surgeries\\[0\\] has no "surgeon"'),
        ({"surgeon": "RenameOutputDims", "output_idx": 0}, "lacks param\\(s\\) dim_idx, dim_name"),
        ({"surgeon": "RenameInputs", "old_names": ["a"], "new_names": []}, "old_names has 1 names but new_names 0"),
    ],
)
def test_bad_surgeries_are_config_errors(surgery, message):
    with pytest.raises(PassConfigError, match=message):
        GraphSurgeries.generate_config(DEFAULT_CPU_ACCELERATOR, surgeries(surgery))


def test_a_surgery_the_model_does_not_fit_fails_cleanly(tiny_mlp, tmp_path):
    out = tmp_path / "out"
    config = GraphSurgeries.generate_config(
        DEFAULT_CPU_ACCELERATOR, surgeries({"surgeon": "RenameInputs", "old_names": ["nope"], "new_names": ["x"]})
    )
    with pytest.raises(PassRunError, match=r"surgeries\[0\] \(RenameInputs\).*no input named \['nope'\]"):
        GraphSurgeries(DEFAULT_CPU_ACCELERATOR, config).run(tiny_mlp, out)
    assert files_under(out) == []


def _rms_norm(x, scale, eps=1e-6):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * scale


@pytest.mark.parametrize("skip", [False, True])
def test_simplified_layer_norm_to_l2_norm(tmp_path, run_pass, skip):
    from onnx import helper

    rng = np.random.default_rng(4)
    scale = rng.uniform(0.5, 1.5, 8).astype(np.float32)
    if skip:
        nodes = [
            helper.make_node(
                "SkipSimplifiedLayerNormalization",
                ["x", "s", "scale"],
                ["y", "", "", "sum"],
                domain="com.microsoft",
                epsilon=1e-6,
            ),
            helper.make_node("Relu", ["sum"], ["r"]),
        ]
        inputs, outputs = [_info("x", [2, 3, 8]), _info("s", [2, 3, 8])], [_info("y", [2, 3, 8]), _info("r", [2, 3, 8])]
    else:
        nodes = [helper.make_node("SimplifiedLayerNormalization", ["x", "scale"], ["y"], axis=-1, epsilon=1e-6)]
        inputs, outputs = [_info("x", [2, 3, 8])], [_info("y", [2, 3, 8])]
    proto = _model(nodes, inputs, outputs, [_init("scale", scale)])
    proto.opset_import.append(onnx_opset("com.microsoft", 1))
    model = save_model(proto, tmp_path / f"rms{skip}")
    result = run_pass(GraphSurgeries, model, surgeries({"surgeon": "SimplifiedLayerNormToL2Norm"}))
    expected = {"LpNormalization": 1, "Mul": 1, **({"Add": 1, "Relu": 1} if skip else {})}
    assert op_counts(result) == expected
    feed = {"x": rng.standard_normal((2, 3, 8)).astype(np.float32)}
    if skip:
        feed["s"] = rng.standard_normal((2, 3, 8)).astype(np.float32)
    outs = run_outputs(result, feed)
    total = feed["x"] + feed.get("s", 0)
    np.testing.assert_allclose(outs[0], _rms_norm(total, scale), atol=1e-4)
    _same_outputs(model, result, feed, atol=1e-4)


def onnx_opset(domain, version):
    from onnx import helper

    return helper.make_opsetid(domain, version)


def test_pow_reduce_sum_pow_div_to_lp_norm(tmp_path, run_pass):
    from onnx import TensorProto, helper

    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [-1])
    proto = _model(
        [
            helper.make_node("Pow", ["x", "two"], ["sq"]),
            helper.make_node("ReduceSum", ["sq", "axes"], ["total"], keepdims=1),
            helper.make_node("Pow", ["total", "half"], ["norm"]),
            helper.make_node("Div", ["x", "norm"], ["y"]),
        ],
        [_info("x", [4, 6])],
        [_info("y", [4, 6])],
        [_init("two", 2.0), _init("half", 0.5), axes],
    )
    model = save_model(proto, tmp_path / "lp")
    result = run_pass(GraphSurgeries, model, surgeries({"surgeon": "PowReduceSumPowDiv2LpNorm"}))
    assert op_counts(result) == {"LpNormalization": 1}
    _same_outputs(model, result, {"x": np.random.default_rng(5).standard_normal((4, 6)).astype(np.float32)})


def test_remove_trivial_g_idx_from_matmulnbits(tmp_path, run_pass):
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(6)
    k, n, block = 32, 4, 16
    packed = rng.integers(0, 256, (n, k // block, block // 2), dtype=np.uint8)
    scales = rng.uniform(0.01, 0.1, (n * (k // block),)).astype(np.float32)

    def mnb(g_idx, name):
        inits = [numpy_helper.from_array(packed, "B"), numpy_helper.from_array(scales, "scales")]
        inits.append(numpy_helper.from_array(g_idx.astype(np.int32), "g_idx"))
        node = helper.make_node(
            "MatMulNBits",
            ["x", "B", "scales", "", "g_idx"],
            ["y"],
            domain="com.microsoft",
            K=k,
            N=n,
            bits=4,
            block_size=block,
        )
        graph = helper.make_graph([node], "g", [_info("x", [2, k])], [_info("y", [2, n])], initializer=inits)
        proto = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)], ir_version=8
        )
        return save_model(proto, tmp_path / name)

    trivial = mnb(np.arange(k) // block, "trivial")
    result = run_pass(GraphSurgeries, trivial, surgeries({"surgeon": "RemoveGidxFromMatMulNBits"}))
    node = result.load_model().graph.node[0]
    assert [i for i in node.input if i] == ["x", "B", "scales"]
    assert "g_idx" not in {i.name for i in result.load_model().graph.initializer}
    _same_outputs(trivial, result, {"x": rng.standard_normal((2, k)).astype(np.float32)})
    # Sorted but with groups of other sizes: the order matters, so it stays.
    uneven = mnb(np.array([0] * 8 + [1] * 24), "uneven")
    kept = run_pass(GraphSurgeries, uneven, surgeries({"surgeon": "RemoveGidxFromMatMulNBits"}))
    assert "g_idx" in list(kept.load_model().graph.node[0].input)


HEADS, KV_HEADS, HEAD = 2, 1, 16  # rotary embeddings need a head size that is a multiple of 16
HIDDEN = HEADS * HEAD


def gqa_model(rope_if: bool):
    """A one-layer decoder in the layout onnxruntime-genai's builder writes: attention_mask -> ReduceSum - 1 ->
    seqlens_k and Shape[1] -> total_sequence_length feed GroupQueryAttention; with ``rope_if``, GQA applies
    rotary embeddings from cos/sin caches an If picks by length (a small and a large cache)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(7)

    def w(name, shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)

    def i64(name, values):
        return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

    inits = [w("embed", (20, HIDDEN)), w("wq", (HIDDEN, HIDDEN)), w("wk", (HIDDEN, KV_HEADS * HEAD))]
    inits += [w("wv", (HIDDEN, KV_HEADS * HEAD)), w("wo", (HIDDEN, 20)), i64("one", 1), i64("axis1", [1])]
    nodes = [
        helper.make_node("Gather", ["embed", "input_ids"], ["x"]),
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("MatMul", ["x", "wk"], ["k"]),
        helper.make_node("MatMul", ["x", "wv"], ["v"]),
        helper.make_node("ReduceSum", ["attention_mask", "axis1"], ["mask_sum"], keepdims=0),
        helper.make_node("Sub", ["mask_sum", "one"], ["mask_sub"]),
        helper.make_node("Cast", ["mask_sub"], ["seqlens_k"], to=TensorProto.INT32),
        helper.make_node("Shape", ["attention_mask"], ["mask_shape"]),
        helper.make_node("Gather", ["mask_shape", "one"], ["total_len"], axis=0),
        helper.make_node("Cast", ["total_len"], ["total_seq_len_int"], to=TensorProto.INT32),
    ]
    gqa_inputs = ["q", "k", "v", "past_key", "past_value", "seqlens_k", "total_seq_len_int"]
    attributes = {"num_heads": HEADS, "kv_num_heads": KV_HEADS}
    if rope_if:

        def branch(size):
            angles = np.outer(np.arange(size), 1.0 / 10000 ** (np.arange(HEAD // 2) * 2 / HEAD)).astype(np.float32)
            outs = [f"cos_cache_{'large' if size > 16 else 'small'}", f"sin_cache_{'large' if size > 16 else 'small'}"]
            consts = [
                helper.make_node("Constant", [], [outs[0]], value=numpy_helper.from_array(np.cos(angles))),
                helper.make_node("Constant", [], [outs[1]], value=numpy_helper.from_array(np.sin(angles))),
            ]
            vis = [helper.make_tensor_value_info(o, TensorProto.FLOAT, [size, HEAD // 2]) for o in outs]
            return helper.make_graph(consts, f"rope_{size}", [], vis)

        inits.append(numpy_helper.from_array(np.array(16, dtype=np.int32), "rope_threshold"))
        nodes += [
            helper.make_node("Greater", ["total_seq_len_int", "rope_threshold"], ["use_large"]),
            helper.make_node(
                "If", ["use_large"], ["cos_cache", "sin_cache"], then_branch=branch(64), else_branch=branch(16)
            ),
        ]
        gqa_inputs += ["cos_cache", "sin_cache"]
        attributes["do_rotary"] = 1
    nodes += [
        helper.make_node(
            "GroupQueryAttention",
            gqa_inputs,
            ["attn", "present_key", "present_value"],
            domain="com.microsoft",
            **attributes,
        ),
        helper.make_node("MatMul", ["attn", "wo"], ["logits"]),
    ]
    kv_shape = ["batch", KV_HEADS, "past", HEAD]
    graph = helper.make_graph(
        nodes,
        "gqa",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total"]),
            helper.make_tensor_value_info("past_key", TensorProto.FLOAT, kv_shape),
            helper.make_tensor_value_info("past_value", TensorProto.FLOAT, kv_shape),
        ],
        [
            _info("logits", ["batch", "seq", 20]),
            helper.make_tensor_value_info("present_key", TensorProto.FLOAT, kv_shape),
            helper.make_tensor_value_info("present_value", TensorProto.FLOAT, kv_shape),
        ],
        initializer=inits,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def _gqa_feed(past, seq, batch=1):
    rng = np.random.default_rng(8)
    return {
        "input_ids": rng.integers(0, 20, (batch, seq)),
        "attention_mask": np.ones((batch, past + seq), dtype=np.int64),
        "past_key": rng.standard_normal((batch, KV_HEADS, past, HEAD)).astype(np.float32),
        "past_value": rng.standard_normal((batch, KV_HEADS, past, HEAD)).astype(np.float32),
    }


def test_attention_mask_to_sequence_lengths(tmp_path, run_pass):
    model = save_model(gqa_model(rope_if=False), tmp_path / "gqa")
    result = run_pass(GraphSurgeries, model, surgeries({"surgeon": "AttentionMaskToSequenceLengths"}))
    graph = result.load_model().graph
    assert [i.name for i in graph.input] == ["total_seq_len", "past_seq_len", "input_ids", "past_key", "past_value"]
    assert op_counts(result) == {"Gather": 1, "MatMul": 4, "GroupQueryAttention": 1}
    for past, seq in ((3, 1), (0, 4)):
        feed = _gqa_feed(past, seq)
        expected = run_outputs(model, feed)
        total = past + seq
        new_feed = {k: v for k, v in feed.items() if k != "attention_mask"}
        new_feed.update(past_seq_len=np.array([[total - 1]], dtype=np.int32), total_seq_len=np.array(total, np.int32))
        for a, b in zip(run_outputs(result, new_feed), expected, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-5)


def test_remove_rope_multi_cache(tmp_path, run_pass):
    model = save_model(gqa_model(rope_if=True), tmp_path / "rope")
    result = run_pass(GraphSurgeries, model, surgeries({"surgeon": "RemoveRopeMultiCache"}))
    ops = op_counts(result)
    assert "If" not in ops and "Greater" not in ops
    caches = {i.name: i.dims for i in result.load_model().graph.initializer if "cache" in i.name}
    assert caches == {"cos_cache_single": [16, HEAD // 2], "sin_cache_single": [16, HEAD // 2]}
    # Within the small cache's lengths the model computes what it did.
    feed = _gqa_feed(past=5, seq=3)
    for a, b in zip(run_outputs(result, feed), run_outputs(model, feed), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
    large = run_pass(GraphSurgeries, model, surgeries({"surgeon": "RemoveRopeMultiCache", "use_large_cache": True}))
    dims = {i.name: i.dims for i in large.load_model().graph.initializer if "cache" in i.name}
    assert dims["cos_cache_single"] == [64, HEAD // 2]
    feed = _gqa_feed(past=20, seq=2)
    for a, b in zip(run_outputs(large, feed), run_outputs(model, feed), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
