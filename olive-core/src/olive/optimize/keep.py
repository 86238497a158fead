"""What ``olive optimize`` must keep: ``--keep cosine_min=0.97``, parsed into agreement goals.

A keep is ``metric op value``: the metric is one of the agreement metric's sub types (``cosine_mean``,
``cosine_min``, ``max_abs_diff``, ``top1``), the operator ``=``, ``>=``, ``>``, ``<=`` or ``<``. ``=`` reads
"at this value or better" in the metric's own direction, and is the spelling shown everywhere because bash takes
it as it is: unquoted, ``--keep cosine_min>=0.97`` is ``--keep cosine_min`` with its output redirected into a
file named ``=0.97``. Cosines and ``top1`` are higher-is-better and take ``>=``/``>``; ``max_abs_diff`` takes
``<=``/``<``. A strict operator is kept as written (the workflow's threshold goal is inclusive, so ``>`` asks for
the next representable value above).

A generative model (a decoder) keeps what its text says, against the float model on held-out text:
``perplexity=1.02x`` (a value ending in ``x`` is a ratio to the float model's perplexity: within 2%),
``perplexity=12.5`` (an absolute bound), ``top1_agreement=0.98`` (the share of positions whose most likely next
token is the float model's) and ``next_token_kl=0.05`` (nats). Only perplexity takes a ratio: the float model's
own agreement is 1 and its KL 0.
"""

from __future__ import annotations

import math
import re

import attrs

from olive.exceptions import WorkflowConfigError, closest_match_hint

__all__ = [
    "CLASSIFIER_KEEPS",
    "DECODER_KEEPS",
    "EMBEDDING_KEEPS",
    "GENERATIVE_KEEP_METRICS",
    "GUARD_METRICS",
    "KEEP_METRICS",
    "Keep",
    "parse_keep",
]

#: agreement sub type -> higher is better
KEEP_METRICS: dict[str, bool] = {"cosine_mean": True, "cosine_min": True, "max_abs_diff": False, "top1": True}
#: a decoder's keeps (generative metrics, registered by olive-passes-genai) -> higher is better
GENERATIVE_KEEP_METRICS: dict[str, bool] = {"perplexity": False, "top1_agreement": True, "next_token_kl": False}
#: the keep metrics that take a ratio to the float model (``perplexity<=1.02x``)
RELATIVE_KEEP_METRICS = ("perplexity",)
_ALL_METRICS = {**KEEP_METRICS, **GENERATIVE_KEEP_METRICS}
#: the keeps the accuracy guard can aim at (it scores cosines and max_abs_diff, not top1)
GUARD_METRICS = ("cosine_min", "cosine_mean", "max_abs_diff")
_OPERATORS = ("=", ">=", "<=", ">", "<")
_PATTERN = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|>|<|=>|=<|==|=)\s*([^\s]+)\s*$")
OPTION = "--keep"


@attrs.frozen
class Keep:
    """One thing the chosen model must keep: ``metric op value`` on the agreement with the input model.

    :param relative: ``value`` is a ratio to the float model's value (``perplexity<=1.02x``).
    """

    metric: str
    op: str
    value: float
    relative: bool = False

    @property
    def higher_is_better(self) -> bool:
        return _ALL_METRICS[self.metric]

    @property
    def generative(self) -> bool:
        """A decoder's keep (measured on text by olive-passes-genai's metrics)."""
        return self.metric in GENERATIVE_KEEP_METRICS

    @property
    def threshold(self) -> float:
        """The inclusive threshold goal the workflow holds the metric to (a ratio for a relative keep)."""
        if self.op in (">=", "<="):
            return self.value
        return math.nextafter(self.value, math.inf if self.op == ">" else -math.inf)

    def goal(self) -> dict[str, object]:
        """The workflow's goal for this keep: a threshold, or for a ratio a percent of the float model's value."""
        if self.relative:
            # percent-max-degradation is inclusive: value <= baseline * (1 + v / 100)
            return {"type": "percent-max-degradation", "value": round((self.threshold - 1.0) * 100.0, 10)}
        return {"type": "threshold", "value": self.threshold}

    def met_by(self, value: float, baseline: float | None = None) -> bool:
        """Whether ``value`` keeps this; a relative keep needs the float model's value (``baseline``)."""
        bound = self.threshold
        if self.relative:
            if baseline is None:
                return False
            bound = self.threshold * baseline
        return value >= bound if self.higher_is_better else value <= bound

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value!r}{'x' if self.relative else ''}"


#: what a model whose first output is a vector (or a sequence of vectors) keeps by default: the measured
#: bar of benchmarks/ (mean-pooled cosine against the input model, on the data given)
EMBEDDING_KEEPS = (Keep("cosine_min", ">=", 0.97), Keep("cosine_mean", ">=", 0.99))
#: what a classifier keeps by default: the predicted class of 99 samples in 100
CLASSIFIER_KEEPS = (Keep("top1", ">=", 0.99),)
#: what a decoder keeps by default: perplexity on held-out text within 2% of the float model's
DECODER_KEEPS = (Keep("perplexity", "<=", 1.02, relative=True),)


