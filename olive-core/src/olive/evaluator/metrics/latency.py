"""``latency``: milliseconds per run of the model, and ``ratio_*``, its runs relative to the input model's.

The two models are timed in alternating rounds and each run of the model is divided by the reference's
median in its round, so a change in machine speed during a search moves both alike and cancels out of the
ratio (1.0 for the input model itself).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.data.feeds import check_feeds
from olive.evaluator.metrics.base import Measured, MetricType
from olive.evaluator.metrics.spec import Metric
from olive.evaluator.result import RATIO_NOISE
from olive.measure import timing

if TYPE_CHECKING:
    from olive.evaluator.metrics.run import MetricRun
    from olive.model.handler import OliveModelHandler

LATENCY_SUB_TYPES = ("avg", "min", "max", "p50", "p75", "p90", "p95", "p99", "p999")
RATIO_PREFIX = "ratio_"
RATIO_SUB_TYPES = tuple(RATIO_PREFIX + name for name in LATENCY_SUB_TYPES)


class LatencyMetric(MetricType):
    """Time per run on the metric's first batch (synthetic inputs without data), after ``warmup_num`` runs."""

    name = "latency"
    sub_types: ClassVar = dict.fromkeys(LATENCY_SUB_TYPES + RATIO_SUB_TYPES, False)
    default_sub_type = "avg"
    # The same model's p50 moved by up to 4.1% between repeated evaluations on 2 cores (benchmarks/README.md,
    # "Ranking tolerance"): closer values are ties and the next priority decides.
    default_tolerance = 0.05
    relative_tolerance = True
    unit = "ms"

    def per_run(self, seconds: Any, batch: int) -> Any:
        """What one run measures, from its seconds (floored above zero)."""
        return seconds * 1000.0

    def ratio(self, relative: Any) -> Any:
        """The ``ratio_*`` values from the model's runs divided by the reference's."""
        return relative

    def measure(self, run: MetricRun, metric: Metric) -> Measured:
        import numpy as np

        feeds, _ = next(iter(run.batches(metric, run.model)))
        first = next(iter(feeds.values())) if feeds else None
        batch = len(first) if first is not None and first.ndim else 1
        io_bind = bool(metric.user_config.get("io_bind"))
        paired = not _is_itself(run, metric) and any(s.name.startswith(RATIO_PREFIX) for s in metric.sub_types)
        infer = _infer(run, run.model, metric, feeds, io_bind)
        pace = {"warmup": metric.warmup_num, "sleep_s": metric.sleep_num}
        if paired:
            ref_name = f"reference model '{Path(run.reference.model_path).name}'"
            ref_feeds = check_feeds(
                feeds, run.reference.get_io_config(), f"metric '{metric.name}'", ref_name, cast=True
            )
            ref_infer = _infer(run, run.reference, metric, ref_feeds, io_bind)
            per_round = timing.paired_round_size(metric.repeat_test_num)
            rounds = timing.interleaved_runs([infer, ref_infer], metric.repeat_test_num, per_round=per_round, **pace)
            seconds = [t for times in rounds for t in times[0]]
        else:
            rounds, seconds = None, timing.timed_runs(infer, metric.repeat_test_num, **pace)

        def measured(times: Any) -> Any:
            return self.per_run(np.maximum(np.asarray(times, dtype=np.float64), 1e-12), batch)

        stats = timing.latency_summary(measured(seconds))
        extra: dict[str, Any] = {}
        if rounds is not None:
            ref_stats = timing.latency_summary(measured([t for times in rounds for t in times[1]]))
            ratios = self.ratio(timing.ratios_to_reference(rounds))
            stats.update({RATIO_PREFIX + k: v for k, v in timing.latency_summary(ratios).items()})
            extra["paired_with"] = {"model": str(run.reference.model_path), **ref_stats}
            # What the ranking may treat as noise: two candidates closer than their spreads allow tie.
            spreads = timing.ratio_spread(timing.ratios_by_round(rounds), self.ratio)
            extra[RATIO_NOISE] = {RATIO_PREFIX + k: v for k, v in spreads.items()}
        else:
            # The reference model against itself (or no reference given): the ratio is 1 by definition.
            stats.update({RATIO_PREFIX + k: 1.0 for k in list(stats)})
        meta = run.metadata(
            metric,
            run.model,
            unit=self.unit,
            batch_size=batch,
            warmup_num=metric.warmup_num,
            repeat_test_num=metric.repeat_test_num,
            io_bind=io_bind,
            synthetic_inputs=run.data_config(metric) is None,
            **extra,
        )
        return stats, meta


def _is_itself(run: MetricRun, metric: Metric) -> bool:
    # The input model evaluated in a worker process is another handler of the same file: still itself.
    # (The same file on another target is not itself: its sessions run elsewhere.)
    return run.reference is run.model or (
        str(run.reference.model_path) == str(run.model.model_path)
        and run.settings_for(run.reference, metric) == run.settings_for(run.model, metric)
    )


def _infer(run: MetricRun, model: OliveModelHandler, metric: Metric, feeds: dict[str, Any], io_bind: bool) -> Any:
    """One timed unit of work: a run of ``model`` on ``feeds``; failures name the metric and the model."""
    session, _ = run.session(model, metric)
    return timing.session_runner(
        session, feeds, io_bind, what=f"model '{model.model_path}'", owner=f"metric '{metric.name}'"
    )
