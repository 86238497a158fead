"""Search parameters and search spaces."""

from olive.search.search_parameter import (
    Boolean,
    Categorical,
    Conditional,
    ConditionalDefault,
    SearchParameter,
    SpecialParamValue,
)
from olive.search.search_space import JointSearchSpace, SearchSpace

__all__ = [
    "Boolean",
    "Categorical",
    "Conditional",
    "ConditionalDefault",
    "JointSearchSpace",
    "SearchParameter",
    "SearchSpace",
    "SpecialParamValue",
]
