from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from conftest import files_under, op_counts, run_outputs

from olive.exceptions import ModelLoadError, PassConfigError, PassParamError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.testing import bert_like_model, random_inputs, save_model
from olive_passes_graph.transformer_optimization import OrtTransformersOptimization, infer_num_heads_and_hidden_size

FUSED = {"Attention", "SkipLayerNormalization", "EmbedLayerNormalization", "BiasGelu"}


@pytest.mark.parametrize("opt_level", [0, 1, 2, 99])
def test_fuses_bert_attention_layernorm_and_gelu(tiny_bert, run_pass, opt_level):
    before = op_counts(tiny_bert)
    result = run_pass(OrtTransformersOptimization, tiny_bert, {"model_type": "bert", "opt_level": opt_level})
    after = op_counts(result)

    assert set(after) >= FUSED, after
    assert after["Attention"] == 2  # one per layer
    assert "Softmax" not in after and "Erf" not in after
    assert sum(after.values()) < sum(before.values()) / 2
    inputs = random_inputs(tiny_bert, batch_size=2, sequence_length=16)
    np.testing.assert_allclose(run_outputs(result, inputs)[0], run_outputs(tiny_bert, inputs)[0], atol=1e-4)
    assert result.model_attributes["num_heads"] == 4
    assert result.model_attributes["hidden_size"] == 64
    assert result.model_attributes["transformer_fusions"]["Attention"] == 2
    # The contrib-op domain is declared, so ONNX tools (shape inference, quantization) accept the model.
    import onnx

    proto = result.load_model()
    assert "com.microsoft" in {opset.domain for opset in proto.opset_import}
    onnx.shape_inference.infer_shapes(proto, strict_mode=True)


def test_infers_heads_and_hidden_size_from_the_graph():
    proto = bert_like_model(hidden_size=96, num_heads=6)
    assert infer_num_heads_and_hidden_size(proto) == (6, 96)


def test_other_head_counts_fuse_with_inferred_values(tmp_path, run_pass):
    model = save_model(bert_like_model(num_layers=1, hidden_size=96, num_heads=6), tmp_path / "bert6")
    result = run_pass(OrtTransformersOptimization, model, {"model_type": "bert", "opt_level": 0})
    assert op_counts(result).get("Attention") == 1
    assert result.model_attributes["num_heads"] == 6
    inputs = random_inputs(model)
    np.testing.assert_allclose(run_outputs(result, inputs)[0], run_outputs(model, inputs)[0], atol=1e-4)


def test_only_onnxruntime_applies_no_python_fusion(tiny_bert, run_pass):
    result = run_pass(
        OrtTransformersOptimization, tiny_bert, {"model_type": "bert", "opt_level": 1, "only_onnxruntime": True}
    )
    assert not FUSED & set(op_counts(result))


def test_only_onnxruntime_with_level_0_is_pruned():
    cpu = DEFAULT_CPU_ACCELERATOR
    resolved = OrtTransformersOptimization.get_config_params(cpu, {"model_type": "bert", "only_onnxruntime": True})
    # opt_level is searched: its level-0 point is pruned, saying why; the other levels stay.
    with pytest.raises(
        PassParamError, match="only_onnxruntime with opt_level 0 would return the model unchanged"
    ) as info:
        OrtTransformersOptimization.config_for_point(cpu, resolved, {"opt_level": 0})
    assert set(info.value.params) == {"only_onnxruntime", "opt_level"}
    config = OrtTransformersOptimization.config_for_point(cpu, resolved, {"opt_level": 1})
    assert OrtTransformersOptimization.validate_config(config, cpu)
    # Both fixed by the workflow, the same conflict is a config error before any run.
    with pytest.raises(PassConfigError, match="only_onnxruntime with opt_level 0"):
        OrtTransformersOptimization.generate_config(
            cpu, {"model_type": "bert", "opt_level": 0, "only_onnxruntime": True}
        )


def test_float16_keeps_float32_io(tiny_bert, run_pass):
    result = run_pass(OrtTransformersOptimization, tiny_bert, {"model_type": "bert", "opt_level": 0, "float16": True})
    proto = result.load_model()
    assert any(init.data_type == 10 for init in proto.graph.initializer)  # FLOAT16 weights
    assert proto.graph.output[0].type.tensor_type.elem_type == 1  # FLOAT output kept
    inputs = random_inputs(tiny_bert)
    np.testing.assert_allclose(run_outputs(result, inputs)[0], run_outputs(tiny_bert, inputs)[0], atol=5e-2)


def test_float16_keeps_named_nodes_in_float32(tiny_bert, run_pass):
    # Olive's force_fp32_nodes: the named fused node keeps float32 weights, the others are converted.
    config = {"model_type": "bert", "opt_level": 0, "float16": True, "force_fp32_nodes": ["Attention_0"]}
    result = run_pass(OrtTransformersOptimization, tiny_bert, config)
    proto = result.load_model()
    weight_types = {init.name: init.data_type for init in proto.graph.initializer}
    attention = {node.name: node for node in proto.graph.node if node.op_type == "Attention"}
    assert weight_types[attention["Attention_0"].input[1]] == 1  # FLOAT
    assert weight_types[attention["Attention_1"].input[1]] == 10  # FLOAT16
    inputs = random_inputs(tiny_bert)
    np.testing.assert_allclose(run_outputs(result, inputs)[0], run_outputs(tiny_bert, inputs)[0], atol=5e-2)


