"""``OnnxGptqQuantization``: int4 weights by GPTQ on calibration text (onnxruntime's ``GPTQWeightOnlyQuantConfig``).

GPTQ quantizes each MatMul's weight column by column and spreads each column's rounding error over the columns not
yet quantized, weighted by the inverse Hessian of the MatMul's inputs on calibration data, so the error that remains
is the one the data does not see.

The algorithm is onnxruntime's and the run every MatMulNBits pass shares (:mod:`olive_passes_quant.weight_only`);
the calibration data is the user's text (:mod:`olive_passes_quant.text_params`), which only a model type that
knows its tokenizer and its decoder's inputs can turn into feeds: its handler's ``text_feeds(config, owner)``
(olive-passes-genai's ``GenAIModel``: each window one prefill with an empty KV cache, as the folder's
``genai_config.json`` describes the decoder's inputs).

The model is held in memory with its weights (GPTQ runs it on the calibration windows): plan on about three
times the float weights' bytes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from olive.exceptions import PassRunError
from olive.passes import PassConfigParam
from olive_passes_quant.text_params import check_text_params, text_params
from olive_passes_quant.weight_only import MatMulNBitsPass, Setting, common_params

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import OliveModelHandler, ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig


class OnnxGptqQuantization(MatMulNBitsPass):
    """Quantize MatMul weights to 4 bits with GPTQ on calibration text (onnxruntime's GPTQWeightOnlyQuantConfig)."""

    accepts_model_types: ClassVar[tuple[str, ...]] = ("GenAIModel",)
    algorithm = "GPTQ"
    # onnxruntime's GPTQ serializes the graph to run it, and a graph from bytes reads external data only from the
    # working directory.
    loads_weights = True

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            **text_params("Calibration text", "Calibration windows."),
            **common_params(32, nodes=()),
            "is_symmetric": PassConfigParam(type_=bool, default_value=True, description="Symmetric int4 blocks."),
            "percdamp": PassConfigParam(
                type_=float, default_value=0.01, description="Hessian dampening, a share of its mean diagonal."
            ),
            "actorder": PassConfigParam(
                type_=bool, default_value=False, description="Quantize columns by decreasing Hessian diagonal."
            ),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        super()._check_config(config, accelerator_spec)
        check_text_params(config)

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> OliveModelHandler:
        owner = self.config_owner()
        text_feeds = getattr(model, "text_feeds", None)
        if not callable(text_feeds):
            raise PassRunError(
                f"GPTQ calibrates on text through the model's own tokenizer, which a {model.model_type} does not "
                "have; give it a GenAIModel (the folder ModelBuilder writes)",
                owner=owner,
            )
        # onnxruntime's GPTQ only iterates over (a copy of) its calibration reader: a list of feeds is one.
        feeds = text_feeds(config, owner)
        result = self._quantize(model, config, output_model_path, feeds)
        calibration = {"calibration_windows": len(feeds), "window": config.window}
        result.model_attributes = {**(result.model_attributes or {}), "gptq": calibration}
        return result

    def _algo_config(self, config: BasePassConfig, setting: Setting, nodes: list[str], data: Any) -> Any:
        from onnxruntime.quantization.matmul_nbits_quantizer import GPTQWeightOnlyQuantConfig

        return GPTQWeightOnlyQuantConfig(
            calibration_data_reader=data,
            percdamp=config.percdamp,
            block_size=setting.block_size,
            actorder=config.actorder,
        )

    def _settings(self, config: BasePassConfig, setting: Setting) -> str:
        return f"{super()._settings(config, setting)}, is_symmetric {setting.is_symmetric}"
