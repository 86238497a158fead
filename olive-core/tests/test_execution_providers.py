"""Execution providers as plugins, without a real plugin library: adapters, option checks, targets in workflows
and cache keys, and discovery through a real install of a provider distribution whose library is missing.

Tests with the real OpenVINO library are in ``test_ep_openvino.py`` (the ``ep-openvino`` tox environment)."""

from __future__ import annotations

import json
import textwrap

import pytest

from olive.exceptions import ModelLoadError, WorkflowConfigError
from olive.execution_providers import EPOptionError, ExecutionProviderAdapter, OptionSpec
from olive.execution_providers.known import OpenVINOAdapter
from olive.execution_providers.registry import (
    adapter_for,
    new_ep_adapter_registry,
    use_ep_adapter_registry,
)
from olive.hardware.accelerator import AcceleratorSpec
from olive.measure import create_session
from olive.testing.distributions import distribution_wheel
from olive.testing.models import mlp_model, save_model
from olive.testing.venv import make_venv
from olive.workflows.run import prepare


class AbsentAdapter(ExecutionProviderAdapter):
    """A provider whose package is not installed here."""

    ep_name = "AbsentExecutionProvider"
    package = "onnxruntime-ep-absent"
    module = "onnxruntime_ep_absent_for_olive_tests"
    options = {"mode": OptionSpec(choices=("fast", "exact"), search_defaults=("fast", "exact"))}


@pytest.fixture
def absent_registry():
    registry = new_ep_adapter_registry(entry_points=False)
    registry.register("AbsentExecutionProvider", AbsentAdapter, distribution="olive-test-absent")
    with use_ep_adapter_registry(registry):
        yield registry


def _workflow(tmp_path, providers, **extra):
    model = save_model(mlp_model(), tmp_path / "model")
    return {
        "input_model": {"type": "ONNXModel", "model_path": str(model.model_path)},
        "systems": {
            "local": {"type": "LocalSystem", "accelerators": [{"device": "cpu", "execution_providers": providers}]}
        },
        "target": "local",
        "passes": {"noop": {"type": "NoOp"}},
        "output_dir": str(tmp_path / "out"),
        "cache_dir": str(tmp_path / "cache"),
        **extra,
    }


# ------------------------------------------------------------------------------------------------ adapters
def test_olive_core_registers_the_known_adapters_without_importing_their_packages():
    registry = new_ep_adapter_registry()
    names = {e.name: e.distribution for e in registry.entries()}
    assert names["OpenVINOExecutionProvider"] == "olive-core"
    assert names["WebGpuExecutionProvider"] == "olive-core"
    assert isinstance(adapter_for("OpenVINOExecutionProvider.AUTO"), OpenVINOAdapter)
    assert adapter_for("CPUExecutionProvider") is None


def test_unknown_option_names_the_closest_and_lists_the_valid_ones():
    with pytest.raises(EPOptionError) as caught:
        OpenVINOAdapter().check_options({"INFERENCE_PRECISIN_HINT": "f32"}, "here")
    message = str(caught.value)
    assert "did you mean 'INFERENCE_PRECISION_HINT'" in message
    assert "NUM_STREAMS" in message and message.startswith("here:")


def test_bad_value_lists_the_values_it_takes():
    with pytest.raises(EPOptionError) as caught:
        OpenVINOAdapter().check_options({"INFERENCE_PRECISION_HINT": "F32"}, "here")
    assert "here.INFERENCE_PRECISION_HINT" in str(caught.value)
    assert "one of f32, bf16, f16" in str(caught.value)
    with pytest.raises(EPOptionError, match="a whole number from 1, or AUTO"):
        OpenVINOAdapter().check_options({"NUM_STREAMS": 0}, "here")


def test_microsoft_olive_spellings_are_translated():
    checked = OpenVINOAdapter().check_options({"precision": "FP16", "num_streams": 2}, "here")
    assert checked == {"INFERENCE_PRECISION_HINT": "f16", "NUM_STREAMS": "2"}


