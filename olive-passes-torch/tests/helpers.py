"""Helpers the tests share: what PyTorch and onnxruntime compute for the same inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def torch_outputs(model_dir: Path, task: str, feeds: dict[str, Any], output: str) -> Any:
    """What transformers itself computes for ``feeds`` (numpy arrays), loaded independently of the pass."""
    import torch
    import transformers

    from olive_passes_torch.hf_tasks import TASKS

    auto = getattr(transformers, TASKS[task].auto_class)
    model = auto.from_pretrained(model_dir, attn_implementation="eager").eval()
    with torch.no_grad():
        result = model(**{k: torch.from_numpy(v) for k, v in feeds.items()}, return_dict=True)
    return result[output].numpy()


def onnx_outputs(model_path: str, feeds: dict[str, Any]) -> dict[str, Any]:
    import onnxruntime as ort

    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, {i.name: feeds[i.name] for i in session.get_inputs()}), strict=True))


def tokenized(model_dir: Path, texts: list[str]) -> dict[str, Any]:
    """The folder's tokenizer applied to ``texts`` (padded to the longest), as int64 numpy arrays."""
    import numpy as np
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    encoded = tokenizer(texts, padding=True, return_tensors="np")
    return {k: np.asarray(v, dtype=np.int64) for k, v in encoded.items()}
