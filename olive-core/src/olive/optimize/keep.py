"""What ``olive optimize`` must keep: ``--keep cosine_min>=0.97``, parsed into agreement goals.

A keep is ``metric op value``: the metric is one of the agreement metric's sub types (``cosine_mean``,
``cosine_min``, ``max_abs_diff``, ``top1``), the operator ``>=``, ``>``, ``<=`` or ``<``. Cosines and ``top1``
are higher-is-better and take ``>=``/``>``; ``max_abs_diff`` takes ``<=``/``<``. A strict operator is kept as
written (the workflow's threshold goal is inclusive, so ``>`` asks for the next representable value above).
"""

from __future__ import annotations

import math
import re

import attrs

from olive.exceptions import WorkflowConfigError, closest_match_hint

__all__ = [
    "CLASSIFIER_KEEPS",
    "EMBEDDING_KEEPS",
    "GUARD_METRICS",
    "KEEP_METRICS",
    "Keep",
    "parse_keep",
]

#: agreement sub type -> higher is better
KEEP_METRICS: dict[str, bool] = {"cosine_mean": True, "cosine_min": True, "max_abs_diff": False, "top1": True}
#: the keeps the accuracy guard can aim at (it scores cosines and max_abs_diff, not top1)
GUARD_METRICS = ("cosine_min", "cosine_mean", "max_abs_diff")
_OPERATORS = (">=", "<=", ">", "<")
_PATTERN = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|>|<|=>|=<|==|=)\s*([^\s]+)\s*$")
OPTION = "--keep"


@attrs.frozen
class Keep:
    """One thing the chosen model must keep: ``metric op value`` on the agreement with the input model."""

    metric: str
    op: str
    value: float

    @property
    def higher_is_better(self) -> bool:
        return KEEP_METRICS[self.metric]

    @property
    def threshold(self) -> float:
        """The inclusive threshold goal the workflow holds the metric to."""
        if self.op in (">=", "<="):
            return self.value
        return math.nextafter(self.value, math.inf if self.op == ">" else -math.inf)

    def met_by(self, value: float) -> bool:
        return value >= self.threshold if self.higher_is_better else value <= self.threshold

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value!r}"


#: what a model whose first output is a vector (or a sequence of vectors) keeps by default: the measured
#: bar of benchmarks/ (mean-pooled cosine against the input model, on the data given)
EMBEDDING_KEEPS = (Keep("cosine_min", ">=", 0.97), Keep("cosine_mean", ">=", 0.99))
#: what a classifier keeps by default: the predicted class of 99 samples in 100
CLASSIFIER_KEEPS = (Keep("top1", ">=", 0.99),)


def parse_keep(text: str) -> Keep:
    """``"cosine_min>=0.97"`` -> :class:`Keep`; a mistake is a :class:`WorkflowConfigError` owned by ``--keep``."""
    match = _PATTERN.match(text or "")
    if match is None:
        raise WorkflowConfigError(
            f"'{text}' is not 'metric op value'; write e.g. --keep cosine_min>=0.97 (metrics: "
            f"{', '.join(KEEP_METRICS)}; operators: {', '.join(_OPERATORS)})",
            owner=OPTION,
        )
    metric, op, raw = match.groups()
    if metric not in KEEP_METRICS:
        raise WorkflowConfigError(
            f"'{text}': unknown metric '{metric}'{closest_match_hint(metric, KEEP_METRICS)}; use one of "
            f"{', '.join(KEEP_METRICS)}",
            owner=OPTION,
        )
    if op not in _OPERATORS:
        raise WorkflowConfigError(f"'{text}': operator '{op}' is not one of {', '.join(_OPERATORS)}", owner=OPTION)
    try:
        value = float(raw)
    except ValueError:
        raise WorkflowConfigError(f"'{text}': '{raw}' is not a number", owner=OPTION) from None
    if not math.isfinite(value):
        raise WorkflowConfigError(f"'{text}': the value must be a finite number", owner=OPTION)
    higher = KEEP_METRICS[metric]
    if higher and op not in (">=", ">"):
        raise WorkflowConfigError(
            f"'{text}': {metric} is higher-is-better; keep it with >= or > (e.g. {metric}>={value:g})", owner=OPTION
        )
    if not higher and op not in ("<=", "<"):
        raise WorkflowConfigError(
            f"'{text}': {metric} is lower-is-better; keep it with <= or < (e.g. {metric}<={value:g})", owner=OPTION
        )
    if metric == "top1" and not 0.0 <= value <= 1.0:
        raise WorkflowConfigError(f"'{text}': top1 is a fraction of samples, from 0 to 1", owner=OPTION)
    if metric.startswith("cosine") and not -1.0 <= value <= 1.0:
        raise WorkflowConfigError(f"'{text}': a cosine is between -1 and 1", owner=OPTION)
    if metric == "max_abs_diff" and value < 0:
        raise WorkflowConfigError(f"'{text}': max_abs_diff is never negative", owner=OPTION)
    if higher and op == ">" and value >= 1.0:
        raise WorkflowConfigError(
            f"'{text}': no model can be above 1; use >= 1 to ask for identical outputs", owner=OPTION
        )
    return Keep(metric, op, value)
