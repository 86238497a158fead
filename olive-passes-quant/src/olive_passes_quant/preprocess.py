"""``OnnxQuantizationPreprocess``: onnxruntime's quant_pre_process as a pass of its own."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from olive.exceptions import OliveError, PassRunError
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, model_proto_to_olive_model

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig


class OnnxQuantizationPreprocess(Pass):
    """Prepare a model for quantization: shape inference and graph optimization (onnxruntime quant_pre_process).

    When symbolic shape inference fails ("Incomplete symbolic shape inference"), it is retried without it
    and the log says so.
    """

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "skip_optimization": PassConfigParam(
                type_=bool,
                default_value=False,
                description="Skip the graph optimization step (may make ONNX shape inference fail on some models).",
            ),
            "skip_onnx_shape": PassConfigParam(
                type_=bool, default_value=False, description="Skip ONNX shape inference."
            ),
            "skip_symbolic_shape": PassConfigParam(
                type_=bool,
                default_value=False,
                description="Skip symbolic shape inference (retried without it when it fails).",
            ),
            **get_external_data_config(),
        }

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        import onnx

        from olive_passes_quant._preprocess import quant_pre_process

        with tempfile.TemporaryDirectory(prefix="olive-quant-pre-") as tmp:
            tmp_path = Path(tmp) / "model.onnx"
            try:
                quant_pre_process(
                    model.model_path,
                    tmp_path,
                    skip_optimization=config.skip_optimization,
                    skip_onnx_shape=config.skip_onnx_shape,
                    skip_symbolic_shape=config.skip_symbolic_shape,
                )
            except OliveError:
                raise
            except Exception as exc:
                raise PassRunError(
                    f"quant_pre_process failed on '{model.model_path}': {exc}; try skip_optimization=true or "
                    "skip_onnx_shape=true",
                    owner=self.config_owner(),
                ) from exc
            proto = onnx.load(str(tmp_path))
        return model_proto_to_olive_model(proto, output_model_path, config)
