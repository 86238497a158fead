"""What an ONNX file declares, read from its protobuf wire format without parsing its weights.

Parsing a model with ``onnx.load`` (even ``load_external_data=False``) decodes every inline weight: a 1 GB model
costs a second GB of memory and a second of work just to learn its input names or where its external data lies.
The wire format lets a reader skip any length-delimited field by its length, so :func:`scan_onnx_file` maps the
file and walks only the messages that answer those questions (the graph's inputs, outputs, nodes and the
headers of its tensors), stepping over ``raw_data`` and every other field it does not need. It reads no
weight, imports neither onnx nor numpy, and its cost grows with the graph, not with the model.

Field numbers are those of ``onnx.proto``. A file that does not decode is :class:`DecodeError`; the handler
then asks onnx itself, whose error the user sees.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from pathlib import Path

import attrs

from olive.cache.store import FileSignature, file_signature

# ModelProto
_MODEL_GRAPH, _MODEL_FUNCTIONS = 7, 25
# GraphProto
_GRAPH_NODE, _GRAPH_INITIALIZER, _GRAPH_INPUT, _GRAPH_OUTPUT = 1, 5, 11, 12
# FunctionProto
_FUNCTION_NODE = 7
# NodeProto / AttributeProto
_NODE_INPUT, _NODE_OUTPUT, _NODE_OP_TYPE, _NODE_ATTRIBUTE = 1, 2, 4, 5
_ATTR_T, _ATTR_G, _ATTR_TENSORS, _ATTR_GRAPHS = 5, 6, 10, 11
# TensorProto
_TENSOR_NAME, _TENSOR_EXTERNAL_DATA, _TENSOR_DATA_LOCATION = 8, 13, 14
_EXTERNAL = 1
# ValueInfoProto -> TypeProto -> TypeProto.Tensor -> TensorShapeProto -> Dimension
_VALUE_NAME, _VALUE_TYPE = 1, 2
_TYPE_TENSOR = 1
_TENSOR_TYPE_ELEM, _TENSOR_TYPE_SHAPE = 1, 2
_SHAPE_DIM = 1
_DIM_VALUE, _DIM_PARAM = 1, 2

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5


class DecodeError(ValueError):
    """The bytes are not a protobuf message of the expected shape."""


@attrs.frozen
class ValueInfo:
    """A graph input or output: its name, element type (``TensorProto.DataType``, None when not a tensor) and
    dimensions (an int, a dim name, or None when the dimension has neither)."""

    name: str
    elem_type: int | None
    dims: tuple[int | str | None, ...]


@attrs.frozen
class NodeInfo:
    """A node of the main graph: its op type and the names of the values it reads and writes."""

    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@attrs.frozen
class OnnxFileFacts:
    """What :func:`scan_onnx_file` found: whether there is a graph, the main graph's inputs (initializers
    excluded: see :attr:`initializer_names`), outputs and nodes, and the external data locations of every tensor,
    in the order ``onnx.external_data_helper._get_all_tensors`` visits them."""

    has_graph: bool
    inputs: tuple[ValueInfo, ...]
    outputs: tuple[ValueInfo, ...]
    initializer_names: frozenset[str]
    external_locations: tuple[str, ...]
    nodes: tuple[NodeInfo, ...] = ()


# Numpy's names of the element types (``onnx.helper.tensor_dtype_to_np_dtype``) whose names never change; any
# other type is left to onnx.
NUMPY_DTYPES = {
    1: "float32",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    8: "object",
    9: "bool",
    10: "float16",
    11: "float64",
    12: "uint32",
    13: "uint64",
    14: "complex64",
    15: "complex128",
    16: "bfloat16",
}

# Facts of the files scanned in this process, by file signature: a run asks a model for its inputs, its external
# data and whether it is valid many times (validation, hashing, evaluation, output), and reads it once.
_FACTS: dict[FileSignature, OnnxFileFacts] = {}
#: How many times each file was scanned in this process (path -> count).
SCANS: dict[str, int] = {}


def onnx_file_facts(path: str | Path) -> OnnxFileFacts:
    """:func:`scan_onnx_file`, once per file signature in this process (see ``olive.cache.store.file_signature``;
    a file changed in the last seconds is scanned every time)."""
    info = Path(path).stat()
    signature = file_signature(path, info)
    facts = _FACTS.get(signature) if signature is not None else None
    if facts is None:
        facts = scan_onnx_file(path)
        key = str(path)
        SCANS[key] = SCANS.get(key, 0) + 1
        if signature is not None and file_signature(path) == signature:
            _FACTS[signature] = facts
    return facts


def scan_onnx_file(path: str | Path) -> OnnxFileFacts:
    """Read ``path``'s graph inputs, outputs and external data locations without decoding its weights."""
    with Path(path).open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            return OnnxFileFacts(False, (), (), frozenset(), ())
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            view = memoryview(mapped)
            try:
                return _Scanner(view).model()
            finally:
                view.release()


