"""PyTorchModel: a module from a file or a loader function, converted and checked; bad input names its field."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import onnx_outputs

from olive.exceptions import PassConfigError, PassRunError, WorkflowConfigError
from olive.model.types import get_model_type, handler_from_config, model_from_json
from olive_passes_torch.pytorch_model import PyTorchModelHandler

SCRIPT = """
import torch


class Scale(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(16, 8)

    def forward(self, x):
        return torch.relu(self.linear(x))


class BatchBranch(torch.nn.Module):
    # Control flow on a size: a trace keeps the branch its example input took.
    def forward(self, x):
        if x.shape[0] > 2:
            return x * 2
        return x * 3


class Pair(torch.nn.Module):
    def forward(self, a, b):
        return a + b, a * b


def load_scale(model_path):
    torch.manual_seed(0)
    module = Scale()
    if model_path:
        module.load_state_dict(torch.load(model_path))
    return module


def load_branch(model_path):
    return BatchBranch()


def load_pair(model_path):
    return Pair()


def broken_loader(model_path):
    raise RuntimeError("the weights server is unreachable")


def pair_inputs(handler):
    return {"a": torch.ones(3, 5), "b": torch.full((3, 5), 2.0)}
"""

IO = {
    "input_names": ["x"],
    "input_shapes": [[2, 16]],
    "output_names": ["y"],
    "dynamic_axes": {"x": {"0": "batch"}, "y": {"0": "batch"}},
}


@pytest.fixture
def script(tmp_path) -> Path:
    path = tmp_path / "model_script.py"
    path.write_text(textwrap.dedent(SCRIPT))
    return path


def _model(tmp_path: Path, **fields) -> PyTorchModelHandler:
    return handler_from_config({"type": "PyTorchModel", **fields}, base_dir=tmp_path)


def _matches_torch(module: torch.nn.Module, onnx_path: str, x: np.ndarray) -> None:
    with torch.no_grad():
        want = module(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(onnx_outputs(onnx_path, {"x": x})["y"], want, atol=1e-5, rtol=1e-4)


def test_a_whole_saved_module_converts(tmp_path, cpu, conversion):
    assert get_model_type("PyTorchModel") is PyTorchModelHandler
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()).eval()
    torch.save(module, tmp_path / "model.pt")
    model = _model(tmp_path, model_path="model.pt", io_config=IO)
    assert model_from_json(model.to_json()).to_json() == model.to_json()
    result = conversion(cpu, {}).run(model, str(tmp_path / "out"))
    assert result.model_attributes["conversion_check"]["passed"]
    _matches_torch(module, result.model_path, np.random.default_rng(1).standard_normal((5, 16)).astype(np.float32))


@pytest.mark.filterwarnings("ignore:`torch.jit:DeprecationWarning")  # writing the file the test loads
def test_a_torchscript_file_converts(tmp_path, cpu, conversion):
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Tanh()).eval()
    torch.jit.trace(module, torch.ones(2, 16)).save(str(tmp_path / "model.ts"))
    model = _model(tmp_path, model_path="model.ts", model_file_format="PyTorch.TorchScript", io_config=IO)
    result = conversion(cpu, {}).run(model, str(tmp_path / "out"))
    _matches_torch(module, result.model_path, np.ones((4, 16), dtype=np.float32))


def test_a_loader_in_a_script_with_its_weights(tmp_path, script, cpu, conversion):
    torch.manual_seed(3)
    weights = torch.nn.Linear(16, 8).state_dict()
    torch.save({f"linear.{k}": v for k, v in weights.items()}, tmp_path / "weights.pt")
    model = _model(
        tmp_path, model_path="weights.pt", model_loader="load_scale", model_script="model_script.py", io_config=IO
    )
    result = conversion(cpu, {}).run(model, str(tmp_path / "out"))
    loaded = model.load_model()
    assert torch.equal(loaded.linear.weight, weights["weight"])  # the loader read the file it was given
    _matches_torch(loaded, result.model_path, np.full((3, 16), 0.5, dtype=np.float32))


def test_dummy_inputs_func_gives_the_export_inputs(tmp_path, script, cpu, conversion):
    io = {"input_names": ["a", "b"], "output_names": ["sum", "product"]}
    model = _model(
        tmp_path,
        model_loader="load_pair",
        model_script="model_script.py",
        io_config=io,
        dummy_inputs_func="pair_inputs",
    )
    result = conversion(cpu, {}).run(model, str(tmp_path / "out"))
    out = onnx_outputs(result.model_path, {"a": np.ones((3, 5), np.float32), "b": np.full((3, 5), 2.0, np.float32)})
    assert out["sum"].tolist() == [[3.0] * 5] * 3 and out["product"].tolist() == [[2.0] * 5] * 3


def test_an_export_that_does_not_generalize_fails_and_leaves_nothing(tmp_path, script, cpu, conversion):
    io = {"input_names": ["x"], "input_shapes": [[2, 4]], "output_names": ["y"], "dynamic_axes": {"x": {"0": "batch"}}}
    model = _model(tmp_path, model_loader="load_branch", model_script="model_script.py", io_config=io)
    out = tmp_path / "out"
    with pytest.raises(PassRunError) as caught:
        conversion(cpu, {}).run(model, str(out))
    assert "disagrees with PyTorch" in caught.value.reason and "output 'y'" in caught.value.reason
    assert "use_dynamo_exporter=true" in caught.value.reason
    assert list(out.iterdir()) == []
    # Checked at the export's own size only, the same trace passes: the check's other batch size is what caught it.
    assert (
        conversion(cpu, {"dynamic": False})
        .run(model, str(tmp_path / "fixed"))
        .model_attributes["conversion_check"]["passed"]
    )


def test_a_model_script_that_raises_on_import(tmp_path, cpu, conversion):
    (tmp_path / "bad.py").write_text("raise ImportError('no module named secret_layers')\n")
    model = _model(tmp_path, model_loader="load", model_script="bad.py", io_config=IO)
    with pytest.raises(WorkflowConfigError, match=r"input_model\.model_script: importing user script .*secret_layers"):
        model.validate()
    with pytest.raises(WorkflowConfigError):
        conversion(cpu, {}).run(model, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_a_model_loader_that_raises_is_a_run_error_naming_it(tmp_path, script, cpu, conversion):
    model = _model(tmp_path, model_loader="broken_loader", model_script="model_script.py", io_config=IO)
    model.validate()  # the function exists; it fails when called
    with pytest.raises(PassRunError) as caught:
        conversion(cpu, {}).run(model, str(tmp_path / "out"))
    assert caught.value.owner == "input_model.model_loader"
    assert "RuntimeError: the weights server is unreachable" in caught.value.reason


def test_io_config_inputs_that_forward_does_not_take(tmp_path, script, cpu, conversion):
    # Inputs are passed in order, as Microsoft Olive passes them: the count must fit forward's arguments.
    io = {**IO, "input_names": ["x", "mask"], "input_shapes": [[2, 16], [2, 16]], "dynamic_axes": {}}
    model = _model(tmp_path, model_loader="load_scale", model_script="model_script.py", io_config=io)
    with pytest.raises(PassConfigError) as caught:
        conversion(cpu, {}).run(model, str(tmp_path / "out"))
    assert caught.value.owner == "input_model.io_config.input_names"
    assert "lists 2 input(s) (x, mask) but the model's forward signature takes 1 (x)" in caught.value.reason
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize(
    ("fields", "owner", "reason"),
    [
        ({"model_loader": "load_scale", "model_script": "model_script.py"}, "input_model.io_config", "missing"),
        (
            {
                "model_loader": "load_scale",
                "model_script": "model_script.py",
                "io_config": {"input_names": ["x"], "output_names": ["y"]},
            },
            "input_model.io_config.input_shapes",
            "dummy_inputs_func",
        ),
        ({"model_loader": "load_scale", "io_config": IO}, "input_model.model_loader", "model_script is missing"),
        ({"model_path": ".", "io_config": IO}, "input_model.model_path", "needs a model_loader"),
        (
            {"model_path": "model_script.py", "model_file_format": "PyTorch.StateDict", "io_config": IO},
            "input_model.model_file_format",
            "model_loader",
        ),
        ({"io_config": IO}, "input_model.model_path", "missing"),
        (
            {"model_path": "model_script.py", "io_config": {**IO, "input_types": ["float"]}},
            "input_model.io_config.input_types[0]",
            "float32",
        ),
        (
            {"model_path": "model_script.py", "io_config": {**IO, "dynamic_axes": {"z": {"0": "b"}}}},
            "input_model.io_config.dynamic_axes.z",
            "neither",
        ),
    ],
)
def test_fields_are_checked_by_name(tmp_path, script, fields, owner, reason):
    with pytest.raises(WorkflowConfigError) as caught:
        _model(tmp_path, **fields)
    assert caught.value.owner == owner and reason in caught.value.reason, caught.value


def test_content_hash_follows_the_script(tmp_path, script):
    model = _model(tmp_path, model_loader="load_scale", model_script="model_script.py", io_config=IO)
    before = model.content_hash()
    assert (
        _model(tmp_path, model_loader="load_branch", model_script="model_script.py", io_config=IO).content_hash()
        != before
    )
    script.write_text(script.read_text() + "\n# edited\n")
    assert (
        _model(tmp_path, model_loader="load_scale", model_script="model_script.py", io_config=IO).content_hash()
        != before
    )
