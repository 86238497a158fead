"""How closely a quantized model's outputs agree with the float model's, and accuracy targets on that.

The measures match the engine's ``agreement`` metric: each sample's outputs (optionally pooled, e.g. the
mean over tokens of a sentence embedding) form one vector; ``cosine_mean`` and ``cosine_min`` are the mean
and the worst cosine similarity over samples, ``max_abs_diff`` the largest absolute difference of any
element.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from olive.exceptions import OliveError, PassConfigError, PassParamError, closest_match_hint

if TYPE_CHECKING:
    import numpy as np

#: Agreement measures and whether a higher value is better.
AGREEMENT_METRICS: dict[str, bool] = {"cosine_mean": True, "cosine_min": True, "max_abs_diff": False}
POOLING_CHOICES = ("none", "mean", "cls")


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


class OutputComparer:
    """Turns a batch of model outputs into one vector per sample, the way the targets compare them.

    :param output_names: compare only these outputs (default: all of them, concatenated per sample).
    :param pooling: ``"mean"`` averages over axis 1 (tokens), weighted by ``mask_input`` when given;
        ``"cls"`` takes the first token; ``"none"``/None compares the outputs as they are.
    :param pooled_output_func: ``f(outputs: dict[str, ndarray], inputs: dict[str, ndarray]) -> ndarray``
        with samples on the first axis; replaces ``output_names`` and ``pooling``.
    """

    def __init__(
        self,
        output_names: Sequence[str] | None = None,
        pooling: str | None = None,
        mask_input: str | None = None,
        pooled_output_func: Callable[..., Any] | None = None,
    ):
        self.output_names = list(output_names) if output_names else None
        self.pooling = None if pooling in (None, "none") else pooling
        self.mask_input = mask_input
        self.pooled_output_func = pooled_output_func

    def check(self, model_outputs: Sequence[str], model_inputs: Sequence[str], where: str) -> None:
        """Names that do not exist in the model are config errors, caught before any quantization runs."""
        for name in self.output_names or []:
            if name not in model_outputs:
                raise PassConfigError(
                    f"{where}: output_name '{name}' is not an output of the model"
                    f"{closest_match_hint(name, model_outputs)}; outputs: {', '.join(model_outputs)}"
                )
        if self.mask_input and self.mask_input not in model_inputs:
            raise PassConfigError(
                f"{where}: mask_input '{self.mask_input}' is not an input of the model"
                f"{closest_match_hint(self.mask_input, model_inputs)}; inputs: {', '.join(model_inputs)}"
            )

    def vectors(self, outputs: Mapping[str, np.ndarray], feeds: Mapping[str, np.ndarray]) -> np.ndarray:
        """``[samples, features]`` float64 vectors of one batch."""
        import numpy as np

        if self.pooled_output_func is not None:
            func = self.pooled_output_func
            try:
                pooled = np.asarray(func(dict(outputs), dict(feeds)), dtype=np.float64)
            except Exception as exc:
                raise OliveError(
                    f"pooled_output_func '{getattr(func, '__name__', func)}' failed ({type(exc).__name__}: {exc}); "
                    "it is called as f(outputs: dict of arrays, inputs: dict of arrays)"
                ) from exc
            samples = len(next(iter(feeds.values())))
            if pooled.ndim == 0 or pooled.shape[0] != samples:
                raise OliveError(
                    f"pooled_output_func '{getattr(func, '__name__', func)}' returned shape {list(pooled.shape)}; "
                    f"it must put the batch's {samples} samples on the first axis"
                )
            return pooled.reshape(samples, -1)
        names = self.output_names or list(outputs)
        parts = []
        for name in names:
            value = np.asarray(outputs[name], dtype=np.float64)
            if self.pooling is not None:
                value = self._pool(name, value, feeds)
            parts.append(value.reshape(value.shape[0], -1))
        return np.concatenate(parts, axis=1)

    def _pool(self, name: str, value: np.ndarray, feeds: Mapping[str, np.ndarray]) -> np.ndarray:
        import numpy as np

        if value.ndim < 3:
            raise OliveError(
                f"pooling '{self.pooling}' needs outputs shaped [batch, sequence, ...], but output '{name}' has "
                f"shape {list(value.shape)}; set output_name to the token-level output or drop pooling"
            )
        if self.pooling == "cls":
            return value[:, 0]
        if not self.mask_input:
            return value.mean(axis=1)
        mask = np.asarray(feeds[self.mask_input], dtype=np.float64)
        if mask.shape != value.shape[:2]:
            raise OliveError(
                f"mask_input '{self.mask_input}' has shape {list(mask.shape)} but output '{name}' has "
                f"{list(value.shape)}; the mask must be [batch, sequence] of that output"
            )
        weights = mask.reshape(*mask.shape, *([1] * (value.ndim - 2)))
        return (value * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


def agreement(reference: np.ndarray, candidate: np.ndarray) -> dict[str, float]:
    """``cosine_mean``, ``cosine_min`` and ``max_abs_diff`` of two ``[samples, features]`` arrays."""
    import numpy as np

    dot = np.sum(reference * candidate, axis=1)
    ref_norm = np.linalg.norm(reference, axis=1)
    cand_norm = np.linalg.norm(candidate, axis=1)
    norms = ref_norm * cand_norm
    both_zero = (ref_norm == 0) & (cand_norm == 0)
    cosine = np.where(norms > 0, dot / np.where(norms > 0, norms, 1.0), np.where(both_zero, 1.0, 0.0))
    return {
        "cosine_mean": float(np.mean(cosine)),
        "cosine_min": float(np.min(cosine)),
        "max_abs_diff": float(np.max(np.abs(reference - candidate))) if reference.size else 0.0,
    }


def rounded(measured: Mapping[str, float]) -> dict[str, float]:
    """Agreement values rounded for attributes and messages (enough digits to tell 0.9999 from 0.99999)."""
    return {key: round(float(value), 6) for key, value in measured.items()}
