"""Checking (and lightly converting) a config value against a param's declared ``type_``.

Conversion is limited to what JSON cannot express: a string naming an enum member becomes that member,
an int given for a float becomes a float, a tuple given for a list becomes a list. Anything else that does
not match raises :class:`TypeMismatch` with a readable description of the expected type.
"""

from __future__ import annotations

import collections.abc
import enum
import types
import typing
from pathlib import Path
from typing import Any

from olive.paths import OutputFileName, UnsafeName, check_plain_name


class TypeMismatch(TypeError):
    pass


def describe_type(tp: Any) -> str:
    """A short human name for a type annotation (``int``, ``list[str] | None``, ``Callable``...)."""
    if tp is Any:
        return "any value"
    if tp is type(None):
        return "None"
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(describe_type(arg) for arg in typing.get_args(tp))
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin is collections.abc.Callable or tp is collections.abc.Callable or tp is typing.Callable:
        return "Callable"
    if origin is not None:
        args = typing.get_args(tp)
        name = getattr(origin, "__name__", str(origin))
        return f"{name}[{', '.join(describe_type(a) for a in args)}]" if args else name
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return f"{tp.__name__} ({', '.join(repr(m.value) for m in tp)})"
    if tp is OutputFileName:
        return "a plain file name (no folder part, '..' or absolute path: the file is written in the output folder)"
    return getattr(tp, "__name__", str(tp))


def value_choices(tp: Any) -> list[str]:
    """The string values ``tp`` takes by name: enum members and ``Literal`` strings, through unions (for hints)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return [choice for arg in typing.get_args(tp) for choice in value_choices(arg)]
    if origin is typing.Literal:
        return [arg for arg in typing.get_args(tp) if isinstance(arg, str)]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return [str(member.value) for member in tp]
    return []


def coerce_value(value: Any, tp: Any) -> Any:
    """Return ``value`` (possibly converted) if it fits ``tp``; raise :class:`TypeMismatch` otherwise."""
    if tp is Any or tp is object or tp is None:
        return value
    if isinstance(tp, str):
        # A forward reference we cannot resolve: accept rather than reject a valid value.
        return value
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)

    if origin in (typing.Union, types.UnionType):
        # Try exact matches first so a str stays a str in ``str | SomeEnum``.
        for arg in args:
            if _is_exact(value, arg):
                return value
        for arg in args:
            try:
                return coerce_value(value, arg)
            except TypeMismatch:
                continue
        raise TypeMismatch(describe_type(tp))
    if origin is typing.Literal:
        if value in args:
            return value
        raise TypeMismatch(describe_type(tp))
    if origin is collections.abc.Callable or tp is collections.abc.Callable or tp is typing.Callable:
        if callable(value):
            return value
        raise TypeMismatch("Callable")
    if tp is type(None):
        if value is None:
            return None
        raise TypeMismatch("None")
    if origin in (list, collections.abc.Sequence, collections.abc.MutableSequence, set, frozenset):
        if isinstance(value, list | tuple | set | frozenset) and not isinstance(value, str):
            item_tp = args[0] if args else Any
            items = [coerce_value(item, item_tp) for item in value]
            return type(value)(items) if origin in (set, frozenset) else items
        raise TypeMismatch(describe_type(tp))
    if origin is tuple:
        if isinstance(value, list | tuple):
            if len(args) == 2 and args[1] is Ellipsis:
                return tuple(coerce_value(v, args[0]) for v in value)
            if args and len(args) != len(value):
                raise TypeMismatch(describe_type(tp))
            return tuple(coerce_value(v, a) for v, a in zip(value, args, strict=False)) if args else tuple(value)
        raise TypeMismatch(describe_type(tp))
    if origin in (dict, collections.abc.Mapping, collections.abc.MutableMapping):
        if isinstance(value, collections.abc.Mapping):
            key_tp, value_tp = args if args else (Any, Any)
            return {coerce_value(k, key_tp): coerce_value(v, value_tp) for k, v in value.items()}
        raise TypeMismatch(describe_type(tp))
    if origin is type:
        if isinstance(value, type):
            return value
        raise TypeMismatch(describe_type(tp))
    if origin is not None:
        return coerce_value(value, origin)

    if isinstance(tp, type):
        if tp is OutputFileName:
            if not isinstance(value, str):
                raise TypeMismatch(describe_type(tp))
            try:
                return check_plain_name(value)
            except UnsafeName as exc:
                raise TypeMismatch(f"{describe_type(tp)}; {exc}") from None
        if issubclass(tp, enum.Enum):
            if isinstance(value, tp):
                return value
            for member in tp:
                if value == member.value or (isinstance(value, str) and value == member.name):
                    return member
            raise TypeMismatch(describe_type(tp))
        if tp is bool:
            if isinstance(value, bool):
                return value
            raise TypeMismatch("bool")
        if tp is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            raise TypeMismatch("int")
        if tp is float:
            if isinstance(value, int | float) and not isinstance(value, bool):
                return float(value)
            raise TypeMismatch("float")
        if tp is list:
            if isinstance(value, list | tuple):
                return list(value)
            raise TypeMismatch("list")
        if tp is dict:
            if isinstance(value, collections.abc.Mapping):
                return dict(value)
            raise TypeMismatch("dict")
        if issubclass(tp, Path):
            if isinstance(value, str | Path):
                return value
            raise TypeMismatch("path")
        if isinstance(value, tp):
            return value
        raise TypeMismatch(describe_type(tp))
    return value


def _is_exact(value: Any, tp: Any) -> bool:
    if tp is Any:
        return True
    if tp is type(None):
        return value is None
    if isinstance(tp, type) and typing.get_origin(tp) is None:
        if tp is int:
            return isinstance(value, int) and not isinstance(value, bool)
        if tp is float:
            return isinstance(value, float)
        return isinstance(value, tp)
    return False
