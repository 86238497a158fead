"""What running a trial reports, step by step: typed events the engine records in order.

A trial (``olive.engine.trial.run_trial``) yields, for each pass of its chain, :class:`StepStarted` just
before the pass runs or its cached run is looked up, then the step's :class:`StepResult`; after the chain it
yields the last model's :class:`EvaluationResult`. A trial that ends outside any pass (its worker died) is
one :class:`TrialFailed`. Every executor hands the engine these same events, so the engine has one way to
record them; run in the engine's own process, they reach it as they happen.
"""

from __future__ import annotations

import pickle
from enum import StrEnum
from typing import Any

import attrs


class Status(StrEnum):
    """How a step (or the footprint node that records it) ended. A ``str``: ``"ok"`` in JSON."""

    OK = "ok"
    FAILED = "failed"
    PRUNED = "pruned"


class _CarriesException:
    """Pickles without its ``exception`` when that cannot travel (a worker sends results through a pipe); the
    text of the error is in ``error`` either way."""

    exception: BaseException | None

    def __getstate__(self) -> dict[str, Any]:
        state = {field.name: getattr(self, field.name) for field in attrs.fields(type(self))}
        try:
            pickle.loads(pickle.dumps(self.exception))
        except Exception:
            state["exception"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)


@attrs.frozen
class StepStarted:
    """A pass is about to run (or its cached run to be reused) with ``config``; ``key`` is the run's cache key."""

    pass_key: str
    key: str
    config: dict[str, Any]


@attrs.frozen(getstate_setstate=False)
class StepResult(_CarriesException):
    """One pass of a trial's chain.

    :param status: ``OK`` (``record`` is the cache entry), ``FAILED`` (``error``) or ``PRUNED`` (the point's
        config was rejected before any run; ``error`` says why and ``key`` is None).
    :param config: the resolved config as JSON (the point's raw values when the config could not be made).
    :param cached: the output came from the cache and the pass did not run.
    :param duration: seconds the run (or the cache lookup) took.
    :param exception: what the pass raised, when it can travel to the engine's process.
    """

    pass_key: str
    status: Status
    config: dict[str, Any] | None
    key: str | None = None
    record: dict[str, Any] | None = None
    cached: bool = False
    duration: float = 0.0
    error: str | None = None
    exception: BaseException | None = attrs.field(default=None, eq=False)


@attrs.frozen(getstate_setstate=False)
class EvaluationResult(_CarriesException):
    """The evaluation of a trial's last model: ``metrics`` (``MetricResult`` JSON) or ``error``.

    :param where: where timing metrics were measured (``measured_on``, ``measured_alone``); empty otherwise.
    :param placement: for a session on a plugin execution provider, the nodes each provider took
        (``nodes_by_provider``) and those the target's provider left to another (``nodes_not_taken``).
    :param samples: metric name -> the number of samples it was measured on (metrics that read data).
    :param batch_sizes: metric name -> the batch sizes it was served at (``served_batch_sizes``), the size each of
        its figures was the worst at (``worst_at``) and each size's figures (``by_batch_size``); metrics measured
        at served batch sizes only.
    """

    metrics: dict[str, Any] | None
    cached: bool = False
    where: dict[str, Any] = attrs.Factory(dict)
    duration: float = 0.0
    error: str | None = None
    exception: BaseException | None = attrs.field(default=None, eq=False)
    placement: dict[str, Any] = attrs.Factory(dict)
    samples: dict[str, int] = attrs.Factory(dict)
    batch_sizes: dict[str, dict[str, Any]] = attrs.Factory(dict)


@attrs.frozen
class TrialFailed:
    """A trial that ended outside any pass: its worker died (twice), or the trial itself raised."""

    error: str


@attrs.frozen
class RemoteDown:
    """A worker found the remote cache unreachable during the trial: the engine warns (once per run) and stops
    using it; ``message`` is the warning, which names no credentials."""

    message: str


TrialEvent = StepStarted | StepResult | EvaluationResult | TrialFailed | RemoteDown
