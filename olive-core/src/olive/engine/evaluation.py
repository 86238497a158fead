"""Evaluating models through the workflow's evaluator, with results cached by model content."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.engine.keys import eval_key

if TYPE_CHECKING:
    from olive.cache.store import CacheStore
    from olive.workflows.config import EvaluatorConfig

logger = logging.getLogger(__name__)


def _metric_json(metric: Any) -> Any:
    from olive.passes.pass_config import to_json_value

    if hasattr(metric, "to_json"):
        return metric.to_json()
    if isinstance(getattr(metric, "json", None), dict):
        return metric.json
    return to_json_value(metric)


def result_to_json(result: Any) -> dict[str, dict[str, Any]]:
    """``{"metric-sub_type": {"value", "priority", "higher_is_better"}}``."""
    data = result.to_json() if hasattr(result, "to_json") else dict(result)
    return {key: dict(value) if isinstance(value, dict) else {"value": value} for key, value in data.items()}


def result_from_json(data: dict[str, Any]) -> Any:
    from olive.evaluator import result as metric_module

    result_class = metric_module.MetricResult
    if hasattr(result_class, "from_json"):
        return result_class.from_json(data)
    sub = metric_module.SubMetricResult
    return result_class({key: sub(**value) for key, value in data.items()})


class ModelEvaluator:
    """The workflow's evaluator bound to a cache and the target's execution providers."""

    def __init__(
        self,
        config: EvaluatorConfig,
        data_configs: dict[str, Any],
        base_dir: Path,
        execution_providers: list[str],
        cache: CacheStore | None,
        user_script: Path | None = None,
    ):
        from olive.evaluator.evaluator import OliveEvaluator

        self.config = config
        self.metrics = list(config.metrics)
        self.execution_providers = list(execution_providers)
        self.cache = cache
        script = config.user_script or user_script
        self.evaluator = OliveEvaluator(self.metrics, data_configs, str(script) if script else None, base_dir)
        used_data = sorted({m.data_config for m in self.metrics if getattr(m, "data_config", None)})
        self._payload = {
            "metrics": [_metric_json(m) for m in self.metrics],
            "data": {name: _metric_json(data_configs[name]) for name in used_data if name in data_configs},
            "user_script": self._script_hash(script),
            "execution_providers": self.execution_providers,
        }

    @staticmethod
    def _script_hash(script: Path | None) -> str | None:
        if script is None:
            return None
        from olive.cache.store import hash_file

        return hash_file(script)

    def evaluate(
        self, model: Any, model_hash: str, reference_model: Any = None, reference_hash: str | None = None
    ) -> tuple[Any, bool]:
        """``(MetricResult, cached)``."""
        key = eval_key(model_hash, model.to_json(), {**self._payload, "reference": reference_hash})
        if self.cache is not None:
            stored = self.cache.get_eval(key)
            if stored is not None:
                return result_from_json(stored["result"]), True
        result = self.evaluator.evaluate(
            model, reference_model=reference_model, execution_providers=self.execution_providers
        )
        if self.cache is not None:
            self.cache.put_eval(key, {"result": result_to_json(result)})
        return result, False

    def objectives(self) -> list[dict[str, Any]]:
        """The metric keys with priority > 0, in priority order."""
        found = []
        for metric in self.metrics:
            for sub in metric.sub_types:
                if sub.priority and sub.priority > 0:
                    found.append(
                        {
                            "key": f"{metric.name}-{sub.name}",
                            "priority": sub.priority,
                            "higher_is_better": sub.higher_is_better,
                        }
                    )
        return sorted(found, key=lambda o: o["priority"])

    def needs_baseline(self) -> bool:
        for metric in self.metrics:
            for sub in metric.sub_types:
                goal = getattr(sub, "goal", None)
                if goal is not None and goal.type != "threshold":
                    return True
            if metric.type == "agreement":
                return False
        return False
