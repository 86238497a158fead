"""Evaluation results: one value per ``"metric_name-sub_type"`` key."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

#: metadata key under which a metric records ``{sub type: relative spread}`` (paired timings:
#: olive.measure.timing.ratio_spread), which the evaluator copies onto each value as :attr:`SubMetricResult.noise`
RATIO_NOISE = "ratio_noise"
#: spreads read back at or past this (or not finite) are taken as not measured
MAX_NOISE = 1e6


@attrs.frozen
class SubMetricResult:
    """One measured value, with how it ranks (``priority`` > 0 makes it an objective) and its direction."""

    value: float
    priority: int = -1
    higher_is_better: bool = True
    #: how far ``value`` could move by chance, as a fraction of it (paired ``ratio_*`` timings: the larger side of
    #: its 95% interval when the timed rounds are resampled); 0 when not measured. Ranking ties values closer
    #: than their spreads allow.
    noise: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "value": self.value,
            "priority": self.priority,
            "higher_is_better": self.higher_is_better,
        }
        if self.noise > 0:
            out["noise"] = self.noise
        return out


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
                    float(item["value"]),
                    int(item.get("priority", -1)),
                    bool(item.get("higher_is_better", True)),
                    _noise(item.get("noise")),
                )
            else:
                values[key] = SubMetricResult(float(item))
        return cls(values, dict(data.get("__metadata__") or {}))

    def __repr__(self) -> str:
        return f"MetricResult({ {k: v.value for k, v in self.items()} })"


def _noise(value: Any) -> float:
    # Read back from the evaluation cache or a footprint: anything but a finite non-negative number counts as
    # unmeasured. A spread past 1 (100%) is real on a loaded machine: the rounds then tell nothing apart.
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < MAX_NOISE:
        return 0.0
    return float(value)


def recorded_noise(metadata: Any, sub_type: str) -> float:
    """The spread a metric's ``metadata`` records for ``sub_type`` under :data:`RATIO_NOISE` (0 if none: plugin
    metrics record what they like)."""
    spreads = metadata.get(RATIO_NOISE) if isinstance(metadata, Mapping) else None
    return _noise(spreads.get(sub_type)) if isinstance(spreads, Mapping) else 0.0
