"""Accelerators: a device plus the execution provider that runs models on it."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from enum import StrEnum

import attrs

from olive.exceptions import ExecutionProviderError
from olive.hardware.constants import PROVIDER_PACKAGE, ExecutionProvider

logger = logging.getLogger(__name__)


class Device(StrEnum):
    CPU = "cpu"
    GPU = "gpu"
    NPU = "npu"


def _to_device(value: Device | str) -> Device:
    try:
        return Device(str(value).lower())
    except ValueError:
        raise ExecutionProviderError(
            f"unknown device {value!r}; use one of {', '.join(d.value for d in Device)}"
        ) from None


@attrs.frozen
class AcceleratorSpec:
    """The accelerator a pass targets: its device type, execution provider and (optionally) memory."""

    accelerator_type: Device = attrs.field(converter=_to_device)
    execution_provider: str = attrs.field(converter=str)
    memory: int | None = None

    def __str__(self) -> str:
        provider = self.execution_provider.removesuffix("ExecutionProvider").lower()
        return f"{self.accelerator_type.value}-{provider}"

    def to_json(self) -> dict[str, object]:
        return {
            "accelerator_type": self.accelerator_type.value,
            "execution_provider": self.execution_provider,
            "memory": self.memory,
        }


DEFAULT_CPU_ACCELERATOR = AcceleratorSpec(Device.CPU, ExecutionProvider.CPUExecutionProvider)


def available_execution_providers() -> list[str]:
    """Providers the installed onnxruntime offers (imports onnxruntime)."""
    import onnxruntime

    return list(onnxruntime.get_available_providers())


def filter_execution_providers(requested: Sequence[str], available: Sequence[str] | None = None) -> list[str]:
    """Keep the requested providers the installed onnxruntime has, in the requested order.

    Dropped providers get one warning naming them and the package that provides them; if none is left,
    an :class:`ExecutionProviderError` says what is installed and what to install.
    """
    available = available_execution_providers() if available is None else list(available)
    kept = [ep for ep in requested if ep in available]
    dropped = [ep for ep in requested if ep not in available]
    if dropped:
        hints = ", ".join(f"{ep} (from {PROVIDER_PACKAGE.get(ep, 'an onnxruntime build with it')})" for ep in dropped)
        if kept:
            logger.warning(
                "Ignoring execution providers the installed onnxruntime does not have: %s. Installed: %s.",
                hints,
                ", ".join(available),
            )
    if not kept:
        raise ExecutionProviderError(
            f"none of the requested execution providers is available: {hints if dropped else 'none requested'}. "
            f"The installed onnxruntime offers {', '.join(available)}; install the package named above, "
            "or request one of those."
        )
    return kept
