"""Evaluating models through the workflow's evaluator, with results cached by model content."""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.cache.store import CacheStore, can_lock, hash_file
from olive.engine.keys import eval_key
from olive.engine.memory import release_freed_memory
from olive.engine.results import EvaluationResult
from olive.evaluator.evaluator import OliveEvaluator
from olive.evaluator.goals import objectives_of
from olive.evaluator.result import joint_key
from olive.exceptions import OliveError
from olive.hardware.accelerator import DEFAULT_CPU_ACCELERATOR

if TYPE_CHECKING:
    from olive.config import EvaluatorConfig, WorkflowConfig
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import OliveModelHandler

logger = logging.getLogger(__name__)

TIMING_METRICS = ("latency", "throughput")


def check_evaluator(workflow: WorkflowConfig) -> None:
    """Import the evaluator's user scripts and check every function its metrics name (before any pass runs).

    Raises :class:`~olive.exceptions.WorkflowConfigError` naming the metric's JSON path.
    """
    if workflow.evaluator is None:
        return
    script = workflow.evaluator.user_script or workflow.user_script
    evaluator = OliveEvaluator(
        list(workflow.evaluator.metrics), workflow.data_configs, str(script) if script else None, workflow.base_dir
    )
    evaluator.validate()


class ModelEvaluator:
    """The workflow's evaluator bound to a cache and the target's execution providers.

    :param cache: where evaluation results are kept (None: every evaluation measures).
    :param lock_cache: where the measurement lock lives (the run's cache, even when results are not kept).
    """

    def __init__(
        self,
        config: EvaluatorConfig,
        data_configs: dict[str, Any],
        base_dir: Path,
        execution_providers: list[str],
        cache: CacheStore | None,
        user_script: Path | None = None,
        lock_cache: CacheStore | None = None,
        target: AcceleratorSpec | None = None,
    ):
        self.config = config
        # Sessions of a model whose settings name no provider run on the target.
        self.target_settings = target.inference_settings() if target is not None else None
        self.lock_cache = lock_cache or cache
        self.timed = any(m.type in TIMING_METRICS for m in config.metrics)
        self.metrics = list(config.metrics)
        self.execution_providers = list(execution_providers)
        self.cache = cache
        script = config.user_script or user_script
        self.evaluator = OliveEvaluator(self.metrics, data_configs, str(script) if script else None, base_dir)
        used_data = sorted({m.data_config for m in self.metrics if m.data_config})
        self._payload = {
            "metrics": [m.json for m in self.metrics],
            # The content hash covers the data files and scripts, so editing an .npz re-measures.
            "data": {name: data_configs[name].content_hash() for name in used_data if name in data_configs},
            "user_script": hash_file(script) if script is not None else None,
            "execution_providers": self.execution_providers,
        }
        if target is not None and target.cache_key() != str(DEFAULT_CPU_ACCELERATOR):
            self._payload["target"] = self.target_settings

    @classmethod
    def for_workflow(
        cls,
        workflow: WorkflowConfig,
        execution_providers: list[str],
        cache: CacheStore,
        keep_results: bool,
        target: AcceleratorSpec | None = None,
    ) -> ModelEvaluator | None:
        """The workflow's evaluator (None when it has none): it measures under ``cache``'s lock and keeps its
        results in ``cache`` when ``keep_results``; models whose settings name no provider run on ``target``."""
        if workflow.evaluator is None:
            return None
        return cls(
            workflow.evaluator,
            workflow.data_configs,
            workflow.base_dir,
            execution_providers,
            cache if keep_results else None,
            workflow.user_script,
            lock_cache=cache,
            target=target,
        )

    def evaluate(
        self,
        model: OliveModelHandler,
        model_hash: str,
        reference_model: OliveModelHandler,
        reference_hash: str,
    ) -> EvaluationResult:
        """Measure ``model`` (outputs compared with ``reference_model``'s), or find the measurement in the cache.

        An :class:`~olive.exceptions.OliveError` while measuring is the result's ``error``. ``where`` is
        ``{"measured_on": host, "measured_alone": bool}`` when the metrics include latency or throughput:
        timing runs hold this host's measurement lock exclusively, so no other pass run or evaluation of a run
        sharing this cache works on the machine meanwhile (``measured_alone`` is False only where the lock
        cannot be taken).
        """
        start = time.perf_counter()
        key = eval_key(model_hash, model.to_json(), {**self._payload, "reference": reference_hash})
        expected = [joint_key(metric.name, sub.name) for metric in self.metrics for sub in metric.sub_types]
        stored = self.cache.get_eval(key, expected) if self.cache is not None else None
        if stored is not None:
            where = dict(stored.get("where") or {})
            placement = dict(stored.get("placement") or {})
            samples = _sample_counts(stored.get("samples"))
            batch_sizes = _served(stored.get("batch_sizes"))
            return EvaluationResult(
                stored["result"],
                True,
                where,
                time.perf_counter() - start,
                placement=placement,
                samples=samples,
                batch_sizes=batch_sizes,
            )
        where: dict[str, Any] = {}
        try:
            with self._measuring(where):
                result = self.evaluator.evaluate(
                    model,
                    reference_model=reference_model,
                    execution_providers=self.execution_providers,
                    target_settings=self.target_settings,
                )
        except OliveError as exc:
            return EvaluationResult(None, duration=time.perf_counter() - start, error=str(exc), exception=exc)
        finally:
            release_freed_memory()
        metrics = result.to_json()
        placement = _placement(result.metadata)
        samples = _sample_counts(
            {name: info.get("num_samples") for name, info in result.metadata.items() if isinstance(info, dict)}
        )
        batch_sizes = _served(result.metadata)
        if self.cache is not None:
            entry = {"result": metrics, "where": where, "placement": placement, "samples": samples}
            self.cache.put_eval(key, {**entry, "batch_sizes": batch_sizes})
        return EvaluationResult(
            metrics,
            False,
            where,
            time.perf_counter() - start,
            placement=placement,
            samples=samples,
            batch_sizes=batch_sizes,
        )

    def release(self) -> None:
        """Let go of what the evaluations of a search share (the reference model's outputs)."""
        self.evaluator.release()

    @contextlib.contextmanager
    def _measuring(self, where: dict[str, Any]) -> Iterator[None]:
        if self.lock_cache is None:
            if self.timed:
                where.update(measured_on=socket.gethostname(), measured_alone=False)
            yield
            return
        with self.lock_cache.host_lock(shared=not self.timed):
            if self.timed:
                where.update(measured_on=socket.gethostname(), measured_alone=can_lock())
            yield

    def objectives(self) -> list[dict[str, Any]]:
        """``{"key", "priority", "higher_is_better", "tolerance", "relative_tolerance"}`` of each sub metric with
        priority > 0, in priority order."""
        subs = {joint_key(metric.name, sub.name): sub for metric in self.metrics for sub in metric.sub_types}
        return [
            {
                "key": key,
                "priority": subs[key].priority,
                "higher_is_better": subs[key].higher_is_better,
                "tolerance": subs[key].tolerance,
                "relative_tolerance": subs[key].relative_tolerance,
            }
            for key in objectives_of(self.metrics)
        ]

    def needs_baseline(self) -> bool:
        """Whether a goal is relative to the input model, whose result must then be measured first."""
        return any(
            sub.goal is not None and sub.goal.type != "threshold" for metric in self.metrics for sub in metric.sub_types
        )


