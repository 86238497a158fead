"""Microsoft Olive's ``_validators()`` hook: pydantic validators a pass declares on its config, honoured here.

A pass written for Olive declares checks (and rewrites) of its config as pydantic validators::

    @classmethod
    def _validators(cls) -> dict[str, Callable]:
        return {"validate_configs": model_validator(mode="before")(_jointly_validate_configs)}

Olive builds a pydantic model with them; here the config is an attrs class, so each validator is read for what
pydantic would do with it and called the way pydantic calls it, on the dict of the config's values:

- ``model_validator(mode="before" | "wrap")`` and ``root_validator``: ``f(cls, values) -> values``;
- ``model_validator(mode="after")``: ``f(config)``, on the config object;
- ``field_validator(*fields, mode=...)`` and ``validator(*fields)``: ``f(cls, value) -> value`` per field (a
  ``validator`` may also take ``values``);
- a plain function: as a ``before`` model validator.

pydantic itself is not needed (nothing is imported: its decorators are read by their attributes). A validator
that raises ``ValueError``, ``TypeError`` or ``AssertionError`` (pydantic's own errors are ``ValueError``\\ s)
refuses the config with a :class:`~olive.exceptions.PassParamError` naming the validator and its message.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from types import SimpleNamespace
from typing import Any

import attrs

from olive.exceptions import PassConfigError, PassParamError

__all__ = ["Validator", "apply_validators", "read_validators"]

_BEFORE = "before"
_AFTER = "after"


@attrs.frozen
class Validator:
    """One declared validator: its name, the function, whether it judges the whole config or some fields,
    and when pydantic would run it."""

    name: str
    func: Callable[..., Any]
    takes_cls: bool
    fields: tuple[str, ...] | None  # None: the whole config
    mode: str
    wrap: bool = False

    def params(self, declared: Iterable[str]) -> tuple[str, ...]:
        """The params whose values it judges (every one, for a validator of the whole config)."""
        if self.fields is None or "*" in self.fields:
            return tuple(declared)
        return self.fields


def read_validators(pass_class: type, hook: Mapping[str, Any]) -> list[Validator]:
    """The validators ``pass_class._validators()`` returned (``hook``), in pydantic's order: the whole config's
    ``before`` ones, the fields', then the whole config's ``after`` ones. Raises :class:`PassConfigError` for an
    entry that is not a validator."""
    if not isinstance(hook, Mapping):
        raise PassConfigError(
            f"{pass_class.__name__}._validators() returned {type(hook).__name__}; return a dict of name -> "
            "validator (pydantic's model_validator / field_validator, or a function)"
        )
    found = [_read(pass_class, str(name), value) for name, value in hook.items()]
    rank = {(None, _BEFORE): 0, (None, _AFTER): 2}
    return sorted(found, key=lambda v: rank.get((None, v.mode) if v.fields is None else (), 1))


def _read(pass_class: type, name: str, value: Any) -> Validator:
    info = getattr(value, "decorator_info", None)
    func = getattr(value, "wrapped", value) if info is not None else value
    if isinstance(func, classmethod):
        func, takes_cls = func.__func__, True
    elif isinstance(func, staticmethod):
        func, takes_cls = func.__func__, False
    else:
        # pydantic makes a plain function whose first param is named cls a classmethod; so does this.
        takes_cls = _first_param(func) == "cls"
    if not callable(func):
        raise PassConfigError(
            f"{pass_class.__name__}._validators(): '{name}' is {type(value).__name__}, not a validator; give "
            "pydantic's model_validator(...)(function), field_validator(...)(function) or a function"
        )
    kind = type(info).__name__ if info is not None else ""
    mode = getattr(info, "mode", _BEFORE)
    if kind in ("FieldValidatorDecoratorInfo", "ValidatorDecoratorInfo"):
        fields = tuple(getattr(info, "fields", ()) or ())
        return Validator(name, func, takes_cls, fields, mode, wrap=mode == "wrap")
    if kind == "RootValidatorDecoratorInfo":
        return Validator(name, func, takes_cls, None, _BEFORE if mode == _BEFORE else _AFTER)
    if kind == "ModelValidatorDecoratorInfo" and mode == _AFTER:
        return Validator(name, func, False, None, _AFTER)
    return Validator(name, func, takes_cls, None, _BEFORE, wrap=mode == "wrap")


def apply_validators(
    validators: list[Validator],
    config_class: type,
    values: dict[str, Any],
    make: Callable[[dict[str, Any]], Any],
) -> Any:
    """The config ``make(values)`` builds once every validator has passed (and rewritten) ``values``.

    Raises :class:`PassParamError` naming the validator, its message and the params it judges.
    """
    values = dict(values)
    declared = list(values)
    config = None
    for validator in validators:
        try:
            if validator.fields is not None:
                for field in validator.params(declared):
                    if field in values:
                        values[field] = _call_field(validator, config_class, values[field], values, field)
                config = None
            elif validator.mode == _AFTER:
                config = config if config is not None else make(values)
                validator.func(config)
            else:
                returned = _call(validator, config_class, values)
                if returned is not None:
                    if not isinstance(returned, Mapping):
                        raise TypeError(f"returned {type(returned).__name__}, not the dict of values")
                    values = {**values, **returned}
                    config = None
        except (ValueError, TypeError, AssertionError) as exc:
            raise PassParamError(
                f"the pass's validator '{validator.name}' refuses the config: {_message(exc)}",
                params=validator.params(declared),
            ) from exc
    return config if config is not None else make(values)


def _call(validator: Validator, config_class: type, values: dict[str, Any]) -> Any:
    args: list[Any] = [config_class] if validator.takes_cls else []
    args.append(dict(values))
    if validator.wrap:
        args.append(lambda data, *_: data)
    if _positional_count(validator.func) > len(args):
        args.append(SimpleNamespace(data=dict(values), field_name=None, mode="python", context=None))
    return validator.func(*args)


def _call_field(validator: Validator, config_class: type, value: Any, values: dict[str, Any], field: str) -> Any:
    args: list[Any] = [config_class] if validator.takes_cls else []
    args.append(value)
    if validator.wrap:
        args.append(lambda data, *_: data)
    params = inspect.signature(validator.func).parameters
    kwargs: dict[str, Any] = {}
    if "values" in params:
        # pydantic's validator(): the values validated before this field.
        kwargs["values"] = {k: v for k, v in values.items() if k != field}
    elif _positional_count(validator.func) > len(args):
        args.append(SimpleNamespace(data=dict(values), field_name=field, mode="python", context=None))
    return validator.func(*args, **kwargs)


def _first_param(func: Callable[..., Any]) -> str | None:
    try:
        params = list(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return None
    return params[0] if params else None


def _positional_count(func: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return 0
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in params if p.kind in kinds)


def _message(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__
