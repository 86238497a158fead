"""``OnnxStaticQuantization``: int8 weights and activations, ranges calibrated on sample data."""

from __future__ import annotations

from typing import TYPE_CHECKING

from olive.passes import PassConfigParam
from olive.passes.onnx.common import get_external_data_config
from olive_passes_quant._params import common_params, data_params, extra_options_param, static_params
from olive_passes_quant._types import QuantMode
from olive_passes_quant.quantization import OnnxQuantization

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec


class OnnxStaticQuantization(OnnxQuantization):
    """Quantize weights and activations to int8 with onnxruntime's quantize_static, calibrated on data_config."""

    _fixed_mode = QuantMode.STATIC

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            **common_params(accelerator_spec),
            **data_params("Calibration data (needed)"),
            **static_params(),
            **extra_options_param(),
            **get_external_data_config(),
        }
