"""The targets a workflow evaluates its candidates on: every (device, execution provider, options) its target
system lists, checked before anything runs.

A workflow names them in Olive's form, ``systems.<name>.accelerators[].execution_providers``; an entry is a
provider name or ``[name, {options}]``, and an option's value may be a search parameter, so one workflow can
search over where a model runs as well as over how it was rewritten::

    "accelerators": [{"device": "cpu", "execution_providers": [
        "CPUExecutionProvider",
        ["OpenVINOExecutionProvider", {"INFERENCE_PRECISION_HINT":
            {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": ["f32", "bf16"]}}]
    ]}]

gives three targets: the CPU provider, OpenVINO in f32 and OpenVINO in bf16. ``"SEARCHABLE_VALUES"`` searches
the values the provider's adapter suggests. Every problem is a :class:`~olive.exceptions.WorkflowConfigError`
naming the JSON path: a plugin provider that is not installed (with its ``pip install`` line), an option it does
not know (with the closest name), a value it does not take (checked by the adapter, else by a probe session on a
one-node model), a device it does not offer (with those it does). Built-in providers the installed onnxruntime
lacks are dropped with one warning, as before; none left is an error.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from olive.exceptions import ExecutionProviderError, ModelLoadError, PluginLoadError, WorkflowConfigError
from olive.execution_providers.adapter import ExecutionProviderAdapter
from olive.execution_providers.registry import adapter_for, select_device
from olive.hardware.accelerator import AcceleratorSpec, filter_execution_providers
from olive.hardware.constants import ExecutionProvider
from olive.measure.sessions import create_session, settings_on_target
from olive.model.types import model_from_json
from olive.search.search_parameter import Categorical, SearchParameter

if TYPE_CHECKING:
    from olive.config import AcceleratorConfig, WorkflowConfig

logger = logging.getLogger(__name__)

__all__ = ["DEFAULT_TARGET", "TARGET_KEY", "model_on_target", "resolve_targets", "target_index", "target_json"]

DEFAULT_TARGET = AcceleratorSpec("cpu", ExecutionProvider.CPUExecutionProvider)
SEARCHABLE = "SEARCHABLE_VALUES"
#: the search space (and search point) entry that picks the target, beside the passes' keys
TARGET_KEY = "@target"


def target_index(point: Mapping[str, Any]) -> int:
    """The index of the target a search point evaluates on (0 when the search has one target)."""
    return int((point.get(TARGET_KEY) or {}).get("target", 0))


def model_on_target(model: Any, target: AcceleratorSpec) -> Any:
    """The same model (another handler of the same files) whose sessions run on ``target``."""
    data = model.to_json()
    config = dict(data.get("config") or {})
    config["inference_settings"] = settings_on_target(config.get("inference_settings"), target)
    return model_from_json({**data, "config": config})


def target_json(target: AcceleratorSpec) -> dict[str, Any]:
    """What the footprint records of the target a candidate was evaluated on."""
    return {
        "label": target.label,
        "execution_provider": target.execution_provider,
        "device": target.accelerator_type.value,
        "provider_options": dict(target.provider_options),
        "inference_settings": target.inference_settings(),
    }


def resolve_targets(workflow: WorkflowConfig) -> list[AcceleratorSpec]:
    """Every target of the workflow's ``target`` system, in the order listed (the first is the baseline's)."""
    system = workflow.target
    if system is None:
        return [DEFAULT_TARGET]
    targets: list[AcceleratorSpec] = []
    for index, accelerator in enumerate(system.accelerators):
        path = f"{system.json_path}[{index}]"
        for spec in _accelerator_targets(accelerator, path):
            if all(spec.cache_key() != known.cache_key() for known in targets):
                targets.append(spec)
    return targets


def _accelerator_targets(accelerator: AcceleratorConfig, path: str) -> list[AcceleratorSpec]:
    adapters: dict[str, ExecutionProviderAdapter | None] = {}
    for i, name in enumerate(accelerator.execution_providers):
        try:
            adapters[name] = adapter_for(name)
        except PluginLoadError as exc:
            raise WorkflowConfigError(exc.reason, owner=f"{path}.execution_providers[{i}]") from exc
    builtin = [name for name, adapter in adapters.items() if adapter is None]
    kept_builtin: list[str] = []
    if builtin:
        try:
            kept_builtin = filter_execution_providers(builtin)
        except ExecutionProviderError as exc:
            if len(builtin) == len(adapters):
                raise WorkflowConfigError(exc.reason, owner=f"{path}.execution_providers") from exc
    targets = []
    for i, name in enumerate(accelerator.execution_providers):
        where = f"{path}.execution_providers[{i}]"
        adapter = adapters[name]
        if adapter is None and name not in kept_builtin:
            continue
        if adapter is not None:
            try:
                select_device(adapter, name, accelerator.device)
            except ExecutionProviderError as exc:
                raise WorkflowConfigError(exc.reason, owner=where) from exc
        for options in _option_points(adapter, name, accelerator.provider_options.get(name) or {}, f"{where}[1]"):
            spec = AcceleratorSpec(accelerator.device, name, provider_options=options)
            _probe(spec, adapter, where)
            targets.append(spec)
    return targets


def _option_points(
    adapter: ExecutionProviderAdapter | None, name: str, given: Mapping[str, Any], where: str
) -> list[dict[str, Any]]:
    """Each combination of the options' values (one when nothing is searched), checked by the adapter."""
    choices: dict[str, list[Any]] = {}
    for option, value in given.items():
        if isinstance(value, str) and value == SEARCHABLE:
            values = adapter.search_defaults(option) if adapter is not None else None
            if not values:
                raise WorkflowConfigError(
                    f"{name} suggests no values to search for '{option}'; list them as a Categorical search parameter",
                    owner=f"{where}.{option}",
                )
            choices[option] = list(values)
        elif SearchParameter.is_json(value):
            try:
                parameter = SearchParameter.from_json(value)
            except Exception as exc:
                raise WorkflowConfigError(str(exc), owner=f"{where}.{option}") from exc
            if not isinstance(parameter, Categorical):
                raise WorkflowConfigError(
                    "provider options are searched over a Categorical (or Boolean) list of values",
                    owner=f"{where}.{option}",
                )
            choices[option] = parameter.get_support()
        else:
            choices[option] = [value]
    points = [dict(zip(choices, values, strict=True)) for values in itertools.product(*choices.values())]
    if adapter is None:
        return points
    checked = []
    for point in points:
        try:
            checked.append(adapter.check_options(point, where))
        except ExecutionProviderError as exc:
            raise WorkflowConfigError(exc.reason, owner=exc.owner or where) from exc
    return checked


def _probe(spec: AcceleratorSpec, adapter: ExecutionProviderAdapter | None, where: str) -> None:
    """Create a session on a one-node model with options the adapter cannot check itself (a provider's own
    properties inside OpenVINO's ``load_config``, options of a built-in provider or of an adapter that lists
    none): a value the provider rejects is a config error now rather than a failed evaluation later."""
    options = spec.provider_options
    unchecked = adapter is None or adapter.options is None or "load_config" in options
    if not options or not unchecked:
        return
    try:
        create_session(_probe_model(), spec.inference_settings(), what="a one-node probe model", where=where)
    except ModelLoadError as exc:
        raise WorkflowConfigError(
            f"{spec.execution_provider} rejects the options {options}: {exc.reason}", owner=where
        ) from exc


def _probe_model() -> bytes:
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        "probe",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString() if isinstance(model, onnx.ModelProto) else bytes(model)
