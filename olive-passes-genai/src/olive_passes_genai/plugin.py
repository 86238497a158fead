"""The distribution's hooks (entry-point group ``olive.plugins``): the generative-model metrics and
``olive convert-adapters``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from olive.plugins import hookimpl


@hookimpl
def olive_register_metrics(register: Callable[[str, Callable[..., dict[str, float]]], None]) -> None:
    from olive_passes_genai.metrics import METRICS

    for name, evaluate in METRICS.items():
        register(name, evaluate)


@hookimpl
def olive_register_commands(cli: Any) -> None:
    # click only: the command imports numpy, onnx and torch when it runs.
    from olive_passes_genai.convert_adapters import convert_adapters

    cli.add_command(convert_adapters)


__all__: list[Any] = ["olive_register_commands", "olive_register_metrics"]
