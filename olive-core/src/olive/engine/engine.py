"""Running a resolved workflow: the reference model, the search loop, and the output with its chosen candidate.

Every search, with or without an executor, goes through one loop (:meth:`Engine._search`): the sampler
suggests points, each point is a trial handed to the executor (run inline by default), and the trial's
events are recorded in the order the sampler gave the points (``engine.recording``,
:meth:`TrialRecorder.record_trial`). Recording is the one place the observer hooks fire, so they fire in the
same order on every executor.
"""

from __future__ import annotations

import logging
import uuid
from collections import deque
from collections.abc import Generator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from olive.cache.store import CacheStore, hash_model
from olive.engine.choice import choose_best, rank
from olive.engine.executors import TrialExecutor, create_executor
from olive.engine.footprint import INPUT_MODEL_ID, Footprint, FootprintNode
from olive.engine.limits import SearchLimits
from olive.engine.output import WorkflowOutput
from olive.engine.progress import SearchProgress
from olive.engine.recording import TrialRecorder
from olive.engine.results import RemoteDown, Status, StepResult, StepStarted, TrialEvent
from olive.engine.trial import TrialContext, TrialRequest, TrialWorker
from olive.evaluator.goals import resolve_goals
from olive.exceptions import PassRunError
from olive.execution_providers.targets import TARGET_KEY, target_json
from olive.search.samplers import Sampler, create_sampler
from olive.search.search_parameter import Categorical
from olive.search.search_space import JointSearchSpace, SearchSpace

if TYPE_CHECKING:
    from olive.config import WorkflowConfig
    from olive.engine.evaluation import ModelEvaluator
    from olive.engine.plan import PassPlan
    from olive.hardware.accelerator import AcceleratorSpec

logger = logging.getLogger(__name__)


