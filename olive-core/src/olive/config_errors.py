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
from olive.paths import resolve_user_path

_TYPE_NAMES: dict[type, str] = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}


def json_path(parent: str, key: str | int) -> str:
    """``parent.key`` (``key`` alone at the top level) or ``parent[index]``."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
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


def user_path(
    value: Any, path: str, base_dir: str | Path | None, *, must_exist: bool = False, kind: str | None = None
) -> Path:
    """Where a path the user wrote at JSON ``path`` points (:func:`olive.paths.resolve_user_path`).

    With ``must_exist``, a path that does not exist is an error saying where it looked; ``kind`` (``"file"``
    or ``"folder"``) also checks what it is.
    """
    expect(value, (str, os.PathLike), path, "a path string")
    resolved = resolve_user_path(value, base_dir)
    if not must_exist:
        return resolved
    if not resolved.exists():
        looked = "" if str(resolved) == str(value) else f" (looked at {resolved})"
        relative = not Path(value).expanduser().is_absolute()
        start = " (relative paths start at the workflow file's folder)" if relative else ""
        raise config_error(path, f"'{value}' does not exist{looked}; fix the path{start}")
    if kind == "file" and resolved.is_dir():
        raise config_error(path, f"'{value}' is a folder; give the file itself")
    if kind == "folder" and not resolved.is_dir():
        raise config_error(path, f"'{value}' is a file; give a folder")
    return resolved
