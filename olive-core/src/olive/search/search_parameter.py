"""Search parameters: the values a pass param may take during a search.

``Categorical`` lists the choices; ``Conditional`` makes the choices depend on other params (its parents);
``ConditionalDefault`` makes a *default value* depend on parents. Semantics follow Microsoft Olive so that
passes written for it declare their search spaces unchanged.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any

from olive.exceptions import SearchSpaceError, closest_match_hint


class SpecialParamValue(StrEnum):
    """Marker values a search point may hold.

    ``IGNORED``: the param does not apply for this point (the pass ignores it).
    ``INVALID``: this combination of parent values is not allowed; a point holding it is never run.
    """

    IGNORED = "OLIVE_IGNORED_PARAM_VALUE"
    INVALID = "OLIVE_INVALID_PARAM_VALUE"


def _normalize_parents(parents: str | Iterable[str]) -> tuple[str, ...]:
    # The old docs show ``parents="param2"``; a bare string means a one-tuple, not a tuple of characters.
    if isinstance(parents, str):
        return (parents,)
    result = tuple(parents)
    if not result:
        raise SearchSpaceError("a Conditional needs at least one parent; give parents=('other_param',)")
    return result


def _normalize_key(key: Any, n_parents: int) -> tuple:
    if not isinstance(key, tuple):
        key = (key,)
    if len(key) != n_parents:
        raise SearchSpaceError(
            f"support key {key!r} has {len(key)} value(s) but the Conditional has {n_parents} parent(s); "
            "give one value per parent, in the order of `parents`"
        )
    return key


def _lookup(support: Mapping[tuple, Any], parent_values: Sequence[Any], default: Any) -> Any:
    try:
        return support.get(tuple(parent_values), default)
    except TypeError:  # an unhashable parent value (a list) matches no key
        return default


def _json_key(key: tuple) -> list:
    return list(key)


class SearchParameter(ABC):
    """Base class of every search parameter."""

    @abstractmethod
    def to_json(self) -> dict[str, Any]:
        """The JSON form ``{"olive_parameter_type": "SearchParameter", "type": ..., ...}``."""

    @staticmethod
    def is_json(value: Any) -> bool:
        return isinstance(value, Mapping) and value.get("olive_parameter_type") == "SearchParameter"

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> SearchParameter:
        """Build a search parameter from its JSON form; a malformed one is a :class:`SearchSpaceError` saying
        what is wrong (it comes from a workflow file)."""
        kind = data.get("type")
        builders = {
            "Categorical": lambda: Categorical(data["support"]),
            "Boolean": Boolean,
            "Conditional": lambda: Conditional(
                parents=_json_parents(data, kind),
                support={key: _value_from_json(value) for key, value in _json_support(data, kind)},
                default=_value_from_json(data["default"]) if data.get("default") is not None else None,
            ),
            "ConditionalDefault": lambda: ConditionalDefault(
                parents=_json_parents(data, kind),
                support=dict(_json_support(data, kind)),
                default=data.get("default", SpecialParamValue.INVALID),
            ),
        }
        if not isinstance(kind, str) or kind not in builders:
            raise SearchSpaceError(f"unknown search parameter type {kind!r}; use one of {', '.join(builders)}")
        unknown = sorted(str(key) for key in data if key not in _JSON_FIELDS)
        if unknown:
            raise SearchSpaceError(
                f"unknown field {unknown[0]!r} of a search parameter{closest_match_hint(unknown[0], _JSON_FIELDS)}; "
                f"it takes {', '.join(_JSON_FIELDS)}"
            )
        try:
            return builders[kind]()
        except KeyError as exc:
            raise SearchSpaceError(f"search parameter of type {kind} is missing the field {exc.args[0]!r}") from None


_JSON_FIELDS = ("olive_parameter_type", "type", "support", "parents", "default")


def _json_parents(data: Mapping[str, Any], kind: str) -> str | tuple[str, ...]:
    parents = data["parents"]
    if isinstance(parents, str):
        return parents
    if not isinstance(parents, list) or not all(isinstance(parent, str) for parent in parents):
        raise SearchSpaceError(f"{kind} parents must be a param name or a list of param names, got {parents!r}")
    return tuple(parents)


def _json_support(data: Mapping[str, Any], kind: str) -> list[tuple[Any, Any]]:
    """``(key, value)`` pairs of a conditional's JSON ``support``: ``[{"key": [parent values], "value": ...}]``."""
    support = data["support"]
    if not isinstance(support, list):
        raise SearchSpaceError(f'{kind} support must be a list of {{"key": [...], "value": ...}}, got {support!r}')
    pairs = []
    for item in support:
        if not isinstance(item, Mapping) or "key" not in item or "value" not in item:
            raise SearchSpaceError(f'{kind} support entries are {{"key": [parent values], "value": ...}}, got {item!r}')
        key = tuple(item["key"]) if isinstance(item["key"], list) else item["key"]
        try:
            hash(key)
        except TypeError:
            raise SearchSpaceError(
                f"{kind} support key {item['key']!r} holds a list or an object; parent values are plain values"
            ) from None
        pairs.append((key, item["value"]))
    return pairs


