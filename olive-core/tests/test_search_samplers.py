"""Samplers: sequential, random (seeded), tpe (optuna ask/tell), and plugin samplers through the hook."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
from engine_support import base_workflow, make_registry

import olive
from olive.exceptions import WorkflowConfigError
from olive.plugins.manager import new_plugin_manager, use_plugin_manager
from olive.plugins.markers import hookimpl
from olive.plugins.registry import use_registry
from olive.search.samplers import Sampler, create_sampler, point_key
from olive.search.search_parameter import Categorical, Conditional
from olive.search.search_space import JointSearchSpace, SearchSpace


def _space() -> JointSearchSpace:
    first = SearchSpace(
        {
            "n": Categorical([0, 1, 2]),
            "extra": Conditional(
                parents=("n",), support={(0,): Categorical([False]), (1,): Categorical([False, True])}
            ),
        }
    )
    second = SearchSpace({"scale": Categorical([1.0, -1.0, 0.5]), "truncate": Categorical([False, True])})
    return JointSearchSpace({"a": first, "b": second})


def _drain(sampler: Sampler, objective=lambda p: 0.0) -> list[dict]:
    points = []
    while (point := sampler.suggest()) is not None:
        points.append(point)
        sampler.report(point, objective(point))
    return points


def test_sequential_enumerates_every_valid_point_in_order() -> None:
    space = _space()
    points = _drain(create_sampler("sequential", space))
    assert points == list(space.iterate())
    assert len(points) == 3 * 6
    assert all(p["a"]["n"] != 2 for p in points)


def test_random_is_a_seeded_permutation() -> None:
    space = _space()
    first = _drain(create_sampler("random", space, seed=7))
    again = _drain(create_sampler("random", space, seed=7))
    other = _drain(create_sampler("random", space, seed=8))
    assert first == again != other
    assert sorted(map(point_key, first)) == sorted(map(point_key, space.iterate()))


def test_tpe_suggests_only_valid_distinct_points_and_logs_nothing(caplog, capsys) -> None:
    space = _space()
    valid = {point_key(p) for p in space.iterate()}
    with caplog.at_level(logging.DEBUG):
        sampler = create_sampler("tpe", space, {"higher_is_better": False}, seed=0)
        points = _drain(sampler, objective=lambda p: p["a"]["n"] + p["b"]["scale"])
    keys = [point_key(p) for p in points]
    assert len(keys) == len(set(keys)) == len(valid)
    assert set(keys) == valid
    assert not [r for r in caplog.records if r.name.startswith("optuna")]
    captured = capsys.readouterr()
    assert "Trial" not in captured.err and "Trial" not in captured.out


def test_tpe_is_reproducible_with_a_seed() -> None:
    def first_eight(seed: int) -> list[str]:
        sampler = create_sampler("tpe", _space(), {}, seed=seed)
        points = []
        for _ in range(8):
            point = sampler.suggest()
            sampler.report(point, float(point["b"]["scale"]))
            points.append(point_key(point))
        return points

    assert first_eight(1) == first_eight(1)


def test_an_unknown_sampler_names_the_closest() -> None:
    with pytest.raises(
        WorkflowConfigError, match=re.escape("search_strategy.sampler: unknown sampler 'tpee' (did you mean 'tpe'?)")
    ):
        create_sampler("tpee", _space())


class ReverseSampler(Sampler):
    """Enumerates the space backwards (a plugin sampler for the test)."""

    def __init__(self, space: Any, options: dict, seed: int | None):
        super().__init__(space, options, seed)
        self._next = space.size() - 1
        self.reports: list[tuple] = []

    def suggest(self) -> dict | None:
        if self._next < 0:
            return None
        self._next -= 1
        return self.search_space.get_point(self._next + 1)

    def report(self, point: dict, objective: float | None, pruned: bool = False, failed: bool = False) -> None:
        self.reports.append((point, objective, pruned, failed))


class SamplerPlugin:
    def __init__(self) -> None:
        self.made: list[ReverseSampler] = []

    @hookimpl
    def olive_register_samplers(self, register: Any) -> None:
        def factory(space: Any, options: dict, seed: int | None) -> ReverseSampler:
            sampler = ReverseSampler(space, options, seed)
            self.made.append(sampler)
            return sampler

        register("reverse", factory)


def test_a_plugin_sampler_drives_the_search(tmp_path: Path) -> None:
    plugin = SamplerPlugin()
    pm = new_plugin_manager(entry_points=False)
    pm.register(plugin, "sampler-plugin")
    data = base_workflow(tmp_path, search_strategy={"execution_order": "joint", "sampler": "reverse", "max_samples": 2})
    with use_registry(make_registry()), use_plugin_manager(pm):
        output = olive.run(data)
    ran = [(n.config["n"], n.config["extra"]) for n in output.footprint[1:]]
    assert ran == [(1, True), (1, False)]  # the last two points of the space, last first
    assert [r[0] for r in plugin.made[0].reports] == [
        {"add": {"n": 1, "extra": True}},
        {"add": {"n": 1, "extra": False}},
    ]
    with use_registry(make_registry()), pytest.raises(WorkflowConfigError, match="unknown sampler 'reverse'"):
        olive.run(data)
