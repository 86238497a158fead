"""``evaluators`` and ``evaluator``: named lists of metrics (each metric type parses its own, see
:mod:`olive.evaluator.metrics`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from olive.config.fields import script_field, typed, without_effect
from olive.config.structure import note_without_effect
from olive.config_errors import config_error, expect
from olive.evaluator.metrics.spec import USER_CONFIG_WITHOUT_EFFECT, WITHOUT_EFFECT, Metric
from olive.exceptions import closest_match_hint

# Microsoft Olive's names of the evaluator that runs ONNX models with onnxruntime (registered as
# "OnnxEvaluator" and by the framework name "ONNX"; "OliveEvaluator" is their base class), compared without case.
ACCEPTED_EVALUATOR_NAMES = ("OnnxEvaluator", "OliveEvaluator")
EVALUATOR_TYPES = frozenset({"onnxevaluator", "oliveevaluator", "onnx"})
# Microsoft Olive's other evaluators: what each evaluates.
OLIVE_ONLY_EVALUATORS = {
    "pytorchevaluator": "PyTorch models",
    "pytorch": "PyTorch models",
    "openvinoevaluator": "OpenVINO models",
    "openvino": "OpenVINO models",
    "qnnevaluator": "Qualcomm QNN models",
    "qnn": "Qualcomm QNN models",
    "lmevaluator": "language-model benchmarks (lm-eval)",
    "mtebevaluator": "sentence-embedding benchmarks (MTEB)",
}


@attrs.frozen
class EvaluatorConfig:
    name: str
    metrics: list[Metric]
    user_script: Path | None = None
    script_dir: Path | None = None


def _evaluator_type(_instance: Any, _attribute: Any, kind: Any) -> None:
    if kind is None:
        return
    expect(kind, str, "type", "an evaluator type name")
    if kind.lower() in EVALUATOR_TYPES:
        return
    known = OLIVE_ONLY_EVALUATORS.get(kind.lower())
    reason = (
        f"{kind!r} is Microsoft Olive's evaluator for {known}, which no distribution here provides"
        if known
        else f"unknown evaluator type {kind!r}{closest_match_hint(kind, ACCEPTED_EVALUATOR_NAMES)}"
    )
    raise config_error(
        "type",
        f"{reason}; use {' or '.join(repr(n) for n in ACCEPTED_EVALUATOR_NAMES)} (onnxruntime with "
        "Olive's metrics) or leave it out",
    )


def _metric_list(_instance: Any, _attribute: Any, metrics: Any) -> None:
    if metrics is None:
        raise config_error(
            "metrics", 'missing; add e.g. [{"name": "latency", "type": "latency", "sub_types": [{"name": "avg"}]}]'
        )
    expect(metrics, list, "metrics", "a list of metrics")
    if not metrics:
        raise config_error("metrics", "empty; an evaluator needs at least one metric")
    for i, metric in enumerate(metrics):
        expect(metric, dict, f"metrics[{i}]", "a metric object")
        note_without_effect(metric, WITHOUT_EFFECT, f"metrics[{i}]")
        note_without_effect(metric.get("user_config"), USER_CONFIG_WITHOUT_EFFECT, f"metrics[{i}].user_config")


@attrs.frozen
class EvaluatorSpec:
    """An evaluator as the workflow gives it: its metrics still as written (each metric type parses its own)."""

    name: str | None = None
    type: str | None = attrs.field(default=None, validator=_evaluator_type)
    type_args: dict[str, Any] | None = attrs.field(
        default=None, converter=lambda v: v or None, validator=[typed(dict, "an object", optional=True), without_effect]
    )
    metrics: list[dict[str, Any]] | None = attrs.field(default=None, validator=_metric_list)
    user_script: Path | None = attrs.field(default=None, converter=script_field("user_script"))
    script_dir: Path | None = attrs.field(default=None, converter=script_field("script_dir"))