def _value_from_json(value: Any) -> SearchParameter:
    if SearchParameter.is_json(value):
        return SearchParameter.from_json(value)
    if isinstance(value, list):
        return Categorical(value)
    raise SearchSpaceError(f"expected a search parameter or a list of values, got {value!r}")


class Categorical(SearchParameter):
    """A choice among fixed values, tried in the order given."""

    def __init__(self, support: Sequence[Any]):
        if isinstance(support, str | bytes) or not isinstance(support, Sequence | set | frozenset):
            raise SearchSpaceError(f"Categorical needs a list of values, got {support!r}")
        self.support = list(support)
        if not self.support:
            raise SearchSpaceError("Categorical needs at least one value")

    def get_support(self) -> list[Any]:
        return list(self.support)

    def to_json(self) -> dict[str, Any]:
        return {"olive_parameter_type": "SearchParameter", "type": "Categorical", "support": self.get_support()}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.support == self.support  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, repr(self.support)))

    def __repr__(self) -> str:
        return f"Categorical({self.support!r})"


class Boolean(Categorical):
    """``Categorical([True, False])``."""

    def __init__(self) -> None:
        super().__init__([True, False])

    def to_json(self) -> dict[str, Any]:
        return {"olive_parameter_type": "SearchParameter", "type": "Boolean"}

    def __repr__(self) -> str:
        return "Boolean()"


def _invalid_choice() -> Categorical:
    return Categorical([SpecialParamValue.INVALID])


class _ByParents(SearchParameter):
    """A parameter whose value depends on its parents' values: equal when parents, support and default are."""

    parents: tuple[str, ...]
    support: dict[Any, Any]
    default: Any

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and other.parents == self.parents  # type: ignore[attr-defined]
            and other.support == self.support  # type: ignore[attr-defined]
            and other.default == self.default  # type: ignore[attr-defined]
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.parents, repr(sorted(self.support.items(), key=repr))))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(parents={self.parents!r}, support={self.support!r}, default={self.default!r})"


class Conditional(_ByParents):
    """Choices that depend on the values of ``parents``.

    ``support`` maps a tuple of parent values (one per parent) to the choices for that combination.
    Parent values not in ``support`` give ``default``, which marks the point INVALID when not given.
    """

    def __init__(
        self,
        parents: str | Iterable[str],
        support: Mapping[Any, SearchParameter | Sequence[Any]],
        default: SearchParameter | Sequence[Any] | None = None,
    ):
        self.parents = _normalize_parents(parents)
        self.support: dict[tuple, SearchParameter] = {
            _normalize_key(key, len(self.parents)): self._as_parameter(value) for key, value in support.items()
        }
        self.default: SearchParameter = _invalid_choice() if default is None else self._as_parameter(default)

    @staticmethod
    def _as_parameter(value: Any) -> SearchParameter:
        if isinstance(value, SearchParameter):
            return value
        if isinstance(value, list | tuple):
            return Categorical(list(value))
        raise SearchSpaceError(
            f"a Conditional maps parent values to search parameters, e.g. Categorical([...]); got {value!r}"
        )

    @staticmethod
    def get_invalid_choice() -> Categorical:
        """The choices of a parent combination that is not allowed: a point landing on it is never run."""
        return _invalid_choice()

    @staticmethod
    def get_ignored_choice() -> Categorical:
        """The choices of a parent combination for which the param does not apply (the pass ignores it)."""
        return Categorical([SpecialParamValue.IGNORED])

    def get_support_with_args(self, parent_values: Sequence[Any]) -> list[Any]:
        """The choices for one combination of parent values."""
        choice = _lookup(self.support, parent_values, self.default)
        if isinstance(choice, Categorical):
            return choice.get_support()
        raise SearchSpaceError(f"nested {type(choice).__name__} inside a Conditional is not supported")

    def condition(self, fixed: Mapping[str, Any]) -> SearchParameter:
        """Fix some parents to given values; returns a smaller Conditional, or the choices if none is left."""
        keep = [i for i, parent in enumerate(self.parents) if parent not in fixed]
        if len(keep) == len(self.parents):
            return self

        def matches(key: tuple) -> bool:
            return all(key[i] == fixed[p] for i, p in enumerate(self.parents) if p in fixed)

        if not keep:
            return _lookup(self.support, [fixed[p] for p in self.parents], self.default)
        support = {tuple(key[i] for i in keep): value for key, value in self.support.items() if matches(key)}
        return Conditional(parents=tuple(self.parents[i] for i in keep), support=support, default=self.default)

    def to_json(self) -> dict[str, Any]:
        return {
            "olive_parameter_type": "SearchParameter",
            "type": "Conditional",
            "parents": list(self.parents),
            "support": [{"key": _json_key(k), "value": v.to_json()} for k, v in self.support.items()],
            "default": self.default.to_json(),
        }


