"""OrtTransformersOptimization: onnxruntime's transformer fusions (Attention, LayerNorm, GELU...)."""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.config_errors import param_in_range
from olive.exceptions import PassConfigError, PassParamError, PassRunError, closest_match_hint
from olive.logs import once_per_message, onnxruntime_logs
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import (
    get_external_data_config,
    load_without_weights,
    model_proto_to_olive_model,
    release_memory,
    resolve_onnx_path,
    weights_in,
)
from olive.search.search_parameter import Categorical
from olive_passes_graph._common import carry_over, check_loads, ort_offline_optimize_to, output_guard
from olive_passes_graph.attention_dims import (
    AttentionDims,
    count_attention_blocks,
    infer_attention_dims,
    infer_num_heads_and_hidden_size,
)

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
# Ops of QDQ graphs, whose QOrdered fusions transpose int8 weights in place (fusion_utils).
_REWRITE_WEIGHTS_IN_PLACE = {"QuantizeLinear", "DequantizeLinear"}
_LEVELS = {1: "ORT_ENABLE_BASIC", 2: "ORT_ENABLE_EXTENDED", 99: "ORT_ENABLE_ALL"}
# Model types fused by onnxruntime's BERT attention fusion, which trusts num_heads/hidden_size as given when
# the graph's own Reshape shapes are computed at run time: values that contradict the graph are an error.
# (Not swin: its stages have different head counts.)
_STRICT_DIMS = {"bert", "bert_tf", "bert_keras", "vit"}
# onnxruntime's fusion modules log the same line once per layer; one copy says it.
_FUSION_LOGGERS = ("fusion", "onnx_model")
# As Olive does, a model without model_type in the config takes it (and the head count and hidden size, when
# the graph does not show them) from its model_attributes, which hold the Hugging Face config's names.
_HF_MODEL_TYPES = {
    "whisper": "bart",
    "camembert": "bert",
    "deberta": "bert",
    "deberta-v2": "bert",
    "distilbert": "bert",
    "gpt_neox": "gpt2",
    "gpt-j": "gpt2",
    "llama": "gpt2",
    "roberta": "bert",
}
_NUM_HEADS_NAMES = ("num_heads", "num_attention_heads", "n_head", "n_heads", "encoder_attention_heads")
_HIDDEN_SIZE_NAMES = ("hidden_size", "dim", "d_model", "n_embd")

__all__ = ["OrtTransformersOptimization", "infer_num_heads_and_hidden_size"]


# Model types of onnxruntime's transformer optimizer (``onnxruntime.transformers.optimizer.MODEL_TYPES``) that every
# onnxruntime version this distribution supports knows; a test checks they are all in the installed one's.
COMMON_MODEL_TYPES = frozenset(
    {"bart", "bert", "bert_keras", "bert_tf", "clip", "gpt2", "gpt2_tf", "gpt_neox", "swin", "t5", "tnlr", "unet"}
    | {"vae", "vit"}
)


