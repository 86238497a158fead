"""``OnnxHqqQuantization``: Half-Quadratic Quantization (onnxruntime's ``HQQWeightOnlyQuantConfig``): each block's
scale and zero point fitted to the weights by an iterative solver; asymmetric by nature, no calibration data.

onnxruntime's HQQ solver is written on torch (it imports it while quantizing), so this one pass needs torch
installed: ``pip install "olive-passes-quant[hqq]"``. Without it the run stops before anything is written, saying
so; the other passes of the distribution never need torch.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

from olive.exceptions import PassRunError
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
        if find_spec("torch") is None:
            raise PassRunError(
                "OnnxHqqQuantization needs torch: onnxruntime's HQQ solver runs on it. Install it with: pip install "
                '"olive-passes-quant[hqq]" (the CPU build: pip install torch --index-url '
                "https://download.pytorch.org/whl/cpu), or use OnnxKQuantQuantization or OnnxBlockWiseRtnQuantization, "
                "which need no torch",
                owner=self.config_owner(),
            )
        from onnxruntime.quantization.matmul_nbits_quantizer import HQQWeightOnlyQuantConfig

        return HQQWeightOnlyQuantConfig(block_size=setting.block_size, bits=setting.bits, axis=config.axis)