class ConditionalDefault(_ByParents):
    """A default value that depends on the values of ``parents``.

    Used as a ``PassConfigParam.default_value``. When every parent is fixed it resolves to one value; when
    a parent is searched it becomes a :class:`Conditional` with one choice per combination.
    """

    def __init__(
        self,
        parents: str | Iterable[str],
        support: Mapping[Any, Any],
        default: Any = SpecialParamValue.INVALID,
    ):
        self.parents = _normalize_parents(parents)
        self.support: dict[tuple, Any] = {
            _normalize_key(key, len(self.parents)): value for key, value in support.items()
        }
        self.default = default

    @staticmethod
    def get_invalid_choice() -> SpecialParamValue:
        """The default of a parent combination that is not allowed."""
        return SpecialParamValue.INVALID

    @staticmethod
    def get_ignored_choice() -> SpecialParamValue:
        """The default of a parent combination for which the param does not apply."""
        return SpecialParamValue.IGNORED

    def get_support_with_args(self, parent_values: Sequence[Any]) -> Any:
        """The default value for one combination of parent values."""
        return _lookup(self.support, parent_values, self.default)

    def condition(self, fixed: Mapping[str, Any]) -> Any:
        """Fix some parents; returns the value when every parent is fixed, else a smaller ConditionalDefault."""
        keep = [i for i, parent in enumerate(self.parents) if parent not in fixed]
        if not keep:
            return self.get_support_with_args([fixed[p] for p in self.parents])
        if len(keep) == len(self.parents):
            return self
        support = {
            tuple(key[i] for i in keep): value
            for key, value in self.support.items()
            if all(key[i] == fixed[p] for i, p in enumerate(self.parents) if p in fixed)
        }
        return ConditionalDefault(tuple(self.parents[i] for i in keep), support, self.default)

    def as_conditional(self) -> Conditional:
        return Conditional(
            parents=self.parents,
            support={key: Categorical([value]) for key, value in self.support.items()},
            default=Categorical([self.default]),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "olive_parameter_type": "SearchParameter",
            "type": "ConditionalDefault",
            "parents": list(self.parents),
            "support": [{"key": _json_key(k), "value": v} for k, v in self.support.items()],
            "default": self.default,
        }


def parents_of(value: Any) -> tuple[str, ...]:
    """The parents a value depends on (empty for anything but a Conditional/ConditionalDefault)."""
    if isinstance(value, Conditional | ConditionalDefault):
        return value.parents
    return ()


def order_by_parents(dependencies: Mapping[str, Sequence[str]], owner: str = "search space") -> list[str]:
    """Order names so that every parent comes before its children (declaration order otherwise).

    ``dependencies`` maps each name to its parents. A cycle, or a parent that is not a name, is a
    :class:`SearchSpaceError` naming it.
    """
    for name, parents in dependencies.items():
        for parent in parents:
            if parent not in dependencies:
                raise SearchSpaceError(
                    f"param '{name}' depends on '{parent}', which is not a param"
                    f"{closest_match_hint(parent, dependencies)}; fix `parents` of '{name}'",
                    owner=owner,
                )
    ordered: list[str] = []
    state: dict[str, int] = {}  # 1 = visiting, 2 = done

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycle = [*path[path.index(name) :], name]
            raise SearchSpaceError(
                f"params depend on each other in a cycle: {' -> '.join(cycle)}; remove one of these parents",
                owner=owner,
            )
        state[name] = 1
        for parent in dependencies[name]:
            visit(parent, [*path, name])
        state[name] = 2
        ordered.append(name)

    for name in dependencies:
        visit(name, [])
    return ordered
