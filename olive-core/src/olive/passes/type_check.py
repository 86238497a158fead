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
from collections.abc import Callable
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
    # A string is a forward reference we cannot resolve: accept rather than reject a valid value.
    if tp is Any or tp is object or tp is None or isinstance(tp, str):
        return value
    if tp is type(None):
        if value is None:
            return None
        raise TypeMismatch("None")
    origin = typing.get_origin(tp)
    if origin is None and tp in _CALLABLES:
        origin = collections.abc.Callable
    if origin is not None:
        coerce = _BY_ORIGIN.get(origin)
        # Any other generic (``Iterable[int]``, a user's ``Generic``) is checked against its origin class.
        return coerce(value, tp, typing.get_args(tp)) if coerce else coerce_value(value, origin)
    if isinstance(tp, type):
        return _coerce_to_class(value, tp)
    return value


_CALLABLES = (collections.abc.Callable, typing.Callable)


def _union(value: Any, tp: Any, args: tuple[Any, ...]) -> Any:
    # Exact matches first, so that a str stays a str in ``str | SomeEnum``.
    if any(_is_exact(value, arg) for arg in args):
        return value
    for arg in args:
        try:
            return coerce_value(value, arg)
        except TypeMismatch:
            continue
    raise TypeMismatch(describe_type(tp))


def _literal(value: Any, tp: Any, args: tuple[Any, ...]) -> Any:
    if value in args:
        return value
    raise TypeMismatch(describe_type(tp))


def _callable(value: Any, tp: Any, args: tuple[Any, ...]) -> Any:
    if callable(value):
        return value
    raise TypeMismatch("Callable")


def _collection(value: Any, tp: Any, args: tuple[Any, ...]) -> Any:
    if not isinstance(value, list | tuple | set | frozenset):
        raise TypeMismatch(describe_type(tp))
    items = [coerce_value(item, args[0] if args else Any) for item in value]
    return type(value)(items) if typing.get_origin(tp) in (set, frozenset) else items


def _tuple(value: Any, tp: Any, args: tuple[Any, ...]) -> Any:
    if not isinstance(value, list | tuple):
        raise TypeMismatch(describe_type(tp))
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(coerce_value(item, args[0]) for item in value)
    if not args:
        return tuple(value)
    if len(args) != len(value):
        raise TypeMismatch(describe_type(tp))
    return tuple(coerce_value(item, arg) for item, arg in zip(value, args, strict=True))


def _mapping(value: Any, tp: Any, args: tuple[Any, ...]) -> Any:
    if not isinstance(value, collections.abc.Mapping):
        raise TypeMismatch(describe_type(tp))
    key_tp, value_tp = args if args else (Any, Any)
    return {coerce_value(key, key_tp): coerce_value(item, value_tp) for key, item in value.items()}


def _type(value: Any, tp: Any, args: tuple[Any, ...]) -> Any:
    if isinstance(value, type):
        return value
    raise TypeMismatch(describe_type(tp))


_BY_ORIGIN: dict[Any, Callable[[Any, Any, tuple[Any, ...]], Any]] = {
    typing.Union: _union,
    types.UnionType: _union,
    typing.Literal: _literal,
    collections.abc.Callable: _callable,
    list: _collection,
    collections.abc.Sequence: _collection,
    collections.abc.MutableSequence: _collection,
    set: _collection,
    frozenset: _collection,
    tuple: _tuple,
    dict: _mapping,
    collections.abc.Mapping: _mapping,
    collections.abc.MutableMapping: _mapping,
    type: _type,
}


def _not_bool(kinds: type | types.UnionType) -> Callable[[Any], bool]:
    # bool is an int in Python, never in a config: ``True`` is no batch size.
    return lambda value: isinstance(value, kinds) and not isinstance(value, bool)


def _keep(value: Any) -> Any:
    return value


#: Plain classes JSON spells loosely: (the name in the error, what is accepted, the conversion).
_PLAIN_CLASSES: dict[type, tuple[str, Callable[[Any], bool], Callable[[Any], Any]]] = {
    bool: ("bool", lambda value: isinstance(value, bool), _keep),
    int: ("int", _not_bool(int), _keep),
    float: ("float", _not_bool(int | float), float),
    list: ("list", lambda value: isinstance(value, list | tuple), list),
    dict: ("dict", lambda value: isinstance(value, collections.abc.Mapping), dict),
}


def _coerce_to_class(value: Any, tp: type) -> Any:
    if tp is OutputFileName:
        if not isinstance(value, str):
            raise TypeMismatch(describe_type(tp))
        try:
            return check_plain_name(value)
        except UnsafeName as exc:
            raise TypeMismatch(f"{describe_type(tp)}; {exc}") from None
    if issubclass(tp, enum.Enum):
        return _enum_member(value, tp)
    if tp in _PLAIN_CLASSES:
        name, accepts, convert = _PLAIN_CLASSES[tp]
        if accepts(value):
            return convert(value)
        raise TypeMismatch(name)
    if issubclass(tp, Path):
        if isinstance(value, str | Path):
            return value
        raise TypeMismatch("path")
    if isinstance(value, tp):
        return value
    raise TypeMismatch(describe_type(tp))


def _enum_member(value: Any, tp: type[enum.Enum]) -> enum.Enum:
    if isinstance(value, tp):
        return value
    for member in tp:
        if value == member.value or (isinstance(value, str) and value == member.name):
            return member
    raise TypeMismatch(describe_type(tp))


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
