"""Checks for the configs users write (workflow, metric and data configs), and the one form of their errors.

Every error is a :class:`~olive.exceptions.WorkflowConfigError` owned by the JSON path of the offending value,
so its message starts with that path, then says what was expected, what was given, and the fix (a pass's
``_check_config`` uses :func:`param_in_range`, whose :class:`~olive.exceptions.PassParamError` the Pass
contract gives the pass's key)::

    search_strategy.max_samples: expected a whole number of 0 or more, got a string ("many")
    serach_strategy: unknown key (did you mean 'search_strategy'?); valid keys here: workflow_id, ...
    search_strategy.execution_order: unknown value 'joint-ish'; use one of joint, pass-by-pass
    input_model.model_path: 'model.onnx' does not exist (looked at /work/model.onnx); fix the path ...

Each check returns the value it accepts, so a parser reads as a list of expectations::

    size = whole_number(loader.get("batch_size", 1), f"{path}.batch_size", minimum=1)
    rate = number(spec["rate"], f"{path}.rate", above=0, maximum=1)

Rules for every value wherever it sits run first, on the whole document (:func:`check_document`): a key given
twice (:func:`load_json` and :func:`load_yaml` keep the mark the parsers would drop), non-string keys, lone
surrogates, NaN and infinities, integers beyond 64 bits, nesting and size. Messages show values through
:func:`printable`, so one error is one readable line whatever the input holds.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from olive.exceptions import PassParamError, WorkflowConfigError, closest_match_hint
from olive.paths import UnusablePath, resolve_user_path

_TYPE_NAMES: dict[type, str] = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
# Bounds on the shape of a whole document: deeper nesting overflows the recursion of every JSON tool, and YAML
# aliases can make a small file stand for billions of values.
MAX_DEPTH = 64
MAX_VALUES = 200_000
# Integers a config holds are counts, sizes and seeds; beyond 64 bits they overflow every library they reach.
MAX_INTEGER = 2**63 - 1
# Seeds go to numpy and optuna, which take 32-bit unsigned seeds.
SEED_MAX = 2**32 - 1


def printable(text: object) -> str:
    """``text`` with every character a terminal would not show as itself (a NUL, a newline, a lone
    surrogate...) written as its Python escape, so one error stays one readable line."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def quoted(text: object, limit: int = 120) -> str:
    """``'text'`` made :func:`printable`, its middle left out when longer than ``limit`` characters."""
    shown = printable(text)
    if len(shown) <= limit:
        return f"'{shown}'"
    return f"'{shown[: limit // 2]}...{shown[-limit // 4 :]}' ({len(shown)} characters)"


def json_path(parent: str, key: str | int) -> str:
    """``parent.key`` (``key`` alone at the top level) or ``parent[index]``."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    key = printable(key)
    return f"{parent}.{key}" if parent else key


def config_error(path: str, message: str) -> WorkflowConfigError:
    """The error for the value at JSON ``path`` (``config`` when it is the whole file)."""
    return WorkflowConfigError(message, owner=path or "config")


def type_name(value: Any) -> str:
    """What JSON calls the type of ``value``: ``an object``, ``a list``, ``a string``, ``a number``, ``null``..."""
    if value is None:
        return "null"
    if type(value) in _TYPE_NAMES:
        return _TYPE_NAMES[type(value)]
    return "a number" if isinstance(value, int | float) else type(value).__name__


def describe_value(value: Any) -> str:
    """``a string ("3")``: the type and, shortened, the value itself."""
    if value is None:
        return "null"
    return f"{type_name(value)} ({json.dumps(value, default=str)[:60]})"


def expect(value: Any, types: type | tuple[type, ...], path: str, what: str) -> Any:
    """``value`` if it is one of ``types``; ``what`` names them for the error. A bool is not a number here."""
    types = types if isinstance(types, tuple) else (types,)
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        raise config_error(path, f"expected {what}, got {describe_value(value)}")
    return value


def check_keys(data: Mapping[Any, Any], allowed: Iterable[str], path: str, what: str = "key") -> None:
    """Every key of ``data`` is one of ``allowed``; an unknown one is named with the closest valid key."""
    allowed = list(allowed)
    for key in data:
        if not isinstance(key, str):
            raise config_error(path, f"{what} {key!r} is not a string")
        if key not in allowed:
            valid = f"valid keys here: {', '.join(allowed)}" if allowed else "it takes none"
            raise config_error(json_path(path, key), f"unknown {what}{closest_match_hint(key, allowed)}; {valid}")


def choice(value: Any, choices: Iterable[str], path: str, what: str = "value") -> str:
    """``value`` if it is one of ``choices``; an unknown one is named with the closest choice."""
    choices = list(choices)
    expect(value, str, path, f"one of {', '.join(choices)}")
    if value not in choices:
        raise config_error(
            path, f"unknown {what} {value!r}{closest_match_hint(value, choices)}; use one of {', '.join(choices)}"
        )
    return value


def _bounds(minimum: float | None, maximum: float | None, above: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f" from {minimum} to {maximum}"
    if above is not None and maximum is not None:
        return f" above {above} and at most {maximum}"
    if minimum is not None:
        return f" of {minimum} or more"
    if above is not None:
        return f" above {above}"
    return f" of {maximum} or less" if maximum is not None else ""


def _in_bounds(value: float, minimum: float | None, maximum: float | None, above: float | None) -> bool:
    return (
        (minimum is None or value >= minimum)
        and (above is None or value > above)
        and (maximum is None or value <= maximum)
    )


def whole_number(value: Any, path: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` if it is an integer within ``[minimum, maximum]`` (each bound optional)."""
    what = "a whole number" + _bounds(minimum, maximum, None)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise config_error(path, f"expected {what}, got {describe_value(value)}")
    if not _in_bounds(value, minimum, maximum, None):
        raise config_error(path, f"expected {what}, got {value}")
    return int(value)


