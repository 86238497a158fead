"""A decoder folder's onnxruntime feeds: each window of tokens one prefill with an empty KV cache, as the folder's
``genai_config.json`` describes the decoder's inputs.

What GPTQ (olive-passes-quant's ``OnnxGptqQuantization``) calibrates on, through
:meth:`GenAIModelHandler.text_feeds <olive_passes_genai.genai_model.GenAIModelHandler.text_feeds>`, and what the
int4 guard ranks MatMuls on.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import PassParamError
from olive_passes_genai.metrics import _Decoder
from olive_passes_genai.text_windows import pass_samples, windows

if TYPE_CHECKING:
    import numpy as np

    from olive.passes.pass_config import BasePassConfig
    from olive_passes_genai.genai_model import GenAIModelHandler

__all__ = ["prefill_feeds", "text_feeds"]


def text_feeds(model: GenAIModelHandler, config: BasePassConfig, owner: str) -> list[dict[str, np.ndarray]]:
    """The feeds of the pass's text (its :func:`~olive_passes_quant.text_params.text_params`), tokenized with the
    folder's own tokenizer and cut into ``max_windows`` windows of ``window`` tokens."""
    decoder = _Decoder(model.folder)
    samples, source = pass_samples(config, owner)
    cut = windows(decoder.encode("\n".join(samples)), config.window, config.window, config.max_windows)
    if not cut:
        raise PassParamError(f"{owner}: {source} gives no window of {config.window} tokens", params="data_config")
    return prefill_feeds(model, cut)


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
