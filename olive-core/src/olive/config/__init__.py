"""The workflow config, one module per section: attrs classes whose rules and defaults sit on their fields,
structured by one cattrs converter (:mod:`olive.config.structure`) into errors that name the JSON path.

Checks that need the world (folders, files, installed plugins) run later, in :mod:`olive.workflows.prepare`.
"""

from olive.config.engine import CacheConfig, EngineConfig
from olive.config.evaluator import EvaluatorConfig
from olive.config.input_model import InputModelConfig
from olive.config.passes import PassSpec
from olive.config.search import ExecutorConfig, SearchStrategyConfig
from olive.config.systems import AcceleratorConfig, SystemConfig
from olive.config.workflow import WorkflowConfig

__all__ = [
    "AcceleratorConfig",
    "CacheConfig",
    "EngineConfig",
    "EvaluatorConfig",
    "ExecutorConfig",
    "InputModelConfig",
    "PassSpec",
    "SearchStrategyConfig",
    "SystemConfig",
    "WorkflowConfig",
]