def number(
    value: Any,
    path: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
) -> float:
    """``value`` as a float if it is a finite number within the bounds (``above`` excludes its bound)."""
    what = "a number" + _bounds(minimum, maximum, above)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise config_error(path, f"expected {what}, got {describe_value(value)}")
    if not math.isfinite(value):
        raise config_error(path, f"expected a finite number{_bounds(minimum, maximum, above)}, got {value}")
    if not _in_bounds(value, minimum, maximum, above):
        raise config_error(path, f"expected {what}, got {value}")
    return float(value)


# ---------------------------------------------------------------------------------------- whole documents


class _DuplicateKeys(dict):
    """An object in which the file gives ``key`` twice (the parsers keep the last; the check reports it)."""

    key: Any = None


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result and not isinstance(result, _DuplicateKeys):
            result = _DuplicateKeys(result)
            result.key = key
        result[key] = value
    return result


def load_json(text: str) -> Any:
    """``json.loads`` that marks an object holding a key twice, for :func:`check_document` to report."""
    return json.loads(text, object_pairs_hook=_json_object)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` that marks a mapping holding a key twice, for :func:`check_document` to report.

    Keys a merge (``<<: *base``) brings in may be given again: overriding them is what merging is for.
    """
    import yaml

    class _Loader(yaml.SafeLoader):
        pass

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Any:
        seen: set[Any] = set()
        data: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = loader.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: construct_mapping reports it
                continue
            if duplicate and not isinstance(data, _DuplicateKeys):
                data = _DuplicateKeys()
                data.key = key
        yield data
        data.update(loader.construct_mapping(node))

    _Loader.add_constructor("tag:yaml.org,2002:map", mapping)
    return yaml.load(text, Loader=_Loader)


def check_document(data: Any, path: str = "") -> None:
    """Rules for every value of a config, wherever it sits: a key given twice, a key that is not a string,
    text holding a lone surrogate, a number that is NaN or infinite or an integer beyond 64 bits, nesting
    deeper than 64 levels, more than 200,000 values. The first offence is reported with its JSON path."""
    stack: list[tuple[Any, str, int]] = [(data, path, 0)]
    count = 0
    while stack:
        value, where, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise config_error("", f"more than {MAX_VALUES} values (YAML aliases count each time they are used)")
        if depth > MAX_DEPTH:
            raise config_error(where, f"nested more than {MAX_DEPTH} levels deep")
        if isinstance(value, _DuplicateKeys):
            raise config_error(
                json_path(where, str(value.key)), "given twice in one object; keep one (the file would lose the first)"
            )
        if isinstance(value, Mapping):
            children = []
            for key, item in value.items():
                if not isinstance(key, str):
                    raise config_error(where, f"key {key!r} is not a string; write it in quotes")
                _check_text(key, where, "a key")
                children.append((item, json_path(where, key), depth + 1))
            stack.extend(reversed(children))
        elif isinstance(value, list | tuple):
            stack.extend(reversed([(item, json_path(where, i), depth + 1) for i, item in enumerate(value)]))
        elif isinstance(value, str):
            _check_text(value, where, "the text")
        elif isinstance(value, float) and not math.isfinite(value):
            raise config_error(where, f"expected a finite number, got {value} (JSON has no NaN or Infinity)")
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INTEGER:
            raise config_error(where, f"expected a number that fits in 64 bits, got a {value.bit_length()}-bit integer")


def _check_text(text: str, where: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = repr(text[exc.start])[1:-1]
        raise config_error(where, f"{what} holds a lone surrogate ({bad}), which is not valid text") from None


# Element types an input spec may name (numpy's names, and the short ones older Olive files use).
INPUT_TYPES = (
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "float",
    "double",
    "int",
    "long",
)
# Elements of one synthetic input: 2**28 float32 values are 1 GiB, already more than any benchmark needs.
MAX_INPUT_ELEMENTS = 2**28


def input_specs(spec: Mapping[str, Any], path: str, samples: int = 1) -> None:
    """``input_names`` (strings), ``input_shapes`` (lists of positive whole numbers, or dimension names) and
    ``input_types`` as a metric's ``user_config`` or a dummy data config gives them: lists of one length, and
    no input (times ``samples``) larger than :data:`MAX_INPUT_ELEMENTS` elements."""
    lengths = {}
    for key, what in (("input_names", "an input name"), ("input_types", "an element type")):
        if spec.get(key) is not None:
            items = expect(spec[key], list, json_path(path, key), f"a list of strings ({what} each)")
            for i, item in enumerate(items):
                expect(item, str, json_path(json_path(path, key), i), what)
                if key == "input_types":
                    choice(item, INPUT_TYPES, json_path(json_path(path, key), i), "element type")
            lengths[key] = len(items)
    if spec.get("input_shapes") is not None:
        where = json_path(path, "input_shapes")
        shapes = expect(spec["input_shapes"], list, where, "a list of shapes, e.g. [[1, 128]]")
        for i, shape in enumerate(shapes):
            expect(shape, list, json_path(where, i), "a shape: a list of dimension sizes, e.g. [1, 128]")
            elements = samples
            for axis, dim in enumerate(shape):
                if not isinstance(dim, str):
                    elements *= whole_number(dim, json_path(json_path(where, i), axis), minimum=1)
            if elements > MAX_INPUT_ELEMENTS:
                raise config_error(
                    json_path(where, i),
                    f"{elements} elements"
                    + (f" over {samples} samples" if samples > 1 else "")
                    + f" is more than {MAX_INPUT_ELEMENTS}; give a smaller shape",
                )
        lengths["input_shapes"] = len(shapes)
    if len(set(lengths.values())) > 1:
        counts = ", ".join(f"{key} has {count}" for key, count in lengths.items())
        raise config_error(path, f"input_names, input_shapes and input_types must list the same inputs ({counts})")


def param_in_range(
    config: Mapping[str, Any],
    name: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    note: str | None = None,
) -> None:
    """For a pass's ``_check_config``: the number ``config[name]`` lies within the bounds (None passes, and so
    does a value that does not apply); ``note`` says what a bound means, e.g. ``"0 infers it from the graph"``."""
    value = config[name]
    if value is None or isinstance(value, str | bool):
        return
    if not _in_bounds(value, minimum, maximum, above):
        kind = "a whole number" if isinstance(value, numbers.Integral) else "a number"
        what = kind + _bounds(minimum, maximum, above) + (f" ({note})" if note else "")
        raise PassParamError(f"param '{name}' expects {what}, got {value}", params=name)


#: What ``user_script`` and ``script_dir`` name wherever a workflow gives them (the top level, a pass, an evaluator,
#: a data config, a metric's user_config): a Python file and a folder.
SCRIPT_KINDS = {"user_script": "file", "script_dir": "folder"}


def user_path(
    value: Any, path: str, base_dir: str | Path | None, *, must_exist: bool = False, kind: str | None = None
) -> Path:
    """Where a path the user wrote at JSON ``path`` points (:func:`olive.paths.resolve_user_path`).

    A path no file system can take (a NUL character, a lone surrogate, a name over 255 bytes, a symlink
    loop) is an error saying why. With ``must_exist``, a path that does not exist is an error saying where it
    looked; ``kind`` (``"file"`` or ``"folder"``) checks what an existing path is.
    """
    expect(value, (str, os.PathLike), path, "a path string")
    if not os.fspath(value):
        raise config_error(path, "empty; give a path")
    shown = quoted(os.fspath(value))
    try:
        resolved = resolve_user_path(value, base_dir)
    except UnusablePath as exc:
        raise config_error(path, f"{shown} cannot be a path: {exc}; fix the path") from None
    if not resolved.exists():
        if not must_exist:
            return resolved
        looked = "" if str(resolved) == str(value) else f" (looked at {printable(resolved)})"
        relative = not Path(value).expanduser().is_absolute()
        start = " (relative paths start at the workflow file's folder)" if relative else ""
        raise config_error(path, f"{shown} does not exist{looked}; fix the path{start}")
    if kind == "file" and resolved.is_dir():
        raise config_error(path, f"{shown} is a folder; give the file itself")
    if kind == "folder" and not resolved.is_dir():
        raise config_error(path, f"{shown} is a file; give a folder")
    return resolved
