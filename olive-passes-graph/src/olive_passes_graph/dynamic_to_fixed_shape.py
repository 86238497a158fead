"""DynamicToFixedShape: replace symbolic dimensions with fixed sizes (for NPUs and static-shape runtimes)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from olive.exceptions import PassConfigError, PassParamError
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, load_without_weights, model_proto_to_olive_model
from olive_passes_graph._common import carry_over, check_output_loads, output_guard

if TYPE_CHECKING:
    import onnx

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)


class DynamicToFixedShape(Pass):
    """Fix symbolic dimensions, by name (``dim_param`` + ``dim_value``) or per input (``input_name`` + ``input_shape``).

    Give exactly one of the two forms. Output and intermediate shapes are re-inferred so the saved model
    has no symbolic dimension left wherever the fixed inputs determine it.
    """

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "dim_param": PassConfigParam(
                type_=list[str] | None,
                default_value=None,
                description='Symbolic dimension names to fix, e.g. ["batch", "sequence"]; pair with dim_value.',
            ),
            "dim_value": PassConfigParam(
                type_=list[int] | None,
                default_value=None,
                description="The sizes for dim_param, in the same order (each >= 1).",
            ),
            "input_name": PassConfigParam(
                type_=list[str] | None,
                default_value=None,
                description="Model inputs whose whole shape to fix; pair with input_shape.",
            ),
            "input_shape": PassConfigParam(
                type_=list[list[int]] | None,
                default_value=None,
                description="The shapes for input_name, in the same order, e.g. [[1, 3, 224, 224]].",
            ),
            **get_external_data_config(),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        by_dim = bool(config.dim_param) or bool(config.dim_value)
        by_input = bool(config.input_name) or bool(config.input_shape)
        every = ("dim_param", "dim_value", "input_name", "input_shape")
        if by_dim and by_input:
            raise PassParamError(
                "give either dim_param + dim_value or input_name + input_shape, not both", params=every
            )
        if not by_dim and not by_input:
            raise PassParamError(
                'nothing to fix; give dim_param + dim_value (e.g. ["batch"], [1]) or input_name + input_shape '
                '(e.g. ["input"], [[1, 16]])',
                params=every,
            )
        if by_dim:
            names, values = config.dim_param or [], config.dim_value or []
            if len(names) != len(values):
                raise PassParamError(
                    f"dim_param has {len(names)} names but dim_value has {len(values)} values; give one value per name",
                    params=("dim_param", "dim_value"),
                )
            bad = [f"{n}={v}" for n, v in zip(names, values, strict=True) if v < 1]
            if bad:
                raise PassParamError(f"dim_value must be >= 1, got {', '.join(bad)}", params="dim_value")
        else:
            names, shapes = config.input_name or [], config.input_shape or []
            if len(names) != len(shapes):
                raise PassParamError(
                    f"input_name has {len(names)} names but input_shape has {len(shapes)} shapes; give one shape "
                    "per input",
                    params=("input_name", "input_shape"),
                )
            bad = [f"{n}={s}" for n, s in zip(names, shapes, strict=True) if not s or any(d < 1 for d in s)]
            if bad:
                raise PassParamError(
                    f"every input_shape entry must be >= 1, got {', '.join(bad)}", params="input_shape"
                )

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        from onnxruntime.tools.onnx_model_utils import make_dim_param_fixed, make_input_shape_fixed

        owner = self.config_owner()
        # Only shapes change: large weights stay in their files and are copied into the output one at a time.
        proto = load_without_weights(model)
        if config.dim_param:
            present = _dim_params(proto)
            missing = [name for name in config.dim_param if name not in present]
            if missing:
                raise PassConfigError(
                    f"the model has no symbolic dimension {', '.join(map(repr, missing))}; "
                    f"its symbolic dimensions are {', '.join(map(repr, sorted(present))) or '(none)'}",
                    owner=owner,
                )
            for name, value in zip(config.dim_param, config.dim_value, strict=True):
                make_dim_param_fixed(proto.graph, name, value)
        else:
            inputs = {value.name: value for value in proto.graph.input}
            for name, shape in zip(config.input_name, config.input_shape, strict=True):
                if name not in inputs:
                    raise PassConfigError(
                        f"the model has no input '{name}'; its inputs are {', '.join(inputs)}", owner=owner
                    )
                rank = len(inputs[name].type.tensor_type.shape.dim)
                if rank != len(shape):
                    raise PassConfigError(
                        f"input '{name}' has rank {rank} but input_shape gives {shape} ({len(shape)} dims)", owner=owner
                    )
                try:
                    make_input_shape_fixed(proto.graph, name, shape)
                except ValueError as exc:
                    raise PassConfigError(f"input '{name}' cannot take shape {shape}: {exc}", owner=owner) from exc
        _refresh_shapes(proto)
        with output_guard(output_model_path):
            weights_dir = Path(model.model_path).parent
            result = model_proto_to_olive_model(proto, output_model_path, config, weights_dir=weights_dir)
            check_output_loads(model, result)
        return carry_over(model, result)


def _dim_params(proto: onnx.ModelProto) -> set[str]:
    names: set[str] = set()
    for value in [*proto.graph.input, *proto.graph.output, *proto.graph.value_info]:
        for dim in value.type.tensor_type.shape.dim:
            if dim.dim_param:
                names.add(dim.dim_param)
    return names


def _refresh_shapes(proto: onnx.ModelProto) -> None:
    """Re-infer intermediate and output shapes from the now-fixed inputs."""
    # Stale symbolic entries would survive inference (it keeps what is already there).
    kept = [v for v in proto.graph.value_info if not any(d.dim_param for d in v.type.tensor_type.shape.dim)]
    del proto.graph.value_info[:]
    proto.graph.value_info.extend(kept)
    try:
        inferred = _infer(proto)
    except Exception as exc:  # shape inference is a refinement; the fixed inputs are the result
        logger.warning("DynamicToFixedShape: shape inference failed (%s); output shapes left as they were", exc)
        return
    del proto.graph.value_info[:]
    proto.graph.value_info.extend(inferred.graph.value_info)
    for index, output in enumerate(proto.graph.output):
        new = inferred.graph.output[index]
        fixed = all(d.HasField("dim_value") for d in new.type.tensor_type.shape.dim)
        if fixed and new.type.tensor_type.shape.dim:
            output.type.tensor_type.shape.CopyFrom(new.type.tensor_type.shape)


def _infer(proto: onnx.ModelProto) -> onnx.ModelProto:
    try:
        # onnxruntime's symbolic inference knows its contrib ops (fused Attention, SkipLayerNormalization...).
        from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

        return SymbolicShapeInference.infer_shapes(proto, auto_merge=True, guess_output_rank=True)
    except Exception:
        import onnx

        return onnx.shape_inference.infer_shapes(proto, strict_mode=False)
