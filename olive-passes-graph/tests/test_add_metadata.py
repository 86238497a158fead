from __future__ import annotations

import numpy as np
import pytest
from conftest import run_outputs

import olive
from olive.cache.store import hash_model
from olive.exceptions import PassConfigError
from olive.hardware import DEFAULT_CPU_ACCELERATOR
from olive.testing import random_inputs
from olive.testing.models import bert_like_model_files
from olive_passes_graph.add_metadata import AddOliveMetadata


def props(model) -> dict[str, str]:
    return {entry.key: entry.value for entry in model.load_model(load_external_data=False).metadata_props}


def test_graph_named_and_metadata_written_outputs_unchanged(tiny_mlp, run_pass):
    tiny_mlp.model_attributes = {
        "_name_or_path": "org/tiny-mlp",
        "optimization_passes": ["OnnxConversion", "OrtTransformersOptimization"],
        "hf_task": "text-classification",
        "unrelated": 1,
    }
    config = {"graph_name": "my-graph", "custom_metadata": {"owner": "team-a", "revision": 3}}
    result = run_pass(AddOliveMetadata, tiny_mlp, config)
    assert result.load_model().graph.name == "my-graph"
    written = props(result)
    assert written == {
        "owner": "team-a",
        "revision": "3",
        "olive_version": olive.__version__,
        "hf_model_name": "org/tiny-mlp",
        "optimization_passes": "OnnxConversion, OrtTransformersOptimization",
        "hf_task": "text-classification",
        "model_hash": hash_model(tiny_mlp),
    }
    assert len(result.load_model().graph.node) == len(tiny_mlp.load_model().graph.node)
    inputs = random_inputs(tiny_mlp)
    np.testing.assert_array_equal(run_outputs(result, inputs)[0], run_outputs(tiny_mlp, inputs)[0])
    assert result.model_attributes["hf_task"] == "text-classification"


def test_optimization_info_off_and_existing_entries_kept(tmp_path, run_pass):
    import onnx

    from olive.testing.models import mlp_model, save_model

    proto = mlp_model()
    onnx.helper.set_model_props(proto, {"kept": "yes", "owner": "old"})
    model = save_model(proto, tmp_path / "with_props")
    model.model_attributes = {"hf_task": "text-classification"}
    config = {"graph_name": "g", "custom_metadata": {"owner": "new"}, "add_optimization_info": False}
    written = props(run_pass(AddOliveMetadata, model, config))
    assert written["kept"] == "yes" and written["owner"] == "new"
    assert "hf_task" not in written


def test_external_data_model_keeps_its_weights_outside(tmp_path, run_pass):
    model = bert_like_model_files(tmp_path / "ext")
    result = run_pass(AddOliveMetadata, model, {"graph_name": "bert"})
    assert result.external_data_files(), "weights should stay in external data"
    assert result.load_model().graph.name == "bert"
    inputs = random_inputs(model)
    np.testing.assert_array_equal(run_outputs(result, inputs)[0], run_outputs(model, inputs)[0])
    # The input's own files are untouched.
    assert props(model) == {}


def test_graph_name_is_required():
    with pytest.raises(PassConfigError, match="graph_name"):
        AddOliveMetadata.generate_config(DEFAULT_CPU_ACCELERATOR, {})
    with pytest.raises(PassConfigError, match="graph_name"):
        AddOliveMetadata.generate_config(DEFAULT_CPU_ACCELERATOR, {"graph_name": " "})
