"""``OnnxGptqQuantization``: int4 weights by GPTQ on calibration text, for an onnxruntime-genai decoder folder.

GPTQ (onnxruntime's ``GPTQWeightOnlyQuantConfig``) quantizes each MatMul's weight column by column and spreads
each column's rounding error over the columns not yet quantized, weighted by the inverse Hessian of the MatMul's
inputs on calibration data, so the error that remains is the one the data does not see. The calibration data is
the user's text (``data_config``, the workflow's text data config, or ``data_path``: ``.txt`` one sample per line,
or ``.jsonl``; :mod:`olive_passes_genai.text_windows`), tokenized with the folder's own
tokenizer and cut into ``max_windows`` windows of ``window`` tokens, each fed as one prefill with an empty KV
cache, as the folder's ``genai_config.json`` describes the decoder's inputs.

The model is held in memory with its weights (GPTQ runs it on the calibration windows): plan on about three
times the float weights' bytes.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.exceptions import PassParamError
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import model_proto_to_olive_model
from olive_passes_genai.genai_model import GenAIModelHandler, genai_folder_from_onnx
from olive_passes_genai.ort_quantizer import run_quantizer
from olive_passes_genai.text_windows import check_text_params, pass_samples, text_params, windows
from olive_passes_genai.weight_only import ACCURACY_LEVELS, _external_data_params

if TYPE_CHECKING:
    import numpy as np

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)


class OnnxGptqQuantization(Pass):
    """Quantize MatMul weights to 4 bits with GPTQ on calibration text (onnxruntime's GPTQWeightOnlyQuantConfig)."""

    accepts_model_types: ClassVar[tuple[str, ...]] = ("GenAIModel",)

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            **text_params("Calibration text", "Calibration windows."),
            "block_size": PassConfigParam(type_=int, default_value=32, description="int4 block size along K."),
            "is_symmetric": PassConfigParam(type_=bool, default_value=True, description="Symmetric int4 blocks."),
            "accuracy_level": PassConfigParam(
                type_=int | None,
                default_value=None,
                description="MatMulNBits accuracy_level: 0/unset, 1 fp32, 2 fp16, 3 bf16, 4 int8 compute.",
            ),
            "percdamp": PassConfigParam(
                type_=float, default_value=0.01, description="Hessian dampening, a share of its mean diagonal."
            ),
            "actorder": PassConfigParam(
                type_=bool, default_value=False, description="Quantize columns by decreasing Hessian diagonal."
            ),
            **_external_data_params(),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        block = config.block_size
        if block < 16 or block & (block - 1):
            raise PassParamError(
                f"param 'block_size' is {block}, which MatMulNBits does not take; use a power of two >= 16",
                params="block_size",
            )
        if config.accuracy_level is not None and config.accuracy_level not in ACCURACY_LEVELS:
            raise PassParamError(f"param 'accuracy_level' is {config.accuracy_level}; use 0-4", params="accuracy_level")
        check_text_params(config)

    def _run_for_config(
        self, model: GenAIModelHandler, config: BasePassConfig, output_model_path: str
    ) -> GenAIModelHandler:
        from onnxruntime.quantization.matmul_nbits_quantizer import GPTQWeightOnlyQuantConfig, MatMulNBitsQuantizer

        reader = _WindowReader(model, config, self.config_owner())
        level = int(config.accuracy_level) if config.accuracy_level else None
        # The weights are loaded into the graph: onnxruntime's GPTQ serializes the graph to run it, and a graph
        # from bytes reads external data only from the working directory.
        quantizer = MatMulNBitsQuantizer(
            model.load_model(),
            block_size=config.block_size,
            is_symmetric=config.is_symmetric,
            accuracy_level=level,
            algo_config=GPTQWeightOnlyQuantConfig(
                calibration_data_reader=reader,
                percdamp=config.percdamp,
                block_size=config.block_size,
                actorder=config.actorder,
            ),
        )
        settings = f"GPTQ, 4 bits, block_size {config.block_size}, is_symmetric {config.is_symmetric}"
        quantized = run_quantizer(quantizer, owner=self.config_owner(), settings=settings)
        out = model_proto_to_olive_model(quantized, output_model_path, config)
        result = genai_folder_from_onnx(model, out)
        result.model_attributes["gptq"] = {"calibration_windows": len(reader.items), "window": config.window}
        return result


class _WindowReader:
    """Calibration feeds: one prefill per window of the text, with an empty KV cache (onnxruntime's
    CalibrationDataReader protocol)."""

    def __init__(self, model: GenAIModelHandler, config: BasePassConfig, owner: str):
        from olive_passes_genai.metrics import _Decoder

        decoder = _Decoder(model.folder)
        samples, source = pass_samples(config, owner)
        cut = windows(decoder.encode("\n".join(samples)), config.window, config.window, config.max_windows)
        if not cut:
            raise PassParamError(f"{owner}: {source} gives no window of {config.window} tokens", params="data_config")
        self.items = prefill_feeds(model, cut)
        self._iter = iter(self.items)

    def get_next(self) -> dict[str, Any] | None:
        return next(self._iter, None)

    def rewind(self) -> None:
        self._iter = iter(self.items)

    def __iter__(self):
        return iter(self.items)


def prefill_feeds(model: GenAIModelHandler, cut: list[np.ndarray], batch: bool = False) -> list[dict[str, np.ndarray]]:
    """onnxruntime feeds of the folder's decoder for each window of ``cut``: one prefill with an empty KV cache, as
    its ``genai_config.json`` describes the inputs. ``batch``: windows of one length go in one feed, a row each (the
    weights are read once for all of them)."""
    import numpy as np

    spec = model.genai_config()["model"]["decoder"]
    heads, head_size = int(spec["num_key_value_heads"]), int(spec["head_size"])
    names = [i.name for i in _inputs(Path(model.model_path))]
    if batch:
        by_length: dict[int, list[np.ndarray]] = {}
        for window in cut:
            by_length.setdefault(len(window), []).append(window)
        rows = [np.stack(group) for group in by_length.values()]
    else:
        rows = [window[None] for window in cut]
    items = []
    for row in rows:
        ids = row.astype(np.int64)
        feeds: dict[str, np.ndarray] = {"input_ids": ids}
        for name in names:
            if name == "attention_mask":
                feeds[name] = np.ones_like(ids)
            elif name == "position_ids":
                feeds[name] = np.broadcast_to(np.arange(ids.shape[1], dtype=np.int64), ids.shape).copy()
            elif name.startswith("past_key_values"):
                feeds[name] = np.zeros((ids.shape[0], heads, 0, head_size), dtype=np.float32)
        items.append(feeds)
    return items


def _inputs(path: Path) -> list[Any]:
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    initializers = {i.name for i in graph.initializer}
    return [i for i in graph.input if i.name not in initializers]