def test_optimization_options_switch_fusions_off(tiny_bert, run_pass):
    result = run_pass(
        OrtTransformersOptimization,
        tiny_bert,
        {"model_type": "bert", "opt_level": 0, "optimization_options": {"enable_attention": False}},
    )
    after = op_counts(result)
    assert "Attention" not in after and "SkipLayerNormalization" in after


def test_every_level_runs_without_torch(tiny_bert, tmp_path):
    # onnxruntime's own helper imports torch at opt_level >= 1; the pass must not need it.
    code = f"""
import sys
sys.modules["torch"] = None  # any import of torch now raises ImportError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.model import ONNXModelHandler
from olive_passes_graph.transformer_optimization import OrtTransformersOptimization
for level in (1, 2, 99):
    p = OrtTransformersOptimization(DEFAULT_CPU_ACCELERATOR, {{"model_type": "bert", "opt_level": level}})
    out = p.run(ONNXModelHandler({str(tiny_bert.model_path)!r}), {str(tmp_path)!r} + f"/out{{level}}")
    assert "Attention" in {{n.op_type for n in out.load_model().graph.node}}
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")


def test_unknown_model_type_is_a_config_error():
    with pytest.raises(PassConfigError, match="'model_type' is 'brt' \\(did you mean 'bert'\\?\\)"):
        OrtTransformersOptimization.generate_config(DEFAULT_CPU_ACCELERATOR, {"model_type": "brt"})


def test_the_model_types_checked_without_onnxruntime_are_onnxruntimes():
    from onnxruntime.transformers.optimizer import MODEL_TYPES

    from olive_passes_graph.transformer_optimization import COMMON_MODEL_TYPES

    assert set(MODEL_TYPES) >= COMMON_MODEL_TYPES


def test_checking_a_common_model_type_imports_no_onnxruntime():
    """A cached rerun checks every pass config: for a model type every onnxruntime knows, that costs no import."""
    code = """
import sys
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive_passes_graph.transformer_optimization import OrtTransformersOptimization
OrtTransformersOptimization.generate_config(DEFAULT_CPU_ACCELERATOR, {"model_type": "bert", "opt_level": 1})
print(sorted(m for m in ("onnxruntime", "onnx", "numpy", "sympy") if m in sys.modules))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "[]"


def test_unknown_fusion_option_is_a_config_error():
    with pytest.raises(PassConfigError, match="unknown key 'enable_gelus' \\(did you mean 'enable_gelu'\\?\\)"):
        OrtTransformersOptimization.generate_config(
            DEFAULT_CPU_ACCELERATOR, {"model_type": "bert", "optimization_options": {"enable_gelus": False}}
        )


def test_model_type_comes_from_model_attributes(tmp_path, tiny_bert):
    from olive.model import ONNXModelHandler

    # As Olive does: Hugging Face model types are mapped, heads and hidden size are read where the graph is silent.
    model = ONNXModelHandler(tiny_bert.model_path, model_attributes={"model_type": "roberta", "num_attention_heads": 4})
    result = OrtTransformersOptimization(DEFAULT_CPU_ACCELERATOR, {"opt_level": 0}).run(model, tmp_path / "out")
    assert op_counts(result)["Attention"] == 2
    assert result.model_attributes["model_type"] == "roberta"


def test_missing_model_type_is_a_config_error(tmp_path, tiny_bert):
    config = OrtTransformersOptimization.generate_config(DEFAULT_CPU_ACCELERATOR, {})
    out = tmp_path / "out"
    with pytest.raises(PassConfigError, match="'model_type' is not set and the input model's model_attributes"):
        OrtTransformersOptimization(DEFAULT_CPU_ACCELERATOR, config).run(tiny_bert, out)
    from olive.model import ONNXModelHandler

    unknown = ONNXModelHandler(tiny_bert.model_path, model_attributes={"model_type": "bret"})
    with pytest.raises(PassConfigError, match=r"model_attributes give model_type 'bret'.*did you mean 'bert'"):
        OrtTransformersOptimization(DEFAULT_CPU_ACCELERATOR, config).run(unknown, out)
    assert files_under(out) == []


def test_attention_without_readable_heads_asks_for_them(tmp_path):
    # A gpt2-type model must be told its heads when the graph does not show them; say which param to set.
    import onnx

    proto = bert_like_model(num_layers=1)
    for node in proto.graph.node:
        if node.op_type == "Reshape":
            node.input[1] = "dynamic_shape"
    shape = onnx.helper.make_tensor_value_info("dynamic_shape", onnx.TensorProto.INT64, [4])
    proto.graph.input.append(shape)
    model = save_model(proto, tmp_path / "m")
    out = tmp_path / "out"
    with pytest.raises(PassConfigError, match="set num_heads and hidden_size"):
        OrtTransformersOptimization(DEFAULT_CPU_ACCELERATOR, {"model_type": "gpt2"}).run(model, out)
    assert files_under(out) == []


def test_model_onnxruntime_cannot_load_fails_cleanly(tmp_path):
    import onnx

    from olive.model import ONNXModelHandler

    proto = bert_like_model(num_layers=1)
    proto.graph.node[5].op_type = "NoSuchOperator"
    path = tmp_path / "broken.onnx"
    onnx.save(proto, str(path))
    out = tmp_path / "out"
    with pytest.raises(ModelLoadError, match=r"onnxruntime cannot load .*broken\.onnx"):
        OrtTransformersOptimization(DEFAULT_CPU_ACCELERATOR, {"model_type": "bert"}).run(ONNXModelHandler(path), out)
    assert files_under(out) == []
