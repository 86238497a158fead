"""``size_on_disk``: the bytes of the model's files (its folder's, for a model in a folder)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from olive.evaluator.metrics.base import Measured, MetricType
from olive.evaluator.metrics.spec import Metric

if TYPE_CHECKING:
    from olive.evaluator.metrics.run import MetricRun
    from olive.model.handler import OliveModelHandler


class SizeOnDiskMetric(MetricType):
    """``bytes``: a handler's own ``size_on_disk`` (weights in external data count), else the files' sizes."""

    name = "size_on_disk"
    sub_types: ClassVar = {"bytes": False}
    default_sub_type = "bytes"

    def measure(self, run: MetricRun, metric: Metric) -> Measured:
        return {"bytes": float(size_on_disk(run.model))}, {"model_path": str(run.model.model_path)}


def size_on_disk(model: OliveModelHandler) -> int:
    size = getattr(model, "size_on_disk", None)
    if size is not None:
        return int(size)
    path = Path(str(model.model_path))
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size
