"""Evaluating models through the workflow's evaluator, with results cached by model content."""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.engine.keys import eval_key

if TYPE_CHECKING:
    from olive.cache.store import CacheStore
    from olive.workflows.config import EvaluatorConfig

logger = logging.getLogger(__name__)

TIMING_METRICS = ("latency", "throughput")


def _can_lock() -> bool:
    try:
        import fcntl  # noqa: F401
    except ImportError:  # pragma: no cover - not on POSIX
        return False
    return True


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


def _data_hash(data_config: Any) -> Any:
    if hasattr(data_config, "content_hash"):
        return data_config.content_hash()
    return _metric_json(data_config)


def check_evaluator(workflow: Any) -> None:
    """Import the evaluator's user scripts and check every function its metrics name (before any pass runs).

    Raises :class:`~olive.exceptions.WorkflowConfigError` naming the metric's JSON path.
    """
    if workflow.evaluator is None:
        return
    from olive.evaluator.evaluator import OliveEvaluator

    script = workflow.evaluator.user_script or workflow.user_script
    evaluator = OliveEvaluator(
        list(workflow.evaluator.metrics), workflow.data_configs, str(script) if script else None, workflow.base_dir
    )
    evaluator.validate()


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
        lock_cache: CacheStore | None = None,
    ):
        from olive.evaluator.evaluator import OliveEvaluator

        self.config = config
        # Where the measurement lock lives (the run's cache, even when evaluations are not cached).
        self.lock_cache = lock_cache or cache
        self.timed = any(m.type in TIMING_METRICS for m in config.metrics)
        self.metrics = list(config.metrics)
        self.execution_providers = list(execution_providers)
        self.cache = cache
        script = config.user_script or user_script
        self.evaluator = OliveEvaluator(self.metrics, data_configs, str(script) if script else None, base_dir)
        used_data = sorted({m.data_config for m in self.metrics if getattr(m, "data_config", None)})
        self._payload = {
            "metrics": [_metric_json(m) for m in self.metrics],
            # The content hash covers the data files and scripts, so editing an .npz re-measures.
            "data": {name: _data_hash(data_configs[name]) for name in used_data if name in data_configs},
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
    ) -> tuple[Any, bool, dict[str, Any]]:
        """``(MetricResult, cached, where)``.

        ``where`` is ``{"measured_on": host, "measured_alone": bool}`` when the metrics include latency or
        throughput (empty otherwise): timing runs hold this host's measurement lock exclusively, so no
        other pass run or evaluation of a run sharing this cache works on the machine meanwhile
        (``measured_alone`` is False only where the lock cannot be taken).
        """
        key = eval_key(model_hash, model.to_json(), {**self._payload, "reference": reference_hash})
        if self.cache is not None:
            stored = self.cache.get_eval(key)
            if stored is not None:
                return result_from_json(stored["result"]), True, dict(stored.get("where") or {})
        where: dict[str, Any] = {}
        with self._measuring(where):
            result = self.evaluator.evaluate(
                model, reference_model=reference_model, execution_providers=self.execution_providers
            )
        if self.cache is not None:
            self.cache.put_eval(key, {"result": result_to_json(result), "where": where})
        return result, False, where

    @contextlib.contextmanager
    def _measuring(self, where: dict[str, Any]) -> Iterator[None]:
        if self.lock_cache is None:
            if self.timed:
                where.update(measured_on=socket.gethostname(), measured_alone=False)
            yield
            return
        from olive.engine.trial import host_lock_name

        with self.lock_cache.lock(host_lock_name(), shared=not self.timed):
            if self.timed:
                where.update(measured_on=socket.gethostname(), measured_alone=_can_lock())
            yield

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
