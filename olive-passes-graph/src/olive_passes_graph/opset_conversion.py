"""OnnxOpVersionConversion: move a model to another ai.onnx opset."""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING

from olive.exceptions import ModelLoadError, PassParamError, PassRunError
from olive.measure import create_session
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, model_proto_to_olive_model, require_protobuf_size
from olive_passes_graph._common import carry_over, check_output_loads, first_line, output_guard

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)


class OnnxOpVersionConversion(Pass):
    """Convert the model to ``target_opset`` of the default (ai.onnx) domain with onnx's version converter.

    ``target_opset`` None picks the newest opset that both onnx's converter and the installed onnxruntime
    support, so the result always runs.
    """

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "target_opset": PassConfigParam(
                type_=int | None,
                default_value=None,
                description="ai.onnx opset to convert to; None: the newest the installed onnx and onnxruntime share.",
            ),
            **get_external_data_config(),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        if config.target_opset is None:
            return
        if config.target_opset < 7:
            raise PassParamError(
                f"param 'target_opset' is {config.target_opset}; use 7 or newer", params="target_opset"
            )
        newest = newest_supported_opset()
        if config.target_opset > newest:
            raise PassParamError(
                f"param 'target_opset' is {config.target_opset} but the installed onnx/onnxruntime run opsets up to "
                f"{newest}; use {newest} or lower, or upgrade onnx and onnxruntime",
                params="target_opset",
            )

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        import onnx
        from onnx import version_converter

        target = config.target_opset or newest_supported_opset()
        require_protobuf_size(
            model,
            "onnx's version converter",
            "convert the opset before the model grows past 2 GB (at export), or keep its current opset",
            owner=self.config_owner(),
        )
        proto = model.load_model()
        current = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)
        if current == target:
            logger.info("OnnxOpVersionConversion: model is already at opset %d", target)
            converted = proto
        else:
            try:
                converted = version_converter.convert_version(proto, target)
            except Exception as exc:
                raise PassRunError(
                    f"onnx cannot convert '{model.model_path}' from opset {current} to {target} "
                    f"({type(exc).__name__}: {first_line(exc)}); try a closer target_opset",
                    owner=self.config_owner(),
                ) from exc
            # The converter keeps the IR version; a newer opset may need a newer one.
            converted.ir_version = max(converted.ir_version, _min_ir_version(target, onnx))
        with output_guard(output_model_path):
            result = model_proto_to_olive_model(converted, output_model_path, config)
            check_output_loads(model, result)
        return carry_over(model, result, attributes={"opset": target})


def _min_ir_version(opset: int, onnx_module) -> int:
    for ir_version, opsets in sorted(_ir_table(onnx_module).items()):
        if opset <= opsets:
            return ir_version
    return onnx_module.IR_VERSION


def _ir_table(onnx_module) -> dict[int, int]:
    # onnx.helper.VERSION_TABLE rows: (release, ir_version, ai.onnx opset, ai.onnx.ml opset, ...)
    table: dict[int, int] = {}
    for row in onnx_module.helper.VERSION_TABLE:
        ir_version, opset = row[1], row[2]
        table[ir_version] = max(table.get(ir_version, 0), opset)
    return table


@functools.lru_cache(maxsize=1)
def newest_supported_opset() -> int:
    """The newest ai.onnx opset that onnx's converter knows and the installed onnxruntime loads."""
    import onnx
    from onnx import TensorProto, helper

    quiet = {"execution_provider": "CPUExecutionProvider", "session_options": {"log_severity_level": 4}}
    for opset in range(onnx.defs.onnx_opset_version(), 6, -1):
        graph = helper.make_graph(
            [helper.make_node("Identity", ["x"], ["y"])],
            "probe",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        )
        probe = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=_min_ir_version(opset, onnx)
        )
        try:
            create_session(probe.SerializeToString(), quiet, what=f"an opset {opset} probe")
        except ModelLoadError:
            continue
        return opset
    return 7
