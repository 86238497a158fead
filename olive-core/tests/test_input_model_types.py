"""A workflow whose input model is not ONNX: the model type is a plugin, the first pass must take it, and every
metric compares with that first pass's output (the input itself cannot be evaluated).

The model type here is the tests' own (``SeedModel``: a JSON file naming the seed of a tiny MLP) with its own
converter pass, registered in-process, so the engine's handling of such inputs is tested without torch.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner
from engine_support import AddMatMuls, ScaleOutput, agreement_metric, write_calibration

import olive
from olive.cli.main import cli
from olive.exceptions import WorkflowConfigError
from olive.hardware.accelerator import AcceleratorSpec
from olive.model.handler import OliveModelHandler
from olive.model.types import new_model_type_registry, use_model_type_registry
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import model_proto_to_olive_model
from olive.plugins.install_hints import install_line
from olive.plugins.registry import PassRegistry, use_registry
from olive.testing.models import mlp_model, save_model


class SeedModel(OliveModelHandler):
    """A model onnxruntime cannot run: a JSON file ``{"seed": n}`` naming the weights of :func:`mlp_model`."""

    model_type = "SeedModel"

    def content_hash(self) -> str:
        import hashlib

        return hashlib.sha256(Path(self.model_path).read_bytes()).hexdigest()

    def validate(self) -> None:
        json.loads(Path(self.model_path).read_text())["seed"]


class SeedToOnnx(Pass):
    """Build the MLP a SeedModel names."""

    accepts_model_types: ClassVar[tuple[str, ...]] = ("SeedModel",)
    runs: ClassVar[int] = 0

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {"opset": PassConfigParam(type_=int, default_value=17)}

    def _run_for_config(self, model: Any, config: Any, output_model_path: str) -> Any:
        type(self).runs += 1
        seed = json.loads(Path(model.model_path).read_text())["seed"]
        return model_proto_to_olive_model(mlp_model(seed=seed), output_model_path)


@pytest.fixture
def seed_models(tmp_path: Path) -> Iterator[Path]:
    """SeedModel and its converter offered in-process (and no installed model types but ONNXModel)."""
    passes = PassRegistry(entry_points=False)
    for pass_class in (SeedToOnnx, AddMatMuls, ScaleOutput):
        passes.register(pass_class, name=pass_class.__name__)
    types = new_model_type_registry(entry_points=False)
    types.register("SeedModel", SeedModel, distribution="olive-test-seed")
    SeedToOnnx.runs = 0
    with use_registry(passes), use_model_type_registry(types):
        (tmp_path / "seed.json").write_text(json.dumps({"seed": 3}))
        yield tmp_path / "seed.json"


def _workflow(tmp_path: Path, model: Path, **passes: Any) -> dict[str, Any]:
    write_calibration(tmp_path / "calib.npz")
    return {
        "input_model": {"type": "SeedModel", "model_path": str(model)},
        "data_configs": [
            {
                "name": "calib",
                "type": "NpzDataContainer",
                "load_dataset_config": {"data_path": str(tmp_path / "calib.npz")},
            }
        ],
        "passes": passes or {"convert": {"type": "SeedToOnnx"}, "scale": {"type": "ScaleOutput"}},
        "cache_dir": str(tmp_path / "cache"),
        "output_dir": str(tmp_path / "out"),
    }


def _invoke(tmp_path: Path, workflow: dict[str, Any], *args: str) -> Any:
    (tmp_path / "wf.json").write_text(json.dumps(workflow))
    return CliRunner().invoke(cli, ["run", str(tmp_path / "wf.json"), *args], catch_exceptions=False)


SIZE_NO_BIGGER = {
    "name": "size",
    "type": "size_on_disk",
    "sub_types": [{"name": "bytes", "priority": 2, "goal": {"type": "max-degradation", "value": 0}}],
}


def test_metrics_and_relative_goals_use_the_first_passs_output(seed_models, tmp_path):
    workflow = _workflow(tmp_path, seed_models)
    workflow["passes"]["scale"] = {"type": "ScaleOutput", "scale": 1.0, "truncate": [False, True]}
    workflow["search_strategy"] = {"execution_order": "joint", "sampler": "sequential"}
    workflow["evaluators"] = {"common": {"metrics": [agreement_metric(priority=1), SIZE_NO_BIGGER]}}
    workflow["evaluator"] = "common"
    output = olive.run(workflow)
    assert SeedToOnnx.runs == 1  # once for the reference; every search point reuses it
    converted = next(n for n in output.footprint if n.pass_key == "convert")
    assert output.reference_model_id == converted.model_id and output.footprint[0].metrics is None
    assert converted.metric_values()["agree-cosine_mean"] == 1.0
    candidates = {json.dumps(n.config["truncate"]): n for n in output.footprint if n.is_candidate}
    # Truncated: smaller than the conversion's output (the size goal is relative to it), outputs flipped.
    assert candidates["true"].metric_values()["agree-cosine_mean"] < 0
    assert candidates["true"].meets_goals is True and candidates["false"].meets_goals is True
    footprint = json.loads((tmp_path / "out" / "footprint.json").read_text())
    assert footprint["reference_model_id"] == converted.model_id
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<strong>SeedModel</strong>" in page and f"compares with <code>{converted.model_id}</code>" in page

    # The same model again: no work.
    again = olive.run({**workflow, "output_dir": str(tmp_path / "out2")})
    assert SeedToOnnx.runs == 1 and all(n.cached for n in again.footprint if n.pass_key)


def test_without_an_evaluator_nothing_runs_before_the_search(seed_models, tmp_path):
    output = olive.run(_workflow(tmp_path, seed_models))
    assert output.reference_model_id is None and SeedToOnnx.runs == 1
    assert [n.pass_key for n in output.footprint] == [None, "convert", "scale"]


@pytest.mark.parametrize(
    ("input_kind", "passes", "owner", "message"),
    [
        (
            "seed",
            {"first": {"type": "ScaleOutput"}},
            "passes.first.type",
            "ScaleOutput takes ONNXModel models, but the input model is a SeedModel; put a pass that converts "
            "SeedModel models to ONNX first",
        ),
        (
            "onnx",
            {"first": {"type": "SeedToOnnx"}},
            "passes.first.type",
            "SeedToOnnx takes SeedModel models, but the input model is a ONNXModel; the model is ONNX already",
        ),
    ],
)
def test_the_first_pass_must_take_the_input_model_type(seed_models, tmp_path, input_kind, passes, owner, message):
    workflow = _workflow(tmp_path, seed_models, **passes)
    if input_kind == "onnx":
        workflow["input_model"] = {
            "type": "ONNXModel",
            "model_path": save_model(mlp_model(), tmp_path / "m").model_path,
        }
    result = _invoke(tmp_path, workflow, "--dry-run")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"Error: {owner}: {message}")
    assert not (tmp_path / "cache").exists()


def test_a_searched_first_pass_is_refused_when_it_would_be_the_reference(seed_models, tmp_path):
    workflow = _workflow(tmp_path, seed_models, convert=[{"type": "SeedToOnnx"}, {"type": "SeedToOnnx", "opset": 18}])
    workflow["search_strategy"] = {"execution_order": "joint"}
    workflow["evaluators"] = {"common": {"metrics": [agreement_metric(priority=1)]}}
    workflow["evaluator"] = "common"
    with pytest.raises(WorkflowConfigError) as caught:
        olive.run(workflow)
    assert caught.value.owner == "passes.convert" and "searches 2 configs" in caught.value.reason
    assert not (tmp_path / "cache").exists()
    # Without an evaluator nothing compares with it: searching the conversion is allowed.
    del workflow["evaluator"]
    assert olive.run(workflow).get_best_candidate() is not None and SeedToOnnx.runs == 2


def test_a_model_type_whose_distribution_is_not_installed_exits_2_with_the_install_line(tmp_path):
    (tmp_path / "model").mkdir()
    workflow = {
        "input_model": {"type": "HfModel", "model_path": "model", "task": "feature-extraction"},
        "passes": {"convert": {"type": "OnnxConversion"}},
        "cache_dir": str(tmp_path / "cache"),
        "output_dir": str(tmp_path / "out"),
    }
    with use_model_type_registry(new_model_type_registry(entry_points=False)):
        result = _invoke(tmp_path, workflow)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: input_model.type: model type 'HfModel' is offered by olive-passes-torch")
    assert f"install it with: {install_line('olive-passes-torch', 'hf')}" in " ".join(result.stderr.split())
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()
