from __future__ import annotations

import numpy as np
import pytest
from conftest import files_under, op_counts, run_outputs

from olive.exceptions import ModelLoadError, PassConfigError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.testing import random_inputs
from olive_passes_graph.graph_optimization import OrtGraphOptimization


def test_basic_level_folds_constants_and_stays_portable(planted, run_pass):
    result = run_pass(OrtGraphOptimization, planted, {"graph_optimization_level": "basic"})
    after = op_counts(result)
    assert "Identity" not in after and "Constant" not in after
    assert sum(after.values()) < sum(op_counts(planted).values())
    # Portable: no provider pinned, onnxruntime's own optimizations still apply at load.
    assert result.inference_settings is None
    assert result.model_attributes["ort_graph_optimization"]["level"] == "basic"
    inputs = random_inputs(planted)
    np.testing.assert_allclose(run_outputs(result, inputs)[0], run_outputs(planted, inputs)[0], atol=1e-5)


@pytest.mark.parametrize("level", ["extended", "all"])
def test_provider_specific_levels_record_inference_settings(tiny_bert, run_pass, level):
    result = run_pass(OrtGraphOptimization, tiny_bert, {"graph_optimization_level": level})
    after = op_counts(result)
    # Extended rewrites fuse GELU and scaled MatMuls into contrib ops.
    assert "BiasGelu" in after and "FusedMatMul" in after
    assert "Erf" not in after
    assert result.inference_settings == {
        "execution_provider": ["CPUExecutionProvider"],
        "session_options": {"graph_optimization_level": "ORT_DISABLE_ALL"},
    }
    assert OrtGraphOptimization.is_accelerator_agnostic(DEFAULT_CPU_ACCELERATOR) is False
    # The recorded settings are what a deployment (and the evaluator) uses; outputs agree.
    session = result.prepare_session()
    assert session.get_session_options().graph_optimization_level.name == "ORT_DISABLE_ALL"
    inputs = random_inputs(tiny_bert)
    np.testing.assert_allclose(session.run(None, inputs)[0], run_outputs(tiny_bert, inputs)[0], atol=1e-4)


def test_input_settings_are_kept(tiny_bert, run_pass):
    tiny_bert.inference_settings = {"session_options": {"intra_op_num_threads": 1}}
    result = run_pass(OrtGraphOptimization, tiny_bert, {"graph_optimization_level": "all"})
    assert result.inference_settings["session_options"] == {
        "intra_op_num_threads": 1,
        "graph_optimization_level": "ORT_DISABLE_ALL",
    }


@pytest.mark.parametrize("level", ["disable", "fast", 3])
def test_bad_level_is_a_config_error(level):
    with pytest.raises(PassConfigError, match="graph_optimization_level"):
        OrtGraphOptimization.generate_config(DEFAULT_CPU_ACCELERATOR, {"graph_optimization_level": level})


def test_missing_provider_is_a_clear_error(tiny_mlp, tmp_path):
    from olive.exceptions import ExecutionProviderError
    from olive.hardware import AcceleratorSpec

    spec = AcceleratorSpec("gpu", "CUDAExecutionProvider")
    out = tmp_path / "out"
    with pytest.raises(ExecutionProviderError, match="CUDAExecutionProvider is not in the installed onnxruntime"):
        OrtGraphOptimization(spec, {}).run(tiny_mlp, out)
    assert files_under(out) == []


def test_model_onnxruntime_cannot_load_fails_cleanly(tmp_path):
    from olive.model import ONNXModelHandler
    from olive.testing import mlp_model

    proto = mlp_model()
    proto.graph.node[0].input[0] = "not_produced_anywhere"
    import onnx

    onnx.save(proto, str(tmp_path / "broken.onnx"))
    out = tmp_path / "out"
    with pytest.raises(ModelLoadError, match="onnxruntime cannot load"):
        OrtGraphOptimization(DEFAULT_CPU_ACCELERATOR, {}).run(ONNXModelHandler(tmp_path / "broken.onnx"), out)
    assert files_under(out) == []
