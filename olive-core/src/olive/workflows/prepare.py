"""The checks a workflow needs the world for, each made once, after its config is structured and before the
engine starts: the folders it writes in (cache, output), the input model, its data, the targets, the plugins
it names (passes, a sampler) and Ray. The engine receives what this returns and checks none of it again.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import attrs

from olive.cache.size import SizeLimit, configured_limit
from olive.cache.store import CacheStore
from olive.config import WorkflowConfig
from olive.data.check import check_workflow_data
from olive.data.config import DataConfig
from olive.data.containers import bind_input_model
from olive.engine.evaluation import check_evaluator
from olive.engine.executors import RAY_MISSING
from olive.engine.output_writer import STANDARD_FILES, foreign_files, refuse_foreign
from olive.engine.plan import PassPlan, resolve_plan
from olive.exceptions import ModelLoadError, WorkflowConfigError
from olive.execution_providers.targets import resolve_targets
from olive.hardware.accelerator import AcceleratorSpec
from olive.model.handler import OliveModelHandler, ONNXModelHandler
from olive.paths import system_folder_reason
from olive.search.samplers import sampler_factory
from olive.workflows.config import load_workflow_config
from olive.workflows.data_roles import SharedData, assign_data_roles


@attrs.frozen
class PreparedWorkflow:
    """A validated workflow with its passes resolved; nothing has run yet."""

    workflow: WorkflowConfig
    plans: list[PassPlan]
    #: every target candidates are evaluated on (each accelerator and provider of the target system, with
    #: each searched option value); passes are resolved and the input model measured on the first
    targets: list[AcceleratorSpec]
    #: the data configs that passes fit on and metrics judge on (split unless ``"split": false``)
    shared_data: tuple[SharedData, ...] = ()
    #: how big the cache may grow: the workflow's cache_max_size, else OLIVE_CACHE_MAX_SIZE, else the default
    cache_limit: SizeLimit | None = None

    @property
    def accelerator(self) -> AcceleratorSpec:
        return self.targets[0]

    @property
    def execution_providers(self) -> list[str]:
        return [self.targets[0].execution_provider]

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


def prepare(config_or_path: Any, *, split_required: bool = False, **overrides: Any) -> PreparedWorkflow:
    """Validate the workflow and resolve every pass config; raises before anything runs.

    ``split_required``: data that passes fit on and metrics judge on, too small to split, is an error (``olive
    optimize``) instead of being used whole by both with one warning (:mod:`olive.workflows.data_roles`).
    """
    workflow = load_workflow_config(config_or_path, **overrides)
    # Read now, so a bad OLIVE_CACHE_MAX_SIZE is reported (exit 2) before anything runs.
    cache_limit = workflow.cache_max_size if workflow.cache_max_size is not None else configured_limit()
    workflow, shared = assign_data_roles(workflow, split_required)
    _check_cache_dir(workflow.cache_dir)
    model = _check_input_model(workflow)
    _check_output_dir(workflow.output_dir, model)
    workflow = _bind_data_configs(workflow, model)
    targets = resolve_targets(workflow)
    plans = resolve_plan(workflow, targets[0])
    check_evaluator(workflow)
    # The .npz files are read (headers only) and checked against the model now, so --dry-run catches them.
    check_workflow_data(workflow)
    _check_plugins(workflow)
    return PreparedWorkflow(workflow, plans, targets, shared, cache_limit)


def _check_cache_dir(cache_dir: Path) -> None:
    reason = system_folder_reason(cache_dir)
    if reason is not None:
        raise WorkflowConfigError(
            f"cache_dir: '{cache_dir}' cannot hold a cache: {reason}; point cache_dir at a folder of its "
            "own (e.g. '.olive-cache')"
        )
    # A read-only cache that already holds every result still serves a fully cached run.
    if not CacheStore(cache_dir).is_cache():
        _check_writable(cache_dir, "cache_dir")


def _check_output_dir(output_dir: Path, model: OliveModelHandler) -> None:
    """A folder a run may write its outputs in: writable, not a system or home folder, not holding the input
    model where the best model goes, nor files of the standard names that no run of ours wrote."""
    _check_writable(output_dir, "output_dir")
    if (
        isinstance(model, ONNXModelHandler)
        and (output_dir / "model.onnx").resolve() == Path(model.model_path).resolve()
    ):
        raise WorkflowConfigError(
            f"output_dir: '{output_dir}' holds the input model as model.onnx, which the best model would "
            "replace; choose another output_dir"
        )
    reason = system_folder_reason(output_dir)
    if reason is not None:
        raise WorkflowConfigError(
            f"output_dir: '{output_dir}' cannot hold a run's outputs: {reason}; point output_dir at a folder of its "
            "own (e.g. 'output')"
        )
    if output_dir.is_dir():
        refuse_foreign(output_dir, foreign_files(output_dir, STANDARD_FILES), WorkflowConfigError)


def _check_writable(path: Path, key: str) -> None:
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


def _check_input_model(workflow: WorkflowConfig) -> OliveModelHandler:
    """The model type's own check (files there and of the right kind), before the cache or any output is made."""
    model = workflow.input_model.create_handler()
    try:
        model.validate()
    except ModelLoadError as exc:
        raise WorkflowConfigError(exc.reason, owner=exc.owner or "input_model") from exc
    return model


def _check_plugins(workflow: WorkflowConfig) -> None:
    """What the search needs installed: Ray for the ray executor, and the sampler it names."""
    strategy = workflow.search_strategy
    if strategy is None:
        return
    if strategy.executor.type == "ray":
        try:
            found = importlib.util.find_spec("ray") is not None
        except ValueError:  # a module set to None in sys.modules: imports of it fail
            found = False
        if not found:
            raise WorkflowConfigError(RAY_MISSING)
    sampler_factory(strategy.sampler)


def _bind_data_configs(workflow: WorkflowConfig, model: OliveModelHandler) -> WorkflowConfig:
    """Every data config, the workflow's and those written inside a pass, with what its container takes from the
    input model filled in where the config leaves it out (a text container's tokenizer: the model's folder)."""
    model_path = model.model_path
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
