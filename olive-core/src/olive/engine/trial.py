"""One search trial: run a chain of passes from a model with one search point, then evaluate the last model.

:meth:`TrialWorker.run_step` is the one place a pass step runs, whatever the executor: resolve the point's config
(an invalid one prunes the point), ask the pass to validate it, compute the run's cache key, then reuse the
cached run or run the pass into the cache. :meth:`TrialWorker.run` chains the steps of a trial and evaluates
its last model, yielding typed events (:mod:`olive.engine.results`) that the engine records in order.

A trial touches nothing but the shared cache: each pass run goes through the content-addressed store under
the run's lock, so two workers that reach the same run do it once, and the evaluation is cached the same way.
Timing metrics (latency, throughput) are measured while holding this host's measurement lock in exclusive
mode, and every pass run holds it in shared mode, so no other trial of a run using this cache works on the
same machine while a model is timed (see ``ModelEvaluator``).
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from collections.abc import Generator, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from olive.cache.remote import open_remote
from olive.cache.space import DiskFullError, disk_full_reason
from olive.cache.store import CacheStore, entry_files, hash_model
from olive.engine.evaluation import ModelEvaluator
from olive.engine.keys import ScriptHashes, key_config, run_key
from olive.engine.memory import release_freed_memory
from olive.engine.results import RemoteDown, Status, StepResult, StepStarted, TrialEvent
from olive.exceptions import PassConfigError, PassRunError
from olive.execution_providers.targets import DEFAULT_TARGET, model_on_target, target_index
from olive.model.handler import OliveModelHandler
from olive.model.types import model_from_json

if TYPE_CHECKING:
    from olive.config import WorkflowConfig
    from olive.engine.plan import PassAlternative, PassPlan
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.passes.olive_pass import BasePassConfig

logger = logging.getLogger(__name__)


def model_path_under(model_json: dict[str, Any], folder: Path) -> Path | None:
    """Where the model of ``model_json`` lies inside ``folder`` (relative, symlinks resolved), or None."""
    raw = (model_json.get("config") or {}).get("model_path")
    if raw is None:
        return None
    path, base = Path(raw).resolve(), folder.resolve()
    return path.relative_to(base) if path == base or base in path.parents else None


def model_from_record(record: dict[str, Any]) -> OliveModelHandler:
    """The model handler of a cached pass run (a record :meth:`CacheStore.get_run` checked)."""
    model_json = {**record["model"], "config": dict(record["model"].get("config") or {})}
    fields = model_json["config"]
    rel = fields.pop("model_path_rel", None)
    if rel is not None:
        fields["model_path"] = str(Path(record["entry_dir"]) / rel)
    return model_from_json(model_json)


@attrs.define
class TrialContext:
    """What every trial of one search needs; sent to each worker once.

    The plans carry each pass's identity (``PassAlternative.identity``): a worker that imports a pass class
    by module name knows it under the name, distribution and version the engine resolved.
    """

    context_id: str
    workflow: WorkflowConfig
    plans: list[PassPlan]
    accelerator: AcceleratorSpec
    execution_providers: list[str]
    cache_root: str
    cache_session: str
    evaluation_cache: bool
    #: The model every trial's evaluation compares with (see ``Engine._reference``), and its content hash.
    reference_model_json: dict[str, Any]
    reference_hash: str
    #: every target of the search (the first is ``accelerator``); a point's ``@target`` picks one
    targets: list[AcceleratorSpec] = attrs.Factory(list)

    def target(self, point: Mapping[str, Any]) -> AcceleratorSpec:
        """The target a search point runs its accelerator-dependent passes and its evaluation on."""
        return self.targets[target_index(point)] if self.targets else self.accelerator

    @property
    def host_device(self) -> str | None:
        """The device of the workflow's ``host`` system, where passes run (handed to each pass as ``host_device``)."""
        host = self.workflow.host
        return host.accelerators[0].device if host is not None and host.accelerators else None


@attrs.frozen
class TrialRequest:
    """Run ``plan_keys`` in order from the model ``start_json`` with ``point``; evaluate the last model.

    :param failed_runs: ``(pass_key, run key) -> error`` of the runs that failed earlier in the search; a step
        reaching one reports the failure instead of running the pass again.
    """

    start_json: dict[str, Any]
    start_hash: str
    plan_keys: list[str]
    point: dict[str, Any]
    evaluate: bool = True
    failed_runs: Mapping[tuple[str, str], str] = attrs.Factory(dict)
    #: why the engine uses the remote cache no more (None: it does): the worker stops using it too
    remote_down: str | None = None


