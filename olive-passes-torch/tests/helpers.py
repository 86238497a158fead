"""Helpers the tests share: running workflows whose input model is not ONNX, comparing with PyTorch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from olive.model.types import handler_from_config
from olive.testing.models import mlp_model, save_model
from olive.workflows.config import load_workflow_config


@attrs.frozen
class ParsedInputModel:
    """A workflow's input model built through the model-type registry (``handler_from_config``).

    The workflow parser of this olive-core still accepts only ``"type": "ONNXModel"``; until it routes
    ``input_model`` through the registry, these tests parse the rest of the workflow with an ONNX placeholder
    and put the real input model in its place. The engine itself runs unchanged.
    """

    handler: Any

    @property
    def type(self) -> str:
        return self.handler.model_type

    def create_handler(self) -> Any:
        return self.handler

    def to_json(self) -> dict[str, Any]:
        return self.handler.to_json()


def workflow_with_input_model(workflow: dict[str, Any], base_dir: Path) -> Any:
    """A validated ``WorkflowConfig`` for ``workflow`` whose ``input_model`` is any registered model type."""
    placeholder = save_model(mlp_model(), base_dir / ".placeholder-input")
    parsed = load_workflow_config(
        {**workflow, "input_model": {"type": "ONNXModel", "model_path": placeholder.model_path}}
    )
    handler = handler_from_config(workflow["input_model"], base_dir=base_dir)
    return attrs.evolve(parsed, input_model=ParsedInputModel(handler))


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
