"""A pass's section of a workflow: which of its params are fixed and which searched, and each value checked.

:meth:`olive.passes.olive_pass.Pass.get_config_params` places every declared param (:func:`place_param`), then
structures the fixed values into their declared types and checks the searched ones' choices the same way
(:mod:`olive.passes.param_types`: one converter, one translator of its errors); each function here returns or
raises one problem message that names the param, the value and the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cattrs.errors import BaseValidationError

from olive.exceptions import PassConfigError, SearchSpaceError, closest_match_hint
from olive.passes.param_types import Mismatch, describe_type, fits, mismatch_reason, structure_value, value_choices
from olive.passes.pass_config import ParamCategory, PassConfigParam, PassParamDefault
from olive.paths import UnusablePath, resolve_user_path
from olive.search.search_parameter import (
    Categorical,
    Conditional,
    ConditionalDefault,
    SearchParameter,
    SpecialParamValue,
)

FIXED = "fixed"
SEARCH = "search"


class ParamProblem(Exception):
    """One problem with one param's value; the caller gathers them into one :class:`PassConfigError`."""


def place_param(name: str, param: PassConfigParam, given: dict[str, Any], disable_search: bool) -> tuple[str, Any]:
    """``(FIXED, value)`` or ``(SEARCH, search parameter)`` for a declared param, from the workflow's ``given``
    values; raises :class:`ParamProblem`."""
    if name not in given:
        if param.required:
            raise ParamProblem(f"missing required param '{name}' ({describe_type(param.type_)}); add it")
        if not disable_search and param.search_defaults is not None:
            return SEARCH, param.search_defaults
        return FIXED, param.default_value
    value = given[name]
    if isinstance(value, str) and value == PassParamDefault.DEFAULT_VALUE:
        return FIXED, param.default_value
    if isinstance(value, str) and value == PassParamDefault.SEARCHABLE_VALUES:
        return SEARCH, _searchable_values(name, param, disable_search)
    if isinstance(value, SearchParameter) or SearchParameter.is_json(value):
        return SEARCH, _search_parameter(name, value, disable_search)
    if not disable_search and _is_list_of_choices(value, param):
        return SEARCH, Categorical(value)
    return FIXED, value


def _searchable_values(name: str, param: PassConfigParam, disable_search: bool) -> SearchParameter:
    if disable_search:
        raise ParamProblem(
            f"param '{name}' is SEARCHABLE_VALUES but the workflow has no search_strategy; "
            "add a search_strategy or give a value"
        )
    if param.search_defaults is None:
        raise ParamProblem(
            f"param '{name}' is SEARCHABLE_VALUES but it has no search defaults; give a value "
            "or a list of values to search"
        )
    return param.search_defaults


def _search_parameter(name: str, value: Any, disable_search: bool) -> SearchParameter:
    if disable_search:
        raise ParamProblem(
            f"param '{name}' is a search parameter but the workflow has no search_strategy; "
            "add a search_strategy or give a single value"
        )
    if isinstance(value, SearchParameter):
        return value
    try:
        return SearchParameter.from_json(value)
    except SearchSpaceError as exc:
        raise ParamProblem(f"param '{name}': {exc}") from None


def _is_list_of_choices(value: Any, param: PassConfigParam) -> bool:
    # A list for a searchable param that takes no list searches its items (Olive's spelling of a choice).
    return (
        isinstance(value, list)
        and bool(value)
        and param.search_defaults is not None
        and not fits(value, param.type_)
        and all(fits(item, param.type_) for item in value)
    )


def values_at_defaults(declared: dict[str, PassConfigParam], fixed: dict[str, Any], order: list[str]) -> dict[str, Any]:
    """Every param's value with the searched ones at their defaults (conditional defaults resolved in ``order``)."""
    values = dict(fixed)
    for name in order:
        if name not in values:
            default = declared[name].default_value
            if isinstance(default, ConditionalDefault):
                default = default.get_support_with_args([values.get(p) for p in default.parents])
            values[name] = default
    return values


def check_value(owner: str, name: str, value: Any, param: PassConfigParam, disable_search: bool) -> Any:
    if isinstance(value, str) and value == SpecialParamValue.IGNORED:
        return value
    if isinstance(value, str) and value == SpecialParamValue.INVALID:
        raise PassConfigError(
            f"param '{name}' resolves to an invalid value for the other params' values; "
            "give it a value explicitly or change the params it depends on",
            owner=owner,
        )
    if value is None and not param.required:
        return None
    if param.category == ParamCategory.OBJECT and isinstance(value, str):
        # A name in the workflow's user_script, resolved by the engine.
        return value
    try:
        value = structure_value(value, param.type_)
    except (Mismatch, BaseValidationError) as exc:
        reason = mismatch_reason(name, exc, value, param.type_)
        if isinstance(value, list) and param.search_defaults is not None and disable_search:
            reason += " (a list searches its values only when the workflow has a search_strategy)"
        raise PassConfigError(reason, owner=owner) from None
    if param.category in (ParamCategory.PATH, ParamCategory.DATA) and isinstance(value, str | Path):
        # In a workflow the engine has resolved it against the workflow file's folder already.
        try:
            resolved = resolve_user_path(value)
        except UnusablePath as exc:
            raise PassConfigError(f"param '{name}' cannot be a path: {exc}", owner=owner) from None
        value = str(resolved) if isinstance(value, str) else resolved
    return value


def check_search_values(name: str, param: SearchParameter, declared: PassConfigParam) -> list[str]:
    choices: list[Any] = []
    if isinstance(param, Categorical):
        choices = param.get_support()
    elif isinstance(param, Conditional):
        for option in [*param.support.values(), param.default]:
            if isinstance(option, Categorical):
                choices.extend(option.get_support())
    bad = [
        value
        for value in choices
        if not (isinstance(value, str) and value in (SpecialParamValue.INVALID, SpecialParamValue.IGNORED))
        and not (value is None and not declared.required)
        and not fits(value, declared.type_)
    ]
    if bad:
        hint = closest_match_hint(bad[0], value_choices(declared.type_)) if isinstance(bad[0], str) else ""
        return [f"search values {bad!r} of param '{name}' are not {describe_type(declared.type_)}{hint}"]
    return []


def format_problems(problems: list[str]) -> str:
    if len(problems) == 1:
        return problems[0]
    return f"{len(problems)} problems:\n" + "\n".join(f"  - {p}" for p in problems)
