"""Declaring a pass's config params, and the read-only config object a pass receives."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from enum import Enum, StrEnum
from functools import lru_cache
from typing import Any

import attrs

from olive.exceptions import PassConfigError
from olive.search.search_parameter import Categorical, Conditional, ConditionalDefault, SearchParameter


class ParamCategory(StrEnum):
    """How the engine treats a param's value before the pass sees it."""

    NONE = "none"
    # a callable, or the name of one in the workflow's user_script
    OBJECT = "object"
    # a file or folder path; made absolute
    PATH = "path"
    # a data path, resolved against the data root
    DATA = "data"


class PassParamDefault(StrEnum):
    """Values a workflow may give a param to choose its default explicitly."""

    DEFAULT_VALUE = "DEFAULT_VALUE"
    SEARCHABLE_VALUES = "SEARCHABLE_VALUES"


def _to_category(value: ParamCategory | str) -> ParamCategory:
    try:
        return ParamCategory(str(value).lower())
    except ValueError:
        raise PassConfigError(
            f"unknown param category {value!r}; use one of {', '.join(c.value for c in ParamCategory)}"
        ) from None


def _check_search_defaults(instance: PassConfigParam, attribute: attrs.Attribute, value: Any) -> None:
    if value is not None and not isinstance(value, Categorical | Conditional):
        raise PassConfigError(f"search_defaults must be a Categorical or Conditional search parameter, got {value!r}")


@attrs.frozen
class PassConfigParam:
    """One config option of a pass.

    :param type_: the value's type (``int``, ``str | None``, ``list[str]``, an enum, ``Callable``...).
    :param required: the workflow must give a value.
    :param default_value: used when not searching, or when there are no searchable values; may be a
        :class:`~olive.search.search_parameter.ConditionalDefault`.
    :param category: see :class:`ParamCategory`.
    :param description: one line shown by ``olive passes NAME``.
    :param search_defaults: the values searched when the workflow has a search strategy and gives no value
        (a ``Categorical`` or ``Conditional``).
    """

    type_: Any
    required: bool = False
    default_value: Any = None
    category: ParamCategory = attrs.field(default=ParamCategory.NONE, converter=_to_category)
    description: str | None = None
    search_defaults: SearchParameter | None = attrs.field(default=None, validator=_check_search_defaults)

    def parents(self) -> tuple[str, ...]:
        """Params this one depends on, through its conditional default or conditional search values."""
        names: list[str] = []
        for value in (self.default_value, self.search_defaults):
            if isinstance(value, Conditional | ConditionalDefault):
                names.extend(p for p in value.parents if p not in names)
        return tuple(names)


# Names a generated config class uses for its mapping methods; a param cannot have one of them.
RESERVED_PARAM_NAMES = frozenset(
    {"get", "keys", "items", "values", "to_dict", "dict", "model_dump", "to_json", "pass_name"}
)


class BasePassConfig(Mapping[str, Any]):
    """Base of the read-only config object given to ``_run_for_config``.

    Each pass gets a generated attrs subclass with one attribute per param; both ``config.name`` and
    ``config["name"]`` work (older docs typed the config as a dict), and so do ``dict(config)`` and ``**config``.
    """

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        if key not in attrs.fields_dict(type(self)):
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(attrs.fields_dict(type(self)))

    def __len__(self) -> int:
        return len(attrs.fields(type(self)))

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in attrs.fields_dict(type(self))}

    # pydantic-style spellings used by passes written for Microsoft Olive
    def dict(self) -> dict[str, Any]:
        return self.to_dict()

    def model_dump(self) -> dict[str, Any]:
        return self.to_dict()

    def to_json(self) -> dict[str, Any]:
        """A JSON-serializable form (enums as values, callables by name, search params as JSON)."""
        return {name: to_json_value(value) for name, value in self.to_dict().items()}

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"{type(self).__name__}({body})"


def to_json_value(value: Any) -> Any:
    """Convert a config value into something ``json.dumps`` accepts, deterministically."""
    import cattrs

    if isinstance(value, SearchParameter):
        return value.to_json()
    if callable(value) and not isinstance(value, type):
        return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', repr(value))}"
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, Mapping):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [to_json_value(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if isinstance(value, Enum):
        return to_json_value(value.value)
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return cattrs.unstructure(value) if attrs.has(type(value)) else str(value)


@lru_cache(maxsize=512)
def make_config_class(pass_name: str, param_names: tuple[str, ...]) -> type[BasePassConfig]:
    """The frozen attrs class holding one pass's resolved config."""
    clashing = sorted(set(param_names) & RESERVED_PARAM_NAMES)
    if clashing:
        raise PassConfigError(
            f"{pass_name}: param name(s) {', '.join(clashing)} are reserved by the config object; rename them"
        )
    fields = {name: attrs.field(kw_only=True) for name in param_names}
    return attrs.make_class(f"{pass_name}Config", fields, bases=(BasePassConfig,), frozen=True, slots=True)
