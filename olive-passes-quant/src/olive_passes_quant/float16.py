"""``OnnxFloatToFloat16``: convert float32 weights and compute to float16."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from olive.config_errors import param_in_range
from olive.logs import onnxruntime_logs
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, model_proto_to_olive_model

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig


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
        onnx_model = OnnxModel(model.load_model())
        with onnxruntime_logs(logger):
            onnx_model.convert_float_to_float16(use_symbolic_shape_infer=config.use_symbolic_shape_infer, **kwargs)
        return model_proto_to_olive_model(onnx_model.model, output_model_path, config)
