"""``olive optimize``'s served batch sizes: the default for the model, ``--batch-size``, and where the workflow
measures at them (the agreement metric's ``served_batch_size``, the accuracy guard's ``batch_size``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from olive.exceptions import WorkflowConfigError
from olive.optimize.data import DataSource, data_source
from olive.optimize.facts import ModelFacts, model_facts_from_onnx, read_model_facts
from olive.optimize.options import OptimizeOptions, parse_batch_sizes
from olive.optimize.recipe import DEFAULT_MASKED_BATCH_SIZES, Installed, build_workflow
from olive.testing.models import bert_like_model, mlp_model, save_model, write_npz_dataset

ALL = Installed(
    frozenset(
        {
            "OnnxAccuracyGuardedQuantization",
            "OnnxDynamicQuantization",
            "OnnxStaticQuantization",
            "OnnxSensitivityAnalysis",
            "OnnxBlockWiseRtnQuantization",
            "OnnxFloatToFloat16",
            "OrtTransformersOptimization",
            "OnnxPeepholeOptimizer",
        }
    )
)


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> ModelFacts:
    return read_model_facts(save_model(bert_like_model(seed=0, num_layers=2), tmp_path_factory.mktemp("b")).model_path)


@pytest.fixture(scope="module")
def bert_npz(tmp_path_factory, bert) -> DataSource:
    path = write_npz_dataset(tmp_path_factory.mktemp("d") / "data.npz", bert_like_model(seed=0), num_samples=16)
    return data_source(path, bert, frozenset())


@pytest.fixture(scope="module")
def mlp(tmp_path_factory) -> ModelFacts:
    return read_model_facts(save_model(mlp_model(seed=0), tmp_path_factory.mktemp("m")).model_path)


@pytest.fixture(scope="module")
def mlp_npz(tmp_path_factory, mlp) -> DataSource:
    path = tmp_path_factory.mktemp("md") / "data.npz"
    np.savez(path, input=np.zeros((16, 16), dtype=np.float32))
    return data_source(path, mlp, frozenset())


def options(tmp_path: Path, **kwargs) -> OptimizeOptions:
    return OptimizeOptions(output_dir=tmp_path / "out", cache_dir=tmp_path / "cache", **kwargs)


def agreement(workflow: dict) -> dict:
    return next(m for m in workflow["evaluators"]["optimize"]["metrics"] if m["name"] == "agreement")


def test_an_encoder_with_a_mask_is_served_at_1_and_32_by_default_and_static_int8_competes(tmp_path, bert, bert_npz):
    recipe = build_workflow(bert, options(tmp_path), ALL, bert_npz)
    workflow = recipe.workflow
    assert DEFAULT_MASKED_BATCH_SIZES == (1, 32) and recipe.batch_sizes == (1, 32)
    assert agreement(workflow)["served_batch_size"] == [1, 32]
    guard = workflow["passes"]["quantize"]
    assert guard["batch_size"] == [1, 32]
    # Only the batch-1 runs are cut to each sample's real length; the data is read (and timed) at batch 1.
    assert guard["trim_padding"] is True and agreement(workflow)["trim_padding"] is True
    assert workflow["data_configs"][0]["dataloader_config"] == {"batch_size": 1}
    # Static int8 (batch-independent) is searched after every dynamic step, at the keeps' own targets.
    assert guard["quant_mode"]["support"] == ["dynamic", "static"]
    target = guard["target_value"]
    assert target["type"] == "Conditional" and target["parents"] == ["quant_mode"]
    by_mode = {entry["key"][0]: entry["value"]["support"] for entry in target["support"]}
    assert by_mode["static"] == [[0.97, 0.99]] and by_mode["dynamic"][0] == [0.97, 0.99] and len(by_mode["dynamic"]) > 1
    text = " ".join(recipe.notes)
    assert "measured at batch sizes 1 and 32 (one request at a time and sentence-transformers' encode batch" in text
    assert "shuffled (seed 0) and batched together at each, padded as the data is; each figure is the worst" in text


def test_a_model_without_a_mask_is_served_at_1_unless_told(tmp_path, mlp, mlp_npz):
    recipe = build_workflow(mlp, options(tmp_path), ALL, mlp_npz)
    assert recipe.batch_sizes == (1,)
    assert agreement(recipe.workflow)["served_batch_size"] == 1
    guard = recipe.workflow["passes"]["quantize"]
    assert guard["batch_size"] == 1 and "quant_mode" not in guard
    assert "at batch size 1 (the default for a model without an attention mask)" in " ".join(recipe.notes)

    told = build_workflow(mlp, options(tmp_path, batch_sizes=(8,)), ALL, mlp_npz)
    assert told.batch_sizes == (8,) and agreement(told.workflow)["served_batch_size"] == 8
    assert told.workflow["passes"]["quantize"]["batch_size"] == 8
    assert told.workflow["passes"]["quantize"]["quant_mode"]["support"] == ["dynamic", "static"]
    assert told.workflow["data_configs"][0]["dataloader_config"] == {"batch_size": 8}


def test_synthetic_inputs_have_no_served_batch_size(tmp_path, bert):
    recipe = build_workflow(bert, options(tmp_path), ALL, DataSource("synthetic"))
    assert recipe.batch_sizes == () and "served_batch_size" not in agreement(recipe.workflow)


def test_a_fixed_batch_axis_is_the_only_size_it_serves(tmp_path):
    import onnx

    proto = mlp_model(seed=0)
    for value in (*proto.graph.input, *proto.graph.output):
        value.type.tensor_type.shape.dim[0].dim_value = 1
    facts = model_facts_from_onnx(proto, tmp_path / "fixed.onnx")
    path = tmp_path / "d.npz"
    np.savez(path, input=np.zeros((16, 16), dtype=np.float32))
    onnx.save(proto, tmp_path / "fixed.onnx")
    source = data_source(path, facts, frozenset())
    assert build_workflow(facts, options(tmp_path), ALL, source).batch_sizes == (1,)
    with pytest.raises(WorkflowConfigError, match="takes batches of 1 only") as caught:
        build_workflow(facts, options(tmp_path, batch_sizes=(1, 8)), ALL, source)
    assert caught.value.owner == "--batch-size"


@pytest.mark.parametrize(
    ("text", "expected"), [(None, ()), ("auto", ()), ("32", (32,)), ("32, 1,8", (1, 8, 32)), ("8,8", (8,))]
)
def test_batch_size_takes_a_size_or_a_list(text, expected) -> None:
    assert parse_batch_sizes(text) == expected


@pytest.mark.parametrize("text", ["0", "8,x", "-1", "1.5"])
def test_a_batch_size_that_is_no_whole_number_is_one_error(text) -> None:
    with pytest.raises(WorkflowConfigError, match="is not a whole number >= 1") as caught:
        parse_batch_sizes(text)
    assert caught.value.owner == "--batch-size"
