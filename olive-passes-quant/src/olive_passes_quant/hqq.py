"""``OnnxHqqQuantization``: Half-Quadratic Quantization (onnxruntime's ``HQQWeightOnlyQuantConfig``): each block's
scale and zero point fitted to the weights by an iterative solver; asymmetric by nature, no calibration data."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from olive.passes import PassConfigParam
from olive_passes_quant.weight_only import MatMulNBitsPass, Setting, common_params

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.passes.pass_config import BasePassConfig


class OnnxHqqQuantization(MatMulNBitsPass):
    """Quantize MatMul weights to 4 bits with HQQ (onnxruntime's HQQWeightOnlyQuantConfig) into MatMulNBits."""

    algorithm = "HQQ"

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            **common_params(128),
            "axis": PassConfigParam(
                type_=int,
                default_value=1,
                description="The weight axis each block's scale is shared along, as onnxruntime's HQQ takes it "
                "(1: blocks along K, the layout MatMulNBits runs).",
            ),
        }

    def _algo_config(self, config: BasePassConfig, setting: Setting, nodes: list[str], data: Any) -> Any:
        from onnxruntime.quantization.matmul_nbits_quantizer import HQQWeightOnlyQuantConfig

        return HQQWeightOnlyQuantConfig(block_size=setting.block_size, bits=setting.bits, axis=config.axis)
