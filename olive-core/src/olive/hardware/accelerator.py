"""Accelerators: a device plus the execution provider that runs models on it."""

from __future__ import annotations

import copy
import difflib
import importlib.util
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from olive.exceptions import ExecutionProviderError, PluginLoadError
from olive.execution_providers.registry import adapter_for, ep_adapter_registry
from olive.hardware.constants import PROVIDER_PACKAGE, Device, ExecutionProvider

logger = logging.getLogger(__name__)


def _to_device(value: Device | str) -> Device:
    try:
        return Device(str(value).lower())
    except ValueError:
        raise ExecutionProviderError(
            f"unknown device {value!r}; use one of {', '.join(d.value for d in Device)}"
        ) from None


def _options(value: Mapping[str, Any] | None) -> dict[str, Any]:
    return copy.deepcopy(dict(value or {}))


@attrs.frozen
class AcceleratorSpec:
    """The accelerator a pass targets: its device type, execution provider and (optionally) memory.

    ``provider_options`` are the execution provider's options on this target (``{"INFERENCE_PRECISION_HINT":
    "bf16"}`` for OpenVINO), as the workflow names them; two targets differing only in options are different
    targets (and different cache keys) but hash alike.
    """

    accelerator_type: Device = attrs.field(converter=_to_device)
    execution_provider: str = attrs.field(converter=str)
    memory: int | None = None
    provider_options: dict[str, Any] = attrs.field(factory=dict, converter=_options, hash=False)

    def __str__(self) -> str:
        provider = self.execution_provider.removesuffix("ExecutionProvider").lower()
        return f"{self.accelerator_type.value}-{provider}"

    @property
    def label(self) -> str:
        """``cpu-openvino`` plus its options: ``cpu-openvino[INFERENCE_PRECISION_HINT=bf16]``."""
        if not self.provider_options:
            return str(self)
        options = ",".join(f"{k}={_compact(v)}" for k, v in sorted(self.provider_options.items()))
        return f"{self}[{options}]"

    def cache_key(self) -> str:
        """What cache keys of accelerator-dependent runs hold: provider, device and options."""
        if not self.provider_options:
            return str(self)  # the key runs had before targets had options
        return f"{self}{json.dumps(self.provider_options, sort_keys=True, default=str)}"

    def inference_settings(self) -> dict[str, Any]:
        """The ``inference_settings`` that create a session on this target (:mod:`olive.measure.sessions`)."""
        settings: dict[str, Any] = {"execution_provider": self.execution_provider}
        if self.provider_options:
            settings["provider_options"] = [copy.deepcopy(self.provider_options)]
        if self.execution_provider != ExecutionProvider.CPUExecutionProvider:
            settings["device"] = self.accelerator_type.value
        return settings

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {
            "accelerator_type": self.accelerator_type.value,
            "execution_provider": self.execution_provider,
            "memory": self.memory,
        }
        if self.provider_options:
            data["provider_options"] = copy.deepcopy(self.provider_options)
        return data


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))


DEFAULT_CPU_ACCELERATOR = AcceleratorSpec(Device.CPU, ExecutionProvider.CPUExecutionProvider)


def available_execution_providers() -> list[str]:
    """Providers the installed onnxruntime offers (imports onnxruntime)."""
    import onnxruntime

    return list(onnxruntime.get_available_providers())


def installed_plugin_providers() -> list[str]:
    """Plugin providers whose package is installed (found by module; no library is loaded)."""
    names = []
    for name in ep_adapter_registry().names():
        try:
            adapter = adapter_for(name)
        except PluginLoadError:
            continue  # named where it is used, with its error
        if adapter is None or not adapter.module:
            continue
        try:
            found = importlib.util.find_spec(adapter.module) is not None
        except (ImportError, ValueError):
            found = False
        if found:
            names.append(adapter.ep_name)
    return names


def _provider_key(name: str) -> str:
    # "openvino", "OpenVinoExecutionProvider" and "OpenVINOExecutionProvider" are one provider to a reader.
    return name.lower().removesuffix("executionprovider")


def closest_provider(name: str, candidates: Sequence[str]) -> str | None:
    """The provider of ``candidates`` that ``name`` most likely means, ignoring case and the
    ``ExecutionProvider`` suffix (``openvino`` -> ``OpenVINOExecutionProvider``); None when none is close."""
    others = [c for c in candidates if c != name]
    # Short names first ("openvino"), then whole ones, which a misspelled suffix ("...Providr") still matches.
    for key in (_provider_key, str.lower):
        by_key = {key(c): c for c in others}
        matches = difflib.get_close_matches(key(name), list(by_key), n=1, cutoff=0.6)
        if matches:
            return by_key[matches[0]]
    return None


def _where_from(name: str, candidates: Sequence[str], installed: Sequence[str]) -> str:
    if name in PROVIDER_PACKAGE:
        return f"{name} (from {PROVIDER_PACKAGE[name]})"
    match = closest_provider(name, candidates)
    if match is not None:
        missing = match not in installed and match in PROVIDER_PACKAGE
        source = f", from {PROVIDER_PACKAGE[match]}" if missing else ""
        return f"{name} (did you mean '{match}'{source}?)"
    return f"{name} (from an onnxruntime build with it)"


def filter_execution_providers(
    requested: Sequence[str], available: Sequence[str] | None = None, plugins: Sequence[str] | None = None
) -> list[str]:
    """Keep the requested providers the installed onnxruntime has, in the requested order.

    Dropped providers get one warning naming them and the package that provides them (or the provider a
    misspelled name most likely means); if none is left, an :class:`ExecutionProviderError` says what is
    installed, built in and from plugin packages (``plugins``: read from the installed adapters when None),
    and what to install.
    """
    available = available_execution_providers() if available is None else list(available)
    kept = [ep for ep in requested if ep in available]
    dropped = [ep for ep in requested if ep not in available]
    if not dropped and kept:
        return kept
    plugins = installed_plugin_providers() if plugins is None else list(plugins)
    offered = ", ".join(available)
    if plugins:
        offered += f", and installed plugin packages add {', '.join(plugins)}"
    candidates = list(dict.fromkeys([*available, *plugins, *ep_adapter_registry().names(), *PROVIDER_PACKAGE]))
    hints = ", ".join(_where_from(ep, candidates, [*available, *plugins]) for ep in dropped)
    if kept:
        logger.warning(
            "Ignoring execution providers the installed onnxruntime does not have: %s. Installed: %s.", hints, offered
        )
        return kept
    raise ExecutionProviderError(
        f"none of the requested execution providers is available: {hints if dropped else 'none requested'}. "
        f"The installed onnxruntime offers {offered}. Request one of those, or install the package named above."
    )
