"""The declared ``type_`` of each of a pass's params is the schema of its value: one cattrs converter structures
the value into it with the type checks on, and :func:`mismatch_reason` is the one place its failures become our
words (the place in the value, the value given, what the type accepts, the closest name).

JSON cannot spell everything a param may take, so a few conversions stay: a string naming an enum member (its
value or its name) becomes the member, an int given for a float becomes a float, a tuple given for a list
becomes a list. ``True`` is no int, ``"3"`` no number, a string no list.
"""

from __future__ import annotations

import collections.abc
import enum
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import cattrs
from cattrs.cols import is_mapping, is_sequence, list_structure_factory, mapping_structure_factory
from cattrs.errors import BaseValidationError, IterableValidationNote

from olive.exceptions import closest_match_hint
from olive.paths import OutputFileName, UnsafeName, check_plain_name

__all__ = ["Mismatch", "converter", "describe_type", "fits", "mismatch_reason", "structure_value", "value_choices"]


class Mismatch(TypeError):
    """A value that is not of the type asked for (``detail``: why, when more than the type says it)."""

    def __init__(self, value: Any, type_: Any, detail: str = "", inside: BaseValidationError | None = None):
        super().__init__(f"{value!r} is not {describe_type(type_)}")
        self.value, self.type_, self.detail = value, type_, detail
        # for a union: the failure inside the arm that took the value apart (a list item's, a dict value's)
        self.inside = inside


converter = cattrs.Converter(detailed_validation=True)


def structure_value(value: Any, type_: Any) -> Any:
    """``value`` as a ``type_`` (possibly converted, see the module doc); raises a cattrs error or :class:`Mismatch`."""
    return converter.structure(value, type_)


def fits(value: Any, type_: Any) -> bool:
    try:
        structure_value(value, type_)
    except (Mismatch, BaseValidationError):
        return False
    return True


# ------------------------------------------------------------------------------------------------ the checks


def _checked(accepts: Callable[[Any], bool], convert: Callable[[Any], Any] = lambda value: value) -> Any:
    def hook(value: Any, type_: Any) -> Any:
        if isinstance(type_, type) and issubclass(type_, enum.Enum):
            # a StrEnum or IntEnum is found through its str or int base
            return _enum_member(value, type_)
        if accepts(value):
            return convert(value)
        raise Mismatch(value, type_)

    return hook


def _number(kinds: type | types.UnionType) -> Callable[[Any], bool]:
    # bool is an int in Python, never in a config: ``True`` is no batch size.
    return lambda value: isinstance(value, kinds) and not isinstance(value, bool)


def _passes(value: Any, _: Any) -> Any:
    return value


def _enum_member(value: Any, type_: type[enum.Enum]) -> enum.Enum:
    if isinstance(value, type_):
        return value
    for member in type_:
        if value == member.value or (isinstance(value, str) and value == member.name):
            return member
    raise Mismatch(value, type_)


def _output_file_name(value: Any, type_: Any) -> str:
    if not isinstance(value, str):
        raise Mismatch(value, type_)
    try:
        return check_plain_name(value)
    except UnsafeName as exc:
        raise Mismatch(value, type_, str(exc)) from None


def _is_union(type_: Any) -> bool:
    return typing.get_origin(type_) in (typing.Union, types.UnionType)


def _union(value: Any, type_: Any) -> Any:
    arms = typing.get_args(type_)
    # An arm of the value's own type first, so that a str stays a str in ``str | SomeEnum`` and an int an int
    # in ``int | float``.
    if any(arm is Any or type(value) is arm for arm in arms):
        return value
    detail, inside = "", None
    for arm in arms:
        try:
            return structure_value(value, arm)
        except Mismatch as exc:
            detail = detail or exc.detail
        except BaseValidationError as exc:
            inside = inside or exc
    raise Mismatch(value, type_, detail, inside)


def _is_callable(type_: Any) -> bool:
    return type_ in (collections.abc.Callable, typing.Callable) or typing.get_origin(type_) is collections.abc.Callable


def _literal(value: Any, type_: Any) -> Any:
    if value in typing.get_args(type_):
        return value
    raise Mismatch(value, type_)


def _collection(factory: Any, kinds: tuple[type, ...]) -> Any:
    # cattrs would take any iterable (a string as a list of letters, a dict as a list of its keys).
    def make(type_: Any) -> Any:
        inner = factory(type_, converter)

        def hook(value: Any, _: Any) -> Any:
            if not isinstance(value, kinds):
                raise Mismatch(value, type_)
            return inner(value, type_)

        return hook

    return make


