"""``evaluators`` and ``evaluator``: named lists of metrics (each metric type parses its own, see
:mod:`olive.evaluator.metrics`)."""

from __future__ import annotations

from pathlib import Path

import attrs

from olive.evaluator.metrics.spec import Metric

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
