"""Accelerator specs and the execution-provider filter, against the installed onnxruntime."""

from __future__ import annotations

import logging

import onnxruntime
import pytest

from olive.exceptions import ExecutionProviderError
from olive.execution_providers import ExecutionProviderAdapter
from olive.execution_providers.registry import new_ep_adapter_registry, use_ep_adapter_registry
from olive.hardware import AcceleratorSpec, Device, ExecutionProvider
from olive.hardware.accelerator import filter_execution_providers


def test_spec_is_frozen_and_converts_device():
    spec = AcceleratorSpec("GPU", ExecutionProvider.CUDAExecutionProvider)
    assert spec.accelerator_type is Device.GPU
    assert str(spec) == "gpu-cuda"
    with pytest.raises(AttributeError):
        spec.memory = 3  # type: ignore[misc]
    assert spec == AcceleratorSpec(Device.GPU, "CUDAExecutionProvider")
    assert hash(spec) == hash(AcceleratorSpec(Device.GPU, "CUDAExecutionProvider"))


def test_unknown_device_is_a_clear_error():
    with pytest.raises(ExecutionProviderError, match="unknown device 'tpu'; use one of cpu, gpu, npu"):
        AcceleratorSpec("tpu", "CPUExecutionProvider")


def test_filter_drops_missing_providers_with_one_warning(caplog):
    installed = onnxruntime.get_available_providers()
    missing = "DmlExecutionProvider"
    assert missing not in installed
    with caplog.at_level(logging.WARNING):
        kept = filter_execution_providers([missing, "CPUExecutionProvider"])
    assert kept == ["CPUExecutionProvider"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "DmlExecutionProvider (from onnxruntime-directml)" in warnings[0].getMessage()


def test_filter_with_none_left_is_an_error():
    with pytest.raises(ExecutionProviderError) as info:
        filter_execution_providers(["DmlExecutionProvider"])
    message = str(info.value)
    assert "onnxruntime-directml" in message
    assert "CPUExecutionProvider" in message


class InstalledAdapter(ExecutionProviderAdapter):
    """A plugin provider whose package is installed here (its module is onnx's: only found, never loaded)."""

    ep_name = "HereExecutionProvider"
    package = "onnxruntime-ep-here"
    module = "onnx"


@pytest.fixture
def here_registry():
    registry = new_ep_adapter_registry(entry_points=False)
    registry.register("HereExecutionProvider", InstalledAdapter, distribution="olive-test-here")
    with use_ep_adapter_registry(registry):
        yield registry


@pytest.mark.parametrize("asked", ["here", "HereExecutionprovider", "HereExecutionProvidr"])
def test_an_unknown_provider_names_the_installed_plugin_providers_and_the_closest(here_registry, asked):
    with pytest.raises(ExecutionProviderError) as info:
        filter_execution_providers([asked])
    message = str(info.value)
    assert f"{asked} (did you mean 'HereExecutionProvider'?)" in message
    assert "CPUExecutionProvider" in message and "plugin packages add HereExecutionProvider" in message
    # A package to install is named only for a provider that is not installed.
    assert "onnxruntime-ep-here" not in message and "an onnxruntime build" not in message


def test_a_misspelled_provider_that_is_not_installed_is_named_with_its_package(here_registry):
    with pytest.raises(
        ExecutionProviderError, match=r"cuda \(did you mean 'CUDAExecutionProvider', from onnxruntime-gpu\?\)"
    ):
        filter_execution_providers(["cuda"])


def test_an_unknown_provider_beside_a_known_one_is_still_dropped_with_one_complete_warning(here_registry, caplog):
    with caplog.at_level(logging.WARNING):
        kept = filter_execution_providers(["herr", "CPUExecutionProvider"])
    assert kept == ["CPUExecutionProvider"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "herr (did you mean 'HereExecutionProvider'?)" in warnings[0]
    assert "plugin packages add HereExecutionProvider" in warnings[0]
