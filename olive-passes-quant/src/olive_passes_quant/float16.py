"""``OnnxFloatToFloat16``: convert float32 weights and compute to float16."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from olive.config_errors import param_in_range
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import (
    get_external_data_config,
    load_without_weights,
    model_proto_to_olive_model,
    release_memory,
)
from olive_passes_quant._preprocess import scratch_cwd

if TYPE_CHECKING:
    import onnx

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)


class OnnxFloatToFloat16(Pass):
    """Convert a model to float16 with onnxruntime's float16 converter (handles contrib ops and large models)."""

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "min_positive_val": PassConfigParam(
                type_=float, default_value=5.96e-08, description="Constants closer to zero are clipped to this."
            ),
            "max_finite_val": PassConfigParam(
                type_=float, default_value=65504.0, description="Constants larger in magnitude are clipped to this."
            ),
            "keep_io_types": PassConfigParam(
                type_=bool | list[str],
                default_value=False,
                description="Keep the model's inputs/outputs float32 (True, or a list of input/output names).",
            ),
            "use_symbolic_shape_infer": PassConfigParam(
                type_=bool,
                default_value=True,
                description="Type the graph with symbolic shape inference (needed for contrib ops); else ONNX's.",
            ),
            "op_block_list": PassConfigParam(
                type_=list[str] | None,
                default_value=None,
                description="Op types to keep in float32 (default: onnxruntime's list of fp16-unsafe ops).",
            ),
            "node_block_list": PassConfigParam(
                type_=list[str] | None, default_value=None, description="Node names to keep in float32."
            ),
            "force_fp16_initializers": PassConfigParam(
                type_=bool,
                default_value=False,
                description="Convert every float initializer, even those only blocked ops read.",
            ),
            **get_external_data_config(),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        param_in_range(config, "min_positive_val", above=0)
        param_in_range(config, "max_finite_val", above=0)

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        from onnxruntime.transformers.float16 import convert_float_to_float16
        from onnxruntime.transformers.onnx_model import OnnxModel

        kwargs = {
            "keep_io_types": config.keep_io_types,
            "min_positive_val": config.min_positive_val,
            "max_finite_val": config.max_finite_val,
            "force_fp16_initializers": config.force_fp16_initializers,
        }
        if config.op_block_list is not None:
            kwargs["op_block_list"] = config.op_block_list
        if config.node_block_list:
            kwargs["node_block_list"] = config.node_block_list
        # What OnnxModel.convert_float_to_float16 does, with its type inference moved onto the graph alone:
        # onnxruntime runs symbolic shape inference on a copy of the whole model (a second copy of every
        # weight), and ONNX shape inference serializes the whole model (and fails past 2 GB); the converter
        # needs only the element types they find.
        types = _inferred_types(model.model_path, config.use_symbolic_shape_infer)
        release_memory()
        proto = model.load_model()
        known = {vi.name for vi in proto.graph.value_info}
        proto.graph.value_info.extend(vi for vi in types if vi.name not in known)
        proto = convert_float_to_float16(proto, disable_shape_infer=True, **kwargs)
        onnx_model = OnnxModel(proto)
        # Its cast clean-up would run symbolic shape inference on a copy of the converted model; the types
        # merged above already name every value's type, and give the same clean-up.
        onnx_model.disable_shape_inference()
        onnx_model.remove_cascaded_cast_nodes()
        onnx_model.remove_useless_cast_nodes()
        return model_proto_to_olive_model(onnx_model.model, output_model_path, config)


def _inferred_types(model_path: str, symbolic: bool) -> list[onnx.ValueInfoProto]:
    """Element types (no shapes) of the graph's values, inferred on the graph without its large weights.

    Symbolic shape inference (which knows onnxruntime's contrib ops) when ``symbolic``, else ONNX's; as in
    onnxruntime, a failed symbolic inference is logged and the conversion goes on with the types the
    graph declares.
    """
    import onnx

    graph_only = load_without_weights(model_path)
    try:
        # Symbolic inference that gives up saves its partial model into the working directory.
        with scratch_cwd():
            inferred = _infer(graph_only, symbolic)
    except Exception as exc:
        logger.warning(
            "type inference failed (%s: %s); converting with the types the graph declares", type(exc).__name__, exc
        )
        return []
    types = []
    for vi in inferred.graph.value_info if inferred is not None else []:
        if vi.name and vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type != onnx.TensorProto.UNDEFINED:
            typed = onnx.ValueInfoProto()
            typed.CopyFrom(vi)
            # auto_merge can merge dims wrongly (onnxruntime issue 15521): keep the element type only.
            typed.type.tensor_type.ClearField("shape")
            types.append(typed)
    return types


def _infer(graph_only: onnx.ModelProto, symbolic: bool) -> onnx.ModelProto | None:
    import onnx

    if symbolic:
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

        return SymbolicShapeInference.infer_shapes(graph_only, auto_merge=True, guess_output_rank=False)
    return onnx.shape_inference.infer_shapes(graph_only)
