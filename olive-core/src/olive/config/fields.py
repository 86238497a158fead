"""Rules a config field declares about its value, for ``attrs.field(validator=...)`` and ``converter=...``.

Each wraps a check of :mod:`olive.config_errors`, named by the field, so the error says what was expected and
what was given; :func:`olive.config.structure.structure` puts the section's JSON path in front. A value of
None passes every rule of a field whose type allows None (``optional=True``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs

from olive.config.structure import base_dir, note_without_effect
from olive.config_errors import SCRIPT_KINDS, choice, expect, number, user_path, whole_number

Validator = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def _rule(check: Callable[[Any, str], Any], optional: bool) -> Validator:
    def validate(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if value is None and optional:
            return
        check(value, attribute.name)

    return validate


def typed(types: type | tuple[type, ...], words: str, *, optional: bool = False) -> Validator:
    """The value is one of ``types`` (a bool is not a number); ``words`` name them for the error."""
    return _rule(lambda value, name: expect(value, types, name, words), optional)


def whole(minimum: int | None = None, maximum: int | None = None, *, optional: bool = False) -> Validator:
    """A whole number within the bounds."""
    return _rule(lambda value, name: whole_number(value, name, minimum=minimum, maximum=maximum), optional)


def real(
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    *,
    optional: bool = False,
) -> Validator:
    """A finite number within the bounds (``above`` excludes its bound)."""
    return _rule(lambda value, name: number(value, name, minimum=minimum, maximum=maximum, above=above), optional)


def one_of(names: Iterable[str] | Callable[[], Iterable[str]], *, optional: bool = False) -> Validator:
    """One of ``names`` (or of what a registry's function returns when the check runs)."""
    return _rule(lambda value, name: choice(value, names() if callable(names) else names, name), optional)


def without_effect(_instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    """Accepted from Microsoft Olive's schema and without effect here: given a value, the workflow's one warning
    names it."""
    note_without_effect({attribute.name: value}, (attribute.name,))


def path_field(
    *, must_exist: bool = False, kind: str | None = None, words: str = "a path string", empty_is_none: bool = False
) -> attrs.Converter:
    """A converter to an absolute path, relative ones starting at the workflow file's folder (a ``Path`` a
    default made stays as it is; with ``empty_is_none`` an empty value or null is None, else null is an error)."""

    def convert(value: Any, field: attrs.Attribute[Any]) -> Any:
        if empty_is_none and not value:
            return None
        if isinstance(value, Path):
            return value
        expect(value, str, field.name, words)
        return user_path(value, field.name, base_dir(), must_exist=must_exist, kind=kind)

    return attrs.Converter(convert, takes_field=True)


def script_field(name: str) -> attrs.Converter:
    """``user_script`` or ``script_dir``: an existing file or folder (:data:`olive.config_errors.SCRIPT_KINDS`);
    left empty, none."""
    return path_field(must_exist=True, kind=SCRIPT_KINDS[name], empty_is_none=True)
