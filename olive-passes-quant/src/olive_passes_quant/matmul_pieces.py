"""A model's MatMuls quantized one at a time, once per bit width, and whole models assembled from those pieces.

A mixed-precision search tries many mixes of the same MatMuls at 4 and 8 bits. Quantizing the whole model for each
mix repeats the same work (k-quant of one weight gives the same blocks whatever the others are), so each weight is
quantized once per width, alone in a one-node graph, with onnxruntime's quantizer and the same settings a whole-model
run would use (the node, its name and its initializers come out the same), and a mix is assembled from the pieces.

:class:`WeightSwapSession` holds the float model in one onnxruntime session whose MatMul weights a run can replace:
one MatMul at int4 (:meth:`MatMulPieces.dequantized`) and the rest float costs one forward run, with no model
written or loaded per MatMul.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.passes.onnx.common import load_without_weights, model_proto_to_olive_model, weights_in
from olive_passes_quant.k_quant import k_quant_config
from olive_passes_quant.ort_quantizer import quantize_matmuls
from olive_passes_quant.weight_only import quantizable_matmuls, same_model_type

if TYPE_CHECKING:
    import numpy as np
    import onnx

    from olive.model.handler import OliveModelHandler, ONNXModelHandler

__all__ = ["MatMulPieces", "WeightSwapSession"]


class MatMulPieces:
    """The quantizable MatMuls of ``model`` (an ONNX model, or a type around one such as a ``GenAIModel`` folder),
    each quantized with k-quant on its own.

    ``block_size``/``accuracy_level`` as :class:`~olive_passes_quant.k_quant.OnnxKQuantQuantization` takes them;
    ``owner`` names the pass in errors. Weights are read one at a time from the model's folder.
    """

    #: the most weights quantized in one call of onnxruntime's k-quant (a larger weight goes in slices of columns)
    chunk_elements = 16 * 2**20

    def __init__(self, model: ONNXModelHandler, block_size: int, accuracy_level: int | None, owner: str):
        self.model = model
        self.block_size = block_size
        self.accuracy_level = int(accuracy_level) if accuracy_level else None
        self.owner = owner
        self.proto = load_without_weights(model)
        self.weights_dir = Path(model.model_path).parent
        #: MatMul node name -> K (its weight's rows), in graph order
        self.targets = quantizable_matmuls(self.proto)
        self._nodes = {node.name: node for node in self.proto.graph.node if node.name in self.targets}
        self._initializers = {init.name: init for init in self.proto.graph.initializer}
        self._pieces: dict[tuple[str, int], tuple[onnx.NodeProto, list[onnx.TensorProto]]] = {}

    def weight(self, name: str) -> np.ndarray:
        """The float weight of MatMul ``name``, read from the model's folder."""
        from onnx import numpy_helper

        return numpy_helper.to_array(self._initializers[self._nodes[name].input[1]], base_dir=str(self.weights_dir))

    def piece(self, name: str, bits: int) -> tuple[onnx.NodeProto, list[onnx.TensorProto]]:
        """MatMul ``name`` at ``bits`` (4 or 8): the MatMulNBits node and its initializers (computed once)."""
        key = (name, bits)
        if key not in self._pieces:
            self._pieces[key] = self._quantize(name, bits)
        return self._pieces[key]

    def dequantized(self, name: str, bits: int = 4) -> np.ndarray:
        """MatMul ``name``'s weight as its piece at ``bits`` holds it, back in float ``[K, N]``: what the MatMulNBits
        node multiplies by (at accuracy level 0: float compute)."""
        import numpy as np
        import onnx
        from onnx import numpy_helper

        node, initializers = self.piece(name, bits)
        arrays = {init.name: numpy_helper.to_array(init) for init in initializers}
        attributes = {a.name: a.i for a in node.attribute}
        k, n, block = attributes["K"], attributes["N"], attributes["block_size"]
        blocks = -(-k // block)
        packed = arrays[node.input[1]].reshape(n, blocks, -1)
        scales = arrays[node.input[2]].reshape(n, blocks).astype(np.float32)
        # 4 bits: two weights a byte, the first in the low nibble
        values = np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(n, blocks, block) if bits == 4 else packed
        zero = np.full((n, blocks), 2 ** (bits - 1), dtype=np.float32)
        if len(node.input) > 3 and node.input[3]:
            points = arrays[node.input[3]]
            if bits == 4:
                points = np.stack([points & 0x0F, points >> 4], axis=-1).reshape(n, -1)[:, :blocks]
            zero = points.reshape(n, blocks).astype(np.float32)
        weight = (values.astype(np.float32) - zero[..., None]) * scales[..., None]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(self._initializers[self._nodes[name].input[1]].data_type)
        return weight.reshape(n, blocks * block)[:, :k].T.astype(dtype)

    def assemble(self, bits: dict[str, int], output_model_path: str | Path, external_data: Any) -> OliveModelHandler:
        """The model with each MatMul of ``bits`` (name -> 4 or 8) replaced by its piece, the others left as they
        are, saved under ``output_model_path`` (``external_data``: the pass's external-data params), of the input
        model's type (a ``GenAIModel`` in gives a folder onnxruntime-genai serves)."""
        proto = copy.deepcopy(self.proto)
        replaced: list[Any] = []
        nodes = []
        for node in proto.graph.node:
            if node.name in bits:
                piece, initializers = self.piece(node.name, bits[node.name])
                nodes.append(piece)
                replaced.extend(initializers)
            else:
                nodes.append(node)
        proto.graph.ClearField("node")
        proto.graph.node.extend(nodes)
        used = {name for node in proto.graph.node for name in node.input}
        kept = [init for init in proto.graph.initializer if init.name in used]
        proto.graph.ClearField("initializer")
        proto.graph.initializer.extend([*kept, *replaced])
        if not any(opset.domain == "com.microsoft" for opset in proto.opset_import):
            proto.opset_import.append(_microsoft_opset())
        out = model_proto_to_olive_model(proto, output_model_path, external_data, weights_dir=self.weights_dir)
        return same_model_type(self.model, out)

    def _quantize(self, name: str, bits: int) -> tuple[onnx.NodeProto, list[onnx.TensorProto]]:
        import numpy as np
        from onnx import numpy_helper

        weight = self.weight(name)
        # k-quant's numpy code holds several float64 copies of the weight it quantizes; a large one (an LM head of
        # a 150k vocabulary) goes through in slices of columns. Each block is one column's, so the slices give the
        # same blocks.
        step = max(1, self.chunk_elements // max(1, weight.shape[0]))
        parts = [
            self._quantize_columns(name, bits, weight[:, start : start + step])
            for start in range(0, weight.shape[1], step)
        ]
        del weight
        node, first = parts[0]
        if len(parts) == 1:
            return node, first
        for attribute in node.attribute:
            if attribute.name == "N":
                attribute.i = sum(int({a.name: a.i for a in n.attribute}["N"]) for n, _ in parts)
        initializers = []
        for index, tensor in enumerate(first):
            joined = np.concatenate([numpy_helper.to_array(inits[index]) for _, inits in parts], axis=0)
            initializers.append(numpy_helper.from_array(joined, tensor.name))
        return node, initializers

    def _quantize_columns(self, name: str, bits: int, weight: np.ndarray) -> tuple[onnx.NodeProto, list[Any]]:
        import numpy as np
        import onnx

        node = self._nodes[name]
        one_node = self._one_node(
            node, [_tensor(node.input[1], np.ascontiguousarray(weight))], weight.shape, weight.dtype
        )
        quantized = quantize_matmuls(
            one_node,
            k_quant_config(bits, [name]),
            [name],
            bits=bits,
            block_size=self.block_size,
            is_symmetric=False,
            accuracy_level=self.accuracy_level,
            owner=self.owner,
            settings=f"k-quant, {bits} bits, block_size {self.block_size}",
        )
        # Copies, not references: a reference into the quantized graph would keep all of its memory alive, the
        # float weight the quantizer removed from it included.
        (found,) = quantized.graph.node
        piece = onnx.NodeProto()
        piece.CopyFrom(found)
        initializers = []
        for init in quantized.graph.initializer:
            tensor = onnx.TensorProto()
            tensor.CopyFrom(init)
            initializers.append(tensor)
        # In the order of the node's inputs: B, scales, zero points.
        order = {input_name: index for index, input_name in enumerate(piece.input)}
        return piece, sorted(initializers, key=lambda t: order.get(t.name, len(order)))

    def _one_node(self, node: Any, initializers: list[Any], shape: tuple[int, ...], dtype: Any) -> onnx.ModelProto:
        import onnx

        element = onnx.helper.np_dtype_to_tensor_dtype(dtype)
        graph = onnx.helper.make_graph(
            [node],
            "piece",
            [onnx.helper.make_tensor_value_info(node.input[0], element, ["rows", shape[0]])],
            [onnx.helper.make_tensor_value_info(node.output[0], element, ["rows", shape[1]])],
            initializers,
        )
        opsets = [onnx.helper.make_opsetid("", 17), _microsoft_opset()]
        return onnx.helper.make_model(graph, opset_imports=opsets, ir_version=self.proto.ir_version)


class WeightSwapSession:
    """The float model in one onnxruntime session whose MatMul weights can be replaced run by run.

    Each quantizable MatMul's weight is also a graph input (an initializer of the same name is its default), so a
    run can feed another value for one weight, e.g. :meth:`MatMulPieces.dequantized`, and every other weight stays
    the model's own: the effect of quantizing one MatMul on the model's output, for the price of one forward run
    and without writing or loading a model per MatMul.
    """

    def __init__(self, pieces: MatMulPieces):
        import onnx
        import onnxruntime as ort

        proto = copy.deepcopy(pieces.proto)
        inputs = {i.name for i in proto.graph.input}
        self.weight_of = {name: pieces._nodes[name].input[1] for name in pieces.targets}
        initializers = {init.name: init for init in proto.graph.initializer}
        for weight in dict.fromkeys(self.weight_of.values()):
            if weight not in inputs:
                init = initializers[weight]
                proto.graph.input.append(onnx.helper.make_tensor_value_info(weight, init.data_type, list(init.dims)))
        options = ort.SessionOptions()
        # Weights that are inputs are not folded into constants: that is the point here, not a warning per weight.
        options.log_severity_level = 3
        # A graph given as bytes reads its external weights from the working directory.
        with weights_in(pieces.weights_dir):
            self.session = ort.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])

    def logits(self, feeds: dict[str, np.ndarray], weights: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """The model's ``logits`` output of one run of ``feeds`` as ``[tokens, vocab]`` (a decoder's prefill), with
        ``weights`` (MatMul name -> float weight) in place of those MatMuls' own."""
        swapped = {self.weight_of[name]: value for name, value in (weights or {}).items()}
        logits = self.session.run(["logits"], {**feeds, **swapped})[0]
        return logits.reshape(-1, logits.shape[-1])


def _tensor(name: str, array: np.ndarray) -> onnx.TensorProto:
    from onnx import numpy_helper

    return numpy_helper.from_array(array, name)


def _microsoft_opset() -> Any:
    import onnx

    return onnx.helper.make_opsetid("com.microsoft", 1)
