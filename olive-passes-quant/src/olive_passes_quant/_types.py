"""Value types shared by the quantization passes' params (plain enums, nothing heavy)."""

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
    DYNAMIC = "dynamic"
    STATIC = "static"


class AccuracyLevel(IntEnum):
    """The ``accuracy_level`` attribute of MatMulNBits: the minimum compute type of its inputs."""

    unset = 0
    fp32 = 1
    fp16 = 2
    bf16 = 3
    int8 = 4
