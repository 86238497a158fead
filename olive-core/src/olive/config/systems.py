"""``systems``, ``host`` and ``target``: the machines a workflow runs on and their accelerators."""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from olive.config.fields import one_of
from olive.config.structure import converter, note_without_effect, structure, structure_fields, valid_keys
from olive.config_errors import check_keys, config_error, expect
from olive.exceptions import closest_match_hint
from olive.hardware.constants import DEVICES, PROVIDER_DEVICE

SYSTEM_TYPES = ("LocalSystem",)


@attrs.frozen
class AcceleratorConfig:
    """One accelerator of a system: a device and the execution providers to run on it.

    Each provider is a target the workflow's candidates are evaluated on (several: the search covers them).
    ``provider_options`` maps a provider to its options, given in the workflow as ``[name, {options}]``; an
    option's value may be a search parameter (``{"olive_parameter_type": "SearchParameter", "type":
    "Categorical", "support": [...]}``) or ``"SEARCHABLE_VALUES"``, which the search covers too. Without a
    ``device``, the first provider's device is meant.
    """

    device: str = attrs.field(converter=lambda v: v.lower() if isinstance(v, str) else v, validator=one_of(DEVICES))
    execution_providers: list[str] = attrs.field(factory=lambda: ["CPUExecutionProvider"])
    provider_options: dict[str, dict[str, Any]] = attrs.Factory(dict)
    json_path: str = "accelerator"

    #: accepted and without effect here (the workflow's one warning names it)
    ignored_keys: ClassVar[tuple[str, ...]] = ("memory",)


def _structure_accelerator(value: Any, cls: type[AcceleratorConfig]) -> AcceleratorConfig:
    expect(value, dict, "", 'an object like {"device": "cpu", "execution_providers": ["CPUExecutionProvider"]}')
    check_keys(value, ("device", "execution_providers", *cls.ignored_keys), "")
    note_without_effect(value, cls.ignored_keys)
    eps = value.get("execution_providers")
    if eps is None:
        eps = attrs.fields(cls).execution_providers.default.factory()
    expect(eps, list, "execution_providers", "a list of execution provider names")
    if not eps:
        raise config_error("execution_providers", 'empty; add e.g. "CPUExecutionProvider"')
    names: list[str] = []
    options: dict[str, dict[str, Any]] = {}
    for i, ep in enumerate(eps):
        where = f"execution_providers[{i}]"
        if isinstance(ep, list) and len(ep) == 2 and isinstance(ep[0], str):
            ep, given = ep
            options[ep] = dict(expect(given, dict, f"{where}[1]", "an object of provider options"))
        expect(ep, str, where, "an execution provider name, or [name, {options}]")
        if ep in names:
            raise config_error(where, f"'{ep}' is listed twice; list each provider once")
        names.append(ep)
    device = value.get("device") or PROVIDER_DEVICE.get(names[0], "gpu")
    return structure_fields({"device": device, "execution_providers": names, "provider_options": options}, cls)


@attrs.frozen
class SystemConfig:
    """A system: ``LocalSystem`` with its accelerators (older files nest them under ``config``)."""

    name: str
    type: str
    accelerators: list[AcceleratorConfig]
    json_path: str = "systems"


@attrs.frozen
class _SystemSpec:
    """A system as the file gives it (the name and paths come from where it sits)."""

    type: str = attrs.field(default="LocalSystem")
    config: dict[str, Any] | None = None
    accelerators: list[AcceleratorConfig] = attrs.field(factory=lambda: [{"device": "cpu"}])


def _structure_system_spec(value: Any, cls: type[_SystemSpec]) -> _SystemSpec:
    expect(value, dict, "", 'an object like {"type": "LocalSystem", "accelerators": [...]}')
    check_keys(value, valid_keys(cls), "")
    kind = expect(value.get("type", "LocalSystem"), str, "type", "a string")
    if kind not in SYSTEM_TYPES:
        raise config_error(
            "type",
            f"unknown system type '{kind}'{closest_match_hint(kind, SYSTEM_TYPES)}; "
            "this version of Olive runs on 'LocalSystem'",
        )
    key = "accelerators"
    body = dict(value)
    if "config" in value:
        nested = expect(value["config"], dict, "config", "an object")
        check_keys(nested, ("accelerators",), "config")
        body.pop("config")
        body.update(nested)
        key = "config.accelerators"
    raw = body.get("accelerators", [{"device": "cpu"}])
    expect(raw, list, key, "a list of accelerators")
    if not raw:
        raise config_error(key, 'empty; add {"device": "cpu", "execution_providers": ["CPUExecutionProvider"]}')
    accelerators = []
    for i, accelerator in enumerate(raw):
        accelerators.append(structure(accelerator, AcceleratorConfig, f"{key}[{i}]"))
    return _SystemSpec(type=kind, config=value.get("config"), accelerators=accelerators)


def system_config(name: str, value: Any, path: str) -> SystemConfig:
    """The system at JSON ``path`` (named ``name``), its accelerators' paths set for later messages."""
    spec = structure(value, _SystemSpec, path)
    where = f"{path}.config.accelerators" if spec.config is not None else f"{path}.accelerators"
    accelerators = [
        attrs.evolve(accelerator, json_path=f"{where}[{i}]") for i, accelerator in enumerate(spec.accelerators)
    ]
    return SystemConfig(name=name, type=spec.type, accelerators=accelerators, json_path=where)


converter.register_structure_hook(AcceleratorConfig, _structure_accelerator)
converter.register_structure_hook(_SystemSpec, _structure_system_spec)
