from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import files_under, op_counts, run_outputs

import olive
from olive.exceptions import PassConfigError, PassRunError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.hardware.accelerator import AcceleratorSpec
from olive.model.types import model_from_json
from olive.testing import random_inputs
from olive.testing.models import bert_like_model, bert_like_model_files, save_model
from olive_passes_graph.compose import ComposeOnnxModels
from olive_passes_graph.composite_model import CompositeModelHandler
from olive_passes_graph.split import CaptureSplitInfo, SplitModel


def run_in_order(composite, inputs):
    """Run the components one after another, each fed by the model inputs and earlier components' outputs."""
    values = dict(inputs)
    for _, component in composite.components():
        session = component.prepare_session()
        feed = {i.name: values[i.name] for i in session.get_inputs()}
        names = [o.name for o in session.get_outputs()]
        values.update(zip(names, session.run(None, feed), strict=True))
    return values


def test_capture_split_then_split_then_compose(tiny_bert, run_pass):
    captured = run_pass(CaptureSplitInfo, tiny_bert, {"num_splits": 2})
    expected = {"encoder.layer.0": 0, "encoder.layer.1": 1}
    assert captured.model_attributes["split_assignments"] == expected
    props = {p.key: p.value for p in captured.load_model(load_external_data=False).metadata_props}
    assert props["split_assignments"] == "encoder.layer.0=0;encoder.layer.1=1"

    composite = run_pass(SplitModel, captured)
    assert isinstance(composite, CompositeModelHandler)
    assert composite.model_component_names == ["split_0", "split_1"]
    first, second = (c.load_model() for c in composite.model_components)
    assert all("layer.1" not in n.name for n in first.graph.node)
    assert any("layer.1" in n.name for n in second.graph.node)
    assert not any("layer.0" in n.name for n in second.graph.node)
    total = sum(len(c.load_model().graph.node) for c in composite.model_components)
    assert total >= len(tiny_bert.load_model().graph.node)

    inputs = random_inputs(tiny_bert)
    inputs["attention_mask"][:, -3:] = 0
    (reference,) = run_outputs(tiny_bert, inputs)
    np.testing.assert_allclose(run_in_order(composite, inputs)["last_hidden_state"], reference, atol=1e-5)

    composed = run_pass(ComposeOnnxModels, composite)
    assert op_counts(composed) == op_counts(tiny_bert)
    assert [o.name for o in composed.load_model().graph.output] == ["last_hidden_state"]
    np.testing.assert_allclose(run_outputs(composed, inputs)[0], reference, atol=1e-5)
    assert "split_assignments" not in (composed.model_attributes or {})


def test_composite_round_trips_through_json(tiny_bert, run_pass):
    composite = run_pass(SplitModel, tiny_bert, {"split_assignments": "encoder.layer.0=0;encoder.layer.1=1"})
    again = model_from_json(composite.to_json())
    assert isinstance(again, CompositeModelHandler)
    assert [c.model_path for c in again.model_components] == [c.model_path for c in composite.model_components]
    assert again.content_hash() == composite.content_hash()
    assert sorted(rel for _, rel in again.folder_files()) == ["split_0.onnx", "split_1.onnx"]
    with pytest.raises(olive.exceptions.ModelLoadError, match="add a ComposeOnnxModels pass"):
        again.prepare_session()


def test_three_splits_of_an_external_data_model(tmp_path, run_pass):
    model = bert_like_model_files(tmp_path / "ext", num_layers=3)
    config = {"split_assignments": {"encoder.layer.0": 0, "encoder.layer.1": 1, "encoder.layer.2": 2}}
    composite = run_pass(SplitModel, model, {**config, "save_as_external_data": True})
    assert len(composite.model_components) == 3
    assert all(c.external_data_files() for c in composite.model_components)
    inputs = random_inputs(model)
    (reference,) = run_outputs(model, inputs)
    np.testing.assert_allclose(run_in_order(composite, inputs)["last_hidden_state"], reference, atol=1e-5)
    composed = run_pass(ComposeOnnxModels, composite)
    np.testing.assert_allclose(run_outputs(composed, inputs)[0], reference, atol=1e-5)


def test_num_splits_with_embeds_and_lm_head_of_their_own(tmp_path, run_pass):
    model = save_model(bert_like_model(num_layers=4), tmp_path / "four")
    result = run_pass(CaptureSplitInfo, model, {"num_splits": 3, "block_to_split": "encoder.layer"})
    # As Olive's array_split: 4 layers into 3 groups is 2 + 1 + 1.
    assert result.model_attributes["split_assignments"] == {
        "encoder.layer.0": 0,
        "encoder.layer.1": 0,
        "encoder.layer.2": 1,
        "encoder.layer.3": 2,
    }
    result = run_pass(CaptureSplitInfo, model, {"num_splits": 2, "unique_embeds_lm_head_splits": True})
    assignments = result.model_attributes["split_assignments"]
    assert assignments["model.embed_tokens"] == 0 and assignments["lm_head"] == 3
    assert assignments["encoder.layer.0"] == 1 and assignments["encoder.layer.3"] == 2


