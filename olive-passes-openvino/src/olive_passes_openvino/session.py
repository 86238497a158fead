"""An OpenVINO compiled model behind the calls Olive's measurements make on an onnxruntime session.

The evaluator, :mod:`olive.measure` and the passes run a model through ``prepare_session()``'s result with
``run(None, feeds)``, ``get_inputs()``, ``get_outputs()`` and describe it with
:func:`olive.measure.describe_session`, which asks a session that is not onnxruntime's for ``describe()``. An
:class:`OpenVINOSession` offers those, so OpenVINO models are timed, paired with their reference and scored by
the same code as ONNX ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from olive.exceptions import ModelLoadError
from olive_passes_openvino.settings import compile_settings

# What describe() reports of the compiled model: the properties that change its speed and its outputs.
DESCRIBED_PROPERTIES = (
    "INFERENCE_PRECISION_HINT",
    "PERFORMANCE_HINT",
    "INFERENCE_NUM_THREADS",
    "NUM_STREAMS",
    "ENABLE_CPU_PINNING",
)


class NodeArg(NamedTuple):
    """An input or output as onnxruntime's ``NodeArg`` names it: name, shape (ints or ``"?"``) and type."""

    name: str
    shape: list[int | str]
    type: str


class OpenVINOSession:
    """The model at ``xml_path`` compiled for ``inference_settings`` (see :mod:`olive_passes_openvino.settings`).

    One infer request runs every call, as a latency-bound service would; outputs are copied out of it, so a
    later run does not change arrays already returned.
    """

    def __init__(self, xml_path: str | Path, inference_settings: Mapping[str, Any] | None = None):
        import openvino as ov

        device, properties = compile_settings(inference_settings)
        self.device = device
        core = ov.Core()
        try:
            self._compiled = core.compile_model(str(xml_path), device, properties)
        except Exception as exc:  # openvino raises RuntimeError for a bad property, device or file
            raise ModelLoadError(
                f"OpenVINO cannot compile '{xml_path}' for {device} with {properties or 'its default properties'} "
                f"({_essence(exc)}); fix inference_settings.device_name / ov_config (devices here: "
                f"{', '.join(core.available_devices)})"
            ) from exc
        self._request = self._compiled.create_infer_request()
        self._inputs = [_node_arg(port) for port in self._compiled.inputs]
        self._outputs = [_node_arg(port) for port in self._compiled.outputs]

    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def run(self, output_names: Sequence[str] | None, feeds: Mapping[str, Any]) -> list[Any]:
        """The outputs named (all, in order, for None) for ``feeds`` keyed by input name, as numpy arrays."""
        import numpy as np

        results = self._request.infer(dict(feeds))
        arrays = [np.array(results[port], copy=True) for port in self._compiled.outputs]
        if output_names is None:
            return arrays
        by_name = {arg.name: array for arg, array in zip(self._outputs, arrays, strict=True)}
        missing = [name for name in output_names if name not in by_name]
        if missing:
            raise ModelLoadError(
                f"the OpenVINO model has no output(s) {', '.join(missing)}; it has {', '.join(by_name)}"
            )
        return [by_name[name] for name in output_names]

    def property(self, name: str) -> Any:
        """A property of the compiled model, as plain JSON (None when the device does not report it)."""
        try:
            value = self._compiled.get_property(name)
        except Exception:  # a device that lacks the property
            return None
        return value if isinstance(value, bool | int | float | str) else _plain(value)

    def describe(self) -> dict[str, Any]:
        """What :func:`olive.measure.describe_session` reports: the runtime and device, and the compiled
        model's precision, performance hint, threads and streams."""
        return {
            "providers": [f"OpenVINO:{self.device}"],
            "session_options": {name: self.property(name) for name in DESCRIBED_PROPERTIES},
        }


def _node_arg(port: Any) -> NodeArg:
    shape = [dim.get_length() if dim.is_static else "?" for dim in port.get_partial_shape()]
    return NodeArg(port.any_name, shape, str(port.get_element_type().to_dtype()))


def _plain(value: Any) -> str:
    # openvino's enums and element types print as "<Type: 'bfloat16'>" or "PerformanceMode.LATENCY".
    name = getattr(value, "name", None) or getattr(value, "type_name", None)
    if isinstance(name, str):
        return name
    text = str(value)
    return text.split("'")[1] if text.count("'") == 2 else text


def _essence(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip() and not line.strip().startswith("Check")]
    return " ".join(lines[-3:]) or type(exc).__name__
