"""The value sets of the quantization passes' params, one enum each (plain enums, nothing heavy).

A param typed with one of them takes its values by value (``"dynamic"``) or member name; a misspelt one is a
config error with the closest value. Being ``str`` enums, members compare equal to their values.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Precision(StrEnum):
    """8-bit integer types; ``int8`` is onnxruntime's ``QInt8``, ``uint8`` its ``QUInt8``."""

    INT8 = "int8"
    UINT8 = "uint8"

    def to_quant_type(self):
        from onnxruntime.quantization import QuantType

        return QuantType.QInt8 if self is Precision.INT8 else QuantType.QUInt8


class QuantFormat(StrEnum):
    """``QDQ`` inserts QuantizeLinear/DequantizeLinear pairs; ``QOperator`` uses quantized operators."""

    QDQ = "QDQ"
    QOPERATOR = "QOperator"


class CalibrateMethod(StrEnum):
    """How static quantization turns calibration activations into ranges."""

    MIN_MAX = "MinMax"
    ENTROPY = "Entropy"
    PERCENTILE = "Percentile"
    DISTRIBUTION = "Distribution"


class QuantMode(StrEnum):
    """``dynamic``: activation ranges computed at run time; ``static``: ranges calibrated on data."""

    DYNAMIC = "dynamic"
    STATIC = "static"


class SensitivityMethod(StrEnum):
    """How a node's sensitivity is measured (see :mod:`olive_passes_quant.sensitivity`)."""

    EXCLUDE_ONE = "exclude_one"
    QUANTIZE_ONE = "quantize_one"
    LOCAL_ERROR = "local_error"


class OnTargetMissed(StrEnum):
    """What the accuracy-guarded pass does when no model meets the target: fail, or return the closest."""

    ERROR = "error"
    BEST = "best"


class AccuracyLevel(IntEnum):
    """The ``accuracy_level`` attribute of MatMulNBits: the minimum compute type of its inputs."""

    unset = 0
    fp32 = 1
    fp16 = 2
    bf16 = 3
    int8 = 4