class OrtTransformersOptimization(Pass):
    """Fuse transformer sub-graphs into onnxruntime's contrib ops (onnxruntime.transformers.optimizer).

    Attention, SkipLayerNormalization, EmbedLayerNormalization, (Bias)Gelu and friends replace dozens of
    small nodes. ``opt_level`` > 0 first lets onnxruntime optimize the graph; this pass does that itself so
    no PyTorch is needed at any level. With ``num_heads``/``hidden_size`` 0 they are read from the graph
    (Q projection weight and the head-splitting Reshape, constant or computed at run time as PyTorch exports
    it; see :mod:`olive_passes_graph.attention_dims`). Attention left unfused is reported in
    ``model_attributes["unfused_attention"]`` with one warning naming the values tried.
    """

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "model_type": PassConfigParam(
                type_=str | None,
                default_value=None,
                description="Transformer type as onnxruntime names it: bert, gpt2, t5, vit, clip, unet, vae, "
                "bart, phi, ... (onnxruntime.transformers.optimizer.MODEL_TYPES). None takes the input model's "
                "model_attributes['model_type'] (Hugging Face names such as roberta or llama are mapped).",
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
            "force_fp32_nodes": PassConfigParam(
                type_=list[str] | None,
                default_value=None,
                description="With float16: names of nodes (in the fused graph) kept in float32.",
            ),
            "force_fp16_inputs": PassConfigParam(
                type_=dict[str, list[int]] | None,
                default_value=None,
                description="With float16: {op type: input indices} converted to float16 even where the converter "
                "would keep them in float32.",
            ),
            **get_external_data_config(),
        }

    @classmethod
    def is_accelerator_agnostic(cls, accelerator_spec: AcceleratorSpec) -> bool:
        # opt_level 2/99 graphs hold provider-specific rewrites.
        return False

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        known: Any = COMMON_MODEL_TYPES
        if config.model_type is not None and config.model_type not in known:
            # Checking a config is part of every run, a cached one too: onnxruntime's optimizer (and sympy, numpy,
            # onnx with it) is imported only for a model type outside those every supported version knows.
            from onnxruntime.transformers.optimizer import MODEL_TYPES

            known = MODEL_TYPES
        if config.model_type is not None and config.model_type not in known:
            raise PassParamError(
                f"param 'model_type' is '{config.model_type}'{closest_match_hint(config.model_type, known)}, "
                f"which onnxruntime's transformer optimizer does not know; use one of {', '.join(sorted(known))}",
                params="model_type",
            )
        if config.opt_level is not None and config.opt_level not in (0, 1, 2, 99):
            raise PassParamError(f"param 'opt_level' must be 0, 1, 2 or 99, got {config.opt_level}", params="opt_level")
        if config.only_onnxruntime and config.opt_level == 0:
            raise PassParamError(
                "only_onnxruntime with opt_level 0 would return the model unchanged; give an opt_level above 0 or "
                "set only_onnxruntime to false",
                params=("only_onnxruntime", "opt_level"),
            )
        for name in ("num_heads", "hidden_size"):
            param_in_range(config, name, minimum=0, note="0 infers it from the graph")
        if config.optimization_options and config.model_type is not None:
            _fusion_options(config.model_type, config.optimization_options)

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        from onnxruntime.transformers.optimizer import MODEL_TYPES

        owner = self.config_owner()
        model_type = _model_type(config.model_type, model.model_attributes, owner)
        check_loads(model)
        release_memory()
        opt_level = config.opt_level if config.opt_level is not None else MODEL_TYPES[model_type][2]
        with output_guard(output_model_path):
            output = Path(resolve_onnx_path(output_model_path))
            # The fusions read the weights they combine (Q/K/V into one Attention weight...) one tensor at a
            # time through numpy_helper, relative to the working directory; every other weight stays in its
            # file and is copied into the output tensor by tensor.
            with tempfile.TemporaryDirectory(prefix=".olive-fusion-", dir=output.parent) as tmp:
                work = Path(tmp)
                if opt_level > 0:
                    providers = ["CPUExecutionProvider"]
                    if config.use_gpu:
                        providers = list(
                            dict.fromkeys([self.accelerator_spec.execution_provider, "CPUExecutionProvider"])
                        )
                    disabled = ["ConstantSharing"]
                    if opt_level > 1 and not config.only_onnxruntime:
                        disabled += _DISABLED_BEFORE_FUSION
                    source = ort_offline_optimize_to(model.model_path, work, _LEVELS[opt_level], providers, disabled)
                else:
                    source = model.model_path
                proto = load_without_weights(source)
                weights_dir = Path(source).parent
                if config.float16 or any(n.op_type in _REWRITE_WEIGHTS_IN_PLACE for n in proto.graph.node):
                    # The float16 converter, and the fusions of quantized (QDQ) graphs, rewrite weights in
                    # place in the proto: they need them all loaded.
                    from onnx.external_data_helper import load_external_data_for_model

                    load_external_data_for_model(proto, str(weights_dir))
                with weights_in(weights_dir):
                    optimizer, num_heads, hidden_size, dims, before, blocks = self._fuse(
                        proto, model, config, model_type, owner
                    )
                statistics = _fused_statistics(optimizer)
                op_types = {node.op_type for node in optimizer.model.graph.node}
                unfused = _unfused_attention(blocks, op_types, num_heads, hidden_size, dims, owner)
                _declare_domains(optimizer.model)
                result = model_proto_to_olive_model(optimizer.model, output_model_path, config, weights_dir=weights_dir)
            nodes_after = len(optimizer.model.graph.node)
            del optimizer, proto
            release_memory()
            check_loads(result)
        logger.info("OrtTransformersOptimization: %d -> %d nodes; fused %s", before, nodes_after, statistics)
        attributes: dict[str, Any] = {
            "num_heads": num_heads,
            "hidden_size": hidden_size,
            "transformer_fusions": statistics,
        }
        if unfused is not None:
            attributes["unfused_attention"] = unfused
        result = carry_over(model, result, attributes=attributes)
        if unfused is None:
            # An earlier run's record does not describe this model.
            result.model_attributes.pop("unfused_attention", None)
        return result

    def _fuse(
        self, proto: onnx.ModelProto, model: ONNXModelHandler, config: BasePassConfig, model_type: str, owner: str
    ) -> tuple[Any, int, int, AttentionDims | None, int, int]:
        """onnxruntime's fusions on ``proto``: the optimizer, num_heads, hidden_size, the graph's attention
        dims, and the node and attention block counts before."""
        from onnxruntime.transformers.optimizer import optimize_model

        num_heads, hidden_size, dims = config.num_heads, config.hidden_size, None
        if not config.only_onnxruntime:
            fallback = (
                _attribute(model.model_attributes, _NUM_HEADS_NAMES),
                _attribute(model.model_attributes, _HIDDEN_SIZE_NAMES),
            )
            num_heads, hidden_size, dims = _resolve_heads(proto, model_type, num_heads, hidden_size, owner, fallback)
        options = _fusion_options(model_type, config.optimization_options or {}, owner)
        before = len(proto.graph.node)
        # Counted before the fusions rewrite the proto in place.
        blocks = 0 if config.only_onnxruntime or not options.enable_attention else count_attention_blocks(proto)
        try:
            # opt_level=0: onnxruntime's own pre-optimization helper imports torch; it ran above instead.
            with _deduplicated_fusion_logs(), onnxruntime_logs(logger, _fusion_loggers()):
                optimizer = optimize_model(
                    proto,
                    model_type=model_type,
                    num_heads=num_heads,
                    hidden_size=hidden_size,
                    optimization_options=options,
                    opt_level=0,
                    use_gpu=config.use_gpu,
                    only_onnxruntime=config.only_onnxruntime,
                )
            if config.float16:
                optimizer.convert_float_to_float16(
                    keep_io_types=config.keep_io_types,
                    op_block_list=config.force_fp32_ops,
                    node_block_list=config.force_fp32_nodes,
                    force_fp16_inputs=config.force_fp16_inputs,
                )
            if config.input_int32:
                optimizer.change_graph_inputs_to_int32()
            optimizer.topological_sort()
        except Exception as exc:
            raise PassRunError(
                f"onnxruntime's transformer optimizer failed on '{model.model_path}' ({type(exc).__name__}: {exc})",
                owner=owner,
            ) from exc
        return optimizer, num_heads, hidden_size, dims, before, blocks


