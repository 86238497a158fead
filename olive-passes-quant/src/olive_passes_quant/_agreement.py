"""Accuracy targets on output agreement: which measures a target may name, and how far a model is from it.

The measures are :mod:`olive.measure`'s agreement scores, the numbers the engine's ``agreement`` metric
reports: each sample's outputs (optionally pooled, e.g. the mean over tokens of a sentence embedding) form
one vector; ``cosine_mean`` and ``cosine_min`` are the mean and the worst cosine similarity over samples,
``max_abs_diff`` the largest absolute difference of any element.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from olive.exceptions import PassParamError, closest_match_hint
from olive.measure import AGREEMENT_SCORES, POOLINGS

#: The agreement measures a target may name, and whether a higher value is better. ``top1`` is left out:
#: the guard compares whole (pooled) output vectors, where an argmax means little.
AGREEMENT_METRICS: dict[str, bool] = {
    name: AGREEMENT_SCORES[name] for name in ("cosine_mean", "cosine_min", "max_abs_diff")
}
POOLING_CHOICES = ("none", *POOLINGS)


class Target:
    """One accuracy target: ``metric`` (an agreement measure) must reach ``value``."""

    def __init__(self, metric: str, value: float):
        self.metric = metric
        self.value = float(value)
        self.higher_is_better = AGREEMENT_METRICS[metric]

    def met(self, measured: Mapping[str, float]) -> bool:
        got = measured[self.metric]
        return got >= self.value if self.higher_is_better else got <= self.value

    def shortfall(self, measured: Mapping[str, float]) -> float:
        """How far from the target (0 when met). Cosines in absolute units, differences relative to the target."""
        got = measured[self.metric]
        if self.higher_is_better:
            return max(0.0, self.value - got)
        return max(0.0, (got - self.value) / max(self.value, 1e-12))

    def describe(self) -> str:
        return f"{self.metric} {'>=' if self.higher_is_better else '<='} {self.value:g}"


def parse_targets(
    metrics: str | Sequence[str], values: float | Sequence[float], owner: str | None = None
) -> list[Target]:
    """Pair ``target_metric`` with ``target_value`` (a single value or lists of equal length)."""
    metric_list = [metrics] if isinstance(metrics, str) else list(metrics)
    value_list = [values] if isinstance(values, int | float) else list(values)

    def reject(reason: str) -> PassParamError:
        return PassParamError(reason, params=("target_metric", "target_value"), owner=owner)

    if not metric_list:
        raise reject(f"target_metric is empty; name at least one of {', '.join(AGREEMENT_METRICS)}")
    if len(metric_list) != len(value_list):
        raise reject(
            f"target_metric has {len(metric_list)} entries but target_value has {len(value_list)}; give one value "
            "per metric (e.g. target_metric ['cosine_mean', 'cosine_min'], target_value [0.99, 0.97])"
        )
    targets = []
    for metric, value in zip(metric_list, value_list, strict=True):
        if metric not in AGREEMENT_METRICS:
            raise reject(
                f"target_metric '{metric}' is unknown{closest_match_hint(str(metric), AGREEMENT_METRICS)}; "
                f"use {', '.join(AGREEMENT_METRICS)}"
            )
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise reject(f"target_value for '{metric}' must be a number, got {value!r}")
        if metric.startswith("cosine") and not -1.0 <= value <= 1.0:
            raise reject(f"target_value {value} for '{metric}' is not a cosine (between -1 and 1)")
        if metric == "max_abs_diff" and value < 0:
            raise reject(f"target_value {value} for 'max_abs_diff' must not be negative")
        targets.append(Target(metric, value))
    return targets


def total_shortfall(targets: Sequence[Target], measured: Mapping[str, float]) -> float:
    return sum(t.shortfall(measured) for t in targets)


def check_pooling(pooling: str | None, mask_input: str | None, owner: str | None = None) -> None:
    if pooling is not None and pooling not in POOLING_CHOICES:
        raise PassParamError(
            f"pooling '{pooling}' is unknown{closest_match_hint(str(pooling), POOLING_CHOICES)}; "
            f"use {', '.join(POOLING_CHOICES)}",
            params="pooling",
            owner=owner,
        )
    if mask_input and pooling != "mean":
        raise PassParamError(
            f"mask_input '{mask_input}' only applies with pooling 'mean'; set pooling",
            params=("mask_input", "pooling"),
            owner=owner,
        )


def target_measures(measured: Mapping[str, float]) -> dict[str, float]:
    """The measures targets can name, from a full set of agreement scores."""
    return {name: measured[name] for name in AGREEMENT_METRICS}


def rounded(measured: Mapping[str, float]) -> dict[str, float]:
    """Agreement values rounded for attributes and messages (enough digits to tell 0.9999 from 0.99999)."""
    return {key: round(float(value), 6) for key, value in measured.items()}