def _sample_counts(value: Any) -> dict[str, int]:
    """``{metric name: samples}`` from an evaluation's metadata or a cache entry (read from disk: untrusted)."""
    if not isinstance(value, dict):
        return {}
    return {
        str(name): count
        for name, count in value.items()
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0
    }


def _served(value: Any) -> dict[str, dict[str, Any]]:
    """``{metric name: {"served", "worst_at", "by_batch_size"}}`` of the metrics measured at served batch sizes,
    from an evaluation's metadata or a cache entry (read from disk: untrusted; anything malformed is left out)."""
    if not isinstance(value, dict):
        return {}
    served: dict[str, dict[str, Any]] = {}
    for name, info in value.items():
        if not isinstance(info, dict):
            continue
        sizes = info.get("served_batch_sizes", info.get("served"))
        if not isinstance(sizes, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in sizes):
            continue
        worst = info.get("worst_at_batch_size", info.get("worst_at"))
        by_size = info.get("by_batch_size")
        served[str(name)] = {
            "served": list(sizes),
            "worst_at": dict(worst) if isinstance(worst, dict) else {},
            "by_batch_size": dict(by_size) if isinstance(by_size, dict) else {},
            **({"largest_batch": dict(info["largest_batch"])} if isinstance(info.get("largest_batch"), dict) else {}),
        }
    return served


def _placement(metadata: dict[str, Any]) -> dict[str, Any]:
    """Which provider took the model's nodes, from the first metric whose session was on a plugin provider."""
    for info in metadata.values():
        if isinstance(info, dict) and "nodes_by_provider" in info:
            keys = ("providers", "nodes_by_provider", "nodes_not_taken", "nodes_not_taken_count")
            return {k: info[k] for k in keys if k in info}
    return {}
