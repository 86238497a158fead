"""``io_config``: the names, shapes, types and dynamic axes of a PyTorch model's inputs and outputs.

Microsoft Olive's keys: ``input_names``, ``input_shapes``, ``input_types``, ``output_names``,
``dynamic_axes`` (``{name: {axis: dim_name}}``). ``output_shapes``/``output_types`` are accepted and
unused (the export finds them); ``dynamic_shapes`` and ``kv_cache`` are refused with what to write instead.
Validation imports neither torch nor numpy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from olive.exceptions import WorkflowConfigError, closest_match_hint

IO_KEYS = (
    "input_names",
    "input_shapes",
    "input_types",
    "output_names",
    "output_shapes",
    "output_types",
    "dynamic_axes",
    "dynamic_shapes",
    "kv_cache",
)
# numpy dtype names a model input may have.
INPUT_TYPES = ("float32", "float16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool")

Shape = tuple[int | str, ...]


@attrs.frozen
class IoConfig:
    """A resolved io_config.

    :param input_names: the exported model's inputs, in the order the forward function takes them.
    :param output_names: its outputs.
    :param input_shapes: one shape per input (ints, or dim names for free axes), or None.
    :param input_types: one numpy dtype name per input, or None (``int64`` for token inputs).
    :param dynamic_axes: ``{name: {axis: dim_name}}`` for every input or output with free axes.
    """

    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    input_shapes: tuple[Shape, ...] | None = None
    input_types: tuple[str, ...] | None = None
    dynamic_axes: dict[str, dict[int, str]] = attrs.field(factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"input_names": list(self.input_names), "output_names": list(self.output_names)}
        if self.input_shapes is not None:
            out["input_shapes"] = [list(s) for s in self.input_shapes]
        if self.input_types is not None:
            out["input_types"] = list(self.input_types)
        if self.dynamic_axes:
            out["dynamic_axes"] = {k: {str(a): n for a, n in v.items()} for k, v in self.dynamic_axes.items()}
        return out

    def without_dynamic_axes(self) -> IoConfig:
        return attrs.evolve(self, dynamic_axes={})


def check_io_config(data: Any, owner: str, partial: bool = False) -> dict[str, Any]:
    """Validate an io_config's JSON; returns it normalized (axes as ints). ``partial``: names may be missing
    (a Hugging Face model's io_config overrides what is inferred).

    Every problem is a :class:`WorkflowConfigError` whose owner is the JSON path of the key.
    """
    if not isinstance(data, Mapping):
        raise WorkflowConfigError(
            f'expected an object like {{"input_names": ["input"], "input_shapes": [[1, 3]], "output_names": '
            f'["output"]}}, got {type(data).__name__}',
            owner=owner,
        )
    for key in data:
        if key not in IO_KEYS:
            raise WorkflowConfigError(
                f"unknown io_config key{closest_match_hint(str(key), IO_KEYS)}; valid keys: {', '.join(IO_KEYS)}",
                owner=f"{owner}.{key}",
            )
    if data.get("dynamic_shapes") is not None:
        raise WorkflowConfigError(
            'not supported; write the free axes as dynamic_axes ({"input_ids": {"0": "batch_size"}}), which both '
            "exporters take",
            owner=f"{owner}.dynamic_shapes",
        )
    if data.get("kv_cache") not in (None, False):
        raise WorkflowConfigError(
            "past key values are not exported by this version; leave kv_cache out (decoders are exported without a "
            "cache: task 'text-generation')",
            owner=f"{owner}.kv_cache",
        )
    out: dict[str, Any] = {}
    for key in ("input_names", "output_names"):
        if key not in data or data[key] is None:
            if not partial:
                raise WorkflowConfigError(
                    f"missing; list the model's {key.split('_')[0]}s by name", owner=f"{owner}.{key}"
                )
            continue
        out[key] = _names(data[key], f"{owner}.{key}")
    if data.get("input_shapes") is not None:
        out["input_shapes"] = _shapes(data["input_shapes"], f"{owner}.input_shapes")
    if data.get("input_types") is not None:
        types = _list(data["input_types"], f"{owner}.input_types", 'a list of dtype names such as "int64"')
        for i, name in enumerate(types):
            if name not in INPUT_TYPES:
                raise WorkflowConfigError(
                    f"unknown type {name!r}{closest_match_hint(str(name), INPUT_TYPES)}; use one of "
                    f"{', '.join(INPUT_TYPES)}",
                    owner=f"{owner}.input_types[{i}]",
                )
        out["input_types"] = list(types)
    names = out.get("input_names")
    for key in ("input_shapes", "input_types"):
        if key in out and names is not None and len(out[key]) != len(names):
            raise WorkflowConfigError(
                f"has {len(out[key])} entries for {len(names)} input_names; give one per input", owner=f"{owner}.{key}"
            )
    if data.get("dynamic_axes") is not None:
        out["dynamic_axes"] = _dynamic_axes(data["dynamic_axes"], f"{owner}.dynamic_axes", out)
    return out


def _list(value: Any, owner: str, what: str) -> list[Any]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise WorkflowConfigError(f"expected {what}, got {type(value).__name__}", owner=owner)
    return list(value)


def _names(value: Any, owner: str) -> list[str]:
    names = _list(value, owner, "a list of names")
    if not names:
        raise WorkflowConfigError("empty; list at least one name", owner=owner)
    for i, name in enumerate(names):
        if not isinstance(name, str) or not name:
            raise WorkflowConfigError(f"expected a name (a non-empty string), got {name!r}", owner=f"{owner}[{i}]")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise WorkflowConfigError(f"{', '.join(repr(d) for d in duplicates)} listed twice", owner=owner)
    return names


def _shapes(value: Any, owner: str) -> list[list[int | str]]:
    shapes = []
    for i, shape in enumerate(_list(value, owner, "a list of shapes such as [[1, 128]]")):
        dims = _list(shape, f"{owner}[{i}]", "a shape: a list of sizes such as [1, 128]")
        for axis, dim in enumerate(dims):
            ok = (isinstance(dim, int) and not isinstance(dim, bool) and dim > 0) or (isinstance(dim, str) and dim)
            if not ok:
                raise WorkflowConfigError(
                    f"expected a size of 1 or more or a dim name, got {dim!r}", owner=f"{owner}[{i}][{axis}]"
                )
        shapes.append(dims)
    return shapes


def _dynamic_axes(value: Any, owner: str, io: Mapping[str, Any]) -> dict[str, dict[int, str]]:
    if not isinstance(value, Mapping):
        raise WorkflowConfigError(
            'expected an object like {"input_ids": {"0": "batch_size", "1": "sequence_length"}}', owner=owner
        )
    # Names can be checked only when both lists are known (a partial io_config may name axes of inferred ones).
    complete = io.get("input_names") is not None and io.get("output_names") is not None
    known = [*(io.get("input_names") or []), *(io.get("output_names") or [])]
    result: dict[str, dict[int, str]] = {}
    for name, axes in value.items():
        if complete and name not in known:
            raise WorkflowConfigError(
                f"'{name}' is neither an input nor an output{closest_match_hint(str(name), known)}; names: "
                f"{', '.join(known)}",
                owner=f"{owner}.{name}",
            )
        if isinstance(axes, Sequence) and not isinstance(axes, str):  # [0, 1]: axes without dim names
            axes = {axis: f"{name}_dim_{axis}" for axis in axes}
        if not isinstance(axes, Mapping):
            raise WorkflowConfigError('expected {"axis": "dim_name", ...}', owner=f"{owner}.{name}")
        parsed: dict[int, str] = {}
        for axis, dim in axes.items():
            try:
                index = int(axis)
            except (TypeError, ValueError):
                raise WorkflowConfigError(f"axis {axis!r} is not a whole number", owner=f"{owner}.{name}") from None
            if index < 0 or not isinstance(dim, str) or not dim:
                raise WorkflowConfigError(
                    f"axis {axis!r}: expected an axis >= 0 and a dim name, got {dim!r}", owner=f"{owner}.{name}"
                )
            parsed[index] = dim
        result[name] = parsed
    return result


def build_io_config(data: Mapping[str, Any], owner: str) -> IoConfig:
    """An :class:`IoConfig` from a complete, checked io_config's JSON."""
    checked = check_io_config(data, owner)
    return IoConfig(
        input_names=tuple(checked["input_names"]),
        output_names=tuple(checked["output_names"]),
        input_shapes=tuple(tuple(s) for s in checked["input_shapes"]) if "input_shapes" in checked else None,
        input_types=tuple(checked["input_types"]) if "input_types" in checked else None,
        dynamic_axes=checked.get("dynamic_axes", {}),
    )
