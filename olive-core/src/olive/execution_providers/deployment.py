"""The lines of plain onnxruntime that run a chosen model where Olive measured it (no Olive needed)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from olive.exceptions import ExecutionProviderError, PluginLoadError
from olive.execution_providers.registry import adapter_for, select_device

__all__ = ["deployment_lines"]


def deployment_lines(target: Mapping[str, Any], model_file: str = "model.onnx") -> list[str] | None:
    """Python lines that create an onnxruntime session for ``model_file`` on ``target`` (a footprint node's
    ``target``), with the provider options spelled as the plugin library takes them; None for a provider built
    into onnxruntime (``InferenceSession(model, providers=[name])`` does) or one that cannot be used here."""
    name = str(target.get("execution_provider") or "")
    try:
        adapter = adapter_for(name)
        if adapter is None or not adapter.module:
            return None
        device = target.get("device")
        ep_device = select_device(adapter, name, device)
        options = adapter.provider_options(adapter.check_options(target.get("provider_options") or {}, name), ep_device)
    except (ExecutionProviderError, PluginLoadError):
        return None
    kind = str(device or "cpu").upper()
    return [
        f"import onnxruntime as ort, {adapter.module}  # pip install onnxruntime {adapter.package}",
        f'ort.register_execution_provider_library("{name}", {adapter.module}.get_library_path())',
        f'device = next(d for d in ort.get_ep_devices() if d.ep_name == "{name}" and d.device.type.name == "{kind}")',
        f"options = ort.SessionOptions(); options.add_provider_for_devices([device], {json.dumps(options)})",
        f'session = ort.InferenceSession("{model_file}", sess_options=options)',
    ]