def _items(type_: Any) -> Any:
    # Sets and tuples (few params take one): a JSON list becomes one, item by item.
    origin = typing.get_origin(type_) or type_
    args = typing.get_args(type_)

    def hook(value: Any, _: Any) -> Any:
        if not isinstance(value, list | tuple | set | frozenset):
            raise Mismatch(value, type_)
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(args) != len(value):
                raise Mismatch(value, type_, f"{len(args)} items expected, {len(value)} given")
            return tuple(structure_value(item, arg) for item, arg in zip(value, args, strict=True))
        items = [structure_value(item, args[0]) if args else item for item in value]
        return tuple(items) if origin is tuple else frozenset(items) if origin is frozenset else set(items)

    return hook


def _is_items(type_: Any) -> bool:
    return (typing.get_origin(type_) or type_) in (tuple, set, frozenset, collections.abc.Set)


def _instance(value: Any, type_: Any) -> Any:
    # Any other class (a user's, an attrs one, the origin of a generic): the value is an instance of it already.
    # What is no class (a TypeVar, a NewType) says nothing checkable about the value.
    cls = typing.get_origin(type_) or type_
    if not isinstance(cls, type) or isinstance(value, cls):
        return value
    raise Mismatch(value, type_)


converter.register_structure_hook_func(lambda t: True, _instance)
converter.register_structure_hook_func(lambda t: t is Any or t is object or isinstance(t, str), _passes)
converter.register_structure_hook(type(None), _checked(lambda value: value is None))
converter.register_structure_hook(bool, _checked(lambda value: isinstance(value, bool)))
converter.register_structure_hook(int, _checked(_number(int)))
converter.register_structure_hook(float, _checked(_number(int | float), float))
converter.register_structure_hook(str, _checked(lambda value: isinstance(value, str)))
converter.register_structure_hook(list, _checked(lambda value: isinstance(value, list | tuple), list))
converter.register_structure_hook(dict, _checked(lambda value: isinstance(value, Mapping), dict))
converter.register_structure_hook(OutputFileName, _output_file_name)
# a path stays as given (a str stays a str): the param's category makes it absolute
converter.register_structure_hook(Path, _checked(lambda value: isinstance(value, str | Path)))
converter.register_structure_hook_func(lambda t: isinstance(t, type) and issubclass(t, enum.Enum), _enum_member)
converter.register_structure_hook_func(_is_callable, _checked(callable))
converter.register_structure_hook_func(
    lambda t: t is type or typing.get_origin(t) is type, _checked(lambda value: isinstance(value, type))
)
converter.register_structure_hook_func(lambda t: typing.get_origin(t) is typing.Literal, _literal)
converter.register_structure_hook_func(_is_union, _union)
converter.register_structure_hook_factory(
    lambda t: is_sequence(t) and typing.get_origin(t) is not None and not _is_items(t),
    _collection(list_structure_factory, (list, tuple, set, frozenset)),
)
converter.register_structure_hook_factory(_is_items, _items)
converter.register_structure_hook_factory(
    lambda t: is_mapping(t) and typing.get_origin(t) is not None, _collection(mapping_structure_factory, (Mapping,))
)


# ------------------------------------------------------------------------------------------------ the words


def mismatch_reason(name: str, error: Exception, value: Any, type_: Any) -> str:
    """One line for a param whose value failed to structure: ``param 'name' expects <type>, got <value>``, then
    where inside the value it failed, and the closest name a string might have meant."""
    place, leaf = _leaf(error)
    message = f"param '{name}' expects {describe_type(type_)}, got {value!r}"
    if not isinstance(leaf, Mismatch):  # no hook here raised it: cattrs' own words, at their place
        return f"{message}: at {name}{place}, {leaf}"
    if place:
        message += f": at {name}{place}, {leaf.value!r} is not {describe_type(leaf.type_)}"
        message += f" ({leaf.detail})" if leaf.detail else ""
    elif leaf.detail:
        message += f"; {leaf.detail}"
    if isinstance(leaf.value, str):
        message += closest_match_hint(leaf.value, value_choices(leaf.type_ if place else type_))
    return message


def _leaf(error: Exception) -> tuple[str, Exception]:
    """``(place below the param, like "[2]" or "['key']", the innermost error)``."""
    place = ""
    while True:
        if isinstance(error, Mismatch) and error.inside is not None:
            error = error.inside
        if not (isinstance(error, BaseValidationError) and error.exceptions):
            return place, error
        inner = error.exceptions[0]
        for note in getattr(inner, "__notes__", ()):
            if isinstance(note, IterableValidationNote):
                place += f"[{note.index!r}]"
            elif hasattr(note, "name"):
                place += f"[{note.name!r}]"
        error = inner


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
    if _is_callable(tp):
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
    if _is_union(tp):
        return [choice for arg in typing.get_args(tp) for choice in value_choices(arg)]
    if typing.get_origin(tp) is typing.Literal:
        return [arg for arg in typing.get_args(tp) if isinstance(arg, str)]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return [str(member.value) for member in tp]
    return []
