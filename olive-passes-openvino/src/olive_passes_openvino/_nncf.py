"""The params NNCF's passes share (Microsoft Olive's names) and their translation into NNCF's arguments."""

from __future__ import annotations

import enum
import inspect
import logging
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import PassParamError
from olive.passes import PassConfigParam
from olive.passes.pass_config import ParamCategory
from olive_passes_openvino._data import DATA_CONFIG_TYPE

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

IGNORED_SCOPE_TYPES = ("names", "types", "patterns")
TARGET_DEVICES = ("any", "cpu", "gpu", "cpu_spr", "npu")


def shared_params(accelerator_spec: AcceleratorSpec, data_required: bool, data_use: str) -> dict[str, PassConfigParam]:
    device = str(getattr(accelerator_spec, "accelerator_type", "cpu") or "cpu").lower()
    return {
        "data_config": PassConfigParam(
            type_=DATA_CONFIG_TYPE,
            required=data_required,
            description=(
                f"{data_use}: the name of one of the workflow's data_configs, a DataConfig, its JSON form, or a path "
                "to an .npz file keyed by input name."
            ),
        ),
        "ignored_scope": PassConfigParam(
            type_=list | None,
            default_value=None,
            description=(
                "Nodes left in float: a list of names, op types or regex patterns (as ignored_scope_type says), or "
                "one such list per entry of a list ignored_scope_type."
            ),
        ),
        "ignored_scope_type": PassConfigParam(
            type_=str | list | None,
            default_value=None,
            description="What ignored_scope lists: 'names', 'types' or 'patterns' (or a list of them).",
        ),
        "target_device": PassConfigParam(
            type_=str,
            default_value=device if device in TARGET_DEVICES else "any",
            description="NNCF's target device: 'any', 'cpu', 'gpu', 'cpu_spr' or 'npu' (default: the workflow's).",
        ),
        "transform_fn": PassConfigParam(
            type_=Callable | str | None,
            category=ParamCategory.OBJECT,
            default_value=None,
            description=(
                "A function in user_script from a data item (feeds, labels) to the model's inputs; default: the feeds."
            ),
        ),
        "reuse_cache": PassConfigParam(
            type_=bool,
            default_value=False,
            description=(
                "Microsoft Olive's option to delete the input model's files; accepted and changes nothing here: "
                "the cache keeps every pass's output, which later runs reuse."
            ),
        ),
    }


def check_shared(config: BasePassConfig) -> None:
    """The ignored scope and target device, checked without NNCF."""
    scope, kind = config.ignored_scope, config.ignored_scope_type
    if bool(scope) != bool(kind):
        raise PassParamError(
            "params 'ignored_scope' and 'ignored_scope_type' go together; give both (e.g. \"ignored_scope\": "
            '["MatMul"], "ignored_scope_type": "types") or neither',
            params=("ignored_scope", "ignored_scope_type"),
        )
    kinds = kind if isinstance(kind, list) else [kind] if kind else []
    for value in kinds:
        if value not in IGNORED_SCOPE_TYPES:
            raise PassParamError(
                f"param 'ignored_scope_type' has {value!r}; use {', '.join(IGNORED_SCOPE_TYPES)}",
                params="ignored_scope_type",
            )
    if isinstance(kind, list):
        if len(set(kind)) != len(kind):
            raise PassParamError(
                "param 'ignored_scope_type' names a type twice; name each once", params="ignored_scope_type"
            )
        if not all(isinstance(item, list) for item in scope) or len(scope) != len(kind):
            raise PassParamError(
                f"with {len(kind)} ignored_scope_type entries, ignored_scope must be {len(kind)} lists, one per type",
                params=("ignored_scope", "ignored_scope_type"),
            )
    if str(config.target_device).lower() not in TARGET_DEVICES:
        raise PassParamError(
            f"param 'target_device' is {config.target_device!r}; use {', '.join(TARGET_DEVICES)}",
            params="target_device",
        )


def ignored_scope(config: BasePassConfig) -> Any:
    """``nncf.IgnoredScope`` of the config (None when it ignores nothing)."""
    import nncf

    scope, kind = config.ignored_scope, config.ignored_scope_type
    if not scope:
        return None
    if isinstance(kind, list):
        return nncf.IgnoredScope(**dict(zip(kind, scope, strict=True)))
    return nncf.IgnoredScope(**{kind: list(scope)})


def target_device(config: BasePassConfig) -> Any:
    import nncf

    return nncf.TargetDevice[str(config.target_device).upper()]


def enum_value(value: Any, enum_type: type[enum.Enum], param: str) -> Any:
    """``value`` as a member of NNCF's ``enum_type``, by its name or value (any case)."""
    if isinstance(value, enum_type) or value is None:
        return value
    for member in enum_type:
        if str(value).lower() in (member.name.lower(), str(member.value).lower()):
            return member
    choices = ", ".join(str(m.value) for m in enum_type)
    raise PassParamError(f"{param} is {value!r}; use one of {choices}", params=param.split(".")[0])


def check_arguments(
    function: Callable[..., Any], given: Mapping[str, Any], param: str, taken_here: tuple[str, ...]
) -> None:
    """Every key of ``given`` is an argument of ``function`` that no other param of the pass sets."""
    accepted = set(inspect.signature(function).parameters)
    for key in given:
        if key in taken_here:
            raise PassParamError(
                f"param '{param}' sets {key!r}, which the pass's own param sets; use that", params=param
            )
        if key not in accepted:
            raise PassParamError(
                f"param '{param}' has {key!r}, which {function.__module__.split('.')[0]}.{function.__name__} does not "
                f"take; it takes {', '.join(sorted(accepted - set(taken_here)))}",
                params=param,
            )


def carry_folder_files(source: Any, target: str | Path) -> None:
    """Copy the files of ``source``'s folder other than its IR (a tokenizer, a generation config) into
    ``target``, so the output folder serves as the input did. Files already there are left as they are."""
    folder_files = getattr(source, "folder_files", None)
    if not callable(folder_files):
        return
    ir = {source.xml_path.name, source.xml_path.with_suffix(".bin").name}
    for path, rel in folder_files():
        if rel in ir:
            continue
        destination = Path(target) / rel
        if not destination.exists():
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)