def scan_onnx_bytes(data: bytes) -> OnnxFileFacts:
    """:func:`scan_onnx_file` of a serialized model held in memory (``ModelProto.SerializeToString()``)."""
    if not data:
        return OnnxFileFacts(False, (), (), frozenset(), ())
    return _Scanner(memoryview(data)).model()


class _Scanner:
    def __init__(self, buf: memoryview):
        self.buf = buf

    # -- wire format ------------------------------------------------------------------------------------
    def _varint(self, pos: int, end: int) -> tuple[int, int]:
        buf, result, shift = self.buf, 0, 0
        while True:
            if pos >= end or shift > 63:
                raise DecodeError(f"truncated or overlong varint at byte {pos}")
            byte = buf[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result, pos
            shift += 7

    def fields(self, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
        """``(field number, wire type, value or start, end)`` of each field of the message in ``[start, end)``;
        a length-delimited field gives its payload's bounds, a varint its value (end -1)."""
        pos = start
        while pos < end:
            tag, pos = self._varint(pos, end)
            number, wire = tag >> 3, tag & 7
            if number == 0:
                raise DecodeError(f"field number 0 at byte {pos}")
            if wire == _VARINT:
                value, pos = self._varint(pos, end)
                yield number, wire, value, -1
            elif wire == _LENGTH:
                length, pos = self._varint(pos, end)
                if pos + length > end:
                    raise DecodeError(f"field {number} runs past the end of its message (byte {pos + length})")
                yield number, wire, pos, pos + length
                pos += length
            elif wire == _FIXED64:
                pos += 8
            elif wire == _FIXED32:
                pos += 4
            else:
                raise DecodeError(f"wire type {wire} of field {number} at byte {pos}")
            if pos > end:
                raise DecodeError(f"field {number} runs past the end of its message")

    def _text(self, start: int, end: int) -> str:
        try:
            return str(self.buf[start:end], "utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(f"a name that is not UTF-8 at byte {start}") from exc

    # -- messages ---------------------------------------------------------------------------------------
    def model(self) -> OnnxFileFacts:
        graphs: list[tuple[int, int]] = []
        functions: list[tuple[int, int]] = []
        for number, wire, start, end in self.fields(0, len(self.buf)):
            if wire != _LENGTH:
                continue
            if number == _MODEL_GRAPH:
                graphs.append((start, end))
            elif number == _MODEL_FUNCTIONS:
                functions.append((start, end))
        inputs: list[ValueInfo] = []
        outputs: list[ValueInfo] = []
        initializers: list[tuple[int, int]] = []
        nodes: list[tuple[int, int]] = []
        for start, end in graphs:  # a repeated singular message merges: its repeated fields concatenate
            for number, wire, f_start, f_end in self.fields(start, end):
                if wire != _LENGTH:
                    continue
                if number == _GRAPH_INPUT:
                    inputs.append(self._value_info(f_start, f_end))
                elif number == _GRAPH_OUTPUT:
                    outputs.append(self._value_info(f_start, f_end))
                elif number == _GRAPH_INITIALIZER:
                    initializers.append((f_start, f_end))
                elif number == _GRAPH_NODE:
                    nodes.append((f_start, f_end))
        names = frozenset(self._tensor(start, end)[0] for start, end in initializers)
        locations: list[str] = []
        # onnx's order: initializers (the graph's, then its subgraphs'), then attribute tensors, then functions'.
        self._graph_initializer_locations(initializers, nodes, locations)
        self._attribute_locations(nodes, locations)
        for start, end in functions:
            function_nodes = [(s, e) for n, w, s, e in self.fields(start, end) if n == _FUNCTION_NODE and w == _LENGTH]
            self._attribute_locations(function_nodes, locations)
        main_nodes = tuple(self._node(start, end) for start, end in nodes)
        return OnnxFileFacts(bool(graphs), tuple(inputs), tuple(outputs), names, tuple(locations), main_nodes)

    def _node(self, start: int, end: int) -> NodeInfo:
        op_type, inputs, outputs = "", [], []
        for number, wire, f_start, f_end in self.fields(start, end):
            if wire != _LENGTH:
                continue
            if number == _NODE_INPUT:
                inputs.append(self._text(f_start, f_end))
            elif number == _NODE_OUTPUT:
                outputs.append(self._text(f_start, f_end))
            elif number == _NODE_OP_TYPE:
                op_type = self._text(f_start, f_end)
        return NodeInfo(op_type, tuple(inputs), tuple(outputs))

    def _value_info(self, start: int, end: int) -> ValueInfo:
        name, elem_type, dims = "", None, []
        for number, wire, f_start, f_end in self.fields(start, end):
            if number == _VALUE_NAME and wire == _LENGTH:
                name = self._text(f_start, f_end)
            elif number == _VALUE_TYPE and wire == _LENGTH:
                for t_number, t_wire, t_start, t_end in self.fields(f_start, f_end):
                    if t_number == _TYPE_TENSOR and t_wire == _LENGTH:
                        elem_type = 0 if elem_type is None else elem_type
                        for e_number, e_wire, e_value, e_end in self.fields(t_start, t_end):
                            if e_number == _TENSOR_TYPE_ELEM and e_wire == _VARINT:
                                elem_type = e_value
                            elif e_number == _TENSOR_TYPE_SHAPE and e_wire == _LENGTH:
                                dims += self._dims(e_value, e_end)
        return ValueInfo(name, elem_type, tuple(dims))

    def _dims(self, start: int, end: int) -> list[int | str | None]:
        dims: list[int | str | None] = []
        for number, wire, d_start, d_end in self.fields(start, end):
            if number != _SHAPE_DIM or wire != _LENGTH:
                continue
            dim: int | str | None = None
            for v_number, v_wire, value, v_end in self.fields(d_start, d_end):
                if v_number == _DIM_VALUE and v_wire == _VARINT:
                    dim = value - (1 << 64) if value >= 1 << 63 else value
                elif v_number == _DIM_PARAM and v_wire == _LENGTH:
                    dim = self._text(value, v_end)
            dims.append(dim)
        return dims

    def _tensor(self, start: int, end: int) -> tuple[str, str | None]:
        """A tensor's name and its external data location (None when its data is inline)."""
        name, location, external = "", None, False
        for number, wire, value, f_end in self.fields(start, end):
            if number == _TENSOR_NAME and wire == _LENGTH:
                name = self._text(value, f_end)
            elif number == _TENSOR_DATA_LOCATION and wire == _VARINT:
                external = value == _EXTERNAL
            elif number == _TENSOR_EXTERNAL_DATA and wire == _LENGTH:
                key = entry = None
                for e_number, e_wire, e_start, e_end in self.fields(value, f_end):
                    if e_wire != _LENGTH:
                        continue
                    if e_number == 1:
                        key = self._text(e_start, e_end)
                    elif e_number == 2:
                        entry = self._text(e_start, e_end)
                if key == "location" and entry is not None and location is None:
                    location = entry
        return name, location if external else None

    def _add(self, start: int, end: int, locations: list[str]) -> None:
        location = self._tensor(start, end)[1]
        if location is not None and location not in locations:
            locations.append(location)

    def _attributes(self, nodes: list[tuple[int, int]]) -> Iterator[tuple[int, int, int]]:
        """``(field, start, end)`` of each tensor and graph held by the nodes' attributes."""
        for start, end in nodes:
            for number, wire, a_start, a_end in self.fields(start, end):
                if number != _NODE_ATTRIBUTE or wire != _LENGTH:
                    continue
                for a_number, a_wire, v_start, v_end in self.fields(a_start, a_end):
                    if a_wire == _LENGTH and a_number in (_ATTR_T, _ATTR_G, _ATTR_TENSORS, _ATTR_GRAPHS):
                        yield a_number, v_start, v_end

    def _graph_parts(self, start: int, end: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        initializers, nodes = [], []
        for number, wire, f_start, f_end in self.fields(start, end):
            if wire == _LENGTH and number == _GRAPH_INITIALIZER:
                initializers.append((f_start, f_end))
            elif wire == _LENGTH and number == _GRAPH_NODE:
                nodes.append((f_start, f_end))
        return initializers, nodes

    def _graph_initializer_locations(
        self, initializers: list[tuple[int, int]], nodes: list[tuple[int, int]], locations: list[str]
    ) -> None:
        for start, end in initializers:
            self._add(start, end, locations)
        for number, start, end in self._attributes(nodes):
            if number in (_ATTR_G, _ATTR_GRAPHS):
                self._graph_initializer_locations(*self._graph_parts(start, end), locations)

    def _attribute_locations(self, nodes: list[tuple[int, int]], locations: list[str]) -> None:
        for number, start, end in self._attributes(nodes):
            if number in (_ATTR_T, _ATTR_TENSORS):
                self._add(start, end, locations)
            else:
                self._attribute_locations(self._graph_parts(start, end)[1], locations)
