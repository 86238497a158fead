"""``OnnxFloatToFloat16``: convert float32 weights and compute to float16."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.config_errors import param_in_range
from olive.logs import onnxruntime_logs
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import (
    get_external_data_config,
    load_without_weights,
    model_proto_to_olive_model,
    resolve_onnx_path,
    weights_in,
)
from olive_passes_quant._preprocess import scratch_cwd

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    import onnx

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
        # What OnnxModel.convert_float_to_float16 does, on the graph while the weights stay on disk:
        # onnxruntime's method runs symbolic shape inference on a copy of the whole model and converts each
        # weight in place in the loaded proto (which keeps its float32 bytes too). Here types are inferred
        # on the graph alone, every large float32 weight is converted once, one at a time, into a scratch
        # file (with onnxruntime's own convert_np_to_float16), and the converter works on a graph whose
        # large tensors point there: it only flips their type. The output is then written tensor by tensor.
        graph = load_without_weights(model)
        known = {vi.name for vi in graph.graph.value_info}
        graph.graph.value_info.extend(
            vi for vi in _inferred_types(graph, config.use_symbolic_shape_infer) if vi.name not in known
        )
        output = Path(resolve_onnx_path(output_model_path))
        with tempfile.TemporaryDirectory(prefix=".olive-fp16-", dir=output.parent) as tmp:
            weights = _HalfWeights(graph, Path(model.model_path).parent, Path(tmp), config)
            with weights_in(tmp), onnxruntime_logs(logger):
                graph = convert_float_to_float16(graph, disable_shape_infer=True, **kwargs)
            weights.restore_unconverted(graph)
            onnx_model = OnnxModel(graph)
            # Its cast clean-up would run symbolic shape inference on a copy of the converted model; the types
            # merged above already name every value's type, and give the same clean-up.
            onnx_model.disable_shape_inference()
            onnx_model.remove_cascaded_cast_nodes()
            onnx_model.remove_useless_cast_nodes()
            return model_proto_to_olive_model(onnx_model.model, output_model_path, config, weights_dir=tmp)


class _HalfWeights:
    """float16 copies of a graph's large external float32 weights, in one scratch file.

    Each weight of the graph that still refers to external data is read, converted with onnxruntime's
    ``convert_np_to_float16`` (the converter's own clipping) and written to ``float16.data``; the tensor is
    pointed there (keeping type float32 until the converter flips it). Weights the converter leaves in
    float32 (read only by blocked ops) get their original bytes back by :meth:`restore_unconverted`.
    """

    FILE = "float16.data"

    def __init__(self, graph: onnx.ModelProto, source_dir: Path, scratch: Path, config: BasePassConfig):
        import numpy as np
        import onnx
        from onnx.external_data_helper import uses_external_data
        from onnxruntime.transformers.float16 import convert_np_to_float16

        self.source_dir, self.scratch = source_dir, scratch
        self.originals: dict[str, list[tuple[str, str]]] = {}
        with (scratch / self.FILE).open("wb") as out:
            for tensor in graph.graph.initializer:
                if tensor.data_type != onnx.TensorProto.FLOAT or not uses_external_data(tensor):
                    continue
                values = onnx.numpy_helper.to_array(tensor, str(source_dir))
                half = convert_np_to_float16(values, config.min_positive_val, config.max_finite_val)
                del values
                self.originals[tensor.name] = [(e.key, e.value) for e in tensor.external_data]
                _point_at(tensor, self.FILE, out, np.ascontiguousarray(half).astype("<f2").tobytes())

    def restore_unconverted(self, graph: onnx.ModelProto) -> None:
        import onnx

        with (self.scratch / self.FILE).open("ab") as out:
            for tensor in graph.graph.initializer:
                if tensor.name in self.originals and tensor.data_type == onnx.TensorProto.FLOAT:
                    original = onnx.TensorProto()
                    original.CopyFrom(tensor)
                    del original.external_data[:]
                    for key, value in self.originals[tensor.name]:
                        original.external_data.add(key=key, value=value)
                    raw = onnx.numpy_helper.to_array(original, str(self.source_dir)).astype("<f4").tobytes()
                    _point_at(tensor, self.FILE, out, raw)


def _point_at(tensor: onnx.TensorProto, location: str, out: Any, raw: bytes) -> None:
    """Append ``raw`` to the open file ``out`` and point ``tensor``'s external data at it."""
    offset = out.seek(0, 2)
    out.write(raw)
    del tensor.external_data[:]
    for key, value in (("location", location), ("offset", offset), ("length", len(raw))):
        tensor.external_data.add(key=key, value=str(value))


def _inferred_types(graph_only: onnx.ModelProto, symbolic: bool) -> list[onnx.ValueInfoProto]:
    """Element types (no shapes) of the graph's values, inferred on the graph without its large weights.

    Symbolic shape inference (which knows onnxruntime's contrib ops) when ``symbolic``, else ONNX's; as in
    onnxruntime, a failed symbolic inference is logged and the conversion goes on with the types the
    graph declares.
    """
    import onnx

    try:
        # Symbolic inference that gives up saves its partial model into the working directory.
        with scratch_cwd(), onnxruntime_logs(logger):
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
