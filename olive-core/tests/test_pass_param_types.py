"""A pass param's declared type is the schema of its value: what is accepted as given, what JSON's spelling is
converted from, and what is refused with the place in the value, the value given, what is accepted and the
closest name."""

from __future__ import annotations

import typing
from collections.abc import Callable
from enum import Enum, IntEnum, StrEnum
from pathlib import Path
from typing import Any, Literal

import pytest

from olive.passes import Pass
from olive.passes.param_types import describe_type, fits, mismatch_reason, structure_value
from olive.paths import OutputFileName


class Precision(Enum):
    INT8 = "int8"
    UINT8 = "uint8"


class Mode(StrEnum):
    SYMMETRIC = "symmetric"
    ASYMMETRIC = "asymmetric"


class Level(IntEnum):
    FAST = 1
    BEST = 4


@pytest.mark.parametrize(
    ("value", "type_", "expected"),
    [
        (1, float, 1.0),  # JSON has no 1.0 that stays a float
        (("a", "b"), list[str], ["a", "b"]),
        ("int8", Precision, Precision.INT8),  # by value
        ("UINT8", Precision, Precision.UINT8),  # by name
        ("asymmetric", Mode, Mode.ASYMMETRIC),
        (4, Level, Level.BEST),
        ("BEST", Level | None, Level.BEST),
        ("symmetric", str | Mode, "symmetric"),  # a str stays a str where str is accepted
        (None, int | None, None),
        ([[1, 2]], list[list[int]], [[1, 2]]),
        ({"a": [1]}, dict[str, list[int]], {"a": [1]}),
        ([1, 2], tuple[int, int], (1, 2)),
        ([1, 1], set[int], {1}),
        ("model.onnx", OutputFileName | None, "model.onnx"),
        ("anything", "DataConfig | dict | str", "anything"),  # a forward reference checks nothing
        ({"k": 1}, Any, {"k": 1}),
        # Microsoft Olive's passes spell their types with typing's aliases
        (["a"], typing.List[str], ["a"]),  # noqa: UP006
        ({"a": 1}, typing.Dict[str, int], {"a": 1}),  # noqa: UP006
        (3, typing.Optional[int], 3),  # noqa: UP045
        ("name", typing.Union[str, Callable[[str], Pass]], "name"),  # noqa: UP007
    ],
)
def test_accepted_values(value: Any, type_: Any, expected: Any) -> None:
    result = structure_value(value, type_)
    assert result == expected and type(result) is type(expected)
    assert fits(value, type_)


@pytest.mark.parametrize(
    ("value", "type_", "fragments"),
    [
        (True, int, ["expects int, got True"]),  # bool is an int in Python, never in a config
        ("3", int, ["expects int, got '3'"]),
        (1, bool, ["expects bool, got 1"]),
        ("abc", list[str], ["expects list[str], got 'abc'"]),  # a string is no list of letters
        ([], dict[str, Any], ["expects dict[str, any value], got []"]),
        (3, Callable | None, ["expects Callable | None, got 3"]),
        ("c", Literal["a", "b"], ["expects one of 'a', 'b', got 'c'"]),
        ("int4", Precision, ["expects Precision ('int8', 'uint8'), got 'int4'", "did you mean 'int8'?"]),
        ("asymetric", Mode | None, ["got 'asymetric'", "did you mean 'asymmetric'?"]),
        ([1, 2, 3], tuple[int, int], ["2 items expected, 3 given"]),
        ("../model.onnx", OutputFileName, ["a plain file name", "got '../model.onnx'", "'..'"]),
        # inside a value: the place, the item given and what the item must be
        (["a", 1], list[str] | None, ["got ['a', 1]", "at p[1], 1 is not str"]),
        ([[1, "x"]], list[list[int]], ["at p[0][1], 'x' is not int"]),
        ({"a": [1, "b"]}, dict[str, list[int]], ["at p['a'][1], 'b' is not int"]),
        (["int8", "int4"], list[Precision], ["at p[1], 'int4' is not Precision", "did you mean 'int8'?"]),
    ],
)
def test_refused_values_name_the_place_the_value_and_what_is_accepted(value: Any, type_: Any, fragments: list) -> None:
    assert not fits(value, type_)
    with pytest.raises(Exception) as info:
        structure_value(value, type_)
    reason = mismatch_reason("p", info.value, value, type_)
    assert reason.startswith(f"param 'p' expects {describe_type(type_)}")
    for fragment in fragments:
        assert fragment in reason


def test_a_class_type_takes_its_instances_only() -> None:
    assert structure_value(Path("a"), Path) == Path("a")
    assert structure_value("a", Path) == "a"  # made absolute later, by the param's category
    with pytest.raises(Exception) as info:
        structure_value({"type": "x"}, Precision | Pass)
    assert "got {'type': 'x'}" in mismatch_reason("p", info.value, {"type": "x"}, Precision | Pass)
