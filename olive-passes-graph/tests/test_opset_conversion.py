from __future__ import annotations

import numpy as np
import pytest
from conftest import files_under, run_outputs

from olive.exceptions import PassConfigError, PassRunError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.testing import random_inputs
from olive_passes_graph.opset_conversion import OnnxOpVersionConversion, newest_supported_opset


def opset(model) -> int:
    return next(o.version for o in model.load_model().opset_import if o.domain in ("", "ai.onnx"))


@pytest.mark.parametrize("target", [18, 21])
def test_opset_changes_and_onnxruntime_runs_it(tiny_bert, run_pass, target):
    assert opset(tiny_bert) == 17
    result = run_pass(OnnxOpVersionConversion, tiny_bert, {"target_opset": target})
    assert opset(result) == target
    inputs = random_inputs(tiny_bert)
    np.testing.assert_allclose(run_outputs(result, inputs)[0], run_outputs(tiny_bert, inputs)[0], atol=1e-5)


def test_default_is_newest_opset_onnxruntime_runs(tiny_mlp, run_pass):
    import onnx

    result = run_pass(OnnxOpVersionConversion, tiny_mlp)
    assert opset(result) == newest_supported_opset()
    assert 17 < opset(result) <= onnx.defs.onnx_opset_version()
    inputs = random_inputs(tiny_mlp)
    np.testing.assert_allclose(run_outputs(result, inputs)[0], run_outputs(tiny_mlp, inputs)[0], atol=1e-5)


def test_down_conversion(tiny_conv, run_pass):
    result = run_pass(OnnxOpVersionConversion, tiny_conv, {"target_opset": 15})
    assert opset(result) == 15


def test_target_beyond_what_is_installed_is_a_config_error():
    with pytest.raises(PassConfigError, match="run opsets up to"):
        OnnxOpVersionConversion.generate_config(DEFAULT_CPU_ACCELERATOR, {"target_opset": 999})


def test_impossible_conversion_fails_cleanly(tiny_bert, tmp_path):
    out = tmp_path / "out"
    # LayerNormalization has no version before opset 17.
    with pytest.raises(PassRunError, match=r"cannot convert .* from opset 17 to 13"):
        OnnxOpVersionConversion(DEFAULT_CPU_ACCELERATOR, {"target_opset": 13}).run(tiny_bert, out)
    assert files_under(out) == []
