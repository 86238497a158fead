"""``OnnxKQuantQuantization``: k-quant (onnxruntime's ``KQuantWeightOnlyQuantConfig``), a weighted least-squares
search of each block's scale and zero point as llama.cpp's k-quants; ``customized_weight_config`` puts chosen MatMuls
at 8 bits. :mod:`olive_passes_quant.matmul_pieces` quantizes one weight at a time with the same configuration."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from olive.exceptions import PassParamError
from olive.passes import PassConfigParam
from olive_passes_quant.weight_only import BITS, MatMulNBitsPass, Setting, common_params

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import OliveModelHandler, ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)


def k_quant_config(bits: int, nodes: list[str], customized_weight_config: dict[str, Any] | None = None) -> Any:
    """onnxruntime's k-quant configuration for ``nodes`` at ``bits``, except where ``customized_weight_config``
    says otherwise. onnxruntime's k-quant takes 4 bits for every node whatever bits the quantizer is given, so the
    width goes in per node (``{"node": {"bits": 8}}``)."""
    from onnxruntime.quantization.matmul_nbits_quantizer import KQuantWeightOnlyQuantConfig

    customized = dict(customized_weight_config or {})
    per_node = {name: {"bits": bits, **customized.get(name, {})} for name in nodes}
    return KQuantWeightOnlyQuantConfig(op_types_to_quantize=("MatMul",), customized_weight_config=per_node)


class OnnxKQuantQuantization(MatMulNBitsPass):
    """Quantize MatMul weights with k-quant (onnxruntime's KQuantWeightOnlyQuantConfig) into MatMulNBits."""

    algorithm = "k-quant"

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "bits": PassConfigParam(type_=int, default_value=4, description="Bits per weight: 4 or 8."),
            **common_params(32, nodes=("nodes_to_exclude",)),
            "is_symmetric": PassConfigParam(
                type_=bool,
                default_value=False,
                description="No effect, kept for workflows that give it: k-quant fits a scale and an offset to each "
                "block, so its blocks always carry zero points (onnxruntime ignores the flag). For symmetric blocks "
                "use OnnxBlockWiseRtnQuantization.",
            ),
            "customized_weight_config": PassConfigParam(
                type_=dict | None,
                default_value=None,
                description='Per-node overrides, e.g. {"/lm_head/MatMul": {"bits": 8}} keeps that MatMul at 8 bits.',
            ),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        super()._check_config(config, accelerator_spec)
        for name, override in (config.customized_weight_config or {}).items():
            if not isinstance(override, dict) or override.get("bits", 4) not in BITS:
                raise PassParamError(
                    f"param 'customized_weight_config' gives {name!r} {override!r}; give {{\"bits\": 4 or 8}}",
                    params="customized_weight_config",
                )

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> OliveModelHandler:
        if config.is_symmetric:
            logger.warning(
                "%s: is_symmetric has no effect on k-quant, which fits an offset to every block (zero points are "
                "written); for symmetric blocks use OnnxBlockWiseRtnQuantization",
                self.config_owner(),
            )
        return super()._run_for_config(model, config, output_model_path)

    def _algo_config(self, config: BasePassConfig, setting: Setting, nodes: list[str], data: Any) -> Any:
        return k_quant_config(setting.bits, nodes, config.customized_weight_config)
