"""``OnnxBlockWiseRtnQuantization``: weight-only 4-bit (or 8-bit) MatMul quantization to MatMulNBits."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from olive.passes import PassConfigParam
from olive_passes_quant._mixed_precision import override_for, overrides_of, weight_matmuls
from olive_passes_quant.weight_only import BITS, MatMulNBitsPass, Setting, accuracy_level, common_params, is_block_size

if TYPE_CHECKING:
    import onnx

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)


class OnnxBlockWiseRtnQuantization(MatMulNBitsPass):
    """Quantize MatMul weights block-wise with round-to-nearest into com.microsoft MatMulNBits nodes.

    Each block of ``block_size`` consecutive weights along K (the reduced axis) gets its own scale (and
    zero point unless symmetric). Activations stay in float; only constant 2-D MatMul weights change. The
    weights ``SelectiveMixedPrecision`` promoted (``mixed_precision_info``) are quantized at their own settings.
    """

    algorithm = "RTN"

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "bits": PassConfigParam(type_=int, default_value=4, description="Bits per weight: 4 or 8."),
            **common_params(128, external=False),
            "is_symmetric": PassConfigParam(
                type_=bool, default_value=True, description="Symmetric blocks (no zero points)."
            ),
        }

    def _algo_config(self, config: BasePassConfig, setting: Setting, nodes: list[str], data: Any) -> Any:
        from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig

        return DefaultWeightOnlyQuantConfig(
            block_size=setting.block_size,
            is_symmetric=setting.is_symmetric,
            accuracy_level=accuracy_level(config),
            bits=setting.bits,
            op_types_to_quantize=("MatMul",),
        )

    def _rounds(
        self, model: ONNXModelHandler, proto: onnx.ModelProto, chosen: dict[str, int], config: BasePassConfig
    ) -> dict[Setting, list[str]]:
        # SelectiveMixedPrecision's choice: the weights it promoted are quantized first, at their own settings.
        rounds = _override_rounds(model, proto, chosen, config)
        promoted = {name for nodes in rounds.values() for name in nodes}
        rounds[self._setting(config)] = sorted(set(chosen) - promoted)
        return rounds


def _override_rounds(
    model: ONNXModelHandler, proto: onnx.ModelProto, chosen: dict[str, int], config: BasePassConfig
) -> dict[Setting, list[str]]:
    """``Setting -> MatMul nodes`` for the weights ``mixed_precision_info`` promotes; a
    promotion to 16 bits keeps the weight in float (those nodes are left out of every round)."""
    overrides = overrides_of(model.model_attributes)
    rounds: dict[Setting, list[str]] = {}
    if not overrides:
        return rounds
    matched = 0
    for node, (module, _) in weight_matmuls(proto).items():
        setting = override_for(module, overrides)
        if setting is None or node not in chosen:
            continue
        matched += 1
        bits = int(setting.get("bits", config.bits))
        if bits >= 16:
            chosen.pop(node)
            continue
        if bits not in BITS:
            logger.warning(
                "mixed_precision_info asks %d bits for %s; MatMulNBits takes 4 or 8, so %d is used",
                bits,
                module,
                config.bits,
            )
            bits = config.bits
        group = setting.get("group_size")
        block = group if is_block_size(group) else config.block_size
        symmetric = setting.get("symmetric")
        key = Setting(bits, block, config.is_symmetric if symmetric is None else bool(symmetric))
        if key != (config.bits, config.block_size, config.is_symmetric):
            rounds.setdefault(key, []).append(node)
    logger.info("mixed_precision_info: %d of %d promoted modules matched MatMuls", matched, len(overrides))
    return rounds
