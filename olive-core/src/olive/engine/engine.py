"""Running a resolved workflow: the search loop, cached pass runs, evaluation and candidate choice."""

from __future__ import annotations

import logging
import time
import traceback
from typing import TYPE_CHECKING, Any

from olive.engine.hooks import fire
from olive.engine.keys import ScriptHashes, config_json, digest, run_key
from olive.engine.output import FootprintNode, WorkflowOutput
from olive.engine.trial import execute_pass, model_from_record
from olive.exceptions import OliveError, PassConfigError, PassRunError, WorkflowConfigError

if TYPE_CHECKING:
    from olive.cache.store import CacheStore
    from olive.engine.evaluation import ModelEvaluator
    from olive.engine.plan import PassAlternative, PassPlan
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.workflows.config import WorkflowConfig

logger = logging.getLogger(__name__)

INPUT_MODEL_ID = "input_model"


class _Progress:
    """A rich progress bar per search (when asked for), silent otherwise."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._progress: Any = None
        self._task: Any = None

    def start(self, description: str, total: int | None) -> None:
        if not self.enabled:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.stop()
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[status]}"),
            console=Console(stderr=True),
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task(description, total=total, status="")

    def advance(self, status: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, advance=1, status=status)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


class Engine:
    """Runs one workflow on one accelerator."""

    def __init__(
        self,
        workflow: WorkflowConfig,
        plans: list[PassPlan],
        accelerator: AcceleratorSpec,
        execution_providers: list[str],
        cache: CacheStore,
        evaluator: ModelEvaluator | None,
        show_progress: bool = False,
    ):
        self.workflow = workflow
        self.plans = plans
        self.accelerator = accelerator
        self.execution_providers = execution_providers
        self.cache = cache
        self.evaluator = evaluator
        self.progress = _Progress(show_progress)
        self.footprint: list[FootprintNode] = []
        self._models: dict[str, tuple[Any, str]] = {}  # model_id -> (handler, content hash)
        self._runs: dict[tuple[str, str], FootprintNode] = {}  # (pass_key, run key) -> node, within this run
        self._results: dict[str, Any] = {}  # model_id -> MetricResult
        self._thresholds: dict[str, Any] = {}
        self._objectives = evaluator.objectives() if evaluator else []
        self._sample_count = 0
        self._stopped_by: str | None = None
        self._start = time.monotonic()
        self._script_hashes = ScriptHashes()
        self._trial_executor: Any = None

    # ----------------------------------------------------------------------------------------------
    def run(self) -> WorkflowOutput:
        from olive.cache.store import hash_model

        # prepare() has validated the input model (a config error, before the cache is made); parsing a large
        # model again here would add to every run's fixed cost.
        input_model = self.workflow.input_model.create_handler()
        input_hash = hash_model(input_model)
        node = FootprintNode(
            model_id=INPUT_MODEL_ID, model_path=input_model.model_path, model_json=input_model.to_json()
        )
        self.footprint.append(node)
        self._models[INPUT_MODEL_ID] = (input_model, input_hash)
        if self.evaluator is not None:
            if self.workflow.evaluate_input_model or self.evaluator.needs_baseline():
                self._evaluate(node)
            from olive.evaluator.goals import resolve_goals

            self._thresholds = resolve_goals(self.evaluator.metrics, self._results.get(INPUT_MODEL_ID))

        strategy = self.workflow.search_strategy
        finished = False
        try:
            if strategy is not None and strategy.execution_order == "pass-by-pass":
                self._search_pass_by_pass()
            else:
                self._search_joint()
            finished = True
        finally:
            self.progress.stop()
            if self._trial_executor is not None:
                # On Ctrl-C or an error, running trials are stopped; finished ones are in the cache.
                self._trial_executor.close(cancel=not finished)
        return self._finish()

    # ----------------------------------------------------------------------------------------------
    # Search orders
    # ----------------------------------------------------------------------------------------------
    def _sampler(self, space: Any) -> Any:
        from olive.search.samplers import create_sampler

        strategy = self.workflow.search_strategy
        first = self._objectives[0] if self._objectives else None
        options = {
            **(strategy.sampler_config if strategy else {}),
            "objective": first["key"] if first else None,
            "higher_is_better": first["higher_is_better"] if first else False,
        }
        name = strategy.sampler if strategy else "sequential"
        return create_sampler(name, space, options, strategy.seed if strategy else None)

    def _limits_hit(self, step_samples: int) -> str | None:
        strategy = self.workflow.search_strategy
        if strategy is None:
            return None
        hit = None
        if strategy.max_samples and step_samples >= strategy.max_samples:
            hit = "max_samples"
        elif strategy.max_iter is not None and self._sample_count >= strategy.max_iter:
            hit = f"max_iter={strategy.max_iter}"
        elif strategy.max_time is not None and time.monotonic() - self._start >= strategy.max_time:
            hit = f"max_time={strategy.max_time:g}s"
        if hit is not None and hit != "max_samples":
            self._stopped_by = hit
        return hit

    def _objective_value(self, node: FootprintNode | None) -> float | None:
        if node is None or not self._objectives or node.model_id not in self._results:
            return None
        value = node.metric_values().get(self._objectives[0]["key"])
        return float(value) if value is not None else None

    def _total(self, size: int) -> int:
        strategy = self.workflow.search_strategy
        if strategy is not None and strategy.max_samples:
            size = min(size, strategy.max_samples)
        if strategy is not None and strategy.max_iter is not None:
            size = min(size, max(strategy.max_iter - self._sample_count, 0))
        return size

    def _search_joint(self) -> None:
        from olive.search.search_space import JointSearchSpace

        space = JointSearchSpace({plan.key: plan.space for plan in self.plans})
        sampler = self._sampler(space)
        searching = self.workflow.search_enabled
        self.progress.start("search" if searching else "run", self._total(space.size()))
        if self._parallel():
            keys = [plan.key for plan in self.plans]
            self._drive(
                self._executor(),
                sampler,
                lambda point: self._request(INPUT_MODEL_ID, keys, point),
                lambda point, result: self._integrate(INPUT_MODEL_ID, point, result, candidate=True),
            )
            return
        samples = 0
        while self._limits_hit(samples) is None:
            point = sampler.suggest()
            if point is None:
                break
            final, status = self._run_chain(point)
            if status == "pruned":
                sampler.report(point, None, pruned=True)
                continue
            samples += 1
            self._sample_count += 1
            sampler.report(point, self._objective_value(final), failed=status == "failed")
            self.progress.advance(status if final is None else f"{final.model_id}: {status}")
            if self._stop_for_goals(final):
                break

    def _search_pass_by_pass(self) -> None:
        from olive.search.search_space import JointSearchSpace

        current = INPUT_MODEL_ID
        for index, plan in enumerate(self.plans):
            space = JointSearchSpace({plan.key: plan.space})
            sampler = self._sampler(space)
            self.progress.start(f"search {plan.key}", self._total(space.size()))
            step: list[FootprintNode] = []
            samples = 0
            if self._parallel():

                def integrate(
                    point: dict[str, Any], result: dict[str, Any], parent: str = current, found: list = step
                ) -> tuple:
                    node, status = self._integrate(parent, point, result, candidate=False)
                    if node is not None and status == "ok":
                        found.append(node)
                    return node, status

                self._drive(
                    self._executor(),
                    sampler,
                    lambda point, parent=current, key=plan.key: self._request(parent, [key], point),
                    integrate,
                )
            while not self._parallel() and self._limits_hit(samples) is None:
                point = sampler.suggest()
                if point is None:
                    break
                alternative, params = plan.decode(point[plan.key])
                node, status = self._run_step(plan.key, alternative, params, current)
                if status == "pruned":
                    sampler.report(point, None, pruned=True)
                    continue
                samples += 1
                self._sample_count += 1
                if node is not None and status == "ok":
                    self._evaluate(node)
                    step.append(node)
                sampler.report(point, self._objective_value(node), failed=status == "failed")
                self.progress.advance(f"{node.model_id if node else plan.key}: {status}")
                if self._stop_for_goals(node):
                    break
            if not step:
                return
            last = index == len(self.plans) - 1
            for node in step:
                node.is_candidate = last
                if last and self._thresholds:
                    node.meets_goals = self._meets(node)
            ranked = self._rank(step)
            current = ranked[0].model_id

    # ----------------------------------------------------------------------------------------------
    # Parallel trials (search_strategy.executor other than sequential)
    # ----------------------------------------------------------------------------------------------
    def _parallel(self) -> bool:
        strategy = self.workflow.search_strategy
        executor = getattr(strategy, "executor", None)
        return executor is not None and executor.type != "sequential"

    def _executor(self) -> Any:
        """The search's trial executor, started on first use and closed when the run ends."""
        if self._trial_executor is not None:
            return self._trial_executor
        import uuid

        from olive.engine.executors import create_executor
        from olive.engine.trial import TrialContext

        input_model, input_hash = self._models[INPUT_MODEL_ID]
        context = TrialContext(
            context_id=uuid.uuid4().hex,
            workflow=self.workflow,
            plans=self.plans,
            accelerator=self.accelerator,
            execution_providers=self.execution_providers,
            cache_root=str(self.cache.root),
            cache_session=self.cache.session_id,
            evaluation_cache=self.evaluator is not None and self.evaluator.cache is not None,
            input_model_json=input_model.to_json(),
            input_hash=input_hash,
            pass_identities=TrialContext.identities_of(self.plans),
        )
        self._trial_executor = create_executor(self.workflow.search_strategy.executor, context)
        return self._trial_executor

    def _request(self, parent_id: str, plan_keys: list[str], point: dict[str, Any]) -> Any:
        from olive.engine.trial import TrialRequest

        model, model_hash = self._models[parent_id]
        return TrialRequest(model.to_json(), model_hash, plan_keys, point, evaluate=self.evaluator is not None)

    def _room(self, samples: int, in_flight: int) -> bool:
        """Whether one more trial may start while ``in_flight`` others (each may count) are unfinished."""
        strategy = self.workflow.search_strategy
        if strategy.max_samples and samples + in_flight >= strategy.max_samples:
            return False
        if strategy.max_iter is not None and self._sample_count + in_flight >= strategy.max_iter:
            return False
        if strategy.max_time is not None and time.monotonic() - self._start >= strategy.max_time:
            self._stopped_by = f"max_time={strategy.max_time:g}s"
            return False
        return True

    def _drive(self, executor: Any, sampler: Any, make_request: Any, integrate: Any) -> None:
        """Hand points to ``executor`` and take in their results in the order the sampler gave the points.

        At most ``executor.capacity`` trials are unfinished at once, and never more than the limits leave
        room for, so a search runs the same points as a sequential one (pruned points do not count and
        free their slot). Trials already running when the goals are met or ``max_time`` passes finish and
        are recorded.
        """
        from collections import deque

        queue: deque[tuple[int, dict[str, Any]]] = deque()
        done: dict[int, dict[str, Any]] = {}
        samples = 0
        exhausted = stopped = False
        while True:
            while not (exhausted or stopped) and len(queue) < executor.capacity and self._room(samples, len(queue)):
                point = sampler.suggest()
                if point is None:
                    exhausted = True
                    break
                queue.append((executor.submit(make_request(point)), point))
            if not queue:
                break
            if queue[0][0] not in done:
                trial_id, result = executor.next_result()
                done[trial_id] = result
                continue
            trial_id, point = queue.popleft()
            node, status = integrate(point, done.pop(trial_id))
            if status == "pruned":
                sampler.report(point, None, pruned=True)
                continue
            samples += 1
            self._sample_count += 1
            sampler.report(point, self._objective_value(node), failed=status == "failed")
            self.progress.advance(status if node is None else f"{node.model_id}: {status}")
            if self._stop_for_goals(node):
                stopped = True
        if not (exhausted or stopped):
            self._limits_hit(samples)  # records which limit ended the search

    def _integrate(
        self, parent_id: str, point: dict[str, Any], result: dict[str, Any], candidate: bool
    ) -> tuple[FootprintNode | None, str]:
        """Record a trial's result as ``_run_chain`` / ``_run_step`` would have: nodes, hooks, evaluation."""
        by_key = {plan.key: plan for plan in self.plans}
        node: FootprintNode | None = None
        steps = result.get("steps") or []
        if result.get("error") or not steps:
            return self._trial_failed(parent_id, point, result.get("error") or "the trial returned nothing"), "failed"
        for step in steps:
            plan = by_key[step["pass_key"]]
            alternative, _ = plan.decode(point[plan.key])
            pass_name = alternative.pass_class.pass_name()
            if step["status"] == "pruned":
                return self._pruned(plan.key, pass_name, parent_id, step["config"], step["error"]), "pruned"
            node, status = self._record_step(plan.key, alternative.pass_class, parent_id, step)
            if status != "ok":
                return node, status
            parent_id = node.model_id
        if node is None:
            return None, "failed"
        if candidate:
            node.is_candidate = True
        evaluation = result.get("evaluation")
        if evaluation is not None and node.model_id not in self._results:
            if evaluation.get("error"):
                self._evaluation_failed(node, evaluation["error"])
            else:
                where = dict(evaluation.get("where") or {})
                self._record_evaluation(
                    node, evaluation["metrics"], evaluation["duration"], evaluation["cached"], where
                )
        if candidate and self._thresholds:
            node.meets_goals = self._meets(node)
        return node, "ok"

    def _record_step(
        self, pass_key: str, pass_class: Any, parent_id: str, step: dict[str, Any]
    ) -> tuple[FootprintNode, str]:
        cfg_json = step["config"]
        node, new = self._open_run(pass_key, pass_class, parent_id, step["key"], cfg_json)
        if not new:
            return node, node.status
        pass_name = node.pass_name
        parent_model = self._models[parent_id][0]
        cached, duration = step["cached"], step["duration"]
        if cached and step["status"] == "ok" and step["record"].get("session") == self.cache.session_id:
            # A concurrent trial of this run did the work and this one waited for it; report the work where a
            # sequential search would have done it, so every executor gives the same footprint.
            cached, duration = False, float(step["record"].get("duration_s", 0.0))
        # The pass ran in a worker; its hooks fire here, in order, once the result is in.
        fire("olive_pass_start", pass_key=pass_key, pass_name=pass_name, config=cfg_json, input_model=parent_model)
        output_model = model_from_record(step["record"]) if step["status"] == "ok" else None
        error = PassRunError(step["error"]) if step["status"] != "ok" else None
        self._close_run(node, parent_model, output_model, step["record"], cached, error, duration)
        if error is not None:
            node.status, node.error = "failed", step["error"]
            logger.warning("Pass '%s' (%s) failed: %s", pass_key, pass_name, node.error)
            return node, "failed"
        self._add_model(node, output_model, step["record"])
        return node, "ok"

    def _open_run(
        self, pass_key: str, pass_class: Any, parent_id: str, key: str, cfg_json: Any
    ) -> tuple[FootprintNode, bool]:
        """The footprint node of one pass run, and whether it is new (a run seen before is reused)."""
        seen = self._runs.get((pass_key, key))
        if seen is not None:
            return seen, False
        node = FootprintNode(
            model_id=f"{pass_key}-{key[:12]}",
            parent_model_id=parent_id,
            pass_key=pass_key,
            pass_name=pass_class.pass_name(),
            config=cfg_json,
            pass_distribution=pass_class.distribution(),
            pass_version=pass_class.distribution_version() or pass_class._version,
        )
        self._runs[(pass_key, key)] = node
        self.footprint.append(node)
        return node, True

    def _close_run(
        self,
        node: FootprintNode,
        parent_model: Any,
        output_model: Any,
        record: dict[str, Any] | None,
        cached: bool,
        error: BaseException | None,
        duration: float,
    ) -> None:
        """Fire ``olive_pass_end`` for a finished run and record its timings on ``node``."""
        fire(
            "olive_pass_end",
            pass_key=node.pass_key,
            pass_name=node.pass_name,
            config=node.config,
            input_model=parent_model,
            output_model=output_model,
            cached=cached,
            error=error,
            duration_s=duration,
        )
        node.cached = cached
        node.timings["run"] = 0.0 if cached else round(duration, 6)
        if cached:
            node.timings["original_run"] = float(record.get("duration_s", 0.0))

    def _add_model(self, node: FootprintNode, output_model: Any, record: dict[str, Any]) -> None:
        node.model_path = output_model.model_path
        node.model_json = output_model.to_json()
        self._models[node.model_id] = (output_model, record["output_hash"])

    def _trial_failed(self, parent_id: str, point: dict[str, Any], error: str) -> FootprintNode:
        """A trial whose worker died (twice) or raised outside any pass: one failed node for the point."""
        last = self.plans[-1].key if len(point) > 1 or not point else next(iter(point))
        node = FootprintNode(
            model_id=f"{last}-trial-{digest({'parent': parent_id, 'point': point})[:12]}",
            parent_model_id=parent_id,
            pass_key=last,
            config={"point": point},
            status="failed",
            error=error,
        )
        self.footprint.append(node)
        logger.warning("A trial failed: %s", error)
        return node

    def _stop_for_goals(self, node: FootprintNode | None) -> bool:
        strategy = self.workflow.search_strategy
        if strategy is None or not strategy.stop_when_goals_met or not self._thresholds or node is None:
            return False
        return node.model_id in self._results and self._meets(node)

    # ----------------------------------------------------------------------------------------------
    # Running passes
    # ----------------------------------------------------------------------------------------------
    def _run_chain(self, point: dict[str, Any]) -> tuple[FootprintNode | None, str]:
        parent = INPUT_MODEL_ID
        node: FootprintNode | None = None
        for plan in self.plans:
            alternative, params = plan.decode(point[plan.key])
            node, status = self._run_step(plan.key, alternative, params, parent)
            if status != "ok":
                return node, status
            parent = node.model_id
        if node is not None:
            node.is_candidate = True
            self._evaluate(node)
            if self._thresholds:
                node.meets_goals = self._meets(node)
        return node, "ok"

    def _run_step(
        self, pass_key: str, alternative: PassAlternative, params: dict[str, Any], parent_id: str
    ) -> tuple[FootprintNode | None, str]:
        """Run (or find in the cache) one pass on the model ``parent_id``; returns ``(node, status)``."""
        pass_class = alternative.pass_class
        pass_name = pass_class.pass_name()
        try:
            config = alternative.generate_config(self.accelerator, params)
        except PassConfigError as exc:
            return self._pruned(pass_key, pass_name, parent_id, params, str(exc)), "pruned"
        cfg_json = config_json(config)
        if not pass_class.validate_config(config, self.accelerator):
            return self._pruned(pass_key, pass_name, parent_id, cfg_json, "validate_config returned False"), "pruned"

        parent_model, parent_hash = self._models[parent_id]
        key = run_key(
            parent_hash,
            parent_model.to_json(),
            pass_class,
            cfg_json,
            self.accelerator,
            self._script_hashes(alternative.user_script),
        )
        node, new = self._open_run(pass_key, pass_class, parent_id, key, cfg_json)
        if not new:
            return node, node.status
        fire("olive_pass_start", pass_key=pass_key, pass_name=pass_name, config=cfg_json, input_model=parent_model)
        start = time.perf_counter()
        record: dict[str, Any] | None = None
        cached = False
        error: BaseException | None = None
        output_model = None
        try:
            record, cached = execute_pass(self.cache, self.accelerator, pass_class, config, parent_model, key)
            output_model = model_from_record(record)
        except Exception as exc:  # a pass may raise anything; it is recorded, not propagated, during a search
            error = exc
        self._close_run(node, parent_model, output_model, record, cached, error, time.perf_counter() - start)
        if error is not None:
            node.status = "failed"
            node.error = f"{type(error).__name__}: {error}"
            logger.debug("Pass %s failed:\n%s", pass_key, "".join(traceback.format_exception(error)))
            if not self.workflow.search_enabled:
                message = _without_pass_prefix(str(error), pass_key, pass_name)
                if isinstance(error, PassConfigError | WorkflowConfigError):
                    # e.g. calibration data that does not fit the model: a config problem (exit code 2)
                    raise type(error)(f"pass '{pass_key}' ({pass_name}): {message}") from error
                raise PassRunError(
                    f"pass '{pass_key}' ({pass_name}) failed: {type(error).__name__}: {message}"
                ) from error
            logger.warning("Pass '%s' (%s) failed: %s", pass_key, pass_name, node.error)
            return node, "failed"
        self._add_model(node, output_model, record)
        return node, "ok"

    def _pruned(self, pass_key: str, pass_name: str, parent_id: str, config: Any, reason: str) -> FootprintNode:
        model_id = f"{pass_key}-pruned-{digest({'parent': parent_id, 'config': config})[:12]}"
        for existing in self.footprint:
            if existing.model_id == model_id:
                return existing
        node = FootprintNode(
            model_id=model_id,
            parent_model_id=parent_id,
            pass_key=pass_key,
            pass_name=pass_name,
            config=config if isinstance(config, dict) else None,
            status="pruned",
            error=reason,
        )
        self.footprint.append(node)
        return node

    # ----------------------------------------------------------------------------------------------
    # Evaluation and choice
    # ----------------------------------------------------------------------------------------------
    def _evaluate(self, node: FootprintNode) -> None:
        if self.evaluator is None or node.model_id in self._results:
            return
        from olive.engine.evaluation import result_to_json

        model, model_hash = self._models[node.model_id]
        reference, reference_hash = self._models[INPUT_MODEL_ID]
        start = time.perf_counter()
        try:
            result, cached, where = self.evaluator.evaluate(model, model_hash, reference, reference_hash)
        except OliveError as exc:
            if node.model_id == INPUT_MODEL_ID or not self.workflow.search_enabled:
                raise
            self._evaluation_failed(node, str(exc))
            return
        self._record_evaluation(node, result_to_json(result), time.perf_counter() - start, cached, where)

    def _evaluation_failed(self, node: FootprintNode, error: str) -> None:
        node.status, node.error = "failed", f"evaluation: {error}"
        logger.warning("Evaluating %s failed: %s", node.model_id, error)

    def _record_evaluation(
        self, node: FootprintNode, metrics: dict[str, Any], duration: float, cached: bool, where: dict[str, Any]
    ) -> None:
        from olive.engine.evaluation import result_from_json

        node.timings["evaluate"] = round(duration, 6)
        node.timings["evaluation_cached"] = float(cached)
        # Where timing metrics were measured (host, and whether nothing else of the run used it meanwhile).
        node.timings.update(where)
        node.metrics = metrics
        self._results[node.model_id] = result_from_json(metrics)
        fire("olive_evaluation_end", model_id=node.model_id, model=self._models[node.model_id][0], metrics=node.metrics)

    def _meets(self, node: FootprintNode) -> bool:
        from olive.evaluator.goals import meets_goals

        result = self._results.get(node.model_id)
        return result is not None and bool(meets_goals(result, self._thresholds))

    def _rank(self, nodes: list[FootprintNode]) -> list[FootprintNode]:
        if self.evaluator is None or not self._objectives:
            return list(nodes)
        from olive.evaluator.goals import rank_candidates

        measured = [n for n in nodes if n.model_id in self._results]
        if not measured:
            return list(nodes)
        order = rank_candidates(
            {n.model_id: self._results[n.model_id] for n in measured}, [o["key"] for o in self._objectives]
        )
        by_id = {n.model_id: n for n in measured}
        return [by_id[i] for i in order] + [n for n in nodes if n.model_id not in by_id]

    def _finish(self) -> WorkflowOutput:
        candidates = [n for n in self.footprint if n.is_candidate and n.status == "ok"]
        output = WorkflowOutput(
            footprint=self.footprint,
            objectives=self._objectives,
            search_space_sizes={plan.key: plan.size() for plan in self.plans},
            searched_params={
                plan.key: list(dict.fromkeys(p for alt in plan.alternatives for p in alt.search_space.params))
                for plan in self.plans
            },
            accelerator=str(self.accelerator),
            distributions={
                alt.pass_class.distribution(): alt.pass_class.distribution_version() or ""
                for plan in self.plans
                for alt in plan.alternatives
                if alt.pass_class.distribution()
            },
        )
        if not candidates:
            failed = [n for n in self.footprint if n.status == "failed"]
            pruned = [n for n in self.footprint if n.status == "pruned"]
            if failed:
                output.reason = (
                    f"no model was produced: {len(failed)} pass run(s) failed"
                    + (f" and {len(pruned)} point(s) were pruned" if pruned else "")
                    + f"; first error: {failed[0].pass_key}: {failed[0].error}"
                )
            elif pruned:
                output.reason = (
                    f"no model was produced: all {len(pruned)} search point(s) were pruned by validate_config"
                )
            else:
                output.reason = (
                    f"no model was produced: the search limits ({self._stopped_by or 'max_samples'}) stopped the "
                    "search before a complete model was produced"
                )
            return output
        if self.evaluator is not None and self._objectives:
            from olive.evaluator.goals import pareto_frontier

            measured = {n.model_id: self._results[n.model_id] for n in candidates if n.model_id in self._results}
            if measured:
                frontier = pareto_frontier(measured, [o["key"] for o in self._objectives])
                for node in candidates:
                    node.is_pareto = node.model_id in frontier
        pool = candidates
        if self._thresholds:
            pool = [n for n in candidates if n.meets_goals]
            if not pool:
                from olive.evaluator.goals import unmet_goals

                closest = self._rank(candidates)[0]
                misses = "; ".join(unmet_goals(self._results[closest.model_id], self._thresholds))
                output.reason = (
                    f"no candidate met the goals: {len(candidates)} candidate(s) tried; the best, "
                    f"{closest.model_id}, has {misses} (see footprint.json)"
                )
                return output
        output.best = self._rank(pool)[0]
        return output


def _without_pass_prefix(message: str, pass_key: str, pass_name: str) -> str:
    # Pass errors often start by naming the pass already; the engine's own prefix says it once.
    for prefix in (f"pass '{pass_key}' ({pass_name}): ", f"pass {pass_name}: ", f"{pass_name}: "):
        if message.startswith(prefix):
            return message[len(prefix) :]
    return message
