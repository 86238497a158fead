"""Output hygiene shared by every pass: a failed run leaves nothing behind."""

from __future__ import annotations

import pytest

from olive_passes_graph._common import carry_over, graph_level_name, output_guard


def test_failed_run_removes_the_folder_it_created(tmp_path):
    out = tmp_path / "output_model"
    with pytest.raises(RuntimeError), output_guard(out):
        out.mkdir()
        (out / "model.onnx").write_bytes(b"half written")
        raise RuntimeError("boom")
    assert not out.exists()


def test_failed_run_keeps_what_was_there_before(tmp_path):
    out = tmp_path / "output_model"
    out.mkdir()
    (out / "keep.txt").write_text("from before")
    with pytest.raises(RuntimeError), output_guard(out / "model.onnx"):
        (out / "model.onnx").write_bytes(b"half written")
        (out / "model.onnx.data").write_bytes(b"weights")
        raise RuntimeError("boom")
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_successful_run_keeps_its_files(tmp_path):
    out = tmp_path / "output_model"
    with output_guard(out):
        out.mkdir()
        (out / "model.onnx").write_bytes(b"done")
    assert (out / "model.onnx").read_bytes() == b"done"


def test_carry_over_merges_settings_and_attributes(tiny_mlp, tmp_path):
    from olive.model import ONNXModelHandler

    tiny_mlp.inference_settings = {"execution_provider": ["CPUExecutionProvider"], "session_options": {"a": 1}}
    tiny_mlp.model_attributes = {"from_input": True}
    result = carry_over(
        tiny_mlp,
        ONNXModelHandler(tiny_mlp.model_path),
        inference_settings={"session_options": {"b": 2}},
        attributes={"mine": 1},
    )
    assert result.inference_settings == {
        "execution_provider": ["CPUExecutionProvider"],
        "session_options": {"a": 1, "b": 2},
    }
    assert result.model_attributes == {"from_input": True, "mine": 1}
    result.model_attributes["mine"] = 2
    assert "mine" not in tiny_mlp.model_attributes  # copies, not shared dicts


@pytest.mark.parametrize(
    ("value", "name"),
    [(99, "ORT_ENABLE_ALL"), ("basic", "ORT_ENABLE_BASIC"), ("ORT_ENABLE_EXTENDED", "ORT_ENABLE_EXTENDED"), (3, None)],
)
def test_graph_level_names(value, name):
    assert graph_level_name(value) == name


@pytest.mark.parametrize(
    ("pass_module", "pass_name", "config"),
    [
        ("dynamic_to_fixed_shape", "DynamicToFixedShape", {"dim_param": ["batch"], "dim_value": [1]}),
        ("opset_conversion", "OnnxOpVersionConversion", {"target_opset": 18}),
    ],
)
def test_input_onnxruntime_refuses_is_named_not_the_scratch_output(tmp_path, pass_module, pass_name, config):
    # The model is valid ONNX, but onnxruntime has no kernel for its custom op: the user's file is the one
    # to fix, so the error names it rather than the pass's output in a scratch folder.
    import importlib

    import onnx

    from olive.exceptions import ModelLoadError
    from olive.hardware import DEFAULT_CPU_ACCELERATOR
    from olive.model import ONNXModelHandler
    from olive.testing import mlp_model

    proto = mlp_model()
    proto.graph.node[0].op_type = "NoSuchOperator"
    proto.graph.node[0].domain = "com.example"
    proto.opset_import.append(onnx.helper.make_opsetid("com.example", 1))
    path = tmp_path / "custom_op.onnx"
    onnx.save(proto, str(path))
    pass_class = getattr(importlib.import_module(f"olive_passes_graph.{pass_module}"), pass_name)
    out = tmp_path / "out"
    with pytest.raises(ModelLoadError, match=r"onnxruntime cannot load '[^']*custom_op\.onnx'"):
        pass_class(DEFAULT_CPU_ACCELERATOR, config).run(ONNXModelHandler(path), out)
    assert not out.exists() or not any(out.rglob("*"))
