"""One search trial: run a chain of passes from a model with one search point, then evaluate the last model.

A trial runs in a worker (a local process or a Ray task) and touches nothing but the shared cache: each
pass run goes through the content-addressed store under the run's lock, so two workers that reach the
same run do it once, and the evaluation is cached the same way. The trial returns plain data (statuses,
cache records, metrics as JSON); the engine, in the main process, turns it into footprint nodes, fires
the hooks and reports to the sampler, exactly as for a pass run in its own process.

Timing metrics (latency, throughput) are measured while holding this host's measurement lock in
exclusive mode, and every pass run holds it in shared mode, so no other trial of a run using this cache
works on the same machine while a model is timed (see ``ModelEvaluator``).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from olive.engine.keys import ScriptHashes, config_json, run_key
from olive.exceptions import OliveError, PassConfigError, PassRunError

if TYPE_CHECKING:
    from olive.cache.store import CacheStore
    from olive.engine.plan import PassPlan
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.workflows.config import WorkflowConfig

logger = logging.getLogger(__name__)


def host_lock_name() -> str:
    """The name of this machine's measurement lock in the cache's ``locks/`` folder."""
    return "host-" + "".join(c if c.isalnum() or c in "-_." else "_" for c in socket.gethostname())


def model_from_record(record: dict[str, Any]) -> Any:
    """The model handler of a cached pass run."""
    from olive.model.handler import OliveModelHandler

    model_json = {**record["model"], "config": dict(record["model"].get("config") or {})}
    fields = model_json["config"]
    rel = fields.pop("model_path_rel", None)
    if rel is not None:
        fields["model_path"] = str(Path(record["entry_dir"]) / rel)
    return OliveModelHandler.from_json(model_json)


def execute_pass(
    cache: CacheStore, accelerator: AcceleratorSpec, pass_class: Any, config: Any, model: Any, key: str
) -> tuple[dict[str, Any], bool]:
    """Run one pass into the cache unless its entry exists; returns ``(record, cached)``.

    The run's lock is held while running, and the cache is looked up again once it is held: a worker
    that waited for another doing the same run reuses its entry.
    """
    record = cache.get_run(key)
    if record is not None:
        return record, True
    with cache.lock(host_lock_name(), shared=True), cache.run_lock(key):
        record = cache.get_run(key)
        if record is not None:
            return record, True
        return _run_into_cache(cache, accelerator, pass_class, config, model, key), False


def _run_into_cache(
    cache: CacheStore, accelerator: AcceleratorSpec, pass_class: Any, config: Any, model: Any, key: str
) -> dict[str, Any]:
    from olive.cache.store import hash_model

    pass_name = pass_class.pass_name()
    with cache.new_run(key) as tmp:
        output_dir = tmp / "output"
        start = time.perf_counter()
        instance = pass_class(accelerator, config)
        output_model = instance.run(model, str(output_dir))
        duration = time.perf_counter() - start
        model_json = output_model.to_json()
        fields = model_json.get("config") or {}
        raw_path = fields.get("model_path")
        if raw_path is not None:
            raw = Path(raw_path).resolve()
            if raw == tmp or tmp in raw.parents:
                fields["model_path"] = None
                fields["model_path_rel"] = str(raw.relative_to(tmp))
            elif not raw.exists():
                raise PassRunError(f"pass {pass_name} returned a model at '{raw}', which does not exist")
        record = {
            "key": key,
            "pass_name": pass_name,
            "distribution": pass_class.distribution(),
            "version": pass_class.distribution_version() or pass_class._version,
            "config": config_json(config),
            "accelerator": str(accelerator),
            "model": model_json,
            "output_hash": hash_model(output_model),
            "duration_s": round(duration, 6),
            "created": time.time(),
            "session": cache.session_id,
        }
        (tmp / "run.json").write_text(json.dumps(record, indent=1, sort_keys=True, default=str))
    stored = cache.get_run(key)
    if stored is None:  # pragma: no cover - new_run raises instead
        raise PassRunError(f"cache entry for pass {pass_name} vanished after writing it")
    return stored


@attrs.define
class TrialContext:
    """What every trial of one search needs; sent to each worker once."""

    context_id: str
    workflow: WorkflowConfig
    plans: list[PassPlan]
    accelerator: AcceleratorSpec
    execution_providers: list[str]
    cache_root: str
    cache_session: str
    evaluation_cache: bool
    input_model_json: dict[str, Any]
    input_hash: str
    # (registered name, distribution, version) of each pass class, in plan order: a worker that imports a
    # class by module name (Ray) gets it without what the registry set on it, which the cache keys include.
    pass_identities: list[tuple[str | None, str | None, str | None]] = attrs.Factory(list)

    @staticmethod
    def identities_of(plans: list[PassPlan]) -> list[tuple[str | None, str | None, str | None]]:
        return [
            (
                alt.pass_class.pass_name(),
                alt.pass_class.distribution(),
                alt.pass_class.distribution_version(),
            )
            for plan in plans
            for alt in plan.alternatives
        ]


@attrs.define
class TrialRequest:
    """Run ``plan_keys`` in order from the model ``start_json`` with ``point``; evaluate the last model."""

    start_json: dict[str, Any]
    start_hash: str
    plan_keys: list[str]
    point: dict[str, Any]
    evaluate: bool = True


class _WorkerState:
    """Per-process state of one context: the cache, the evaluator and the input model, made once."""

    def __init__(self, context: TrialContext):
        from olive.cache.store import CacheStore
        from olive.model.handler import OliveModelHandler

        self.context = context
        alternatives = [alt for plan in context.plans for alt in plan.alternatives]
        for alt, (name, distribution, version) in zip(alternatives, context.pass_identities, strict=False):
            alt.pass_class._olive_pass_name = name
            alt.pass_class._olive_distribution = distribution
            alt.pass_class._olive_distribution_version = version
        self.cache = CacheStore(context.cache_root)
        self.cache.session_id = context.cache_session
        self.plans = {plan.key: plan for plan in context.plans}
        self.input_model = OliveModelHandler.from_json(context.input_model_json)
        self._evaluator: Any = None
        self.script_hashes = ScriptHashes()

    @property
    def evaluator(self) -> Any:
        workflow = self.context.workflow
        if self._evaluator is None and workflow.evaluator is not None:
            from olive.engine.evaluation import ModelEvaluator

            self._evaluator = ModelEvaluator(
                workflow.evaluator,
                workflow.data_configs,
                workflow.base_dir,
                self.context.execution_providers,
                self.cache if self.context.evaluation_cache else None,
                workflow.user_script,
                lock_cache=self.cache,
            )
        return self._evaluator


_STATES: dict[str, _WorkerState] = {}


def _state(context: TrialContext) -> _WorkerState:
    state = _STATES.get(context.context_id)
    if state is None:
        _STATES.clear()  # one search at a time per worker
        state = _STATES[context.context_id] = _WorkerState(context)
    return state


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def run_trial(context: TrialContext, request: TrialRequest) -> dict[str, Any]:
    """Run one trial; returns ``{"steps": [...], "evaluation": {...} | None, "worker": "host:pid"}``.

    Each step is ``{"pass_key", "status" ("ok" | "failed" | "pruned"), "config", "key", "record", "cached",
    "duration", "error"}``; the chain stops at the first step that is not ok. A pass that raises is a failed
    step, never an exception out of here.
    """
    from olive.model.handler import OliveModelHandler

    state = _state(context)
    accelerator = context.accelerator
    steps: list[dict[str, Any]] = []
    result: dict[str, Any] = {"steps": steps, "evaluation": None, "worker": worker_name()}
    model = OliveModelHandler.from_json(request.start_json)
    model_hash = request.start_hash
    for plan_key in request.plan_keys:
        plan = state.plans[plan_key]
        alternative, params = plan.decode(request.point[plan_key])
        pass_class = alternative.pass_class
        step: dict[str, Any] = {"pass_key": plan_key, "cached": False, "duration": 0.0, "error": None}
        steps.append(step)
        try:
            config = alternative.generate_config(accelerator, params)
        except PassConfigError as exc:
            step.update(status="pruned", config=params, error=str(exc))
            return result
        cfg_json = config_json(config)
        step["config"] = cfg_json
        if not pass_class.validate_config(config, accelerator):
            step.update(status="pruned", error="validate_config returned False")
            return result
        key = run_key(
            model_hash, model.to_json(), pass_class, cfg_json, accelerator, state.script_hashes(alternative.user_script)
        )
        step["key"] = key
        start = time.perf_counter()
        try:
            record, cached = execute_pass(state.cache, accelerator, pass_class, config, model, key)
            model = model_from_record(record)
        except Exception as exc:  # a pass may raise anything; it is a failed step
            step.update(status="failed", error=f"{type(exc).__name__}: {exc}", duration=time.perf_counter() - start)
            logger.debug("Pass %s failed:\n%s", plan_key, "".join(traceback.format_exception(exc)))
            return result
        step.update(status="ok", record=record, cached=cached, duration=time.perf_counter() - start)
        model_hash = record["output_hash"]
    if request.evaluate and state.evaluator is not None:
        start = time.perf_counter()
        evaluation: dict[str, Any] = {"error": None}
        try:
            metrics, cached, where = state.evaluator.evaluate(model, model_hash, state.input_model, context.input_hash)
            from olive.engine.evaluation import result_to_json

            evaluation.update(metrics=result_to_json(metrics), cached=cached, where=where)
        except OliveError as exc:
            evaluation["error"] = str(exc)
        evaluation["duration"] = time.perf_counter() - start
        result["evaluation"] = evaluation
    return result
