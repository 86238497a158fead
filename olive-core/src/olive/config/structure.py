"""Turning a section of a workflow (a dict read from JSON or YAML) into its attrs class, and every failure into
one :class:`~olive.exceptions.WorkflowConfigError` that starts with the JSON path of the offending value.

The rules sit on the fields (:mod:`olive.config.fields`); :data:`converter` only walks the dict. Its hooks for
plain types pass values through untouched, so ``"3"`` never becomes ``3``: the field's own check reports it.
An unknown key is reported as ``check_keys`` always has: the first one in the file, with the closest valid
name and the keys the section takes.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.errors import BaseValidationError, ForbiddenExtraKeysError, IterableValidationNote
from cattrs.gen import make_dict_structure_fn

from olive.config_errors import check_keys, config_error, json_path
from olive.exceptions import WorkflowConfigError

T = TypeVar("T")

converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
# Only sections (attrs classes) are walked; every other value reaches its field as the file gives it, and the
# field's own rule says what was expected and what was given.
converter.register_structure_hook_func(lambda cls: not attrs.has(cls), lambda value, _: value)
for _plain in (str, int, float, bool, Path):  # cattrs' own hooks for these would convert ("3" -> 3)
    converter.register_structure_hook(_plain, lambda value, _: value)

# Where relative paths start while a workflow is structured (the workflow file's folder).
_BASE_DIR: contextvars.ContextVar[Path] = contextvars.ContextVar("olive_config_base_dir")
# The JSON path of the section being structured, and the paths of the keys found that have no effect here.
_PATH: contextvars.ContextVar[str] = contextvars.ContextVar("olive_config_path", default="")
_WITHOUT_EFFECT: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "olive_config_without_effect", default=None
)


@contextlib.contextmanager
def relative_to(base_dir: Path) -> Iterator[None]:
    """Paths structured inside the block resolve against ``base_dir``."""
    token = _BASE_DIR.set(base_dir)
    try:
        yield
    finally:
        _BASE_DIR.reset(token)


def base_dir() -> Path:
    return _BASE_DIR.get(Path.cwd())


@contextlib.contextmanager
def collecting_without_effect() -> Iterator[list[str]]:
    """The JSON paths of the keys that :func:`note_without_effect` finds while the block runs, in file order."""
    found: list[str] = []
    token = _WITHOUT_EFFECT.set(found)
    try:
        yield found
    finally:
        _WITHOUT_EFFECT.reset(token)


def note_without_effect(section: Any, keys: Iterable[str], where: str = "") -> None:
    """Note the ``keys`` of Microsoft Olive's schema that ``section`` gives a value (not null, false or empty):
    accepted, and without effect here (the workflow's one warning names them). ``where``: the section's JSON
    path below the one being structured."""
    found = _WITHOUT_EFFECT.get()
    if found is None or not isinstance(section, Mapping):
        return
    parent = _joined(_PATH.get(), where)
    found.extend(json_path(parent, key) for key in keys if section.get(key) not in (None, False, "", {}, []))


def structure_fields(data: dict[str, Any], cls: type[T]) -> T:
    """``data`` as a ``cls``, field by field: for a structure hook that has brought an older form into the
    class's own shape."""
    fn = _field_structurers.get(cls)
    if fn is None:
        fn = _field_structurers[cls] = make_dict_structure_fn(
            cls, converter, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=True
        )
    return fn(data, cls)


_field_structurers: dict[type, Any] = {}


def valid_keys(cls: type) -> list[str]:
    """The keys a section takes, in the order its class declares them, then the older spellings a structure
    hook accepts."""
    return [field.name for field in attrs.fields(cls)] + list(getattr(cls, "_legacy_keys", ()))


def structure(data: Any, cls: type[T], path: str) -> T:
    """``data`` as a ``cls``; raises :class:`WorkflowConfigError` naming the JSON path below ``path``."""
    token = _PATH.set(_joined(_PATH.get(), path))
    try:
        return converter.structure(data, cls)
    except WorkflowConfigError as exc:
        raise _owned(exc, path) from None
    except BaseValidationError as exc:
        raise _first_error(exc, data, path) from None
    finally:
        _PATH.reset(token)


def _joined(parent: str, child: str) -> str:
    if child.startswith("["):
        return f"{parent}{child}"
    return f"{parent}.{child}" if parent and child else parent or child


def _owned(exc: WorkflowConfigError, path: str) -> WorkflowConfigError:
    """``exc`` (owned by a path relative to ``path``) owned by its full path."""
    owner = exc.owner if exc.owner not in (None, "config") else ""
    return config_error(_joined(path, owner), exc.reason)


def _first_error(group: BaseValidationError, data: Any, path: str) -> WorkflowConfigError:
    """The error a reader fixes first: an unknown key of the outermost section, else the first field's."""
    for exc in group.exceptions:
        if isinstance(exc, ForbiddenExtraKeysError) and isinstance(data, Mapping):
            try:
                check_keys(data, valid_keys(exc.cl), path)
            except WorkflowConfigError as found:
                return found
    for exc in group.exceptions:
        if isinstance(exc, ForbiddenExtraKeysError):
            continue
        where, value = path, data
        for note in getattr(exc, "__notes__", ()):
            key = getattr(note, "name", None)
            if isinstance(note, IterableValidationNote):
                key = note.index
            elif key is None:
                continue
            where = json_path(where, key)
            value = _child(value, key)
        if isinstance(exc, WorkflowConfigError):
            return _owned(exc, where)
        if isinstance(exc, BaseValidationError):
            return _first_error(exc, value, where)
        # A value no rule foresaw still gets one line that names its place.
        return config_error(where, f"invalid value ({type(exc).__name__}: {exc})")
    return config_error(path, "invalid")


def _child(value: Any, key: str | int) -> Any:
    try:
        return value[key]
    except (KeyError, IndexError, TypeError):
        return None
