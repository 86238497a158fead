"""Recording trials: turning a trial's events into footprint nodes, and the one place the observer hooks fire.

The engine hands every trial's events (``engine.results``) to :class:`TrialRecorder` in the order the sampler
gave the points, whatever executor ran them, so the footprint and the hooks (``olive_pass_start``,
``olive_pass_end``, ``olive_evaluation_end``) come out the same on every executor. The recorder owns what
the trials produced: the footprint's nodes, the models and evaluations by model id, and the runs that failed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from olive.engine.footprint import INPUT_MODEL_ID, Footprint, FootprintNode
from olive.engine.hooks import fire
from olive.engine.keys import digest
from olive.engine.results import EvaluationResult, Status, StepResult, StepStarted, TrialEvent, TrialFailed
from olive.engine.trial import model_from_record
from olive.evaluator.goals import meets_goals
from olive.evaluator.result import MetricResult
from olive.exceptions import OliveError, PassConfigError, PassRunError, WorkflowConfigError
from olive.execution_providers.targets import TARGET_KEY, model_on_target, target_index, target_json

if TYPE_CHECKING:
    from olive.engine.plan import PassAlternative, PassPlan
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import OliveModelHandler

logger = logging.getLogger(__name__)


class TrialRecorder:
    """Records trials in ``footprint`` and fires the observer hooks as it does."""

    def __init__(
        self,
        footprint: Footprint,
        plans: list[PassPlan],
        targets: list[AcceleratorSpec],
        cache_session: str,
        search_enabled: bool,
    ):
        self.footprint = footprint
        self.plans = plans
        self.targets = targets
        self._plans = {plan.key: plan for plan in plans}
        self._cache_session = cache_session
        #: without search a failed pass or evaluation stops the run
        self._search_enabled = search_enabled
        self.models: dict[str, tuple[OliveModelHandler, str]] = {}  # model_id -> (handler, content hash)
        self.results: dict[str, MetricResult] = {}  # model_id -> its evaluation
        self.failed_runs: dict[tuple[str, str], str] = {}  # (pass_key, run key) -> error, within this run
        #: the goals' thresholds (``resolve_goals``); candidates are marked as meeting them or not
        self.thresholds: dict[str, float] = {}
        #: The model metrics compare with; its evaluation failing stops the run. None until it is known.
        self.reference_id: str | None = None

    def record_trial(
        self, parent_id: str, point: dict[str, Any], events: Iterable[TrialEvent], candidate: bool
    ) -> tuple[FootprintNode | None, Status]:
        """Record a trial's events in the footprint; returns its last node and how its chain ended."""
        node: FootprintNode | None = None
        opened: FootprintNode | None = None
        several = len(self.targets) > 1
        for event in events:
            if isinstance(event, TrialFailed):
                return self._trial_failed(parent_id, point, event.error), Status.FAILED
            if isinstance(event, StepStarted):
                opened = self._start_run(parent_id, point, event)
            elif isinstance(event, StepResult):
                node = self._finish_step(parent_id, point, event, opened)
                opened = None
                if node.status is not Status.OK:
                    return node, node.status
                parent_id = node.model_id
            elif node is not None:
                if several:
                    node = self.on_target(node, target_index(point))
                elif node.target is None:
                    node.target = target_json(self.targets[0])
                self.record_evaluation(node, event)
        if node is None:
            return self._trial_failed(parent_id, point, "the trial returned nothing"), Status.FAILED
        if several and node.target_of is None:
            node = self.on_target(node, target_index(point))
        elif not several and node.target is None:
            node.target = target_json(self.targets[0])
        if candidate:
            self.mark_candidate(node)
        return node, Status.OK

    def mark_candidate(self, node: FootprintNode) -> None:
        """``node``'s model may be the answer: it is a candidate, and meets the goals or not."""
        node.is_candidate = True
        if self.thresholds:
            node.meets_goals = self.meets(node)

    def meets(self, node: FootprintNode) -> bool:
        result = self.results.get(node.model_id)
        return result is not None and meets_goals(result, self.thresholds)

    def on_target(self, node: FootprintNode, index: int) -> FootprintNode:
        """The node of ``node``'s model on target ``index``, made on first use (several targets only)."""
        target = self.targets[index]
        suffix = str(target) if not target.provider_options else f"{target}-{digest({'t': target.cache_key()})[:6]}"
        model_id = f"{node.model_id}@{suffix}"
        known = self.footprint.get(model_id)
        if known is not None:
            return known
        model, model_hash = self.models[node.model_id]
        targeted = model_on_target(model, target)
        self.models[model_id] = (targeted, model_hash)
        return self.footprint.add(
            FootprintNode(
                model_id=model_id,
                parent_model_id=node.model_id,
                model_path=node.model_path,
                model_json=targeted.to_json(),
                target=target_json(target),
                target_of=node.model_id,
            )
        )

    def _trial_failed(self, parent_id: str, point: dict[str, Any], error: str) -> FootprintNode:
        logger.warning("A trial failed: %s", error)
        keys = [key for key in point if key != TARGET_KEY]
        last = self.plans[-1].key if len(keys) != 1 else keys[0]
        return self.footprint.trial_failed(last, parent_id, point, error)

    def _alternative(self, pass_key: str, point: dict[str, Any]) -> PassAlternative:
        return self._plans[pass_key].decode(point[pass_key])[0]

    def _start_run(self, parent_id: str, point: dict[str, Any], step: StepStarted) -> FootprintNode | None:
        """A node for a run this search has not recorded yet (``olive_pass_start`` fires); None for a known run."""
        if self.footprint.run(step.pass_key, step.key) is not None:
            return None
        alternative = self._alternative(step.pass_key, point)
        node = self.footprint.open_run(
            step.pass_key, step.key, alternative.identity, alternative.run_version, parent_id, step.config
        )
        self._fire_pass("olive_pass_start", node)
        return node

    def _fire_pass(self, hook: str, node: FootprintNode, **outcome: Any) -> None:
        """Fire ``olive_pass_start`` or ``olive_pass_end`` (with its ``outcome``) for the run of ``node``."""
        run = {"pass_key": node.pass_key, "pass_name": node.pass_name, "config": node.config}
        fire(hook, **run, input_model=self.models[node.parent_model_id][0], **outcome)

    def _finish_step(
        self, parent_id: str, point: dict[str, Any], step: StepResult, opened: FootprintNode | None
    ) -> FootprintNode:
        """The node of a finished step: a pruned point, a run recorded earlier, or ``opened`` (its hooks end)."""
        if step.status is Status.PRUNED:
            pass_name = self._alternative(step.pass_key, point).identity.name
            return self.footprint.pruned(step.pass_key, pass_name, parent_id, step.config, step.error or "")
        known = self.footprint.run(step.pass_key, step.key)
        if opened is None and known is not None:
            return known
        node = opened or self._start_run(parent_id, point, StepStarted(step.pass_key, step.key, step.config))
        cached, duration = step.cached, step.duration
        if cached and step.status is Status.OK and step.record.get("session") == self._cache_session:
            # A concurrent trial of this run did the work and this one waited for it; report the work where a
            # sequential search would have done it, so every executor gives the same footprint.
            cached, duration = False, float(step.record.get("duration_s", 0.0))
        output_model = model_from_record(step.record) if step.status is Status.OK else None
        error = (step.exception or PassRunError(step.error)) if step.status is Status.FAILED else None
        self._fire_pass(
            "olive_pass_end", node, output_model=output_model, cached=cached, error=error, duration_s=duration
        )
        node.cached = cached
        node.timings["run"] = 0.0 if cached else round(duration, 6)
        if cached:
            node.timings["original_run"] = float(step.record.get("duration_s", 0.0))
        if error is not None:
            node.status, node.error = Status.FAILED, step.error
            self.failed_runs[(step.pass_key, step.key)] = step.error
            if not self._search_enabled:
                raise _pass_error(node, error) from error
            logger.warning("Pass '%s' (%s) failed: %s", node.pass_key, node.pass_name, node.error)
            return node
        node.model_path = output_model.model_path
        node.model_json = output_model.to_json()
        self.models[node.model_id] = (output_model, step.record["output_hash"])
        return node

    def record_evaluation(self, node: FootprintNode, evaluation: EvaluationResult) -> None:
        """Record ``node``'s evaluation (the first one only) and fire ``olive_evaluation_end``."""
        if node.model_id in self.results:
            return  # measured for an earlier trial that reached the same model
        if evaluation.error is not None:
            if node.model_id in (INPUT_MODEL_ID, self.reference_id) or not self._search_enabled:
                raise evaluation.exception or OliveError(evaluation.error)
            node.status, node.error = Status.FAILED, f"evaluation: {evaluation.error}"
            logger.warning("Evaluating %s failed: %s", node.model_id, evaluation.error)
            return
        node.timings["evaluate"] = round(evaluation.duration, 6)
        node.timings["evaluation_cached"] = float(evaluation.cached)
        # Where timing metrics were measured (host, and whether nothing else of the run used it meanwhile).
        node.timings.update(evaluation.where)
        node.metrics = evaluation.metrics
        node.samples = dict(evaluation.samples)
        node.batch_sizes = dict(evaluation.batch_sizes)
        if evaluation.placement and node.target is not None:
            node.target.update(evaluation.placement)
            if evaluation.placement.get("nodes_not_taken_count"):
                logger.warning(
                    "%s: %s left %d node(s) to another provider: %s",
                    node.model_id,
                    node.target["execution_provider"],
                    evaluation.placement["nodes_not_taken_count"],
                    ", ".join(evaluation.placement.get("nodes_not_taken") or []),
                )
        self.results[node.model_id] = MetricResult.from_json(evaluation.metrics)
        fire("olive_evaluation_end", model_id=node.model_id, model=self.models[node.model_id][0], metrics=node.metrics)


def _pass_error(node: FootprintNode, error: BaseException) -> OliveError:
    """The error a run without search stops with when a pass fails, naming the pass once."""
    owner = f"pass '{node.pass_key}' ({node.pass_name})"
    if isinstance(error, PassConfigError | WorkflowConfigError):
        # e.g. calibration data that does not fit the model: a config problem (exit code 2)
        return type(error)(error.reason, owner=owner)
    reason = error.reason if isinstance(error, OliveError) else str(error)
    return PassRunError(f"{owner} failed: {type(error).__name__}: {reason}")
