"""``OnnxDynamicQuantization``: int8 weights, activations quantized at run time (no calibration data)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from olive.passes import PassConfigParam
from olive.passes.onnx.common import get_external_data_config
from olive_passes_quant._params import common_params, extra_options_param
from olive_passes_quant._types import QuantMode
from olive_passes_quant.quantization import OnnxQuantization

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec


class OnnxDynamicQuantization(OnnxQuantization):
    """Quantize weights to int8 with onnxruntime's quantize_dynamic; activation ranges are computed at run time."""

    _fixed_mode = QuantMode.DYNAMIC

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {**common_params(accelerator_spec), **extra_options_param(), **get_external_data_config()}