def _model_type(configured: str | None, attributes: dict[str, Any] | None, owner: str) -> str:
    """The onnxruntime model type: the configured one, else the one the model's attributes name."""
    from onnxruntime.transformers.optimizer import MODEL_TYPES

    if configured is not None:
        return configured
    found = (attributes or {}).get("model_type")
    if not found:
        raise PassConfigError(
            "param 'model_type' is not set and the input model's model_attributes have no 'model_type'; "
            f'set model_type to one of {", ".join(sorted(MODEL_TYPES))} (e.g. "bert")',
            owner=owner,
        )
    model_type = _HF_MODEL_TYPES.get(found, found)
    if model_type not in MODEL_TYPES:
        raise PassConfigError(
            f"the input model's model_attributes give model_type '{found}', which onnxruntime's transformer "
            f"optimizer does not know{closest_match_hint(model_type, MODEL_TYPES)}; set param 'model_type' to one of "
            f"{', '.join(sorted(MODEL_TYPES))}",
            owner=owner,
        )
    return model_type


def _attribute(attributes: dict[str, Any] | None, names: tuple[str, ...]) -> int:
    """The first of ``names`` in ``attributes`` that holds a positive int, else 0."""
    for name in names:
        value = (attributes or {}).get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


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


def _fusion_options(model_type: str, overrides: dict[str, Any], owner: str | None = None) -> Any:
    from onnxruntime.transformers.fusion_options import FusionOptions

    options = FusionOptions(model_type)
    known = vars(options)
    for key, value in overrides.items():
        if key not in known:
            raise PassParamError(
                f"param 'optimization_options' has unknown key '{key}'{closest_match_hint(key, known)}; "
                f"valid keys: {', '.join(sorted(known))}",
                params="optimization_options",
                owner=owner,
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
    proto: onnx.ModelProto,
    model_type: str,
    num_heads: int,
    hidden_size: int,
    owner: str,
    fallback: tuple[int, int] = (0, 0),
) -> tuple[int, int, AttentionDims | None]:
    """The ``(num_heads, hidden_size)`` to fuse with, and what the graph shows (None if unreadable).

    Values read from the graph fill the ones left at 0; explicit values that contradict a graph whose
    attention blocks all agree are a :class:`PassConfigError` for the BERT-style fusions (a wrong head count
    there makes a wrong Attention node or none at all) and a warning otherwise. ``fallback`` (from the
    model's attributes) fills values left at 0 only when the graph does not show them.
    """
    dims = infer_attention_dims(proto)
    if dims is not None and not dims.uniform and model_type in _SELF_DETECTING:
        # Blocks with different head counts (Swin stages): onnxruntime reads each block's own Reshape, and one
        # pair of values for all of them would be wrong for most.
        logger.info("%s: attention blocks differ in head count; onnxruntime detects them per block", owner)
        return num_heads, hidden_size, dims
    if dims is not None:
        mismatch = _mismatch(dims, num_heads, hidden_size)
        if mismatch:
            message = (
                f"{mismatch}, but the graph's head-splitting Reshape '{dims.reshape}' splits a "
                f"{dims.hidden_size}-wide projection into {dims.num_heads} heads of {dims.head_size} "
                f"(num_heads={dims.num_heads}, hidden_size={dims.hidden_size})"
            )
            if model_type in _STRICT_DIMS and dims.uniform:
                raise PassConfigError(
                    f"{message}; set num_heads={dims.num_heads} and hidden_size={dims.hidden_size}, or leave "
                    "both at 0 to use the graph's values",
                    owner=owner,
                )
            logger.warning("%s: %s; using the configured values", owner, message)
        heads, hidden = num_heads or dims.num_heads, hidden_size or dims.hidden_size
        if hidden % heads:
            raise PassConfigError(
                f"num_heads={heads} does not divide hidden_size={hidden} (the graph shows "
                f"num_heads={dims.num_heads}, hidden_size={dims.hidden_size}); fix num_heads or hidden_size",
                owner=owner,
            )
        return heads, hidden, dims
    num_heads, hidden_size = num_heads or fallback[0], hidden_size or fallback[1]
    if num_heads and hidden_size:
        return num_heads, hidden_size, None
    has_attention = count_attention_blocks(proto) > 0
    if not has_attention or (model_type in _SELF_DETECTING and num_heads == 0 and hidden_size == 0):
        # No attention to fuse, or onnxruntime may detect both itself; whether it did is checked afterwards.
        if has_attention:
            logger.info("%s: num_heads/hidden_size not readable from the graph; onnxruntime will try", owner)
        return num_heads, hidden_size, None
    missing = " and ".join(
        name for name, value in (("num_heads", num_heads), ("hidden_size", hidden_size)) if not value
    )
    raise PassConfigError(
        f"the graph has attention but {missing} could not be read from it (no Q projection MatMul "
        f"followed by a head-splitting Reshape to [batch, seq, heads, head_size]); set {missing} in the pass config",
        owner=owner,
    )


