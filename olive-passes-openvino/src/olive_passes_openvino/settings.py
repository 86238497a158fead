"""An OpenVINO model's ``inference_settings``: the device and the properties it is compiled with.

::

    "inference_settings": {
        "device_name": "CPU",
        "ov_config": {"INFERENCE_PRECISION_HINT": "f32", "PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": 2}
    }

- ``device_name``: the OpenVINO device (Microsoft Olive's key; default ``CPU``).
- ``ov_config``: OpenVINO properties by their own names, given to ``Core.compile_model``. Unset ones keep
  OpenVINO's defaults, which depend on the CPU: ``INFERENCE_PRECISION_HINT`` is ``bf16`` where the CPU computes
  in bf16 (AVX-512 BF16 or AMX) and ``f32`` elsewhere. One exception: ``ENABLE_CPU_PINNING`` is false unless
  set (see :data:`PINNING_PROPERTY`).

A metric's ``inference_settings`` apply to every model it measures, ONNX ones included, so onnxruntime's keys
are accepted too: ``session_options.intra_op_num_threads`` becomes ``INFERENCE_NUM_THREADS`` (unless ov_config
sets it), so a paired timing gives both runtimes the same threads; the other onnxruntime keys (providers,
session options) do not apply to OpenVINO and are left aside.

Checking needs no openvino; compiling does (:mod:`olive_passes_openvino.session`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from olive.exceptions import ModelLoadError, closest_match_hint
from olive.measure.sessions import RECORDED_KEYS, SETTING_KEYS

OPENVINO_KEYS = ("device_name", "ov_config")
DEFAULT_DEVICE = "CPU"
THREADS_PROPERTY = "INFERENCE_NUM_THREADS"
# OpenVINO pins its CPU threads to cores by default. Where other work shares the cores (the onnxruntime sessions
# Olive times in the same process, other processes on a shared machine), pinned threads cannot move off a busy
# core: measured on a 2-core AMD EPYC under load, olive.testing's encoder at batch 1, sequence 128 ran in 11.1 ms
# pinned and 0.61 ms unpinned (onnxruntime: 0.50 ms). Olive compiles unpinned unless ov_config says otherwise.
PINNING_PROPERTY = "ENABLE_CPU_PINNING"


def compile_settings(
    settings: Mapping[str, Any] | None, where: str = "inference_settings"
) -> tuple[str, dict[str, Any]]:
    """``(device, properties)`` that ``Core.compile_model`` takes, from ``settings`` (checked).

    :raises ModelLoadError: naming the setting (``where`` and the key) and what it takes.
    """
    if settings is None:
        return DEFAULT_DEVICE, {}
    if not isinstance(settings, Mapping):
        raise ModelLoadError(f"expected a dict of inference settings, got {settings!r}", owner=where)
    known = (*OPENVINO_KEYS, *SETTING_KEYS, *RECORDED_KEYS)
    for key in settings:
        if key not in known:
            raise ModelLoadError(
                f"unknown key '{key}'{closest_match_hint(str(key), known)}; an OpenVINO model's inference_settings "
                "take device_name and ov_config (OpenVINO properties by name)",
                owner=where,
            )
    device = settings.get("device_name")
    device = DEFAULT_DEVICE if device is None else device
    if not isinstance(device, str) or not device:
        raise ModelLoadError(
            f"expected an OpenVINO device name such as 'CPU', got {device!r}", owner=f"{where}.device_name"
        )
    given = settings.get("ov_config") or {}
    if not isinstance(given, Mapping):
        raise ModelLoadError(
            f'expected a dict of OpenVINO properties (e.g. {{"INFERENCE_PRECISION_HINT": "f32"}}), got {given!r}',
            owner=f"{where}.ov_config",
        )
    properties: dict[str, Any] = {}
    for name, value in given.items():
        if not isinstance(name, str) or not name:
            raise ModelLoadError(f"property names are strings, got {name!r}", owner=f"{where}.ov_config")
        if not isinstance(value, str | int | float | bool):
            raise ModelLoadError(
                f"expected a string, number or true/false, got {value!r}", owner=f"{where}.ov_config.{name}"
            )
        properties[name] = value
    if device.upper().startswith("CPU") and PINNING_PROPERTY not in properties:
        properties[PINNING_PROPERTY] = False
    options = settings.get("session_options")
    threads = options.get("intra_op_num_threads") if isinstance(options, Mapping) else None
    if THREADS_PROPERTY not in properties and type(threads) is int and threads > 0:
        properties[THREADS_PROPERTY] = threads
    return device, properties
