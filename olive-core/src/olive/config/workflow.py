"""The whole workflow, as the engine receives it: every section structured, paths absolute, references
resolved (:func:`olive.workflows.config.load_workflow_config` builds it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from olive.cache.remote import RemoteCacheConfig
from olive.cache.size import SizeLimit
from olive.config.evaluator import EvaluatorConfig
from olive.config.input_model import InputModelConfig
from olive.config.passes import PassSpec
from olive.config.search import SearchStrategyConfig
from olive.config.systems import SystemConfig
from olive.data.config import DataConfig


@attrs.frozen
class WorkflowConfig:
    """A validated workflow. Paths are absolute; references (evaluator, data configs) exist.

    The engine keys' defaults are declared once, on :mod:`olive.config.engine`'s sections; here they are
    required (keyword-only), as the loader always fills them.
    """

    input_model: InputModelConfig
    passes: dict[str, list[PassSpec]]
    base_dir: Path
    workflow_id: str = "default_workflow"
    systems: dict[str, SystemConfig] = attrs.Factory(dict)
    data_configs: dict[str, DataConfig] = attrs.Factory(dict)
    evaluators: dict[str, EvaluatorConfig] = attrs.Factory(dict)
    search_strategy: SearchStrategyConfig | None = None
    evaluator: EvaluatorConfig | None = None
    host: SystemConfig | None = None
    target: SystemConfig | None = None
    user_script: Path | None = None
    script_dir: Path | None = None
    source: Path | None = None
    raw: dict[str, Any] = attrs.Factory(dict)
    # Engine keys (olive.config.engine)
    cache_dir: Path = attrs.field(kw_only=True)
    cache_max_size: SizeLimit | None = attrs.field(kw_only=True)
    clean_cache: bool = attrs.field(kw_only=True)
    clean_evaluation_cache: bool = attrs.field(kw_only=True)
    remote_cache: RemoteCacheConfig | None = attrs.field(kw_only=True)
    output_dir: Path = attrs.field(kw_only=True)
    evaluate_input_model: bool = attrs.field(kw_only=True)
    log_severity_level: int = attrs.field(kw_only=True)
    plot_pareto_frontier: bool = attrs.field(kw_only=True)
    no_artifacts: bool = attrs.field(kw_only=True)

    @property
    def search_enabled(self) -> bool:
        return self.search_strategy is not None
