"""Reading a transformer's attention dimensions (heads, hidden size) and attention blocks from its graph.

onnxruntime's fusions need ``num_heads`` and ``hidden_size``. A hand-written or TensorFlow graph splits
heads with a constant ``Reshape`` shape (``[0, 0, heads, head_size]``), but a PyTorch export computes that
shape at run time: ``Shape -> Gather -> Unsqueeze`` for batch and sequence, ``Concat``'d with constants
for the rest (``[batch, seq, -1, head_size]`` or ``[batch, seq, heads, head_size]``). This module reads
both forms, whether the constants are initializers or ``Constant`` nodes, and checks them against the
width of the projection the Reshape splits (``heads * head_size == width``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import onnx

# A run-time entry of unknown length inside a shape tensor (e.g. a whole ``Shape`` output).
_ANY_LENGTH = Ellipsis
# Ops a shape constant may pass through unchanged on its way into a Concat or a Reshape.
_VALUE_PRESERVING = {"Identity", "Cast", "Unsqueeze", "Squeeze", "Reshape", "Flatten"}
# Ops between the scores MatMul and the Softmax (scale, mask, bias) and between the Softmax and the
# context MatMul (dropout, casts) in an unfused attention block.
_SCORE_OPS = {"Add", "Mul", "Div", "Sub", "Where", "Cast", "Reshape", "Transpose", "Expand"}
_PROB_OPS = {"Dropout", "Cast", "Where", "Reshape", "Identity"}


@dataclass(frozen=True)
class AttentionDims:
    """The head split a graph shows: ``num_heads * head_size == hidden_size``."""

    num_heads: int
    head_size: int
    hidden_size: int
    #: The Reshape that splits the projection into heads (for messages).
    reshape: str
    #: How many head-splitting Reshapes agree on these values.
    count: int = 1
    #: Whether every head-splitting Reshape agrees (False in multi-stage models such as Swin).
    uniform: bool = True


def infer_attention_dims(proto: onnx.ModelProto) -> AttentionDims | None:
    """The query head split of ``proto``, or None when no head-splitting Reshape can be read.

    Every Reshape that takes a projection (``MatMul`` with a 2-D constant weight, then optionally a bias
    ``Add`` and a ``Split`` of a fused QKV projection) to ``[batch, seq, heads, head_size]`` is a
    candidate. The widest projection wins (with grouped-query attention, K and V have fewer heads than
    Q), then the value most Reshapes agree on.
    """
    graph = _GraphIndex(proto)
    found: Counter[tuple[int, int, int]] = Counter()
    first: dict[tuple[int, int, int], str] = {}
    for node in proto.graph.node:
        if node.op_type != "Reshape" or len(node.input) < 2:
            continue
        width = graph.projection_width(node.input[0])
        if width is None:
            continue
        entries = graph.shape_entries(node.input[1])
        split = _head_split(entries, width) if entries is not None else None
        if split is None:
            continue
        key = (split[0], split[1], width)
        found[key] += 1
        first.setdefault(key, node.name or node.output[0])
    if not found:
        return None
    key = max(found, key=lambda k: (k[2], found[k]))
    return AttentionDims(key[0], key[1], key[2], first[key], found[key], uniform=len(found) == 1)


def infer_num_heads_and_hidden_size(proto: onnx.ModelProto) -> tuple[int, int] | None:
    """``(num_heads, hidden_size)`` of the query projection's head split, or None (see :func:`infer_attention_dims`)."""
    dims = infer_attention_dims(proto)
    return None if dims is None else (dims.num_heads, dims.hidden_size)


def count_attention_blocks(proto: onnx.ModelProto) -> int:
    """How many Softmax nodes sit between two MatMuls (scores, then context): unfused attention blocks."""
    graph = _GraphIndex(proto)
    count = 0
    for node in proto.graph.node:
        if node.op_type != "Softmax":
            continue
        if graph.reaches_producer(node.input[0], "MatMul", _SCORE_OPS) and graph.reaches_consumer(
            node.output[0], "MatMul", _PROB_OPS
        ):
            count += 1
    return count


def _head_split(entries: list[Any], width: int) -> tuple[int, int] | None:
    """``(heads, head_size)`` from a Reshape target's entries (ints, None for run-time, ``...``), or None.

    Only the last two entries matter; the target must have rank 4, or (when a run-time part of unknown
    length precedes them) both must be constants.
    """
    if len(entries) < 2:
        return None
    heads, head_size = entries[-2], entries[-1]
    if _ANY_LENGTH in (heads, head_size):
        return None
    if _ANY_LENGTH in entries:
        if heads is None or head_size is None:
            return None
    elif len(entries) != 4:
        return None
    # -1 is "infer this one"; 0 copies an input dim, which a 3-D projection output does not have here.
    if isinstance(heads, int) and heads > 0:
        if isinstance(head_size, int) and head_size > 0:
            return (heads, head_size) if heads * head_size == width else None
        if head_size in (-1, None) and width % heads == 0 and heads < width:
            return heads, width // heads
        return None
    if heads in (-1, None) and isinstance(head_size, int) and 0 < head_size < width and width % head_size == 0:
        return width // head_size, head_size
    return None