def _mismatch(dims: AttentionDims, num_heads: int, hidden_size: int) -> str:
    """What in the explicit values contradicts ``dims`` ('' when nothing does)."""
    given = ", ".join(
        f"{name}={value}" for name, value in (("num_heads", num_heads), ("hidden_size", hidden_size)) if value
    )
    if num_heads and num_heads != dims.num_heads:
        return f"{given} is configured"
    if hidden_size and hidden_size != dims.hidden_size:
        return f"{given} is configured"
    return ""


def _unfused_attention(
    blocks: int, op_types: set[str], num_heads: int, hidden_size: int, dims: AttentionDims | None, owner: str
) -> dict[str, Any] | None:
    """Report attention blocks the fusions left alone: one warning, and the record for model_attributes."""
    if not blocks or any("Attention" in op for op in op_types):
        return None
    if dims is not None:
        seen = f"the graph's Reshape '{dims.reshape}' shows num_heads={dims.num_heads}, hidden_size={dims.hidden_size}"
    else:
        seen = "they could not be read from the graph (no head-splitting Reshape after a Q projection)"
    hint = (
        "onnxruntime's attention pattern did not match this graph (the mask or Q/K/V sub-graphs differ from "
        "what it fuses)"
        if num_heads and hidden_size
        else "set num_heads and hidden_size in the pass config (e.g. 12 and 768 for BERT-base)"
    )
    logger.warning(
        "%s: the graph has %d attention block(s) (Softmax between MatMuls) but none was fused into "
        "Attention/MultiHeadAttention; tried num_heads=%d, hidden_size=%d (%s); %s",
        owner,
        blocks,
        num_heads,
        hidden_size,
        seen,
        hint,
    )
    return {
        "attention_blocks": blocks,
        "num_heads": num_heads,
        "hidden_size": hidden_size,
        "inferred": None if dims is None else {"num_heads": dims.num_heads, "hidden_size": dims.hidden_size},
        "hint": hint,
    }


@contextlib.contextmanager
def _deduplicated_fusion_logs() -> Iterator[None]:
    # Loggers are per module ("fusion_attention", "onnx_model_bert"...) and exist once the optimizer is imported;
    # their fusions repeat each message for every layer.
    with once_per_message(*[logging.getLogger(name) for name in _fusion_loggers()]):
        yield


def _fusion_loggers() -> list[str]:
    return [name for name in logging.root.manager.loggerDict if name.startswith(_FUSION_LOGGERS)]
