"""OrtTransformersOptimization: onnxruntime's transformer fusions (Attention, LayerNorm, GELU...)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from olive.exceptions import PassConfigError, PassRunError, closest_match_hint
from olive.passes import PassConfigParam
from olive.passes.onnx.common import get_external_data_config, model_proto_to_olive_model
from olive.search.search_parameter import Categorical
from olive_passes_graph._base import CheckedPass
from olive_passes_graph._common import carry_over, check_loads, ort_offline_optimize, output_guard

if TYPE_CHECKING:
    import onnx

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

# Model types whose fusions find num_heads/hidden_size themselves when given 0 (onnxruntime's own list).
_SELF_DETECTING = {"bert", "t5", "swin", "unet", "vae", "clip", "sam2", "mmdit"}
# onnxruntime disables these before its Python fusions at opt_level 2/99: they break the patterns matched later.
_DISABLED_BEFORE_FUSION = [
    "MatMulScaleFusion",
    "MatMulAddFusion",
    "MatmulTransposeFusion",
    "GemmActivationFusion",
    "BiasSoftmaxFusion",
]
_LEVELS = {1: "ORT_ENABLE_BASIC", 2: "ORT_ENABLE_EXTENDED", 99: "ORT_ENABLE_ALL"}


class OrtTransformersOptimization(CheckedPass):
    """Fuse transformer sub-graphs into onnxruntime's contrib ops (onnxruntime.transformers.optimizer).

    Attention, SkipLayerNormalization, EmbedLayerNormalization, (Bias)Gelu and friends replace dozens of
    small nodes. ``opt_level`` > 0 first lets onnxruntime optimize the graph; this pass does that itself so
    no PyTorch is needed at any level. With ``num_heads``/``hidden_size`` 0 they are read from the graph
    (Q projection weight and the head-splitting Reshape); when that is not possible the error says which
    to set.
    """

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "model_type": PassConfigParam(
                type_=str,
                required=True,
                description="Transformer type as onnxruntime names it: bert, gpt2, t5, vit, clip, unet, vae, "
                "bart, phi, ... (onnxruntime.transformers.optimizer.MODEL_TYPES).",
            ),
            "num_heads": PassConfigParam(
                type_=int, default_value=0, description="Number of attention heads; 0 infers it from the graph."
            ),
            "hidden_size": PassConfigParam(
                type_=int, default_value=0, description="Hidden size; 0 infers it from the graph."
            ),
            "optimization_options": PassConfigParam(
                type_=dict[str, Any] | None,
                default_value=None,
                description='FusionOptions fields to override, e.g. {"enable_gelu": false}.',
            ),
            "opt_level": PassConfigParam(
                type_=int | None,
                default_value=None,
                search_defaults=Categorical([0, 1, 2, 99]),
                description="onnxruntime graph optimization before the fusions: 0 none, 1 basic, 2 extended, "
                "99 all; None takes the model type's default (1 for bert and gpt2).",
            ),
            "use_gpu": PassConfigParam(
                type_=bool, default_value=False, description="Optimize for GPU inference (opt_level 2/99 graphs)."
            ),
            "only_onnxruntime": PassConfigParam(
                type_=bool,
                default_value=False,
                description="Only apply onnxruntime's graph optimization (needs opt_level > 0), no Python fusions.",
            ),
            "float16": PassConfigParam(
                type_=bool, default_value=False, description="Convert the fused model's weights and ops to float16."
            ),
            "input_int32": PassConfigParam(
                type_=bool, default_value=False, description="Change int64 graph inputs to int32."
            ),
            "keep_io_types": PassConfigParam(
                type_=bool, default_value=True, description="With float16: keep float32 inputs and outputs."
            ),
            "force_fp32_ops": PassConfigParam(
                type_=list[str] | None, default_value=None, description="With float16: op types kept in float32."
            ),
            **get_external_data_config(),
        }

    @classmethod
    def is_accelerator_agnostic(cls, accelerator_spec: AcceleratorSpec) -> bool:
        # opt_level 2/99 graphs hold provider-specific rewrites.
        return False

    @classmethod
    def validate_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> bool:
        # only_onnxruntime with no onnxruntime optimization would return the model unchanged.
        return not (config.only_onnxruntime and config.opt_level == 0)

    @classmethod
    def _check_config(cls, config: BasePassConfig, owner: str) -> None:
        from onnxruntime.transformers.optimizer import MODEL_TYPES

        if config.model_type not in MODEL_TYPES:
            raise PassConfigError(
                f"{owner}: param 'model_type' is '{config.model_type}'"
                f"{closest_match_hint(config.model_type, MODEL_TYPES)}, which onnxruntime's transformer optimizer "
                f"does not know; use one of {', '.join(sorted(MODEL_TYPES))}"
            )
        if config.opt_level is not None and config.opt_level not in (0, 1, 2, 99):
            raise PassConfigError(f"{owner}: param 'opt_level' must be 0, 1, 2 or 99, got {config.opt_level}")
        if config.num_heads < 0 or config.hidden_size < 0:
            raise PassConfigError(f"{owner}: num_heads and hidden_size must be >= 0 (0 infers them from the graph)")
        if config.optimization_options:
            _fusion_options(config.model_type, config.optimization_options, owner)

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        from onnxruntime.transformers.optimizer import MODEL_TYPES, optimize_model

        owner = f"pass {self.pass_name()}"
        check_loads(model)
        opt_level = config.opt_level if config.opt_level is not None else MODEL_TYPES[config.model_type][2]
        if opt_level > 0:
            providers = ["CPUExecutionProvider"]
            if config.use_gpu:
                providers = list(dict.fromkeys([self.accelerator_spec.execution_provider, "CPUExecutionProvider"]))
            disabled = ["ConstantSharing"]
            if opt_level > 1 and not config.only_onnxruntime:
                disabled += _DISABLED_BEFORE_FUSION
            proto = ort_offline_optimize(model.model_path, _LEVELS[opt_level], providers, disabled)
        else:
            proto = model.load_model()

        num_heads, hidden_size = config.num_heads, config.hidden_size
        if not config.only_onnxruntime and (num_heads == 0 or hidden_size == 0):
            num_heads, hidden_size = _resolve_heads(proto, config.model_type, num_heads, hidden_size, owner)
        options = _fusion_options(config.model_type, config.optimization_options or {}, owner)
        before = len(proto.graph.node)
        try:
            # opt_level=0: onnxruntime's own pre-optimization helper imports torch; it ran above instead.
            optimizer = optimize_model(
                proto,
                model_type=config.model_type,
                num_heads=num_heads,
                hidden_size=hidden_size,
                optimization_options=options,
                opt_level=0,
                use_gpu=config.use_gpu,
                only_onnxruntime=config.only_onnxruntime,
            )
            if config.float16:
                optimizer.convert_float_to_float16(
                    keep_io_types=config.keep_io_types, op_block_list=config.force_fp32_ops
                )
            if config.input_int32:
                optimizer.change_graph_inputs_to_int32()
            optimizer.topological_sort()
        except Exception as exc:
            raise PassRunError(
                f"{owner}: onnxruntime's transformer optimizer failed on '{model.model_path}' "
                f"({type(exc).__name__}: {exc})"
            ) from exc
        statistics = _fused_statistics(optimizer)
        _declare_domains(optimizer.model)
        with output_guard(output_model_path):
            result = model_proto_to_olive_model(optimizer.model, output_model_path, config)
            check_loads(result)
        logger.info(
            "OrtTransformersOptimization: %d -> %d nodes; fused %s", before, len(optimizer.model.graph.node), statistics
        )
        return carry_over(
            model,
            result,
            attributes={
                "num_heads": num_heads,
                "hidden_size": hidden_size,
                "transformer_fusions": statistics,
            },
        )


def _declare_domains(proto: onnx.ModelProto) -> None:
    """Add an opset import for every node domain the graph uses but does not declare.

    The Python fusions insert com.microsoft nodes without declaring the domain; onnxruntime tolerates
    that, but ONNX shape inference (used by quantization and most tools) rejects the model.
    """
    from onnx import helper

    declared = {opset.domain for opset in proto.opset_import}
    used = {node.domain for node in proto.graph.node if node.domain not in ("", "ai.onnx")}
    for domain in sorted(used - declared):
        proto.opset_import.append(helper.make_opsetid(domain, 1))


def _fusion_options(model_type: str, overrides: dict[str, Any], owner: str) -> Any:
    from onnxruntime.transformers.fusion_options import FusionOptions

    options = FusionOptions(model_type)
    known = vars(options)
    for key, value in overrides.items():
        if key not in known:
            raise PassConfigError(
                f"{owner}: param 'optimization_options' has unknown key '{key}'{closest_match_hint(key, known)}; "
                f"valid keys: {', '.join(sorted(known))}"
            )
        setattr(options, key, value)
    return options


def _fused_statistics(optimizer: Any) -> dict[str, int]:
    getter = getattr(optimizer, "get_fused_operator_statistics", None)
    if getter is None:
        return {}
    try:
        return {op: int(count) for op, count in getter().items() if count}
    except Exception:  # statistics are informative only
        return {}


def _resolve_heads(
    proto: onnx.ModelProto, model_type: str, num_heads: int, hidden_size: int, owner: str
) -> tuple[int, int]:
    inferred = infer_num_heads_and_hidden_size(proto)
    if inferred is not None:
        found_heads, found_hidden = inferred
        if num_heads and hidden_size == 0 and found_hidden % num_heads:
            raise PassConfigError(
                f"{owner}: num_heads={num_heads} does not divide the hidden size {found_hidden} found in the graph; "
                "fix num_heads or set hidden_size"
            )
        return num_heads or found_heads, hidden_size or found_hidden
    has_attention = any(node.op_type == "Softmax" for node in proto.graph.node)
    if not has_attention or (model_type in _SELF_DETECTING and num_heads == 0 and hidden_size == 0):
        # No attention to fuse, or onnxruntime detects both itself from the same Reshape constants.
        if has_attention:
            logger.warning(
                "%s: could not read num_heads/hidden_size from the graph; onnxruntime will try to detect them. "
                "Set num_heads and hidden_size if Attention is not fused.",
                owner,
            )
        return num_heads, hidden_size
    missing = " and ".join(
        name for name, value in (("num_heads", num_heads), ("hidden_size", hidden_size)) if not value
    )
    raise PassConfigError(
        f"{owner}: the graph has attention but {missing} could not be read from it (no Q projection MatMul "
        f"followed by a head-splitting Reshape to [batch, seq, heads, head_size]); set {missing} in the pass config"
    )


def infer_num_heads_and_hidden_size(proto: onnx.ModelProto) -> tuple[int, int] | None:
    """``(num_heads, hidden_size)`` from the first attention block, or None when the graph does not show them.

    The hidden size is the Q projection weight's output width; the number of heads is the third entry of the
    Reshape constant that splits that projection into heads (``[0, 0, heads, head_size]`` or with -1s), and
    the two must agree (``heads * head_size == hidden``).
    """
    from onnx import numpy_helper

    constants: dict[str, Any] = {init.name: numpy_helper.to_array(init) for init in proto.graph.initializer}
    for node in proto.graph.node:
        if node.op_type == "Constant":
            for attribute in node.attribute:
                if attribute.name == "value":
                    constants[node.output[0]] = numpy_helper.to_array(attribute.t)
    producers = {output: node for node in proto.graph.node for output in node.output}

    def projection_width(tensor: str) -> int | None:
        # Walk back through the bias Add (either operand order) to a MatMul with a 2-D constant weight.
        node = producers.get(tensor)
        if node is not None and node.op_type == "Add":
            for name in node.input:
                upstream = producers.get(name)
                if upstream is not None and upstream.op_type == "MatMul":
                    node = upstream
                    break
        if node is None or node.op_type != "MatMul":
            return None
        for name in node.input:
            weight = constants.get(name)
            if weight is not None and weight.ndim == 2:
                return int(weight.shape[1])
        return None

    for node in proto.graph.node:
        if node.op_type != "Reshape" or len(node.input) < 2:
            continue
        shape = constants.get(node.input[1])
        if shape is None or shape.ndim != 1 or len(shape) != 4:
            continue
        width = projection_width(node.input[0])
        if width is None:
            continue
        heads, head_size = int(shape[2]), int(shape[3])
        if heads > 0 and head_size > 0 and heads * head_size == width:
            return heads, width
        if heads > 0 and head_size == -1 and width % heads == 0:
            return heads, width
        if head_size > 0 and heads == -1 and width % head_size == 0:
            return width // head_size, width
    return None
