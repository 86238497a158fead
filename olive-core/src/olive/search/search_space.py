"""Enumerating the points of a search space deterministically.

A :class:`SearchSpace` holds one pass's searched params. Points are enumerated depth-first with params
ordered by their parents (the first param varies slowest, as in ``itertools.product``); a point that
would hold ``SpecialParamValue.INVALID`` is skipped and never counted. :class:`JointSearchSpace` is the
product of several independent spaces (one per pass), indexed in mixed radix.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from typing import Any

from olive.exceptions import SearchSpaceError
from olive.search.search_parameter import (
    Categorical,
    Conditional,
    ConditionalDefault,
    SearchParameter,
    SpecialParamValue,
    order_by_parents,
    parents_of,
)


class SearchSpace:
    """The valid points of one group of search parameters."""

    def __init__(self, params: Mapping[str, SearchParameter], name: str = "search space"):
        for key, value in params.items():
            if isinstance(value, ConditionalDefault):
                params = {**params, key: value.as_conditional()}
            elif not isinstance(value, SearchParameter):
                raise SearchSpaceError(f"{name}: param '{key}' is {value!r}, not a search parameter")
        self.name = name
        self.params: dict[str, SearchParameter] = dict(params)
        self.order = order_by_parents({k: parents_of(v) for k, v in self.params.items()}, owner=name)

    def _choices(self, param_name: str, point: Mapping[str, Any]) -> list[Any]:
        param = self.params[param_name]
        if isinstance(param, Conditional):
            return param.get_support_with_args([point[parent] for parent in param.parents])
        if isinstance(param, Categorical):
            return param.get_support()
        raise SearchSpaceError(f"{self.name}: unsupported search parameter {param!r} for '{param_name}'")

    def iterate(self) -> Iterator[dict[str, Any]]:
        """Yield every valid point in a fixed order, keyed in the params' declaration order."""

        def walk(depth: int, point: dict[str, Any]) -> Iterator[dict[str, Any]]:
            if depth == len(self.order):
                yield {key: point[key] for key in self.params}
                return
            name = self.order[depth]
            for value in self._choices(name, point):
                if value == SpecialParamValue.INVALID:
                    continue
                point[name] = value
                yield from walk(depth + 1, point)
            point.pop(name, None)

        yield from walk(0, {})

    __iter__ = iterate

    @cached_property
    def points(self) -> list[dict[str, Any]]:
        return list(self.iterate())

    def size(self) -> int:
        return len(self.points)

    def __len__(self) -> int:
        return self.size()

    def get_point(self, index: int) -> dict[str, Any]:
        """The point at ``index`` in enumeration order (a copy)."""
        if not 0 <= index < self.size():
            raise IndexError(f"{self.name}: index {index} out of range for a space of {self.size()} points")
        return dict(self.points[index])

    def sample(self, rng: random.Random) -> dict[str, Any]:
        return self.get_point(rng.randrange(self.size()))

    def to_json(self) -> dict[str, Any]:
        return {key: value.to_json() for key, value in self.params.items()}


class JointSearchSpace:
    """The product of independent named spaces (e.g. one per pass); a point maps each name to its point."""

    def __init__(self, spaces: Mapping[str, SearchSpace]):
        self.spaces = dict(spaces)

    def size(self) -> int:
        total = 1
        for space in self.spaces.values():
            total *= space.size()
        return total

    def __len__(self) -> int:
        return self.size()

    def get_point(self, index: int) -> dict[str, dict[str, Any]]:
        size = self.size()
        if not 0 <= index < size:
            raise IndexError(f"index {index} out of range for a joint space of {size} points")
        point: dict[str, dict[str, Any]] = {}
        # Mixed radix with the first space as the most significant digit, as itertools.product orders it.
        for name, space in reversed(self.spaces.items()):
            index, digit = divmod(index, space.size())
            point[name] = space.get_point(digit)
        return {name: point[name] for name in self.spaces}

    def iterate(self) -> Iterator[dict[str, dict[str, Any]]]:
        for index in range(self.size()):
            yield self.get_point(index)

    __iter__ = iterate

    def sizes(self) -> Sequence[tuple[str, int]]:
        return [(name, space.size()) for name, space in self.spaces.items()]
