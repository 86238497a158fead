"""Evaluation results: one value per ``"metric_name-sub_type"`` key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs


@attrs.frozen
class SubMetricResult:
    """One measured value, with how it ranks (``priority`` > 0 makes it an objective) and its direction."""

    value: float
    priority: int = -1
    higher_is_better: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "priority": self.priority, "higher_is_better": self.higher_is_better}


def joint_key(metric_name: str, sub_type: str) -> str:
    return f"{metric_name}-{sub_type}"


class MetricResult(dict[str, SubMetricResult]):
    """``{"latency-avg": SubMetricResult(...), ...}`` plus ``metadata`` about how each metric was measured.

    ``metadata[metric_name]`` records e.g. the execution providers and the ``inference_settings`` the
    session was really built with, and how many samples were used.
    """

    def __init__(self, values: Mapping[str, SubMetricResult] | None = None, metadata: dict[str, Any] | None = None):
        super().__init__(values or {})
        self.metadata: dict[str, Any] = dict(metadata or {})

    def to_json(self, include_metadata: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {key: sub.to_json() for key, sub in self.items()}
        if include_metadata and self.metadata:
            out["__metadata__"] = self.metadata
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MetricResult:
        values = {}
        for key, item in data.items():
            if key == "__metadata__":
                continue
            if isinstance(item, Mapping):
                values[key] = SubMetricResult(
                    float(item["value"]), int(item.get("priority", -1)), bool(item.get("higher_is_better", True))
                )
            else:
                values[key] = SubMetricResult(float(item))
        return cls(values, dict(data.get("__metadata__") or {}))

    def __repr__(self) -> str:
        return f"MetricResult({ {k: v.value for k, v in self.items()} })"
