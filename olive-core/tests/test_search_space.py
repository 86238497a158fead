"""Search parameters (semantics and JSON form) and deterministic search-space enumeration."""

from __future__ import annotations

import json
import random

import pytest

from olive.exceptions import SearchSpaceError
from olive.search import (
    Boolean,
    Categorical,
    Conditional,
    ConditionalDefault,
    JointSearchSpace,
    SearchParameter,
    SearchSpace,
    SpecialParamValue,
)


def test_special_values_are_the_documented_strings():
    assert SpecialParamValue.IGNORED == "OLIVE_IGNORED_PARAM_VALUE"
    assert SpecialParamValue.INVALID == "OLIVE_INVALID_PARAM_VALUE"


def test_boolean_is_true_false():
    assert Boolean().get_support() == [True, False]


def test_bare_string_parent_is_a_one_tuple():
    cond = Conditional(parents="a", support={(1,): Categorical([2])})
    assert cond.parents == ("a",)
    default = ConditionalDefault(parents="a", support={1: 5})
    assert default.parents == ("a",)
    assert default.get_support_with_args([1]) == 5


def test_conditional_default_for_unknown_parent_values_is_invalid():
    cond = Conditional(parents=("a", "b"), support={(1, 1): Categorical([1, 2])})
    assert cond.get_support_with_args([1, 1]) == [1, 2]
    assert cond.get_support_with_args([2, 1]) == [SpecialParamValue.INVALID]
    assert ConditionalDefault(parents="a", support={(1,): 3}).get_support_with_args([9]) == SpecialParamValue.INVALID


def test_support_key_length_must_match_parents():
    with pytest.raises(SearchSpaceError, match="one value per parent"):
        Conditional(parents=("a", "b"), support={(1,): Categorical([1])})


@pytest.mark.parametrize(
    "param",
    [
        Categorical([1, "x", None, [1, 2]]),
        Boolean(),
        Conditional(parents=("a", "b"), support={(1, True): Categorical([3, 4])}, default=Categorical([0])),
        Conditional(parents="a", support={("x",): Boolean()}),
        ConditionalDefault(parents=("a",), support={(1,): "one", (2,): "two"}, default="other"),
    ],
)
def test_json_round_trip(param):
    text = json.dumps(param.to_json())
    data = json.loads(text)
    assert data["olive_parameter_type"] == "SearchParameter"
    assert SearchParameter.from_json(data) == param


def test_unknown_json_type_is_a_clear_error():
    with pytest.raises(SearchSpaceError, match="unknown search parameter type 'Range'"):
        SearchParameter.from_json({"olive_parameter_type": "SearchParameter", "type": "Range"})
    with pytest.raises(SearchSpaceError, match="missing the field 'support'"):
        SearchParameter.from_json({"olive_parameter_type": "SearchParameter", "type": "Categorical"})


def _space() -> SearchSpace:
    return SearchSpace(
        {
            # declared before its parent on purpose: enumeration orders by parents
            "activation": Conditional(
                parents=("format", "precision"),
                support={
                    ("QDQ", "int8"): Categorical(["int8", "uint8"]),
                    ("QDQ", "uint8"): Categorical(["int8", "uint8"]),
                    ("QOperator", "uint8"): Categorical(["uint8"]),
                    ("QOperator", "int8"): Categorical([SpecialParamValue.INVALID]),
                },
            ),
            "format": Categorical(["QDQ", "QOperator"]),
            "precision": Categorical(["int8", "uint8"]),
        }
    )


def test_enumeration_skips_invalid_points_and_is_deterministic():
    space = _space()
    points = list(space.iterate())
    assert len(points) == space.size() == 5
    assert all(p["activation"] != SpecialParamValue.INVALID for p in points)
    assert not any(p["format"] == "QOperator" and p["precision"] == "int8" for p in points)
    assert points == list(_space().iterate())
    # keys keep the declaration order
    assert list(points[0]) == ["activation", "format", "precision"]
    assert [space.get_point(i) for i in range(space.size())] == points


def test_get_point_out_of_range():
    with pytest.raises(IndexError):
        _space().get_point(5)


def test_sampling_by_index_with_a_seeded_rng_is_reproducible():
    space = _space()
    first = [space.sample(random.Random(3)) for _ in range(4)]
    second = [space.sample(random.Random(3)) for _ in range(4)]
    assert first == second


def test_conditional_default_in_a_space_becomes_choices():
    space = SearchSpace(
        {"a": Categorical([1, 2, 3]), "b": ConditionalDefault(parents="a", support={(1,): 10, (2,): 20})}
    )
    assert list(space.iterate()) == [{"a": 1, "b": 10}, {"a": 2, "b": 20}]


def test_cycle_in_space_is_named():
    with pytest.raises(SearchSpaceError, match="cycle"):
        SearchSpace(
            {
                "a": Conditional(parents="b", support={(1,): Categorical([1])}),
                "b": Conditional(parents="a", support={(1,): Categorical([1])}),
            }
        )


def test_joint_space_is_the_product_in_order():
    joint = JointSearchSpace(
        {"first": SearchSpace({"x": Categorical([1, 2])}), "second": SearchSpace({"y": Categorical(["a", "b", "c"])})}
    )
    assert joint.size() == 6
    points = list(joint.iterate())
    assert points[0] == {"first": {"x": 1}, "second": {"y": "a"}}
    assert points[1] == {"first": {"x": 1}, "second": {"y": "b"}}
    assert points[5] == {"first": {"x": 2}, "second": {"y": "c"}}
    assert joint.sizes() == [("first", 2), ("second", 3)]


def test_empty_space_has_one_empty_point():
    assert list(SearchSpace({}).iterate()) == [{}]
