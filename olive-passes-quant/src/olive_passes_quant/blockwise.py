"""``OnnxBlockWiseRtnQuantization``: weight-only 4-bit (or 8-bit) MatMul quantization to MatMulNBits."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from olive.exceptions import PassParamError
from olive.logs import onnxruntime_logs
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import (
    get_external_data_config,
    load_without_weights,
    model_proto_to_olive_model,
    weights_in,
)
from olive_passes_quant._checks import warn_unknown_nodes
from olive_passes_quant._mixed_precision import override_for, overrides_of, weight_matmuls
from olive_passes_quant._types import AccuracyLevel

if TYPE_CHECKING:
    import onnx

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)


class OnnxBlockWiseRtnQuantization(Pass):
    """Quantize MatMul weights block-wise with round-to-nearest into com.microsoft MatMulNBits nodes.

    Each block of ``block_size`` consecutive weights along K (the reduced axis) gets its own scale (and
    zero point unless symmetric). Activations stay in float; only constant 2-D MatMul weights change.
    """

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "bits": PassConfigParam(
                type_=int, default_value=4, description="Bits per weight: 4, or 8 (onnxruntime >= 1.22)."
            ),
            "block_size": PassConfigParam(
                type_=int,
                default_value=128,
                # Not searched by default, as in Olive: it would multiply every search by four unasked. A search
                # parameter in the workflow (Categorical [32, 128]) searches it.
                description="Weights per block along K: a power of two, at least 16. Smaller is more accurate.",
            ),
            "is_symmetric": PassConfigParam(
                type_=bool, default_value=True, description="Symmetric blocks (no zero points)."
            ),
            "accuracy_level": PassConfigParam(
                type_=AccuracyLevel | None,
                default_value=None,
                description=(
                    "MatMulNBits accuracy_level: minimum compute type, 0/unset, 1/fp32, 2/fp16, 3/bf16 or 4/int8 "
                    "(int8 is fastest on CPU)."
                ),
            ),
            "nodes_to_exclude": PassConfigParam(
                type_=list[str] | None, default_value=None, description="MatMul node names to keep in float."
            ),
            "nodes_to_include": PassConfigParam(
                type_=list[str] | None,
                default_value=None,
                description="Quantize only these MatMul nodes (None: every MatMul with a constant 2-D weight).",
            ),
            **get_external_data_config(),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        block_size = config.block_size
        if block_size < 16 or block_size & (block_size - 1):
            raise PassParamError(
                f"param 'block_size' is {block_size}, which MatMulNBits does not take; use a power of two >= 16 "
                "(16, 32, 64, 128)",
                params="block_size",
            )
        if config.bits not in (4, 8):
            raise PassParamError(f"param 'bits' is {config.bits}; use 4 or 8", params="bits")
        if config.bits == 8 and _ort_release() < (1, 22):
            raise PassParamError(
                "param 'bits' is 8, which MatMulNBits takes from onnxruntime 1.22 on; use bits=4 or upgrade "
                "onnxruntime",
                params="bits",
            )

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        from onnxruntime.quantization.matmul_nbits_quantizer import (
            DefaultWeightOnlyQuantConfig,
            MatMulNBitsQuantizer,
        )

        owner = self.config_owner()
        # The quantizer reads each weight it quantizes through numpy_helper (relative to the working
        # directory), so the graph is loaded without its weights: only the new 4/8-bit blocks are held in
        # memory, and the weights left alone are copied into the output one at a time.
        proto = load_without_weights(model)
        weights_dir = Path(model.model_path).parent
        node_names = [node.name for node in proto.graph.node]
        for param in ("nodes_to_exclude", "nodes_to_include"):
            if config[param]:
                warn_unknown_nodes(config[param], param, node_names)
        targets = _quantizable_matmuls(proto)
        exclude = set(config.nodes_to_exclude or [])
        if config.nodes_to_include:
            # onnxruntime's nodes_to_include adds to the op-type selection; ours restricts it.
            exclude |= {name for name in targets if name not in set(config.nodes_to_include)}
        chosen = {name: k for name, k in targets.items() if name not in exclude}
        if not chosen:
            logger.warning("%s: no MatMul with a constant 2-D weight to quantize in %s", owner, model.model_path)
        padded = sorted(name for name, k in chosen.items() if k % config.block_size)
        if padded:
            logger.warning(
                "%s: K of %d MatMul(s) is not a multiple of block_size %d (e.g. %s); their last block is padded, "
                "which costs bytes and no accuracy is gained. A block_size dividing K avoids it.",
                owner,
                len(padded),
                config.block_size,
                padded[0],
            )

        accuracy_level = int(config.accuracy_level) if config.accuracy_level is not None else None
        # SelectiveMixedPrecision's choice: the weights it promoted are quantized first, at their own settings.
        rounds = _override_rounds(model, proto, chosen, config)
        default_nodes = set(chosen) - {name for nodes in rounds.values() for name in nodes}
        rounds[(config.bits, config.block_size, config.is_symmetric)] = sorted(default_nodes)
        with weights_in(weights_dir), onnxruntime_logs(logger):
            for (bits, block_size, symmetric), nodes in rounds.items():
                if not nodes:
                    continue
                skip = sorted(set(node_names) - set(nodes))
                quantizer = MatMulNBitsQuantizer(
                    proto,
                    bits=bits,
                    block_size=block_size,
                    is_symmetric=symmetric,
                    accuracy_level=accuracy_level,
                    nodes_to_exclude=skip,
                    algo_config=DefaultWeightOnlyQuantConfig(
                        block_size=block_size,
                        is_symmetric=symmetric,
                        accuracy_level=accuracy_level,
                        bits=bits,
                        op_types_to_quantize=("MatMul",),
                    ),
                )
                quantizer.process()
                proto = quantizer.model.model
        return model_proto_to_olive_model(proto, output_model_path, config, weights_dir=weights_dir)


def _override_rounds(
    model: ONNXModelHandler, proto: onnx.ModelProto, chosen: dict[str, int], config: BasePassConfig
) -> dict[tuple[int, int, bool], list[str]]:
    """``(bits, block_size, symmetric) -> MatMul nodes`` for the weights ``mixed_precision_info`` promotes; a
    promotion to 16 bits keeps the weight in float (those nodes are left out of every round)."""
    overrides = overrides_of(model.model_attributes)
    rounds: dict[tuple[int, int, bool], list[str]] = {}
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
        if bits not in (4, 8):
            logger.warning(
                "mixed_precision_info asks %d bits for %s; MatMulNBits takes 4 or 8, so %d is used",
                bits,
                module,
                config.bits,
            )
            bits = config.bits
        group = setting.get("group_size")
        block = int(group) if isinstance(group, int) and group >= 16 and not group & (group - 1) else config.block_size
        symmetric = setting.get("symmetric")
        key = (bits, block, config.is_symmetric if symmetric is None else bool(symmetric))
        if key != (config.bits, config.block_size, config.is_symmetric):
            rounds.setdefault(key, []).append(node)
    logger.info("mixed_precision_info: %d of %d promoted modules matched MatMuls", matched, len(overrides))
    return rounds


def _quantizable_matmuls(proto: onnx.ModelProto) -> dict[str, int]:
    """MatMul node name -> K, for MatMuls whose second input is a constant 2-D float initializer."""
    import onnx

    weights = {
        init.name: list(init.dims)
        for init in proto.graph.initializer
        if init.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16) and len(init.dims) == 2
    }
    return {
        node.name: int(weights[node.input[1]][0])
        for node in proto.graph.node
        if node.op_type == "MatMul" and len(node.input) == 2 and node.input[1] in weights
    }


def _ort_release() -> tuple[int, ...]:
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("onnxruntime", "onnxruntime-gpu", "onnxruntime-directml", "ort-nightly"):
        try:
            return tuple(int(p) for p in version(dist).split(".")[:2] if p.isdigit())
        except PackageNotFoundError:
            continue
    return (0,)