# ------------------------------------------------------------------------------------------------ targets
def test_options_make_distinct_targets_and_cache_keys():
    plain = AcceleratorSpec("cpu", "OpenVINOExecutionProvider")
    bf16 = AcceleratorSpec("cpu", "OpenVINOExecutionProvider", provider_options={"INFERENCE_PRECISION_HINT": "bf16"})
    assert plain != bf16 and hash(plain) == hash(bf16)
    assert plain.cache_key() == str(plain) == "cpu-openvino"
    assert bf16.cache_key() != plain.cache_key()
    assert bf16.label == "cpu-openvino[INFERENCE_PRECISION_HINT=bf16]"
    assert bf16.inference_settings() == {
        "execution_provider": "OpenVINOExecutionProvider",
        "provider_options": [{"INFERENCE_PRECISION_HINT": "bf16"}],
        "device": "cpu",
    }
    assert AcceleratorSpec("cpu", "CPUExecutionProvider").inference_settings() == {
        "execution_provider": "CPUExecutionProvider"
    }


def test_run_keys_of_accelerator_dependent_passes_name_the_options():
    from olive.engine.keys import run_key
    from olive.passes.olive_pass import Pass
    from olive.plugins.identity import PassIdentity

    class Dependent(Pass):
        @classmethod
        def _default_config(cls, accelerator_spec):
            return {}

        @classmethod
        def is_accelerator_agnostic(cls, accelerator_spec):
            return False

        def _run_for_config(self, model, config, output_model_path):
            return model

    class Agnostic(Dependent):
        @classmethod
        def is_accelerator_agnostic(cls, accelerator_spec):
            return True

    identity = PassIdentity("X", "local", "0")
    f32 = AcceleratorSpec("cpu", "OpenVINOExecutionProvider", provider_options={"INFERENCE_PRECISION_HINT": "f32"})
    bf16 = AcceleratorSpec("cpu", "OpenVINOExecutionProvider", provider_options={"INFERENCE_PRECISION_HINT": "bf16"})

    def key(cls, spec):
        return run_key("h", {"config": {}}, cls, identity, {}, spec, None)

    assert key(Dependent, f32) != key(Dependent, bf16)
    assert key(Agnostic, f32) == key(Agnostic, bf16)