def parse_keep(text: str) -> Keep:
    """``"cosine_min=0.97"`` (or ``>=``) -> :class:`Keep`; a mistake is a :class:`WorkflowConfigError` owned by
    ``--keep``."""
    metric, op, raw = _split_keep(text)
    if op == "=":
        # At the value or better: the metric's own direction, inclusive.
        op = ">=" if _ALL_METRICS[metric] else "<="
    relative = raw.lower().endswith("x")
    try:
        value = float(raw[:-1] if relative else raw)
    except ValueError:
        raise WorkflowConfigError(
            f"'{text}': '{raw}' is not a number (or a ratio to the float model, such as 1.02x)", owner=OPTION
        ) from None
    if not math.isfinite(value):
        raise WorkflowConfigError(f"'{text}': the value must be a finite number", owner=OPTION)
    _check_direction(text, metric, op, value)
    if relative:
        _check_ratio(text, metric, op, value)
    else:
        _check_range(text, metric, op, value)
    return Keep(metric, op, value, relative)


def _split_keep(text: str) -> tuple[str, str, str]:
    names = ", ".join(KEEP_METRICS)
    generative = ", ".join(GENERATIVE_KEEP_METRICS)
    match = _PATTERN.match(text or "")
    if match is None:
        raise WorkflowConfigError(
            f"'{text}' is not 'metric=value' (at value or better); write e.g. --keep cosine_min=0.97, or for a "
            f"decoder --keep perplexity=1.02x (metrics: {names}; for decoders {generative}; operators: "
            f"{', '.join(_OPERATORS)}, quoted in bash where they hold > or <)",
            owner=OPTION,
        )
    metric, op, raw = match.groups()
    if metric not in _ALL_METRICS:
        raise WorkflowConfigError(
            f"'{text}': unknown metric '{metric}'{closest_match_hint(metric, _ALL_METRICS)}; use one of {names} "
            f"(for a decoder: {generative})",
            owner=OPTION,
        )
    if op not in _OPERATORS:
        raise WorkflowConfigError(f"'{text}': operator '{op}' is not one of {', '.join(_OPERATORS)}", owner=OPTION)
    return metric, op, raw


def _check_direction(text: str, metric: str, op: str, value: float) -> None:
    higher = _ALL_METRICS[metric]
    if op not in ((">=", ">") if higher else ("<=", "<")):
        way, ops = ("higher", ">= or >") if higher else ("lower", "<= or <")
        raise WorkflowConfigError(
            f"'{text}': {metric} is {way}-is-better; keep it with = (at the value or better: --keep "
            f"{metric}={value:g}) or {ops}",
            owner=OPTION,
        )


def _check_ratio(text: str, metric: str, op: str, value: float) -> None:
    if metric not in RELATIVE_KEEP_METRICS:
        raise WorkflowConfigError(
            f"'{text}': only {', '.join(RELATIVE_KEEP_METRICS)} takes a ratio to the float model (1.02x); give "
            f"{metric} as a number (e.g. --keep {metric}={_EXAMPLES[metric]})",
            owner=OPTION,
        )
    if value < 1.0:
        raise WorkflowConfigError(
            f"'{text}': a ratio to the float model's perplexity below 1 asks the quantized model to beat it; give "
            "1 or more (1.02x: within 2%)",
            owner=OPTION,
        )


#: metric -> a bound to show in a message, one that parses (a user's own value may be out of range)
_EXAMPLES = {
    "cosine_mean": "0.99",
    "cosine_min": "0.97",
    "top1": "0.99",
    "max_abs_diff": "0.01",
    "top1_agreement": "0.98",
    "next_token_kl": "0.05",
    "perplexity": "1.02x",
}

#: metric -> (lowest, highest) value it takes, and how to say it
_RANGES: dict[str, tuple[float, float, str]] = {
    "cosine_mean": (-1.0, 1.0, "a cosine is between -1 and 1"),
    "cosine_min": (-1.0, 1.0, "a cosine is between -1 and 1"),
    "top1": (0.0, 1.0, "top1 is a fraction, from 0 to 1"),
    "top1_agreement": (0.0, 1.0, "top1_agreement is a fraction, from 0 to 1"),
    "max_abs_diff": (0.0, math.inf, "max_abs_diff is never negative"),
    "next_token_kl": (0.0, math.inf, "next_token_kl is never negative"),
    "perplexity": (
        1.0,
        math.inf,
        "a perplexity is at least 1; give a bound of 1 or more, or a ratio to the float model (perplexity=1.02x)",
    ),
}


def _check_range(text: str, metric: str, op: str, value: float) -> None:
    low, high, says = _RANGES.get(metric, (-math.inf, math.inf, ""))
    if not low <= value <= high:
        raise WorkflowConfigError(f"'{text}': {says}", owner=OPTION)
    if _ALL_METRICS[metric] and op == ">" and value >= 1.0:
        raise WorkflowConfigError(
            f"'{text}': no model can be above 1; use >= 1 to ask for identical outputs", owner=OPTION
        )
