"""Weight-only int4 (or int8) passes for any ONNX decoder, with onnxruntime's ``matmul_nbits_quantizer``.

- ``OnnxHqqQuantization``: Half-Quadratic Quantization (``HQQWeightOnlyQuantConfig``): scale and zero point
  of each block fitted to the weights by an iterative solver; asymmetric by nature, no calibration data.
- ``OnnxKQuantQuantization``: k-quant (``KQuantWeightOnlyQuantConfig``): weighted least-squares search of each
  block's scale and zero point, as llama.cpp's k-quants; ``customized_weight_config`` puts chosen MatMuls at
  8 bits (or leaves them in float with ``nodes_to_exclude``).

Both quantize every MatMul whose second input is a constant 2-D weight into a com.microsoft MatMulNBits node;
the quantizing is onnxruntime's, not ours. Given a :class:`GenAIModelHandler` (a ``ModelBuilder`` output) the
result is one too: the folder keeps its ``genai_config.json`` and tokenizer and ``onnxruntime_genai.Model``
runs it. Block size, symmetry and accuracy level take a list (or a search parameter) in a workflow to be
searched; none is searched unasked.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.exceptions import PassParamError
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, load_without_weights, model_proto_to_olive_model
from olive_passes_genai.genai_model import GenAIModelHandler, genai_folder_from_onnx
from olive_passes_genai.ort_quantizer import run_quantizer

if TYPE_CHECKING:
    import onnx

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

ACCURACY_LEVELS = (0, 1, 2, 3, 4)


def _external_data_params() -> dict[str, PassConfigParam]:
    params = get_external_data_config()
    # A decoder's weights pass 2 GB from about 500M parameters on: external data by default.
    params["save_as_external_data"] = PassConfigParam(
        type_=bool, default_value=True, description="Save weights in a separate file (needed above 2 GB)."
    )
    return params


def _common_params(block_size: int) -> dict[str, PassConfigParam]:
    return {
        "block_size": PassConfigParam(
            type_=int,
            default_value=block_size,
            description=f"Weights per block along K: a power of two, at least 16 (default {block_size}). Smaller "
            "is more accurate and larger on disk.",
        ),
        "accuracy_level": PassConfigParam(
            type_=int | None,
            default_value=None,
            description="MatMulNBits accuracy_level, the minimum compute type: 0/unset, 1 fp32, 2 fp16, 3 bf16, "
            "4 int8 (int8 is the fastest on CPUs).",
        ),
        "nodes_to_exclude": PassConfigParam(
            type_=list[str] | None, default_value=None, description="MatMul node names to keep in float."
        ),
    }


class _WeightOnly(Pass):
    """What the weight-only passes share: checks, the quantizer run, and the GenAI folder carried over."""

    accepts_model_types: ClassVar[tuple[str, ...]] = ("ONNXModel", "GenAIModel")

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        block = config.block_size
        if block < 16 or block & (block - 1):
            raise PassParamError(
                f"param 'block_size' is {block}, which MatMulNBits does not take; use a power of two >= 16 "
                "(16, 32, 64, 128, 256)",
                params="block_size",
            )
        level = config.accuracy_level
        if level is not None and level not in ACCURACY_LEVELS:
            raise PassParamError(
                f"param 'accuracy_level' is {level}; use 0 (unset), 1 (fp32), 2 (fp16), 3 (bf16) or 4 (int8)",
                params="accuracy_level",
            )

    def _algo_config(self, config: BasePassConfig, exclude: set[str]) -> Any:
        raise NotImplementedError

    def _settings(self, config: BasePassConfig) -> str:
        """The settings a failure names."""
        raise NotImplementedError

    def _quantizer_kwargs(self, config: BasePassConfig) -> dict[str, Any]:
        return {"bits": 4, "block_size": config.block_size, "is_symmetric": False}

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

        owner = self.config_owner()
        # The graph is loaded without its large weights; the quantizer reads each weight it quantizes from the
        # model's folder (the working directory inside weights_in), so memory holds one float weight at a time
        # plus the packed blocks.
        proto = load_without_weights(model)
        weights_dir = Path(model.model_path).parent
        targets = quantizable_matmuls(proto)
        exclude = set(config.nodes_to_exclude or [])
        unknown = sorted(exclude - {node.name for node in proto.graph.node})
        if unknown:
            logger.warning("%s: nodes_to_exclude names no node of the model: %s", owner, ", ".join(unknown[:5]))
        if not set(targets) - exclude:
            logger.warning("%s: no MatMul with a constant 2-D weight to quantize in %s", owner, model.model_path)
        level = int(config.accuracy_level) if config.accuracy_level else None
        # The quantizer takes every MatMul with an initializer; the others (weights a run may feed, such as
        # adapter slots, and empty ones) are named to it as excluded.
        others = {n.name for n in proto.graph.node if n.op_type == "MatMul" and n.name not in targets}
        quantizer = MatMulNBitsQuantizer(
            proto,
            accuracy_level=level,
            nodes_to_exclude=sorted(exclude | others),
            algo_config=self._algo_config(config, exclude),
            **self._quantizer_kwargs(config),
        )
        quantized = run_quantizer(quantizer, owner=owner, settings=self._settings(config), weights_dir=weights_dir)
        out = model_proto_to_olive_model(quantized, output_model_path, config, weights_dir=weights_dir)
        if isinstance(model, GenAIModelHandler):
            return genai_folder_from_onnx(model, out)
        return out


class OnnxHqqQuantization(_WeightOnly):
    """Quantize MatMul weights to 4 bits with HQQ (onnxruntime's HQQWeightOnlyQuantConfig) into MatMulNBits."""

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            **_common_params(128),
            "axis": PassConfigParam(
                type_=int,
                default_value=1,
                description="The weight axis each block's scale is shared along, as onnxruntime's HQQ takes it "
                "(1: blocks along K, the layout MatMulNBits runs).",
            ),
            "nodes_to_include": PassConfigParam(
                type_=list[str] | None,
                default_value=None,
                description="Quantize only these MatMul nodes (None: every MatMul with a constant 2-D weight).",
            ),
            **_external_data_params(),
        }

    def _settings(self, config: BasePassConfig) -> str:
        return f"HQQ, 4 bits, block_size {config.block_size}"

    def _algo_config(self, config: BasePassConfig, exclude: set[str]) -> Any:
        from onnxruntime.quantization.matmul_nbits_quantizer import HQQWeightOnlyQuantConfig

        return HQQWeightOnlyQuantConfig(block_size=config.block_size, bits=4, axis=config.axis)

    def _quantizer_kwargs(self, config: BasePassConfig) -> dict[str, Any]:
        kwargs = super()._quantizer_kwargs(config)
        if config.nodes_to_include:
            kwargs["nodes_to_include"] = list(config.nodes_to_include)
        return kwargs


