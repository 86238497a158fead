"""``olive.run``: validate a workflow, resolve its passes, search, and write the outputs."""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from olive.cache.eviction import prune_after_run
from olive.cache.remote import open_remote
from olive.cache.size import SizeLimit, configured_limit
from olive.cache.store import CacheStore, can_lock
from olive.data.check import check_workflow_data
from olive.data.config import DataConfig
from olive.data.containers import bind_input_model
from olive.engine.engine import Engine
from olive.engine.evaluation import ModelEvaluator, check_evaluator
from olive.engine.executors import RAY_MISSING
from olive.engine.hooks import fire
from olive.engine.output_writer import check_output_dir, write_outputs
from olive.engine.plan import resolve_plan
from olive.exceptions import (
    ModelLoadError,
    OliveError,
    WorkflowConfigError,
    closest_match_hint,
)
from olive.execution_providers.targets import resolve_targets
from olive.hardware.accelerator import AcceleratorSpec
from olive.logs import OnceFilter, olive_logs, once_per_message
from olive.model.handler import ONNXModelHandler
from olive.paths import system_folder_reason
from olive.search.samplers import BUILTIN_SAMPLERS, available_samplers
from olive.workflows.config import load_workflow_config
from olive.workflows.data_roles import SharedData, assign_data_roles, shared_data

if TYPE_CHECKING:
    from olive.engine.output import WorkflowOutput
    from olive.engine.plan import PassPlan
    from olive.workflows.config import WorkflowConfig

logger = logging.getLogger(__name__)

# Olive's log_severity_level: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal.
_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR, 4: logging.CRITICAL}


@attrs.frozen
class PreparedWorkflow:
    """A validated workflow with its passes resolved; nothing has run yet."""

    workflow: WorkflowConfig
    plans: list[PassPlan]
    accelerator: AcceleratorSpec
    execution_providers: list[str]
    #: every target candidates are evaluated on; the first is ``accelerator``
    targets: list[AcceleratorSpec] = attrs.Factory(list)
    #: the data configs that passes fit on and metrics judge on (split unless ``"split": false``)
    shared_data: tuple[SharedData, ...] = ()
    #: how big the cache may grow: the workflow's cache_max_size, else OLIVE_CACHE_MAX_SIZE, else the default
    cache_limit: SizeLimit | None = None

    def search_space_sizes(self) -> dict[str, int]:
        return {plan.key: plan.size() for plan in self.plans}

    def total_size(self) -> int:
        sizes = list(self.search_space_sizes().values())
        strategy = self.workflow.search_strategy
        targets = max(len(self.targets), 1)  # each search covers every target
        if strategy is not None and strategy.execution_order == "pass-by-pass":
            return sum(size * targets for size in sizes)
        total = targets
        for size in sizes:
            total *= size
        return total


def _accelerator(workflow: WorkflowConfig) -> tuple[AcceleratorSpec, list[str], list[AcceleratorSpec]]:
    """The targets candidates are evaluated on (every accelerator and provider of the target system, with each
    searched option value), the first of them (passes are resolved and the input model measured on it) and its
    provider."""
    targets = resolve_targets(workflow)
    return targets[0], [targets[0].execution_provider], targets


