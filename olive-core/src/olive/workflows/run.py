"""``olive.run``: validate a workflow, resolve its passes, search, and write the outputs."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.cache.eviction import prune_after_run
from olive.cache.remote import open_remote
from olive.cache.size import configured_limit
from olive.cache.store import CacheStore, can_lock
from olive.engine.engine import Engine
from olive.engine.evaluation import ModelEvaluator
from olive.engine.hooks import fire
from olive.engine.memory import return_large_frees
from olive.engine.output_writer import write_outputs
from olive.exceptions import OliveError
from olive.logs import OnceFilter, olive_logs, once_per_message
from olive.workflows.prepare import PreparedWorkflow, prepare

if TYPE_CHECKING:
    from olive.engine.output import WorkflowOutput

__all__ = ["PreparedWorkflow", "execute", "prepare", "run"]

logger = logging.getLogger(__name__)

# Olive's log_severity_level: 0 verbose, 1 info, 2 warning, 3 error, 4 fatal.
_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR, 4: logging.CRITICAL}


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
    return_large_frees()
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
            engine = Engine(workflow, prepared.plans, prepared.targets, cache, evaluator, show_progress)
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
