"""Alias of :mod:`olive.search.search_parameter` (the module path older passes import)."""

from olive.search.search_parameter import (
    Boolean,
    Categorical,
    Conditional,
    ConditionalDefault,
    SearchParameter,
    SpecialParamValue,
)

__all__ = ["Boolean", "Categorical", "Conditional", "ConditionalDefault", "SearchParameter", "SpecialParamValue"]
