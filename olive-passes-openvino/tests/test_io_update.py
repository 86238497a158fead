"""OpenVINOIoUpdate: inputs renamed, shapes fixed with static, the computation unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from olive_passes_openvino.io_update import OpenVINOIoUpdate

from olive.exceptions import PassConfigError, PassParamError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.testing.runner import run_pass


def test_renamed_static_inputs_compute_the_same(ir_fp32, feeds, f32, tmp_path):
    config = {"input_names": ["ids", "mask", "types"], "static": True, "input_shapes": [[1, 8]] * 3}
    updated = run_pass(OpenVINOIoUpdate, ir_fp32, config, output_dir=tmp_path)
    io = updated.get_io_config()
    assert io["input_names"] == ["ids", "mask", "types"] and io["input_shapes"] == [[1, 8]] * 3
    assert updated.xml_path.name == "ov_model_st.xml"
    one = {name: value[:1, :8] for name, value in feeds.items()}
    renamed = dict(zip(["ids", "mask", "types"], one.values(), strict=True))
    ours = updated.prepare_session(f32).run(None, renamed)[0]
    theirs = ir_fp32.prepare_session(f32).run(None, one)[0]
    np.testing.assert_allclose(ours, theirs, atol=1e-5)


def test_a_dynamic_copy_keeps_the_shapes(ir_fp32, tmp_path):
    updated = run_pass(OpenVINOIoUpdate, ir_fp32, {}, output_dir=tmp_path)
    assert updated.xml_path.name == "ov_model_dy.xml"
    assert updated.get_io_config() == ir_fp32.get_io_config()


def test_counts_that_do_not_match_the_inputs_are_named(ir_fp32, tmp_path):
    with pytest.raises(PassParamError, match=r"'input_names' has 1 entries but the model has 3 inputs"):
        run_pass(OpenVINOIoUpdate, ir_fp32, {"input_names": ["x"]}, output_dir=tmp_path)


def test_static_without_shapes_fails_before_running():
    with pytest.raises(PassConfigError, match=r"'static' is true but 'input_shapes' is not given"):
        OpenVINOIoUpdate.generate_config(DEFAULT_CPU_ACCELERATOR, {"static": True}, disable_search=True)