class Engine:
    """Runs one workflow on one accelerator."""

    def __init__(
        self,
        workflow: WorkflowConfig,
        plans: list[PassPlan],
        targets: list[AcceleratorSpec],
        cache: CacheStore,
        evaluator: ModelEvaluator | None,
        show_progress: bool = False,
    ):
        self.workflow = workflow
        self.plans = plans
        #: where candidates are evaluated; several make the target one more dimension of every search. Passes
        #: are resolved, and the input model measured, on the first.
        self.targets = list(targets)
        self.accelerator = self.targets[0]
        self.execution_providers = [self.accelerator.execution_provider]
        self.cache = cache
        self.evaluator = evaluator
        self.progress = SearchProgress(show_progress)
        self.footprint = Footprint()
        #: Records every trial in the footprint; holds the models and evaluations by model id, the goals'
        #: thresholds and the reference model's id (see :meth:`_reference`; None without an evaluator).
        self._recorder = TrialRecorder(self.footprint, plans, self.targets, cache.session_id, workflow.search_enabled)
        self._objectives = evaluator.objectives() if evaluator else []
        self._limits = SearchLimits(workflow.search_strategy)

    # ----------------------------------------------------------------------------------------------
    def run(self) -> WorkflowOutput:
        # prepare() has validated the input model (a config error, before the cache is made); parsing a large
        # model again here would add to every run's fixed cost.
        input_model = self.workflow.input_model.create_handler()
        input_hash = hash_model(input_model)
        recorder = self._recorder
        node = self.footprint.add(
            FootprintNode(model_id=INPUT_MODEL_ID, model_path=input_model.model_path, model_json=input_model.to_json())
        )
        recorder.models[INPUT_MODEL_ID] = (input_model, input_hash)
        node.target = target_json(self.targets[0])
        context = TrialContext(
            context_id=uuid.uuid4().hex,
            workflow=self.workflow,
            plans=self.plans,
            accelerator=self.accelerator,
            execution_providers=self.execution_providers,
            cache_root=str(self.cache.root),
            cache_session=self.cache.session_id,
            evaluation_cache=self.evaluator is not None and self.evaluator.cache is not None,
            reference_model_json=input_model.to_json(),
            reference_hash=input_hash,
            targets=self.targets,
        )
        local = TrialWorker(context, self.cache, self.evaluator, input_model)
        try:
            if self.evaluator is not None:
                recorder.reference_id = self._reference(local)
                reference, reference_hash = recorder.models[recorder.reference_id]
                # Every worker compares with the same model: the trial context carries it.
                context.reference_model_json, context.reference_hash = reference.to_json(), reference_hash
                local.reference_model = reference
                if self.workflow.evaluate_input_model or self.evaluator.needs_baseline():
                    self.progress.stage("measuring the reference model")
                    evaluation = self.evaluator.evaluate(reference, reference_hash, reference, reference_hash)
                    recorder.record_evaluation(self.footprint.get(recorder.reference_id), evaluation)
                recorder.thresholds = resolve_goals(self.evaluator.metrics, recorder.results.get(recorder.reference_id))
            if recorder.reference_id is not None or input_model.evaluable:
                self._reference_on_targets(recorder.reference_id or INPUT_MODEL_ID)
        except BaseException:
            # A failed conversion or reference evaluation is reported with the stage's display stopped.
            self.progress.stop()
            raise

        strategy = self.workflow.search_strategy
        executor = create_executor(strategy.executor if strategy is not None else None, context, local)
        finished = False
        try:
            if strategy is not None and strategy.execution_order == "pass-by-pass":
                self._search_pass_by_pass(executor)
            else:
                self._search_joint(executor)
            finished = True
        finally:
            self.progress.stop()
            # On Ctrl-C or an error, running trials are stopped; finished ones are in the cache.
            executor.close(cancel=not finished)
            # The search is over: what its evaluations shared is not kept while the outputs are written.
            if self.evaluator is not None:
                self.evaluator.release()
        return self._output()

    def _reference(self, local: TrialWorker) -> str:
        """The model every metric compares with (agreement, ``ratio_*`` latency, goals relative to the input).

        The input model when it can be evaluated (ONNX, or another ``evaluable`` model type). Otherwise (a
        PyTorch or Hugging Face model) the output of the first pass at its one config (``resolve_plan`` allows no
        search there): the conversion, which checked itself against the input model. It runs here, before the
        search, and is recorded like any run; the search then finds it in the footprint and the cache.
        """
        input_model, input_hash = self._recorder.models[INPUT_MODEL_ID]
        if input_model.evaluable:
            return INPUT_MODEL_ID
        plan = self.plans[0]
        self.progress.stage(f"converting the input model ({plan.key})")
        point = {plan.key: plan.space.get_point(0)}
        step = local.run_step(plan, point[plan.key], input_model, input_hash, self._recorder.failed_runs)
        node, status = self._recorder.record_trial(INPUT_MODEL_ID, point, _step_events(step), candidate=False)
        if node is None or status is not Status.OK:
            reason = node.error if node is not None else "it produced no model"
            raise PassRunError(
                f"its output is what every metric compares with, so nothing else can run: {reason}",
                owner=f"pass '{plan.key}'",
            )
        logger.info(
            "Metrics compare with the output of pass '%s' (%s): the input model is a %s, which onnxruntime cannot "
            "evaluate",
            node.pass_key,
            node.pass_name,
            input_model.model_type,
        )
        return node.model_id

    # ----------------------------------------------------------------------------------------------
    # Search orders
    # ----------------------------------------------------------------------------------------------
    def _search_joint(self, executor: TrialExecutor) -> None:
        space = self._space({plan.key: plan.space for plan in self.plans})
        keys = [plan.key for plan in self.plans]
        self._search(executor, space, INPUT_MODEL_ID, keys, "search" if self.workflow.search_enabled else "run", True)

    def _search_pass_by_pass(self, executor: TrialExecutor) -> None:
        current = INPUT_MODEL_ID
        for index, plan in enumerate(self.plans):
            last = index == len(self.plans) - 1
            space = self._space({plan.key: plan.space})
            found = self._search(executor, space, current, [plan.key], f"search {plan.key}", last)
            if not found:
                return
            best = rank(found, self._recorder.results, self._objectives)[0]
            # The next pass starts from the best model itself, not from it placed on a target.
            current = best.parent_model_id if best.target_of is not None else best.model_id

    def _space(self, spaces: dict[str, SearchSpace]) -> JointSearchSpace:
        """The passes' spaces, and the targets as the last (fastest varying) dimension when there are several:
        each model is evaluated on every target in turn, its pass runs shared through the cache."""
        if len(self.targets) > 1:
            spaces[TARGET_KEY] = SearchSpace({"target": Categorical(list(range(len(self.targets))))}, "targets")
        return JointSearchSpace(spaces)

    # ----------------------------------------------------------------------------------------------
    # Targets
    # ----------------------------------------------------------------------------------------------
    def _reference_on_targets(self, reference_id: str) -> None:
        """The reference model (the input, or its conversion) on every target but the first is a candidate:
        deploying it elsewhere, unchanged, may be the best answer."""
        reference_node = self.footprint.get(reference_id)
        reference, reference_hash = self._recorder.models[reference_id]
        for index in range(1, len(self.targets)):
            node = self._recorder.on_target(reference_node, index)
            if self.evaluator is not None:
                targeted = self._recorder.models[node.model_id][0]
                evaluation = self.evaluator.evaluate(targeted, reference_hash, reference, reference_hash)
                self._recorder.record_evaluation(node, evaluation)
            if node.status is Status.OK:
                self._recorder.mark_candidate(node)

    def _search(
        self,
        executor: TrialExecutor,
        space: JointSearchSpace,
        parent_id: str,
        plan_keys: list[str],
        description: str,
        candidates: bool,
    ) -> list[FootprintNode]:
        """Search ``space`` from the model ``parent_id``; returns the models produced.

        Points go to ``executor`` and their trials are recorded in the order the sampler gave the points. At
        most ``executor.capacity`` trials are unfinished at once, and never more than the limits leave room
        for, so every executor runs the same points (pruned points do not count and free their slot). Trials
        already running when the goals are met or ``max_time`` passes finish and are recorded.
        """
        sampler = self._sampler(space)
        self.progress.start(description, self._limits.total(space.size()))
        recorder = self._recorder
        model, model_hash = recorder.models[parent_id]
        queue: deque[tuple[int, dict[str, Any]]] = deque()
        done: dict[int, Iterable[TrialEvent]] = {}
        found: list[FootprintNode] = []
        samples = 0
        exhausted = stopped = False
        while True:
            while (
                not (exhausted or stopped) and len(queue) < executor.capacity and self._limits.room(samples, len(queue))
            ):
                point = sampler.suggest()
                if point is None:
                    exhausted = True
                    break
                request = TrialRequest(
                    model.to_json(),
                    model_hash,
                    plan_keys,
                    point,
                    self.evaluator is not None,
                    recorder.failed_runs,
                    remote_down=self.cache.remote.down if self.cache.remote is not None else None,
                )
                queue.append((executor.submit(request), point))
            if not queue:
                break
            if queue[0][0] not in done:
                trial_id, events = executor.next_result()
                done[trial_id] = events
                continue
            trial_id, point = queue.popleft()
            node, status = recorder.record_trial(parent_id, point, self._storage_noted(done.pop(trial_id)), candidates)
            if status is Status.PRUNED:
                sampler.report(point, None, pruned=True)
                continue
            samples += 1
            self._limits.count()
            if node is not None and status is Status.OK:
                found.append(node)
            sampler.report(point, self._objective_value(node), failed=status is Status.FAILED)
            self.progress.advance(status if node is None else f"{node.model_id}: {status}")
            if self._stop_for_goals(node):
                stopped = True
        if not (exhausted or stopped):
            self._limits.note_end(samples)
        return found

    def _storage_noted(self, events: Iterable[TrialEvent]) -> Iterator[TrialEvent]:
        """``events`` without a worker's :class:`RemoteDown`: the first one turns the engine's remote cache off with
        the run's one warning; the next trials' workers are told (``TrialRequest.remote_down``)."""
        for event in events:
            if not isinstance(event, RemoteDown):
                yield event
            elif self.cache.remote is not None and self.cache.remote.available:
                self.cache.remote.mark_down(event.message)
                logger.warning("%s", event.message)

    def _sampler(self, space: JointSearchSpace) -> Sampler:
        strategy = self.workflow.search_strategy
        first = self._objectives[0] if self._objectives else None
        options = {
            **(strategy.sampler_config if strategy else {}),
            "objective": first["key"] if first else None,
            "higher_is_better": first["higher_is_better"] if first else False,
        }
        name = strategy.sampler if strategy else "sequential"
        return create_sampler(name, space, options, strategy.seed if strategy else None)

    def _objective_value(self, node: FootprintNode | None) -> float | None:
        if node is None or not self._objectives or node.model_id not in self._recorder.results:
            return None
        value = node.metric_values().get(self._objectives[0]["key"])
        return float(value) if value is not None else None

    def _stop_for_goals(self, node: FootprintNode | None) -> bool:
        strategy = self.workflow.search_strategy
        if strategy is None or not strategy.stop_when_goals_met or not self._recorder.thresholds or node is None:
            return False
        return node.model_id in self._recorder.results and self._recorder.meets(node)

    # ----------------------------------------------------------------------------------------------
    def _output(self) -> WorkflowOutput:
        alternatives = [alt for plan in self.plans for alt in plan.alternatives]
        output = WorkflowOutput(
            footprint=self.footprint.nodes,
            objectives=self._objectives,
            search_space_sizes={plan.key: plan.size() for plan in self.plans},
            searched_params={
                plan.key: list(dict.fromkeys(p for alt in plan.alternatives for p in alt.search_space.params))
                for plan in self.plans
            },
            accelerator=str(self.accelerator) if len(self.targets) == 1 else ", ".join(t.label for t in self.targets),
            reference_model_id=self._recorder.reference_id,
            distributions={
                alt.identity.distribution: alt.identity.version or ""
                for alt in alternatives
                if alt.identity.distribution
            },
        )
        choose_best(output, self._recorder.results, self._recorder.thresholds, self._limits.stopped_by)
        return output


def _step_events(step: Generator[StepStarted, None, StepResult]) -> Iterator[TrialEvent]:
    """The events of one step (:meth:`TrialWorker.run_step`): its start, then its result."""
    result = yield from step
    yield result