# The worker of the current search in this process (see TrialWorker.for_context).
_WORKERS: dict[str, TrialWorker] = {}


class TrialWorker:
    """Runs trials of one search in one process: the cache, the evaluator and the reference model (what
    evaluations compare with), made once."""

    def __init__(
        self,
        context: TrialContext,
        cache: CacheStore,
        evaluator: ModelEvaluator | None,
        reference_model: OliveModelHandler,
    ):
        self.context = context
        self.cache = cache
        self.evaluator = evaluator
        self.reference_model = reference_model
        self.plans = {plan.key: plan for plan in context.plans}
        self.script_hashes = ScriptHashes()
        self._storage_notes: list[str] = []

    @classmethod
    def for_context(cls, context: TrialContext) -> TrialWorker:
        """The worker of ``context`` in this (worker) process, made on its first trial."""
        worker = _WORKERS.get(context.context_id)
        if worker is None:
            _WORKERS.clear()  # one search at a time per worker process
            cache = CacheStore(context.cache_root)
            cache.session_id = context.cache_session
            cache.remote = open_remote(context.workflow.remote_cache)
            evaluator = ModelEvaluator.for_workflow(
                context.workflow, context.execution_providers, cache, context.evaluation_cache, context.accelerator
            )
            reference = model_from_json(context.reference_model_json)
            worker = _WORKERS[context.context_id] = cls(context, cache, evaluator, reference)
            if cache.remote is not None:
                # A worker process does not warn: the engine does, once per run (see storage_notes).
                cache.remote.report_down = worker._storage_notes.append
        return worker

    def storage_notes(self) -> list[RemoteDown]:
        """What this worker found of the remote cache since it was last asked (its one warning), as events."""
        notes = [RemoteDown(message) for message in self._storage_notes]
        self._storage_notes.clear()
        return notes

    def run(self, request: TrialRequest) -> Iterator[TrialEvent]:
        """The events of one trial, produced as it runs: each step's start and result, then the evaluation.

        The chain stops at the first step that is not OK. A pass that raises is a failed step, never an
        exception out of here.
        """
        if request.remote_down is not None and self.cache.remote is not None:
            self.cache.remote.mark_down(request.remote_down)
        model = model_from_json(request.start_json)
        model_hash = request.start_hash
        target = self.context.target(request.point)
        for plan_key in request.plan_keys:
            plan = self.plans[plan_key]
            step = yield from self.run_step(
                plan, request.point[plan_key], model, model_hash, request.failed_runs, target
            )
            yield step
            if step.status is not Status.OK:
                return
            model, model_hash = model_from_record(step.record), step.record["output_hash"]
        if request.evaluate and self.evaluator is not None:
            if len(self.context.targets) > 1 or target.cache_key() != DEFAULT_TARGET.cache_key():
                # The target decides where the model runs (a pass may have pinned another provider).
                model = model_on_target(model, target)
            yield self.evaluator.evaluate(model, model_hash, self.reference_model, self.context.reference_hash)

    def run_step(
        self,
        plan: PassPlan,
        point: dict[str, Any],
        model: OliveModelHandler,
        model_hash: str,
        failed_runs: Mapping[tuple[str, str], str],
        accelerator: AcceleratorSpec | None = None,
    ) -> Generator[StepStarted, None, StepResult]:
        """Run one pass on ``model``, the one place a step runs: yields :class:`StepStarted` just before the run
        (or the cache lookup) and returns the :class:`StepResult`.

        An invalid config prunes the point; so does ``validate_config`` returning False. A run in
        ``failed_runs`` (``(pass_key, run key) -> error``) is reported failed without running again.
        """
        alternative, params = plan.decode(point)
        accelerator = accelerator or self.context.accelerator
        try:
            config = alternative.generate_config(accelerator, params)
        except PassConfigError as exc:
            return StepResult(plan.key, Status.PRUNED, params, error=str(exc))
        cfg_json = config.to_json()
        with alternative.acting():
            valid = alternative.pass_class.validate_config(config, accelerator)
        if not valid:
            return StepResult(plan.key, Status.PRUNED, cfg_json, error="validate_config returned False")
        script_hash = self.script_hashes(alternative.user_script)
        pass_class, identity = alternative.pass_class, alternative.identity
        key = run_key(model_hash, model.to_json(), pass_class, identity, key_config(config), accelerator, script_hash)
        known_failure = failed_runs.get((plan.key, key))
        if known_failure is not None:
            return StepResult(plan.key, Status.FAILED, cfg_json, key, error=known_failure)
        yield StepStarted(plan.key, key, cfg_json)
        start = time.perf_counter()
        try:
            record, cached = self._execute(alternative, config, model, key, accelerator)
        except Exception as exc:  # a pass may raise anything; it is a failed step
            logger.debug("Pass %s failed:\n%s", plan.key, "".join(traceback.format_exception(exc)))
            full = disk_full_reason(self.cache.root, exc)
            if full is not None:
                # What the pass says of a truncated file it wrote is a symptom; the disk is the cause.
                cause = exc
                exc = DiskFullError(f"{full} (the pass then failed with {type(cause).__name__}: {cause})")
                exc.__cause__ = cause
            error = f"{type(exc).__name__}: {exc}"
            duration = time.perf_counter() - start
            return StepResult(plan.key, Status.FAILED, cfg_json, key, None, False, duration, error, exc)
        return StepResult(plan.key, Status.OK, cfg_json, key, record, cached, time.perf_counter() - start)

    def _execute(
        self,
        alternative: PassAlternative,
        config: BasePassConfig,
        model: OliveModelHandler,
        key: str,
        accelerator: AcceleratorSpec,
    ) -> tuple[dict[str, Any], bool]:
        """Run one pass into the cache unless its entry exists; returns ``(record, cached)``.

        The run's lock is held while running, and the cache is looked up again once it is held: a worker
        that waited for another doing the same run reuses its entry.
        """
        cache = self.cache
        record = self._cached_run(key)
        if record is not None:
            return record, True
        with cache.host_lock(shared=True), cache.run_lock(key):
            # A corrupt entry is removed under the lock (and the run done again), never used.
            record = self._cached_run(key, repair=True)
            if record is not None:
                return record, True
            record = cache.fetch_run(key, model_from_record)
            if record is not None:
                return record, True
            record = self._run_into_cache(alternative, config, model, key, accelerator)
            cache.publish_run(key, record)
            return record, False

    def _cached_run(self, key: str, repair: bool = False) -> dict[str, Any] | None:
        """The cached run's record, shared with the remote cache when it lacks it."""
        record = self.cache.get_run(key, model_from_record, repair=repair)
        if record is not None:
            self.cache.share_run(key, record)
        return record

    def _run_into_cache(
        self,
        alternative: PassAlternative,
        config: BasePassConfig,
        model: OliveModelHandler,
        key: str,
        accelerator: AcceleratorSpec,
    ) -> dict[str, Any]:
        cache, identity = self.cache, alternative.identity
        with cache.new_run(key) as tmp, alternative.acting():
            start = time.perf_counter()
            instance = alternative.pass_class(accelerator, config, self.context.host_device)
            try:
                output_model = instance.run(model, str(tmp / "output"))
            finally:
                del instance
                release_freed_memory()
            duration = time.perf_counter() - start
            model_json = output_model.to_json()
            # The entry may move (renamed into place, a copied cache): its own files are recorded relative to it.
            rel = model_path_under(model_json, tmp)
            raw = model_json["config"].get("model_path")
            if rel is not None:
                model_json["config"].update(model_path=None, model_path_rel=str(rel))
            elif raw is not None and not Path(raw).exists():
                raise PassRunError(
                    f"it returned a model at '{raw}', which does not exist", owner=f"pass {identity.name}"
                )
            record = {
                "key": key,
                "pass_name": identity.name,
                "distribution": identity.distribution,
                "version": alternative.run_version,
                "config": config.to_json(),
                "accelerator": accelerator.label,
                "model": model_json,
                "output_hash": hash_model(output_model),
                # Sizes and modification times of the outputs: reuse checks them, and hashes only on a change.
                "files": entry_files(tmp),
                "duration_s": round(duration, 6),
                "created": time.time(),
                "session": cache.session_id,
            }
            (tmp / "run.json").write_text(json.dumps(record, indent=1, sort_keys=True, default=str))
        stored = cache.get_run(key, model_from_record)
        if stored is None:
            raise PassRunError(
                f"its cache entry '{cache.run_dir(key)}' does not hold what the run wrote (changed while it was "
                "written?); run again",
                owner=f"pass {identity.name}",
            )
        return stored