def test_cost_model_cuts_where_memory_runs_out(tmp_path, tiny_bert, run_pass):
    costs = tmp_path / "costs.csv"
    rows = ["module,num_params,num_bytes,num_flops"]
    rows += [f"encoder.layer.{i},100,600,1000" for i in range(2)]
    costs.write_text("\n".join(rows) + "\n")
    spec = AcceleratorSpec(accelerator_type="cpu", execution_provider="CPUExecutionProvider", memory=1000)
    result = run_pass(CaptureSplitInfo, tiny_bert, {"cost_model": str(costs)}, accelerator_spec=spec)
    assert result.model_attributes["split_assignments"] == {"encoder.layer.0": 0, "encoder.layer.1": 1}
    with pytest.raises(PassConfigError, match="cost_model needs the accelerator's memory"):
        CaptureSplitInfo.generate_config(DEFAULT_CPU_ACCELERATOR, {"cost_model": str(costs)})


def test_config_errors():
    with pytest.raises(PassConfigError, match="give num_splits or cost_model"):
        CaptureSplitInfo.generate_config(DEFAULT_CPU_ACCELERATOR, {})
    with pytest.raises(PassConfigError, match="'layer0' is not 'name=index'"):
        SplitModel.generate_config(DEFAULT_CPU_ACCELERATOR, {"split_assignments": "layer0"})


def test_split_without_assignments_fails_cleanly(tiny_bert, tmp_path):
    out = tmp_path / "out"
    config = SplitModel.generate_config(DEFAULT_CPU_ACCELERATOR, {})
    with pytest.raises(PassRunError, match="run CaptureSplitInfo before SplitModel"):
        SplitModel(DEFAULT_CPU_ACCELERATOR, config).run(tiny_bert, out)
    assert files_under(out) == []


def test_more_splits_than_layers_is_refused(tiny_bert, tmp_path):
    config = CaptureSplitInfo.generate_config(DEFAULT_CPU_ACCELERATOR, {"num_splits": 3})
    with pytest.raises(PassRunError, match="cannot divide 2 modules into 3 splits"):
        CaptureSplitInfo(DEFAULT_CPU_ACCELERATOR, config).run(tiny_bert, tmp_path / "out")


def test_workflow_split_and_compose(tmp_path, tiny_bert):
    workflow = {
        "input_model": {"type": "ONNXModel", "model_path": str(tiny_bert.model_path)},
        "passes": {
            "capture": {"type": "CaptureSplitInfo", "num_splits": 2},
            "split": {"type": "SplitModel"},
            "compose": {"type": "ComposeOnnxModels"},
        },
        "cache_dir": str(tmp_path / "cache"),
        "output_dir": str(tmp_path / "out"),
    }
    olive.run(workflow)
    written = [p for p in files_under(tmp_path / "out") if p.suffix == ".onnx"]
    assert len(written) == 1
    from olive.model.handler import ONNXModelHandler

    inputs = random_inputs(tiny_bert)
    result = ONNXModelHandler(str(written[0]))
    np.testing.assert_allclose(run_outputs(result, inputs)[0], run_outputs(tiny_bert, inputs)[0], atol=1e-5)
    assert Path(written[0]).parent == tmp_path / "out"


def test_assignments_match_below_a_wrapper_prefix(tiny_bert, run_pass):
    # A converter that wraps the model names its nodes /model/encoder/layer.0/...: the module encoder.layer.0.
    import onnx

    proto = tiny_bert.load_model()
    for node in proto.graph.node:
        node.name = f"/model{node.name}" if node.name.startswith("/") else node.name
    wrapped = save_model(proto, Path(tiny_bert.model_path).parent.parent / "wrapped")
    composite = run_pass(SplitModel, wrapped, {"split_assignments": "encoder.layer.0=0;encoder.layer.1=1"})
    assert len(composite.model_components) == 2
    second = onnx.load(composite.model_components[1].model_path)
    assert any("layer.1" in n.name for n in second.graph.node)
    inputs = random_inputs(tiny_bert)
    (reference,) = run_outputs(tiny_bert, inputs)
    np.testing.assert_allclose(run_in_order(composite, inputs)["last_hidden_state"], reference, atol=1e-5)