class OnnxKQuantQuantization(_WeightOnly):
    """Quantize MatMul weights with k-quant (onnxruntime's KQuantWeightOnlyQuantConfig) into MatMulNBits."""

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "bits": PassConfigParam(type_=int, default_value=4, description="Bits per weight: 4 or 8."),
            **_common_params(32),
            "is_symmetric": PassConfigParam(
                type_=bool,
                default_value=False,
                description="No effect, kept for workflows that give it: k-quant fits a scale and an offset to each "
                "block, so its blocks always carry zero points (onnxruntime ignores the flag). For symmetric blocks "
                "use OnnxBlockWiseRtnQuantization (olive-passes-quant).",
            ),
            "customized_weight_config": PassConfigParam(
                type_=dict | None,
                default_value=None,
                description='Per-node overrides, e.g. {"/lm_head/MatMul": {"bits": 8}} keeps that MatMul at 8 bits.',
            ),
            **_external_data_params(),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        super()._check_config(config, accelerator_spec)
        if config.bits not in (4, 8):
            raise PassParamError(f"param 'bits' is {config.bits}; use 4 or 8", params="bits")
        for name, override in (config.customized_weight_config or {}).items():
            if not isinstance(override, dict) or override.get("bits", 4) not in (4, 8):
                raise PassParamError(
                    f"param 'customized_weight_config' gives {name!r} {override!r}; give {{\"bits\": 4 or 8}}",
                    params="customized_weight_config",
                )

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        if config.is_symmetric:
            logger.warning(
                "%s: is_symmetric has no effect on k-quant, which fits an offset to every block (zero points are "
                "written); for symmetric blocks use OnnxBlockWiseRtnQuantization",
                self.config_owner(),
            )
        return super()._run_for_config(model, config, output_model_path)

    def _settings(self, config: BasePassConfig) -> str:
        return f"k-quant, {config.bits} bits, block_size {config.block_size}"

    def _algo_config(self, config: BasePassConfig, exclude: set[str]) -> Any:
        from onnxruntime.quantization.matmul_nbits_quantizer import KQuantWeightOnlyQuantConfig

        return KQuantWeightOnlyQuantConfig(
            op_types_to_quantize=("MatMul",), customized_weight_config=dict(config.customized_weight_config or {})
        )

    def _quantizer_kwargs(self, config: BasePassConfig) -> dict[str, Any]:
        return {"bits": config.bits, "block_size": config.block_size, "is_symmetric": config.is_symmetric}


def quantizable_matmuls(proto: onnx.ModelProto) -> dict[str, int]:
    """MatMul node name -> K, for MatMuls whose second input is a constant 2-D float initializer.

    An initializer that is also a graph input is not constant: a run may feed it (an adapter's LoRA weights after
    ExtractAdapters, whose defaults are empty), so it stays as it is; so does an empty weight."""
    import onnx

    inputs = {i.name for i in proto.graph.input}
    weights = {
        init.name: list(init.dims)
        for init in proto.graph.initializer
        if init.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16)
        and len(init.dims) == 2
        and all(d > 0 for d in init.dims)
        and init.name not in inputs
    }
    return {
        node.name: int(weights[node.input[1]][0])
        for node in proto.graph.node
        if node.op_type == "MatMul" and len(node.input) == 2 and node.input[1] in weights
    }
