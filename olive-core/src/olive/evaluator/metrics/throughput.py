"""``throughput``: samples per second, timed as :mod:`~olive.evaluator.metrics.latency` times a run."""

from __future__ import annotations

from typing import Any, ClassVar

from olive.evaluator.metrics.latency import LATENCY_SUB_TYPES, RATIO_SUB_TYPES, LatencyMetric


class ThroughputMetric(LatencyMetric):
    """The batch's samples divided by the seconds of one run; ``ratio_*`` is the reference's time over the
    model's, so higher is better throughout."""

    name = "throughput"
    sub_types: ClassVar = dict.fromkeys(LATENCY_SUB_TYPES + RATIO_SUB_TYPES, True)
    unit = "samples/s"

    def per_run(self, seconds: Any, batch: int) -> Any:
        return batch / seconds

    def ratio(self, relative: Any) -> Any:
        import numpy as np

        return 1.0 / np.maximum(relative, 1e-12)
