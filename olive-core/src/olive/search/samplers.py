"""Samplers: which search point to try next.

A sampler walks a :class:`~olive.search.search_space.JointSearchSpace` (one named space per pass, or a
single pass in pass-by-pass order). The engine asks ``suggest()`` for the next point and tells the result
with ``report(point, objective)``; ``suggest()`` returns None once the sampler has nothing new to offer.
Points that ``validate_config`` prunes are reported with ``pruned=True``; they do not count as samples.

With a parallel executor (``search_strategy.executor``) the engine calls ``suggest()`` several times before
the first ``report()``: up to the executor's ``max_pending`` points are out at once, and results come back
in the order the points were suggested. A sampler must therefore accept several pending points; the
built-ins do (``tpe`` keeps one open optuna trial per pending point).

Built in: ``sequential`` (enumeration order), ``random`` (a seeded permutation, no repeats) and ``tpe``
(optuna's TPE through its ask/tell interface; optuna is imported only when this sampler is used). A plugin
adds one through the ``olive_register_samplers`` hook (a built-in name always means the built-in sampler, as
for metric types)::

    @hookimpl
    def olive_register_samplers(register):
        register("reverse", lambda space, options, seed: ReverseSampler(space, options, seed))
"""

from __future__ import annotations

import json
import logging
import random
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

from olive.exceptions import WorkflowConfigError, closest_match_hint
from olive.plugins.manager import plugin_registrations
from olive.search.search_parameter import SpecialParamValue

logger = logging.getLogger(__name__)

SamplerFactory = Callable[[Any, dict[str, Any], "int | None"], "Sampler"]


def point_key(point: Any) -> str:
    """A stable identity for a point (for de-duplication)."""
    return json.dumps(point, sort_keys=True, default=str)


# What a built-in sampler's ``OPTIONS`` says of each ``sampler_config`` key it reads: its type and the words an
# error names it by, or the (minimum, maximum) of a whole number.
OptionRule = tuple[type, str] | tuple[int, int]


class Sampler(ABC):
    """Base class of a sampler.

    :param search_space: a ``JointSearchSpace`` (``size()``, ``get_point(i)``, ``spaces``).
    :param options: the workflow's ``search_strategy.sampler_config`` plus ``objective`` (the metric key the
        engine ranks by, or None) and ``higher_is_better``.
    :param seed: the workflow's seed (None: not reproducible).

    ``OPTIONS`` lists the ``sampler_config`` keys a built-in sampler reads, checked with the workflow (a
    plugin sampler checks its own).
    """

    OPTIONS: ClassVar[dict[str, OptionRule]] = {}

    def __init__(self, search_space: Any, options: dict[str, Any] | None = None, seed: int | None = None):
        self.search_space = search_space
        self.options = dict(options or {})
        self.seed = seed

    @abstractmethod
    def suggest(self) -> dict[str, Any] | None:
        """The next point to try, or None when the sampler is done."""

    def report(
        self, point: dict[str, Any], objective: float | None, pruned: bool = False, failed: bool = False
    ) -> None:
        """The result of a suggested point: its objective value (None if not measured)."""


class SequentialSampler(Sampler):
    """Every point, in enumeration order."""

    def __init__(self, search_space: Any, options: dict[str, Any] | None = None, seed: int | None = None):
        super().__init__(search_space, options, seed)
        self._next = 0

    def suggest(self) -> dict[str, Any] | None:
        if self._next >= self.search_space.size():
            return None
        point = self.search_space.get_point(self._next)
        self._next += 1
        return point


class RandomSampler(Sampler):
    """Every point once, in an order drawn from ``seed``."""

    def __init__(self, search_space: Any, options: dict[str, Any] | None = None, seed: int | None = None):
        super().__init__(search_space, options, seed)
        self._order = list(range(search_space.size()))
        random.Random(seed).shuffle(self._order)
        self._next = 0

    def suggest(self) -> dict[str, Any] | None:
        if self._next >= len(self._order):
            return None
        point = self.search_space.get_point(self._order[self._next])
        self._next += 1
        return point


