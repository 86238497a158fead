"""SelectiveMixedPrecision picks the weights to keep at 8 bits; OnnxBlockWiseRtnQuantization then keeps them."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import run_model
from onnx import TensorProto, helper, numpy_helper

from olive.exceptions import PassConfigError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.testing.models import output_cosine, save_model
from olive_passes_quant.blockwise import OnnxBlockWiseRtnQuantization
from olive_passes_quant.selective_mixed_precision import SelectiveMixedPrecision

HIDDEN = 32
LAYERS = 8
PLANTED = "model.layers.4.mlp.down_proj"


def decoder_like(planted: bool = True) -> onnx.ModelProto:
    """LAYERS residual blocks named as a Hugging Face decoder exports them (q/k/v, o_proj, up/down_proj) and an
    lm_head writing ``logits``; with ``planted``, layer 4's down_proj has an outlier in every group, which 4-bit
    round-to-nearest handles worst."""
    rng = np.random.default_rng(0)
    nodes, inits = [], []

    def linear(x, module, k, n):
        w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
        if planted and module == PLANTED:
            # One weight of 8 standard deviations in each group of 32 along K: 4-bit steps widen for the rest.
            w[::32, :] = 8.0 / np.sqrt(k) * rng.choice([-1.0, 1.0], size=(k // 32, n))
        inits.append(numpy_helper.from_array(w, f"{module}.weight"))
        out = f"/{module.replace('.', '/')}/MatMul_output_0"
        nodes.append(
            helper.make_node("MatMul", [x, f"{module}.weight"], [out], name=f"/{module.replace('.', '/')}/MatMul")
        )
        return out

    x = "inputs_embeds"
    for i in range(LAYERS):
        p = f"model.layers.{i}"
        q, k, v = (linear(x, f"{p}.self_attn.{n}", HIDDEN, HIDDEN) for n in ("q_proj", "k_proj", "v_proj"))
        s = f"{p}/qk"
        nodes.append(helper.make_node("Add", [q, k], [s]))
        nodes.append(helper.make_node("Add", [s, v], [f"{p}/qkv"]))
        o = linear(f"{p}/qkv", f"{p}.self_attn.o_proj", HIDDEN, HIDDEN)
        nodes.append(helper.make_node("Add", [x, o], [f"{p}/res1"]))
        up = linear(f"{p}/res1", f"{p}.mlp.up_proj", HIDDEN, 2 * HIDDEN)
        nodes.append(helper.make_node("Tanh", [up], [f"{p}/act"]))
        down = linear(f"{p}/act", f"{p}.mlp.down_proj", 2 * HIDDEN, HIDDEN)
        nodes.append(helper.make_node("Add", [f"{p}/res1", down], [f"{p}/res2"]))
        nodes.append(helper.make_node("Tanh", [f"{p}/res2"], [f"{p}/out"]))
        x = f"{p}/out"
    logits = linear(x, "lm_head", HIDDEN, 50)
    nodes.append(helper.make_node("Identity", [logits], ["logits"]))
    graph = helper.make_graph(
        nodes,
        "decoder_like",
        [helper.make_tensor_value_info("inputs_embeds", TensorProto.FLOAT, ["batch", HIDDEN])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 50])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.fixture
def decoder(tmp_path):
    return save_model(decoder_like(), tmp_path / "decoder")


def overrides(model):
    return model.model_attributes["mixed_precision_info"]["overrides"]


def test_k_quant_rules(run_pass, decoder):
    assert set(overrides(run_pass(SelectiveMixedPrecision, decoder, {"algorithm": "k_quant_last"}))) == {"lm_head"}
    down = run_pass(SelectiveMixedPrecision, decoder, {"algorithm": "k_quant_down"})
    # 8 layers: the first and last eighth (0 and 7) and every third between (3, 6), as Olive chooses.
    expected = {f"model.layers.{i}.mlp.down_proj" for i in (0, 3, 6, 7)} | {"lm_head"}
    assert set(overrides(down)) == expected
    assert overrides(down)["lm_head"] == {"bits": 8}
    assert down.model_attributes["mixed_precision_info"]["default"] == {"bits": 4}
    mixed = run_pass(SelectiveMixedPrecision, decoder, {"algorithm": "k_quant_mixed"})
    qkv = {f"model.layers.{i}.self_attn.{n}" for i in (0, 3, 6, 7) for n in ("q_proj", "k_proj", "v_proj")}
    assert set(overrides(mixed)) == expected | qkv
    # The model itself is unchanged.
    assert len(onnx.load(mixed.model_path).graph.node) == len(onnx.load(decoder.model_path).graph.node)


@pytest.mark.parametrize("algorithm", ["snr", "iqe"])
def test_scores_find_the_planted_weight_first(run_pass, decoder, algorithm):
    config = {"algorithm": algorithm, "ratio": 0.98, "group_size": 32}
    chosen = overrides(run_pass(SelectiveMixedPrecision, decoder, config))
    assert PLANTED in chosen, chosen
    assert chosen[PLANTED] == {"bits": 8, "group_size": 32, "symmetric": False}
    # 2% of the weights is about one down_proj: the planted one comes first.
    assert len(chosen) <= 2


@pytest.mark.parametrize("algorithm", ["snr", "snr_relative", "iqe", "iqe_relative"])
def test_ratio_of_weights_stays_at_low_bits(run_pass, decoder, algorithm):
    sizes = {
        i.name.removesuffix(".weight"): int(np.prod(i.dims)) for i in onnx.load(decoder.model_path).graph.initializer
    }
    total = sum(sizes.values())
    for ratio in (0.9, 0.6):
        chosen = overrides(run_pass(SelectiveMixedPrecision, decoder, {"algorithm": algorithm, "ratio": ratio}))
        promoted = sum(sizes[m] for m in chosen)
        # Units are promoted until at least 1 - ratio of the weights is; the last one (q/k/v count as one) tips it.
        assert total * (1 - ratio) <= promoted < total * (1 - ratio) + 3 * HIDDEN * HIDDEN


def test_q_k_v_move_together(run_pass, decoder):
    chosen = set(overrides(run_pass(SelectiveMixedPrecision, decoder, {"algorithm": "snr", "ratio": 0.5})))
    for i in range(LAYERS):
        members = {f"model.layers.{i}.self_attn.{n}" in chosen for n in ("q_proj", "k_proj", "v_proj")}
        assert len(members) == 1


def test_blockwise_quantization_follows_the_choice(run_pass, decoder):
    rng = np.random.default_rng(1)
    inputs = {"inputs_embeds": rng.standard_normal((16, HIDDEN)).astype(np.float32)}
    reference = run_model(decoder, inputs)
    chosen = run_pass(SelectiveMixedPrecision, decoder, {"algorithm": "snr", "ratio": 0.95, "group_size": 32})
    mixed = run_pass(OnnxBlockWiseRtnQuantization, chosen, {"block_size": 32, "is_symmetric": False})
    plain = run_pass(OnnxBlockWiseRtnQuantization, decoder, {"block_size": 32, "is_symmetric": False})
    bits = {
        n.name: next(a.i for a in n.attribute if a.name == "bits")
        for n in onnx.load(mixed.model_path).graph.node
        if n.op_type == "MatMulNBits"
    }
    high = {name for name, b in bits.items() if b == 8}
    assert any(name.startswith("/model/layers/4/mlp/down_proj/") for name in high), high
    assert len(high) == len(overrides(chosen))
    assert set(bits.values()) == {4, 8} and len(bits) == 6 * LAYERS + 1
    mixed_error = 1 - output_cosine(reference, run_model(mixed, inputs))
    plain_error = 1 - output_cosine(reference, run_model(plain, inputs))
    assert mixed_error < plain_error, (mixed_error, plain_error)


def test_config_errors():
    with pytest.raises(PassConfigError, match="gradients of the PyTorch model"):
        SelectiveMixedPrecision.generate_config(DEFAULT_CPU_ACCELERATOR, {"algorithm": "kld_gradient", "ratio": 0.6})
    with pytest.raises(PassConfigError, match="needs 'ratio' between 0 and 1"):
        SelectiveMixedPrecision.generate_config(DEFAULT_CPU_ACCELERATOR, {"algorithm": "snr"})
    with pytest.raises(PassConfigError, match="high_bits \\(4\\) must be more than bits \\(4\\)"):
        SelectiveMixedPrecision.generate_config(DEFAULT_CPU_ACCELERATOR, {"algorithm": "k_quant_last", "high_bits": 4})


def test_overrides_reach_nodes_below_a_wrapper_prefix(run_pass, decoder, tmp_path):
    # OnnxConversion names a decoder's nodes /model/model/layers.0/...: overrides of model.layers.0... still apply.
    proto = decoder_like()
    for node in proto.graph.node:
        node.name = f"/model{node.name}" if node.name else node.name
    wrapped = save_model(proto, tmp_path / "wrapped")
    wrapped.model_attributes = {"mixed_precision_info": {"default": {"bits": 4}, "overrides": {PLANTED: {"bits": 8}}}}
    result = run_pass(OnnxBlockWiseRtnQuantization, wrapped, {"block_size": 32})
    bits = {
        n.name: next(a.i for a in n.attribute if a.name == "bits")
        for n in onnx.load(result.model_path).graph.node
        if n.op_type == "MatMulNBits"
    }
    assert [name for name, b in bits.items() if b == 8] == ["/model/model/layers/4/mlp/down_proj/MatMul_Q8"]
