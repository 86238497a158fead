"""Which path holds which model, and what an ONNX graph says about itself: the one home of both rules.

- :func:`find_onnx_file`: an ``.onnx`` file is the model; a folder is the model when it holds exactly one
  ``.onnx`` file (:class:`NoSingleOnnxFile`, naming what it found, otherwise).
- :func:`is_hugging_face_folder`: a folder with a ``config.json`` and no ``.onnx`` file is a Hugging Face model.
- :func:`graph_facts`: the inputs and outputs, op counts, unfused attention blocks, fused attention ops and the
  attention mask input of a graph, from what :mod:`olive.model.onnx_scan` read (no weight is decoded).

:class:`~olive.model.handler.ONNXModelHandler` applies these rules and keeps what it read, so whoever holds the
handler (``olive optimize``, then the workflow it prepares) reads the file once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from olive.exceptions import ModelLoadError
from olive.model.onnx_scan import NUMPY_DTYPES, NodeInfo, OnnxFileFacts, ValueInfo

__all__ = [
    "FUSED_ATTENTION_OPS",
    "GraphFacts",
    "NoSingleOnnxFile",
    "count_attention_blocks",
    "find_onnx_file",
    "graph_facts",
    "is_hugging_face_folder",
    "mask_input",
    "onnx_files",
]

#: onnxruntime's fused attention ops: a graph holding them was fused already
FUSED_ATTENTION_OPS = ("Attention", "MultiHeadAttention", "GroupQueryAttention", "PackedAttention")
# Ops an unfused attention block has between the scores MatMul and the Softmax (scale, mask) and between the
# Softmax and the context MatMul (dropout, casts): the walk looks through them only.
_SCORE_OPS = {"Add", "Mul", "Div", "Sub", "Where", "Cast", "Reshape", "Transpose", "Expand"}
_PROB_OPS = {"Dropout", "Cast", "Where", "Reshape", "Identity"}

#: ``(name, shape, dtype)`` of a graph input or output; a dimension is its size, its name, or ``"?"``
Described = tuple[str, tuple[Any, ...], str]


class NoSingleOnnxFile(ModelLoadError):
    """A model folder that holds no ``.onnx`` file, or several (``found``, sorted by name)."""

    def __init__(self, folder: Path, found: tuple[Path, ...]):
        self.folder = folder
        self.found = found
        if found:
            reason = (
                f"ONNX model folder '{folder}' holds several .onnx files ({', '.join(f.name for f in found)}); "
                "set onnx_file_name to pick one"
            )
        else:
            reason = f"ONNX model folder '{folder}' holds no .onnx file; point model_path at the model"
        super().__init__(reason)


def onnx_files(folder: Path) -> tuple[Path, ...]:
    """The ``.onnx`` files directly in ``folder``, sorted by name."""
    return tuple(sorted(folder.glob("*.onnx")))


def find_onnx_file(path: Path) -> Path:
    """The model file ``path`` names: itself when a file, else the one ``.onnx`` file of the folder."""
    if not path.is_dir():
        return path
    found = onnx_files(path)
    if len(found) != 1:
        raise NoSingleOnnxFile(path, found)
    return found[0]


def is_hugging_face_folder(path: Path) -> bool:
    """A folder written by ``save_pretrained``: a ``config.json`` and no ``.onnx`` file beside it."""
    return path.is_dir() and (path / "config.json").is_file() and not onnx_files(path)


@attrs.frozen
class GraphFacts:
    """What a model's main graph declares and holds.

    :param inputs: ``(name, shape, dtype)`` of each graph input that is not an initializer.
    :param outputs: ``(name, shape, dtype)`` of each graph output.
    :param op_counts: op type -> nodes of the main graph.
    :param attention_blocks: unfused attention blocks (a Softmax between a scores and a context MatMul).
    :param mask_input: the input holding the attention mask, if one can be told.
    """

    inputs: tuple[Described, ...]
    outputs: tuple[Described, ...]
    op_counts: dict[str, int]
    attention_blocks: int
    mask_input: str | None

    @property
    def has_nodes(self) -> bool:
        return bool(self.op_counts)

    @property
    def fused(self) -> bool:
        """The graph holds onnxruntime's fused attention ops already."""
        return any(op in self.op_counts for op in FUSED_ATTENTION_OPS)


def graph_facts(facts: OnnxFileFacts) -> GraphFacts:
    """The :class:`GraphFacts` of a scanned model."""
    inputs = _described(v for v in facts.inputs if v.name not in facts.initializer_names)
    outputs = _described(v for v in facts.outputs if v.name not in facts.initializer_names)
    return GraphFacts(
        inputs=inputs,
        outputs=outputs,
        op_counts=dict(Counter(node.op_type for node in facts.nodes)),
        attention_blocks=count_attention_blocks(facts.nodes),
        mask_input=mask_input([name for name, _, _ in inputs]),
    )


def _described(values: Iterable[ValueInfo]) -> tuple[Described, ...]:
    return tuple(
        (value.name, tuple("?" if d is None or d == "" else d for d in value.dims), _dtype(value.elem_type))
        for value in values
    )


def _dtype(elem_type: int | None) -> str:
    if elem_type in NUMPY_DTYPES:
        return NUMPY_DTYPES[elem_type]
    from onnx import helper  # only for the types whose numpy names vary with the installed versions

    try:
        return str(helper.tensor_dtype_to_np_dtype(elem_type or 0))
    except Exception:  # an element type numpy has no name for (float8...)
        return f"onnx:{elem_type or 0}"


def mask_input(names: list[str]) -> str | None:
    """The attention mask among input ``names``: ``attention_mask``, else the only name holding ``mask``."""
    if "attention_mask" in names:
        return "attention_mask"
    masks = [n for n in names if "mask" in n.lower()]
    return masks[0] if len(masks) == 1 else None


def count_attention_blocks(nodes: tuple[NodeInfo, ...]) -> int:
    """How many Softmax nodes sit between a scores MatMul and a context MatMul (unfused attention)."""
    producers = {out: node for node in nodes for out in node.outputs}
    consumers: dict[str, list[NodeInfo]] = {}
    for node in nodes:
        for name in node.inputs:
            consumers.setdefault(name, []).append(node)

    def back(name: str, depth: int) -> bool:
        node = producers.get(name)
        if node is None or depth > 6:
            return False
        if node.op_type == "MatMul":
            return True
        return node.op_type in _SCORE_OPS and any(back(i, depth + 1) for i in node.inputs)

    def forward(name: str, depth: int) -> bool:
        if depth > 4:
            return False
        for node in consumers.get(name, []):
            if node.op_type == "MatMul":
                return True
            if node.op_type in _PROB_OPS and any(forward(o, depth + 1) for o in node.outputs):
                return True
        return False

    return sum(
        1
        for node in nodes
        if node.op_type == "Softmax"
        and node.inputs
        and node.outputs
        and back(node.inputs[0], 0)
        and forward(node.outputs[0], 0)
    )