class _GraphIndex:
    """Producers, consumers and constant values of one graph (initializers and ``Constant`` nodes)."""

    def __init__(self, proto: onnx.ModelProto):
        from onnx import numpy_helper

        self.constants: dict[str, Any] = {init.name: numpy_helper.to_array(init) for init in proto.graph.initializer}
        for node in proto.graph.node:
            if node.op_type == "Constant" and node.output:
                value = _constant_node_value(node)
                if value is not None:
                    self.constants[node.output[0]] = value
        self.producers: dict[str, onnx.NodeProto] = {out: node for node in proto.graph.node for out in node.output}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for node in proto.graph.node:
            for name in node.input:
                self.consumers.setdefault(name, []).append(node)

    def constant(self, tensor: str, depth: int = 0) -> Any:
        """The constant value of ``tensor``, looking through value-preserving ops; None if run-time."""
        if tensor in self.constants:
            return self.constants[tensor]
        node = self.producers.get(tensor)
        if node is None or depth > 4 or node.op_type not in _VALUE_PRESERVING or not node.input:
            return None
        return self.constant(node.input[0], depth + 1)

    def shape_entries(self, tensor: str, depth: int = 0) -> list[Any] | None:
        """The entries of a 1-D shape tensor: ints for constants, None for a run-time entry, ``...`` for a
        run-time part of unknown length; None when the tensor is not a recognizable shape."""
        import numpy as np

        value = self.constant(tensor)
        if value is not None:
            array = np.asarray(value)
            if array.dtype.kind not in "iu" or array.ndim > 1:
                return None
            return [int(v) for v in array.reshape(-1)]
        node = self.producers.get(tensor)
        if node is None or depth > 4:
            return None
        if node.op_type == "Concat":
            entries: list[Any] = []
            for name in node.input:
                part = self.shape_entries(name, depth + 1)
                entries.extend(part if part is not None else [_ANY_LENGTH])
            return entries
        if node.op_type == "Unsqueeze":
            # A shape entry is a scalar (e.g. Gather(Shape(x), i)) made 1-D: exactly one element.
            return [None]
        if node.op_type in ("Cast", "Identity"):
            return self.shape_entries(node.input[0], depth + 1)
        return [_ANY_LENGTH]

    def projection_width(self, tensor: str) -> int | None:
        """Output width of the projection ``tensor`` comes from: MatMul by a 2-D constant weight, through
        an optional bias Add and an optional Split of a fused projection (the split part's width)."""
        node = self.producers.get(tensor)
        split_node, split_index = None, 0
        if node is not None and node.op_type == "Split":
            split_node, split_index = node, list(node.output).index(tensor)
            node = self.producers.get(node.input[0])
        if node is not None and node.op_type == "Add":
            node = next(
                (
                    self.producers[name]
                    for name in node.input
                    if name in self.producers and self.producers[name].op_type == "MatMul"
                ),
                None,
            )
        if node is None or node.op_type != "MatMul" or len(node.input) != 2:
            return None
        weight = self.constant(node.input[1])
        if weight is None or weight.ndim != 2:
            return None
        width = int(weight.shape[1])
        if split_node is not None:
            return self._split_part(split_node, split_index, width)
        return width

    def _split_part(self, node: onnx.NodeProto, index: int, width: int) -> int | None:
        import numpy as np

        attributes = {a.name: a for a in node.attribute}
        axis = attributes["axis"].i if "axis" in attributes else 0
        if axis not in (-1, 2):
            return None
        sizes = None
        if len(node.input) > 1 and node.input[1]:
            sizes = self.constant(node.input[1])
        elif "split" in attributes:
            sizes = list(attributes["split"].ints)
        if sizes is not None:
            sizes = [int(s) for s in np.asarray(sizes).reshape(-1)]
            return sizes[index] if index < len(sizes) and sum(sizes) == width else None
        parts = len(node.output)
        return width // parts if width % parts == 0 else None

    def reaches_producer(self, tensor: str, op_type: str, through: set[str], depth: int = 0) -> bool:
        node = self.producers.get(tensor)
        if node is None or depth > 6:
            return False
        if node.op_type == op_type:
            return True
        if node.op_type not in through:
            return False
        return any(self.reaches_producer(name, op_type, through, depth + 1) for name in node.input if name)

    def reaches_consumer(self, tensor: str, op_type: str, through: set[str], depth: int = 0) -> bool:
        if depth > 6:
            return False
        for node in self.consumers.get(tensor, []):
            if node.op_type == op_type:
                return True
            if node.op_type in through and any(
                self.reaches_consumer(out, op_type, through, depth + 1) for out in node.output
            ):
                return True
        return False


def _constant_node_value(node: onnx.NodeProto) -> Any:
    import numpy as np
    from onnx import numpy_helper

    for attribute in node.attribute:
        if attribute.name == "value":
            return numpy_helper.to_array(attribute.t)
        if attribute.name == "value_int":
            return np.asarray(attribute.i, dtype=np.int64)
        if attribute.name == "value_ints":
            return np.asarray(list(attribute.ints), dtype=np.int64)
        if attribute.name == "value_float":
            return np.asarray(attribute.f, dtype=np.float32)
        if attribute.name == "value_floats":
            return np.asarray(list(attribute.floats), dtype=np.float32)
    return None
