"""Adapters of the plugin execution providers that pip packages ship today, registered by olive-core itself.

They are data (package, module, option names and values) and import nothing until a session needs their
provider, so they live in olive-core, registered through olive-core's own ``olive.execution_providers``
entry points: ``pip install onnxruntime-ep-openvino`` is all a user does. A package that ships its own
adapter under the same name wins over these (see :mod:`olive.execution_providers.registry`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from olive.execution_providers.adapter import ExecutionProviderAdapter, OptionSpec

__all__ = ["OpenVINOAdapter", "WebGpuAdapter"]

# One input's static shape: name[1,128] (names may hold '/', ':', '.'); several separated by commas.
_RESHAPE = re.compile(r"^\s*[^\[\],]+\[\s*\d+(\s*\.\.\s*\d+)?(\s*,\s*\d+(\s*\.\.\s*\d+)?)*\s*\]\s*$")


def _reshape_problem(value: str) -> str | None:
    parts = re.split(r",(?![^\[]*\])", value)
    if all(_RESHAPE.match(part) for part in parts):
        return None
    return (
        'input shapes written "name[d0,d1,...]", several separated by commas '
        '(e.g. "input_ids[1,128],attention_mask[1,128]")'
    )


def _streams_problem(value: str) -> str | None:
    return None if value == "AUTO" or (value.isdigit() and int(value) >= 1) else "a whole number from 1, or AUTO"


def _whole(value: Any) -> str:
    if isinstance(value, bool) or not str(value).strip().isdigit():
        raise ValueError(value)
    return str(value).strip()


_OV_PRECISIONS = {"FP32": "f32", "FP16": "f16", "BF16": "bf16", "F32": "f32", "F16": "f16"}


class OpenVINOAdapter(ExecutionProviderAdapter):
    """Intel's OpenVINO execution provider (``pip install onnxruntime-ep-openvino``).

    OpenVINO's runtime properties (``INFERENCE_PRECISION_HINT``, ``NUM_STREAMS``, ``INFERENCE_NUM_THREADS``,
    ``PERFORMANCE_HINT``) are written as options of their own and given to the library in its ``load_config``
    JSON under the device they run on; the plugin ignores them as plain provider options (it warns). Microsoft
    Olive's spellings ``precision`` (``FP32``...), ``num_streams`` and ``num_of_threads`` are translated.
    """

    ep_name = "OpenVINOExecutionProvider"
    package = "onnxruntime-ep-openvino"
    module = "onnxruntime_ep_openvino"
    #: the options that go into load_config, keyed by the device
    device_properties = ("INFERENCE_PRECISION_HINT", "NUM_STREAMS", "INFERENCE_NUM_THREADS", "PERFORMANCE_HINT")
    options = {
        "INFERENCE_PRECISION_HINT": OptionSpec(
            choices=("f32", "bf16", "f16"),
            search_defaults=("f32", "bf16"),
            description="precision OpenVINO computes in (its default on CPUs with AMX or AVX512-BF16 is bf16)",
        ),
        "NUM_STREAMS": OptionSpec(
            check=_streams_problem, description="parallel inference streams (a whole number, or AUTO)"
        ),
        "INFERENCE_NUM_THREADS": OptionSpec(
            check=lambda v: None if v.isdigit() else "a whole number (0: OpenVINO decides)",
            description="threads OpenVINO uses",
        ),
        "PERFORMANCE_HINT": OptionSpec(
            choices=("LATENCY", "THROUGHPUT", "CUMULATIVE_THROUGHPUT"), description="what OpenVINO tunes for"
        ),
        "load_config": OptionSpec(kind=dict, description="any other OpenVINO properties: {device: {property: value}}"),
        "reshape_input": OptionSpec(
            check=_reshape_problem, description='static input shapes, e.g. "input_ids[1,128],attention_mask[1,128]"'
        ),
        "disable_dynamic_shapes": OptionSpec(kind=bool, description="compile dynamic inputs at the shapes first seen"),
        "enable_qdq_optimizer": OptionSpec(kind=bool, description="optimize QDQ (quantized) models for the NPU"),
        "cache_dir": OptionSpec(description="folder OpenVINO caches compiled models in"),
        "model_priority": OptionSpec(choices=("LOW", "MEDIUM", "HIGH", "DEFAULT")),
    }
    legacy_options = {
        "precision": ("INFERENCE_PRECISION_HINT", lambda v: _OV_PRECISIONS[str(v).upper()]),
        "num_streams": ("NUM_STREAMS", _whole),
        "num_of_threads": ("INFERENCE_NUM_THREADS", _whole),
    }

    def provider_options(self, options: Mapping[str, Any], ep_device: Any) -> dict[str, str]:
        device = dict(ep_device.ep_metadata).get("ov_device", "CPU")
        raw = options.get("load_config") or {}
        load_config: dict[str, Any] = json.loads(raw) if isinstance(raw, str) else json.loads(json.dumps(raw))
        properties = {name: str(options[name]) for name in self.device_properties if name in options}
        if properties:
            load_config.setdefault(device, {}).update(properties)
        plain = {k: v for k, v in options.items() if k not in self.device_properties and k != "load_config"}
        native = super().provider_options(plain, ep_device)
        if load_config:
            native["load_config"] = json.dumps(load_config, sort_keys=True)
        return native

    def describe_device(self, ep_device: Any) -> dict[str, Any]:
        meta = dict(ep_device.ep_metadata)
        return {
            **super().describe_device(ep_device),
            "ov_device": meta.get("ov_device"),
            "name": meta.get("FULL_DEVICE_NAME"),
            "capabilities": meta.get("OPTIMIZATION_CAPABILITIES"),
        }


class WebGpuAdapter(ExecutionProviderAdapter):
    """The WebGPU execution provider (``pip install onnxruntime-ep-webgpu``); it needs a GPU and, on Linux,
    the Vulkan loader (``libvulkan1``)."""

    ep_name = "WebGpuExecutionProvider"
    package = "onnxruntime-ep-webgpu"
    module = "onnxruntime_ep_webgpu"
    needs = "needs a GPU and, on Linux, the Vulkan loader (libvulkan1)"
    options = {
        "preferredLayout": OptionSpec(choices=("NCHW", "NHWC"), search_defaults=("NCHW", "NHWC")),
        "enableGraphCapture": OptionSpec(choices=("0", "1")),
        "validationMode": OptionSpec(choices=("disabled", "wgpuOnly", "basic", "full")),
        "powerPreference": OptionSpec(choices=("default", "low-power", "high-performance")),
        "storageBufferCacheMode": OptionSpec(choices=("disabled", "lazyRelease", "simple", "bucket")),
        "uniformBufferCacheMode": OptionSpec(choices=("disabled", "lazyRelease", "simple", "bucket")),
        "forceCpuNodeNames": OptionSpec(description="nodes kept on the CPU, one name per line"),
    }
