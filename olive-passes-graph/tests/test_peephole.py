from __future__ import annotations

import numpy as np
import pytest
from conftest import files_under, op_counts, run_outputs

from olive.exceptions import PassConfigError
from olive.testing import random_inputs
from olive_passes_graph.peephole import OnnxPeepholeOptimizer


@pytest.mark.parametrize(
    "config",
    [{}, {"onnxoptimizer_optimize": False}, {"onnxscript_optimize": False}],
    ids=["both", "onnxscript", "onnxoptimizer"],
)
def test_removes_planted_subgraphs_and_keeps_outputs(planted, run_pass, config):
    before = op_counts(planted)
    result = run_pass(OnnxPeepholeOptimizer, planted, config)
    after = op_counts(result)

    assert sum(after.values()) < sum(before.values())
    assert "Identity" not in after
    assert "Cast" not in after  # float -> float casts compute nothing
    assert after.get("MatMul") == 2 and after.get("Relu") == 1
    if config.get("onnxscript_optimize", True):
        # onnxscript folds the constant bias sub-graph and drops the dead branch.
        assert not {"Constant", "Mul", "Sub", "Neg", "Abs"} & set(after)
    inputs = random_inputs(planted, batch_size=3)
    np.testing.assert_allclose(run_outputs(result, inputs)[0], run_outputs(planted, inputs)[0], atol=1e-5)
    assert result.model_attributes["peephole_node_count"]["after"] == sum(after.values())


def test_bert_outputs_unchanged(tiny_bert, run_pass):
    result = run_pass(OnnxPeepholeOptimizer, tiny_bert)
    inputs = random_inputs(tiny_bert)
    np.testing.assert_allclose(run_outputs(result, inputs)[0], run_outputs(tiny_bert, inputs)[0], atol=1e-5)


def test_both_tools_off_is_a_config_error(planted):
    from olive.hardware import DEFAULT_CPU_ACCELERATOR

    with pytest.raises(PassConfigError, match="both onnxscript_optimize and onnxoptimizer_optimize are false"):
        OnnxPeepholeOptimizer.generate_config(
            DEFAULT_CPU_ACCELERATOR, {"onnxscript_optimize": False, "onnxoptimizer_optimize": False}
        )


def test_unknown_onnxoptimizer_pass_is_named(planted):
    from olive.hardware import DEFAULT_CPU_ACCELERATOR

    with pytest.raises(PassConfigError, match="'eliminate_identty' \\(did you mean 'eliminate_identity'\\?\\)"):
        OnnxPeepholeOptimizer.generate_config(DEFAULT_CPU_ACCELERATOR, {"onnxoptimizer_passes": ["eliminate_identty"]})


def test_not_an_onnx_file_fails_cleanly_and_writes_nothing(tmp_path):
    from olive.exceptions import ModelLoadError
    from olive.hardware import DEFAULT_CPU_ACCELERATOR
    from olive.model import ONNXModelHandler

    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not a protobuf")
    out = tmp_path / "out"
    with pytest.raises(ModelLoadError, match=r"bad\.onnx"):
        OnnxPeepholeOptimizer(DEFAULT_CPU_ACCELERATOR, {}).run(ONNXModelHandler(bad), out)
    assert files_under(out) == []