class TPESampler(Sampler):
    """Optuna's tree-structured Parzen estimator, asked one point at a time.

    Each param is suggested in its parents' order with a name that includes the parents' values, so
    conditional choices form a define-by-run space; a point that lands on INVALID is told to optuna as
    pruned and never returned. A repeated point is answered from memory and not returned again; once TPE
    proposes only points it has seen (``max_repeats`` times in a row, default 16), the rest of the space is
    offered in a seeded random order, so a search without ``max_samples`` still covers every point.
    """

    OPTIONS: ClassVar[dict[str, OptionRule]] = {
        "n_startup_trials": (0, 10_000),
        "multivariate": (bool, "true or false"),
        "group": (bool, "true or false"),
        # TPE is asked again this many times in a row for a point it has not proposed before.
        "max_repeats": (1, 1_000),
    }

    def __init__(self, search_space: Any, options: dict[str, Any] | None = None, seed: int | None = None):
        super().__init__(search_space, options, seed)
        import optuna

        # Optuna logs every trial at INFO and warns that TPE's multivariate options are experimental;
        # a search prints its own progress instead.
        optuna.logging.set_verbosity(optuna.logging.ERROR)
        self._optuna = optuna
        direction = "maximize" if self.options.get("higher_is_better", False) else "minimize"
        sampler_kwargs = {k: v for k, v in self.options.items() if k in ("n_startup_trials", "multivariate", "group")}
        self.study = optuna.create_study(
            direction=direction, sampler=optuna.samplers.TPESampler(seed=seed, **sampler_kwargs)
        )
        self._pending: dict[str, Any] = {}
        self._seen: dict[str, float | None] = {}
        self._total = search_space.size()
        self._max_repeats = int(self.options.get("max_repeats", 16))
        self._repeats = 0
        self._rest: list[dict[str, Any]] | None = None

    def _ask(self) -> tuple[Any, dict[str, Any] | None]:
        trial = self.study.ask()
        point: dict[str, Any] = {}
        for space_name, space in self.search_space.spaces.items():
            sub: dict[str, Any] = {}
            for param in space.order:
                choices = space._choices(param, sub)
                parents = getattr(space.params[param], "parents", ())
                label = f"{space_name}.{param}"
                if parents:
                    label += "|" + ",".join(f"{p}={sub[p]!r}" for p in parents)
                valid = [c for c in choices if not (isinstance(c, str) and c == SpecialParamValue.INVALID)]
                if not valid:
                    return trial, None
                index = trial.suggest_categorical(label, list(range(len(choices))))
                value = choices[index]
                if isinstance(value, str) and value == SpecialParamValue.INVALID:
                    return trial, None
                sub[param] = value
            point[space_name] = {key: sub[key] for key in space.params}
        return trial, point

    def _fallback(self) -> dict[str, Any] | None:
        if self._rest is None:
            self._rest = [p for p in self.search_space.iterate() if point_key(p) not in self._seen]
            random.Random(self.seed).shuffle(self._rest)
        while self._rest:
            point = self._rest.pop()
            if point_key(point) not in self._seen and point_key(point) not in self._pending:
                self._pending[point_key(point)] = None
                return point
        return None

    def suggest(self) -> dict[str, Any] | None:
        while len(self._seen) + len(self._pending) < self._total:
            if self._repeats >= self._max_repeats:
                return self._fallback()
            trial, point = self._ask()
            if point is None:
                self.study.tell(trial, state=self._optuna.trial.TrialState.PRUNED)
                self._repeats += 1
                continue
            key = point_key(point)
            if key in self._seen or key in self._pending:
                self._repeats += 1
                value = self._seen.get(key)
                if value is None:
                    self.study.tell(trial, state=self._optuna.trial.TrialState.PRUNED)
                else:
                    self.study.tell(trial, value)
                continue
            self._repeats = 0
            self._pending[key] = trial
            return point
        return None

    def report(
        self, point: dict[str, Any], objective: float | None, pruned: bool = False, failed: bool = False
    ) -> None:
        key = point_key(point)
        trial = self._pending.pop(key, None)
        self._seen[key] = objective
        if trial is None:
            return
        if objective is None or pruned or failed:
            state = self._optuna.trial.TrialState.PRUNED if pruned else self._optuna.trial.TrialState.FAIL
            self.study.tell(trial, state=state)
        else:
            self.study.tell(trial, float(objective))


BUILTIN_SAMPLERS: dict[str, SamplerFactory] = {
    "sequential": SequentialSampler,
    "random": RandomSampler,
    "tpe": TPESampler,
}


def available_samplers() -> dict[str, SamplerFactory]:
    """Built-in samplers plus those registered through ``olive_register_samplers``."""
    # A plugin sampler named like a built-in one is left out with a warning (Olive's one clash policy).
    registered = plugin_registrations("olive_register_samplers", BUILTIN_SAMPLERS, "sampler")
    return {**BUILTIN_SAMPLERS, **{name: reg.obj for name, reg in registered.items()}}


def sampler_factory(name: str) -> SamplerFactory:
    """The factory of the sampler called ``name``, built in or a plugin's; an unknown name is a
    :class:`WorkflowConfigError` (the one check of a sampler's name against the registry)."""
    samplers = BUILTIN_SAMPLERS if name in BUILTIN_SAMPLERS else available_samplers()
    if name not in samplers:
        raise WorkflowConfigError(
            f"search_strategy.sampler: unknown sampler '{name}'{closest_match_hint(name, samplers)}; "
            f"use one of {', '.join(samplers)}"
        )
    return samplers[name]


def create_sampler(
    name: str, search_space: Any, options: dict[str, Any] | None = None, seed: int | None = None
) -> Sampler:
    """The sampler called ``name``; an unknown name is a :class:`WorkflowConfigError`."""
    sampler = sampler_factory(name)(search_space, dict(options or {}), seed)
    if not isinstance(sampler, Sampler):
        raise WorkflowConfigError(
            f"search_strategy.sampler: the factory registered for '{name}' returned {type(sampler).__name__}, "
            "not an olive.search.samplers.Sampler; fix the plugin"
        )
    return sampler
