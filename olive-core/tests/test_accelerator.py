"""Accelerator specs and the execution-provider filter, against the installed onnxruntime."""

from __future__ import annotations

import logging

import onnxruntime
import pytest

from olive.exceptions import ExecutionProviderError
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