def test_accelerator_entries_take_name_and_options(tmp_path):
    from olive.workflows.config import load_workflow_config

    searched = {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": ["f32", "bf16"]}
    config = load_workflow_config(
        _workflow(
            tmp_path, ["CPUExecutionProvider", ["OpenVINOExecutionProvider", {"INFERENCE_PRECISION_HINT": searched}]]
        )
    )
    accelerator = config.target.accelerators[0]
    assert accelerator.execution_providers == ["CPUExecutionProvider", "OpenVINOExecutionProvider"]
    assert accelerator.provider_options == {"OpenVINOExecutionProvider": {"INFERENCE_PRECISION_HINT": searched}}
    with pytest.raises(WorkflowConfigError, match=r"execution_providers\[1\].*listed twice"):
        load_workflow_config(_workflow(tmp_path, ["CPUExecutionProvider", "CPUExecutionProvider"]))
    with pytest.raises(WorkflowConfigError, match=r"execution_providers\[0\].*\[name, \{options\}\]"):
        load_workflow_config(_workflow(tmp_path, [["CPUExecutionProvider"]]))


def test_a_plugin_provider_that_is_not_installed_is_a_config_error_naming_the_package(
    tmp_path, absent_registry, engine_registry
):
    with pytest.raises(WorkflowConfigError) as caught:
        prepare(_workflow(tmp_path, ["CPUExecutionProvider", "AbsentExecutionProvider"]))
    message = str(caught.value)
    assert "execution_providers[1]" in message
    assert "pip install onnxruntime-ep-absent" in message
    assert not (tmp_path / "out").exists()


def test_an_unknown_option_is_a_config_error_before_the_library_is_needed(tmp_path, absent_registry):
    from olive.execution_providers.targets import _option_points

    with pytest.raises(
        WorkflowConfigError, match=r"unknown AbsentExecutionProvider option 'mod' \(did you mean 'mode'"
    ):
        _option_points(AbsentAdapter(), "AbsentExecutionProvider", {"mod": "fast"}, "x")
    points = _option_points(AbsentAdapter(), "AbsentExecutionProvider", {"mode": "SEARCHABLE_VALUES"}, "x")
    assert points == [{"mode": "fast"}, {"mode": "exact"}]
    with pytest.raises(WorkflowConfigError, match=r"x\.mode: 'slow' is not valid; mode takes one of fast, exact"):
        _option_points(AbsentAdapter(), "AbsentExecutionProvider", {"mode": "slow"}, "x")


def test_a_session_on_a_provider_that_is_not_installed_names_the_package(tmp_path, absent_registry):
    model = save_model(mlp_model(), tmp_path / "model")
    with pytest.raises(ModelLoadError, match="pip install onnxruntime-ep-absent"):
        create_session(model.model_path, {"execution_provider": "AbsentExecutionProvider"})


def test_the_cli_exits_2_for_a_provider_that_is_not_installed(tmp_path, absent_registry, engine_registry):
    from click.testing import CliRunner

    from olive.cli.main import cli

    path = tmp_path / "workflow.json"
    path.write_text(json.dumps(_workflow(tmp_path, ["AbsentExecutionProvider"])))
    result = CliRunner().invoke(cli, ["run", str(path)])
    assert result.exit_code == 2, result.output
    assert "pip install onnxruntime-ep-absent" in result.output


def test_a_default_cpu_workflow_keeps_one_target_and_its_keys(tmp_path, engine_registry):
    prepared = prepare({k: v for k, v in _workflow(tmp_path, ["CPUExecutionProvider"]).items()})
    assert [t.cache_key() for t in prepared.targets] == ["cpu-cpu"]
    assert prepared.total_size() == 1


# ------------------------------------------------------------------------------------------------ real install
FAKE_EP_PACKAGE = """
from pathlib import Path


def get_library_path():
    # The wheel ships no library: what a broken install looks like.
    return str(Path(__file__).parent / "libonnxruntime_providers_olivetest.so")


def get_ep_names():
    return ["OliveTestExecutionProvider"]
"""

FAKE_EP_ADAPTER = """
from olive.execution_providers import ExecutionProviderAdapter, OptionSpec


class OliveTestAdapter(ExecutionProviderAdapter):
    ep_name = "OliveTestExecutionProvider"
    package = "onnxruntime-ep-olivetest"
    module = "onnxruntime_ep_olivetest"
    options = {"mode": OptionSpec(choices=("fast", "exact"))}
"""


@pytest.fixture(scope="module")
def fake_ep_venv(tmp_path_factory):
    wheel = distribution_wheel(
        "onnxruntime-ep-olivetest",
        "0.1",
        {
            "onnxruntime_ep_olivetest/__init__.py": FAKE_EP_PACKAGE,
            "onnxruntime_ep_olivetest/olive_adapter.py": FAKE_EP_ADAPTER,
        },
        {
            "olive.execution_providers": {
                "OliveTestExecutionProvider": "onnxruntime_ep_olivetest.olive_adapter:OliveTestAdapter"
            }
        },
    )
    venv = make_venv(tmp_path_factory.mktemp("fake-ep") / "venv")
    venv.pip_install("--no-deps", "--no-index", wheel)
    return venv


def test_olive_eps_lists_a_provider_whose_library_is_missing_as_failed(fake_ep_venv):
    code = "import sys; from olive.cli.main import main; main(['eps', '--json'])"
    result = fake_ep_venv.python_run(code)
    listed = {item["name"]: item for item in json.loads(result.stdout)}
    fake = listed["OliveTestExecutionProvider"]
    assert fake["kind"] == "plugin" and fake["status"] == "failed"
    assert fake["package"] == "onnxruntime-ep-olivetest" and fake["version"] == "0.1"
    assert fake["adapter"] == "onnxruntime-ep-olivetest==0.1"
    assert "libonnxruntime_providers_olivetest.so" in fake["error"]
    # The rest keeps working.
    assert listed["CPUExecutionProvider"]["status"] == "ok"


def test_a_workflow_naming_the_broken_provider_exits_2_naming_it(fake_ep_venv, tmp_path):
    path = tmp_path / "workflow.json"
    path.write_text(json.dumps(_workflow(tmp_path, ["CPUExecutionProvider", "OliveTestExecutionProvider"])))
    code = textwrap.dedent(
        f"""
        from olive.cli.main import main
        main(["run", {str(path)!r}])
        """
    )
    result = fake_ep_venv.python_run(code, check=False)
    assert result.returncode == 2, result.stderr
    assert "OliveTestExecutionProvider" in result.stderr
    assert "does not load" in result.stderr and "libonnxruntime_providers_olivetest.so" in result.stderr
    assert not (tmp_path / "out").exists()