def _check_folder(path: Path, key: str) -> None:
    """Raise unless ``path`` is, or can be made, a folder this process can write in.

    Checked before anything runs: otherwise a file in the way or a read-only disk surfaces as a bare
    ``OSError`` only once every pass has run.
    """
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    where = f"'{existing}'" if existing == path else f"'{existing}' (in {key} '{path}')"
    if not existing.is_dir():
        raise WorkflowConfigError(f"{key}: {where} is a file, not a folder; point {key} at a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise WorkflowConfigError(f"{key}: cannot write in {where}; point {key} at a writable folder")


def _check_input_model(workflow: WorkflowConfig) -> None:
    """The model type's own check (files there and of the right kind), before the cache or any output is made."""
    model = workflow.input_model.create_handler()
    try:
        model.validate()
    except ModelLoadError as exc:
        raise WorkflowConfigError(exc.reason, owner=exc.owner or "input_model") from exc
    if not isinstance(model, ONNXModelHandler):
        return
    if (workflow.output_dir / "model.onnx").resolve() == Path(model.model_path).resolve():
        raise WorkflowConfigError(
            f"output_dir: '{workflow.output_dir}' holds the input model as model.onnx, which the best model would "
            "replace; choose another output_dir"
        )


def _bind_data_configs(workflow: WorkflowConfig) -> WorkflowConfig:
    """Every data config, the workflow's and those written inside a pass, with what its container takes from the
    input model filled in where the config leaves it out (a text container's tokenizer: the model's folder)."""
    model_path = workflow.input_model.create_handler().model_path
    if model_path is None:
        return workflow
    bound = {name: bind_input_model(config, model_path) for name, config in workflow.data_configs.items()}
    passes = {}
    for key, specs in workflow.passes.items():
        passes[key] = []
        for spec in specs:
            data = spec.params.get("data_config")
            if isinstance(data, DataConfig):
                # A named config is the same object as the workflow's: keep it one object once bound.
                same = bound.get(data.name) if workflow.data_configs.get(data.name) is data else None
                data = same or bind_input_model(data, model_path)
                spec = attrs.evolve(spec, params={**spec.params, "data_config": data})
            passes[key].append(spec)
    return attrs.evolve(workflow, data_configs=bound, passes=passes)


def strategy_executor(workflow: WorkflowConfig) -> str:
    """The type of executor the workflow's search runs its trials on."""
    strategy = workflow.search_strategy
    return strategy.executor.type if strategy is not None else "sequential"


def prepare(config_or_path: Any, **overrides: Any) -> PreparedWorkflow:
    """Validate the workflow and resolve every pass config; raises before anything runs."""
    workflow = load_workflow_config(config_or_path, **overrides)
    # Read now, so a bad OLIVE_CACHE_MAX_SIZE is reported (exit 2) before anything runs.
    cache_limit = workflow.cache_max_size if workflow.cache_max_size is not None else configured_limit()
    shared = tuple(shared_data(workflow))
    workflow = assign_data_roles(workflow)
    reason = system_folder_reason(workflow.cache_dir)
    if reason is not None:
        raise WorkflowConfigError(
            f"cache_dir: '{workflow.cache_dir}' cannot hold a cache: {reason}; point cache_dir at a folder of its "
            "own (e.g. '.olive-cache')"
        )
    # A read-only cache that already holds every result still serves a fully cached run.
    if not CacheStore(workflow.cache_dir).is_cache():
        _check_folder(workflow.cache_dir, "cache_dir")
    _check_folder(workflow.output_dir, "output_dir")
    _check_input_model(workflow)
    workflow = _bind_data_configs(workflow)
    check_output_dir(workflow.output_dir)
    accelerator, providers, targets = _accelerator(workflow)
    plans = resolve_plan(workflow, accelerator)
    check_evaluator(workflow)
    # The .npz files are read (headers only) and checked against the model now, so --dry-run catches them.
    check_workflow_data(workflow)
    if strategy_executor(workflow) == "ray":
        try:
            found = importlib.util.find_spec("ray") is not None
        except ValueError:  # a module set to None in sys.modules: imports of it fail
            found = False
        if not found:
            raise WorkflowConfigError(RAY_MISSING)
    strategy = workflow.search_strategy
    if strategy is not None and strategy.sampler not in BUILTIN_SAMPLERS:
        samplers = available_samplers()
        if strategy.sampler not in samplers:
            raise WorkflowConfigError(
                f"search_strategy.sampler: unknown sampler '{strategy.sampler}'"
                f"{closest_match_hint(strategy.sampler, samplers)}; use one of {', '.join(samplers)}"
            )
    return PreparedWorkflow(workflow, plans, accelerator, providers, targets, shared, cache_limit)


def run(
    config_or_path: str | Path | Mapping[str, Any] | Any, show_progress: bool = False, **overrides: Any
) -> WorkflowOutput:
    """Run a workflow (a path to a JSON/YAML file, a dict, or a ``WorkflowConfig``).

    ``overrides`` replace top-level keys (``output_dir``, ``cache_dir``...). Returns the
    :class:`~olive.engine.output.WorkflowOutput`; ``get_best_candidate()`` is None when nothing met the
    goals (``reason`` says why). Invalid configs raise :class:`WorkflowConfigError` or
    :class:`PassConfigError`; a failing pass outside a search raises :class:`PassRunError`.
    """
    prepared = config_or_path if isinstance(config_or_path, PreparedWorkflow) else prepare(config_or_path, **overrides)
    return execute(prepared, show_progress=show_progress)


def execute(prepared: PreparedWorkflow, show_progress: bool = False) -> WorkflowOutput:
    """Run a prepared workflow and write its outputs (``olive run`` prepares first, to report config errors)."""
    workflow = prepared.workflow
    # The workflow's level for Olive's loggers and its plugins'; --verbose (DEBUG) wins.
    with olive_logs(_LEVELS.get(workflow.log_severity_level, logging.INFO), keep_debug=True):
        return _execute(prepared, show_progress)


def _execute(prepared: PreparedWorkflow, show_progress: bool) -> WorkflowOutput:
    workflow = prepared.workflow
    cache = CacheStore(workflow.cache_dir)
    cache.remote = open_remote(workflow.remote_cache)
    if cache.remote is not None:
        cache.remote.check_installed()  # a missing fsspec or s3fs stops the run here, naming the extra
    if workflow.clean_cache and cache.is_cache():
        try:
            kept = cache.clean()
        except OSError as exc:
            raise OliveError(
                f"clean_cache: cannot delete the cache in '{cache.root}' ({exc.strerror or exc}: {exc.filename}); "
                "fix its permissions or set clean_cache to false"
            ) from exc
        if kept:
            logger.warning(
                "clean_cache: kept %d item(s) in '%s' that the cache did not create: %s",
                len(kept),
                cache.root,
                ", ".join(kept[:5]) + (f" and {len(kept) - 5} more" if len(kept) > 5 else ""),
            )
    cache.ensure()
    cache.clean_stale_tmp()
    # Files hashed by earlier runs (the input model, data, scripts) are not read again while unchanged. Every
    # entry this run uses is held until it ends, so eviction (its own, at the end, or another run's) keeps them.
    with cache.keeping_digests(), cache.holding() as hold:
        output = _run_engine(prepared, cache, show_progress)
        # Where no record can be kept (no flock: Windows) it cannot tell whether this run wrote: it checks.
        if hold.wrote_new() if hold is not None else not can_lock():
            prune_after_run(cache, prepared.cache_limit if prepared.cache_limit is not None else configured_limit())
        return output


def _run_engine(prepared: PreparedWorkflow, cache: CacheStore, show_progress: bool) -> WorkflowOutput:
    workflow = prepared.workflow
    for shared in prepared.shared_data:
        # Once per run, as it changes what every figure of the run is measured on.
        (logger.info if shared.split else logger.warning)("%s", shared.describe())
    evaluator = ModelEvaluator.for_workflow(
        workflow,
        prepared.execution_providers,
        cache,
        keep_results=not workflow.clean_evaluation_cache,
        target=prepared.accelerator,
    )
    fire("olive_workflow_start", workflow=workflow)
    output = None
    # Warnings logged straight on the root logger (onnxruntime's tools do this) show once per run.
    once = OnceFilter(min_level=logging.WARNING, max_level=logging.ERROR)
    try:
        with once_per_message(once=once):
            engine = Engine(
                workflow,
                prepared.plans,
                prepared.accelerator,
                prepared.execution_providers,
                cache,
                evaluator,
                show_progress,
                targets=prepared.targets,
            )
            output = engine.run()
            try:
                write_outputs(output, workflow)
            except OSError as exc:
                raise OliveError(
                    f"output_dir: writing the results into '{workflow.output_dir}' failed "
                    f"({type(exc).__name__}: {exc}); the runs are cached, so rerunning after fixing it is quick"
                ) from exc
    except BaseException as exc:
        fire("olive_workflow_end", workflow=workflow, output=output, error=exc)
        raise
    fire("olive_workflow_end", workflow=workflow, output=output, error=None)
    return output
