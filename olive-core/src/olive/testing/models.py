"""Tiny, seeded ONNX models and inputs for testing passes.

Every factory builds its graph with ``onnx.helper`` and ``numpy`` only, returns an ``onnx.ModelProto``
(opset 17, IR version 8 so that any onnxruntime from 1.18 on loads it) and is deterministic: the same
arguments give byte-identical models. Batch (and, for the BERT-like model, sequence) dimensions are
symbolic, so the models run on any batch size.

This module is never imported by ``olive --help`` or by listing passes, so it imports onnx and numpy at
the top.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from olive.measure import cosine_similarities
from olive.model.handler import ONNXModelHandler

__all__ = [
    "BATCH_OUTLIER_FEATURE",
    "batch_outlier_samples",
    "batch_sensitive_mlp",
    "bert_like_model",
    "bert_like_model_files",
    "bert_like_weight_bytes",
    "conv_model",
    "mlp_model",
    "output_cosine",
    "planted_node_name",
    "random_inputs",
    "save_model",
    "write_npz_dataset",
]

OPSET = 17
IR_VERSION = 8
DEFAULT_VOCAB = 100

# The planted channels of the FFN output projection's input sit near this value for every token while
# the other channels stay within a few units, so one per-tensor uint8 scale cannot serve both: the
# quantization step (~1.2) swamps the ordinary channels. 300 puts default dynamic int8 of a planted
# model near 0.97 output cosine (like a real MiniLM) while every other node stays above 0.9999.
_OUTLIER_MAGNITUDE = 300.0
_OUTLIER_CHANNELS = 2


class _GraphBuilder:
    """Collects nodes and initializers; names every tensor after the node that makes it."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def const(self, name: str, value: Any, dtype: Any = np.float32) -> str:
        self.initializers.append(self._tensor(name, np.asarray(value, dtype=dtype)))
        return name

    def _tensor(self, name: str, array: np.ndarray) -> onnx.TensorProto:
        return numpy_helper.from_array(array, name)

    def weight(self, name: str, shape: Sequence[int], std: float) -> str:
        return self.const(name, self.rng.standard_normal(shape) * std)

    def node(self, op_type: str, inputs: Sequence[str], name: str, output: str | None = None, **attrs: Any) -> str:
        out = output or f"{name}_output_0"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=name, **attrs))
        return out

    def linear(self, x: str, node_prefix: str, fan_in: int, fan_out: int, output: str | None = None) -> str:
        """MatMul + Add with weights scaled by 1/sqrt(fan_in), so activations stay of order one."""
        param = node_prefix.strip("/").replace("/", ".")
        w = self.weight(f"{param}.weight", (fan_in, fan_out), 1.0 / math.sqrt(fan_in))
        b = self.weight(f"{param}.bias", (fan_out,), 0.02)
        y = self.node("MatMul", [x, w], f"{node_prefix}/MatMul")
        return self.node("Add", [y, b], f"{node_prefix}/Add", output=output)

    def model(
        self, name: str, inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto]
    ) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="olive.testing")
        model.ir_version = IR_VERSION
        onnx.checker.check_model(model)
        return model


class _ExternalDataGraphBuilder(_GraphBuilder):
    """A builder that writes each tensor of ``size_threshold`` bytes or more straight to a data file.

    Only the graph (names, shapes, file offsets) stays in memory, so a model of any size is built with
    about one weight matrix held at a time.
    """

    # Page-aligned offsets, as onnx's own writer uses, so readers may map tensors from the file.
    _ALIGNMENT = 4096

    def __init__(self, seed: int, data_file: Any, location: str, size_threshold: int):
        super().__init__(seed)
        self._file = data_file
        self._location = location
        self._size_threshold = size_threshold

    def _tensor(self, name: str, array: np.ndarray) -> onnx.TensorProto:
        if array.nbytes < self._size_threshold:
            return super()._tensor(name, array)
        offset = -self._file.tell() % self._ALIGNMENT + self._file.tell()
        self._file.seek(offset)
        # ONNX stores raw data little-endian.
        self._file.write(np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes())
        tensor = onnx.TensorProto(name=name, dims=array.shape, data_type=helper.np_dtype_to_tensor_dtype(array.dtype))
        tensor.data_location = onnx.TensorProto.EXTERNAL
        for key, value in (("location", self._location), ("offset", offset), ("length", array.nbytes)):
            tensor.external_data.add(key=key, value=str(value))
        return tensor


def mlp_model(seed: int = 0, in_features: int = 16, hidden: int = 32, out_features: int = 8) -> onnx.ModelProto:
    """A two-layer perceptron: ``input`` float32 [batch, in_features] -> ``output`` [batch, out_features].

    Layers are MatMul + Add (+ Relu between them), named ``/fc1/MatMul``, ``/fc1/Add``, ``/relu/Relu``,
    ``/fc2/MatMul``, ``/fc2/Add``.
    """
    g = _GraphBuilder(seed)
    h = g.linear("input", "/fc1", in_features, hidden)
    h = g.node("Relu", [h], "/relu/Relu")
    g.linear(h, "/fc2", hidden, out_features, output="output")
    return g.model(
        "tiny_mlp",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", in_features])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", out_features])],
    )


#: the input feature of :func:`batch_sensitive_mlp` whose large values make an outlier sample
BATCH_OUTLIER_FEATURE = 3


def batch_sensitive_mlp(seed: int = 0) -> onnx.ModelProto:
    """:func:`mlp_model` (16 -> 32 -> 8) whose first layer maps input feature :data:`BATCH_OUTLIER_FEATURE` to
    negative values only, so a large value there switches the sample's hidden units off (the Relu): alone, such an
    outlier sample runs as well in dynamic int8 as any other. In a batch, it stretches the input's one activation
    range (dynamic int8 takes it per tensor, over every sample of the run), and its batch-mates' features are
    quantized with a step of about value / 255: an outlier of 100 takes a batch of 8's worst cosine from 0.9998 (each
    sample alone) to about 0.94. Keeping ``/fc1/MatMul`` in float, or static ranges, serves every batch alike."""
    proto = mlp_model(seed=seed)
    for index, init in enumerate(proto.graph.initializer):
        if init.name == "fc1.weight":
            weights = numpy_helper.to_array(init).copy()
            weights[BATCH_OUTLIER_FEATURE, :] = -np.abs(weights[BATCH_OUTLIER_FEATURE, :])
            proto.graph.initializer[index].CopyFrom(numpy_helper.from_array(weights, init.name))
    return proto


def batch_outlier_samples(seed: int = 0, count: int = 32, every: int = 8, value: float = 100.0) -> np.ndarray:
    """``count`` seeded inputs [count, 16] for :func:`batch_sensitive_mlp`, every ``every``-th an outlier sample
    (feature :data:`BATCH_OUTLIER_FEATURE` at ``value``)."""
    inputs = np.random.default_rng(seed).standard_normal((count, 16)).astype(np.float32)
    inputs[::every, BATCH_OUTLIER_FEATURE] = value
    return inputs


def conv_model(
    seed: int = 0, channels: int = 3, height: int = 16, width: int = 16, num_classes: int = 10
) -> onnx.ModelProto:
    """A small conv net: ``input`` float32 [batch, C, H, W] -> ``output`` float32 [batch, num_classes].

    Two 3x3 Conv + Relu blocks (the first followed by a 2x2 MaxPool), GlobalAveragePool, Flatten and a
    MatMul + Add classifier.
    """
    g = _GraphBuilder(seed)
    widths = [channels, 8, 16]
    x = "input"
    for i in range(2):
        c_in, c_out = widths[i], widths[i + 1]
        w = g.weight(f"conv{i + 1}.weight", (c_out, c_in, 3, 3), 1.0 / math.sqrt(c_in * 9))
        b = g.weight(f"conv{i + 1}.bias", (c_out,), 0.02)
        x = g.node("Conv", [x, w, b], f"/conv{i + 1}/Conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
        x = g.node("Relu", [x], f"/relu{i + 1}/Relu")
        if i == 0:
            x = g.node("MaxPool", [x], "/pool/MaxPool", kernel_shape=[2, 2], strides=[2, 2])
    x = g.node("GlobalAveragePool", [x], "/gap/GlobalAveragePool")
    x = g.node("Flatten", [x], "/flatten/Flatten", axis=1)
    g.linear(x, "/classifier", widths[-1], num_classes, output="output")
    return g.model(
        "tiny_conv",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", channels, height, width])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", num_classes])],
    )


def planted_node_name(layer: int) -> str:
    """Name of the FFN output projection MatMul of ``layer`` in :func:`bert_like_model`."""
    return f"/encoder/layer.{layer}/ffn/output/MatMul"


def bert_like_model(
    seed: int = 0,
    num_layers: int = 2,
    hidden_size: int = 64,
    num_heads: int = 4,
    intermediate_size: int = 128,
    vocab_size: int = 100,
    max_seq_len: int = 128,
    plant_outlier_layer: int | None = None,
) -> onnx.ModelProto:
    """A small BERT encoder, laid out the way a transformers export looks.

    Inputs ``input_ids``, ``attention_mask``, ``token_type_ids`` (int64 [batch, sequence]); output
    ``last_hidden_state`` (float32 [batch, sequence, hidden_size]). The subgraphs follow the patterns
    onnxruntime's transformer optimizer (``model_type="bert"``) fuses into EmbedLayerNormalization,
    Attention, SkipLayerNormalization and (Bias)Gelu. Node names read like
    ``/encoder/layer.0/attention/self/query/MatMul`` and ``/encoder/layer.0/ffn/output/MatMul``.

    :param plant_outlier_layer: if set, a few intermediate channels of that layer's FFN take values
        near 300 for every token (as the outlier features of large trained transformers do), with
        matching small weights in the output projection so the fp32 result stays ordinary. Quantizing
        the input of :func:`planted_node_name` (``layer``) to 8 bits per tensor then wipes out the other
        channels, so int8 quantizing that one node costs far more accuracy than any other node
        (default ``quantize_dynamic``: mean output cosine about 0.97 against above 0.999 with that
        node excluded).
    """
    _check_bert_like_args(num_layers, hidden_size, num_heads, plant_outlier_layer)
    g = _GraphBuilder(seed)
    inputs, outputs = _build_bert_like(
        g, num_layers, hidden_size, num_heads, intermediate_size, vocab_size, max_seq_len, plant_outlier_layer
    )
    return g.model("tiny_bert", inputs, outputs)


def bert_like_model_files(
    directory: str | Path,
    seed: int = 0,
    num_layers: int = 2,
    hidden_size: int = 64,
    num_heads: int = 4,
    intermediate_size: int | None = None,
    vocab_size: int = 100,
    max_seq_len: int = 128,
    file_name: str = "model.onnx",
    size_threshold: int = 1024,
) -> ONNXModelHandler:
    """:func:`bert_like_model` written to ``directory`` with its weights in external data, at any size.

    Weights are generated one tensor at a time and written straight to ``<file_name>.data`` (tensors of
    ``size_threshold`` bytes or more; 0 puts every tensor there), so a model past protobuf's 2 GB limit
    is built in the memory of its largest weight. With the same arguments the weights equal those of
    :func:`bert_like_model` (``intermediate_size`` defaults to ``4 * hidden_size`` here, as in BERT).
    :func:`bert_like_weight_bytes` gives the data file's size for choosing ``num_layers``.
    """
    intermediate_size = intermediate_size or 4 * hidden_size
    _check_bert_like_args(num_layers, hidden_size, num_heads, None)
    path = Path(directory) / file_name
    path.parent.mkdir(parents=True, exist_ok=True)
    location = f"{file_name}.data"
    with (path.parent / location).open("wb") as data:
        g = _ExternalDataGraphBuilder(seed, data, location, size_threshold)
        inputs, outputs = _build_bert_like(
            g, num_layers, hidden_size, num_heads, intermediate_size, vocab_size, max_seq_len, None
        )
        graph = helper.make_graph(g.nodes, "bert_like", inputs, outputs, g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="olive.testing")
    model.ir_version = IR_VERSION
    onnx.save_model(model, str(path))
    # The path form checks the external data files too, and works past 2 GB.
    onnx.checker.check_model(str(path))
    return ONNXModelHandler(model_path=str(path))


def bert_like_weight_bytes(
    num_layers: int,
    hidden_size: int,
    intermediate_size: int | None = None,
    vocab_size: int = 100,
    max_seq_len: int = 128,
) -> int:
    """Bytes of float32 weights in a :func:`bert_like_model_files` model (its data file, less alignment)."""
    h, i = hidden_size, intermediate_size or 4 * hidden_size
    embeddings = (vocab_size + max_seq_len + 2) * h + 2 * h
    per_layer = 4 * (h * h + h) + (h * i + i) + (i * h + h) + 4 * h
    return 4 * (embeddings + num_layers * per_layer)


def _check_bert_like_args(num_layers: int, hidden_size: int, num_heads: int, plant_outlier_layer: int | None) -> None:
    if hidden_size % num_heads:
        raise ValueError(f"hidden_size ({hidden_size}) must be a multiple of num_heads ({num_heads})")
    if plant_outlier_layer is not None and not 0 <= plant_outlier_layer < num_layers:
        raise ValueError(f"plant_outlier_layer must be in [0, {num_layers}), got {plant_outlier_layer}")


def _build_bert_like(
    g: _GraphBuilder,
    num_layers: int,
    hidden_size: int,
    num_heads: int,
    intermediate_size: int,
    vocab_size: int,
    max_seq_len: int,
    plant_outlier_layer: int | None,
) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
    """Add the encoder of :func:`bert_like_model` to ``g``; returns the graph's inputs and outputs."""
    head_dim = hidden_size // num_heads

    # Embeddings: word + token type, then + position (sliced to the sequence length), then LayerNorm.
    word = g.weight("embeddings.word_embeddings.weight", (vocab_size, hidden_size), 1.0)
    position = g.weight("embeddings.position_embeddings.weight", (max_seq_len, hidden_size), 0.5)
    token_type = g.weight("embeddings.token_type_embeddings.weight", (2, hidden_size), 0.5)
    position_ids = g.const("embeddings.position_ids", np.arange(max_seq_len)[None, :], np.int64)
    x_word = g.node("Gather", [word, "input_ids"], "/embeddings/word_embeddings/Gather")
    x_type = g.node("Gather", [token_type, "token_type_ids"], "/embeddings/token_type_embeddings/Gather")
    x = g.node("Add", [x_word, x_type], "/embeddings/Add")
    shape = g.node("Shape", ["input_ids"], "/embeddings/Shape")
    seq_len = g.node("Gather", [shape, g.const("/embeddings/Constant_1", 1, np.int64)], "/embeddings/Gather")
    seq_len = g.node("Unsqueeze", [seq_len, g.const("/embeddings/axes_0", [0], np.int64)], "/embeddings/Unsqueeze")
    zeros = g.const("/embeddings/starts", [0], np.int64)
    ones = g.const("/embeddings/axes_1", [1], np.int64)
    pos = g.node("Slice", [position_ids, zeros, seq_len, ones, ones], "/embeddings/Slice")
    x_pos = g.node("Gather", [position, pos], "/embeddings/position_embeddings/Gather")
    x = g.node("Add", [x, x_pos], "/embeddings/Add_1")
    x = _layer_norm(g, x, "embeddings.LayerNorm", hidden_size)

    # Extended attention mask: (1 - mask) * -10000, broadcast over heads and query positions.
    mask = g.node("Unsqueeze", ["attention_mask", ones], "/extended_mask/Unsqueeze")
    mask = g.node("Unsqueeze", [mask, g.const("/extended_mask/axes_2", [2], np.int64)], "/extended_mask/Unsqueeze_1")
    mask = g.node("Cast", [mask], "/extended_mask/Cast", to=TensorProto.FLOAT)
    mask = g.node("Sub", [g.const("/extended_mask/one", 1.0), mask], "/extended_mask/Sub")
    mask = g.node("Mul", [mask, g.const("/extended_mask/min_value", -10000.0)], "/extended_mask/Mul")

    split_heads = g.const("/encoder/split_heads_shape", [0, 0, num_heads, head_dim], np.int64)
    merge_heads = g.const("/encoder/merge_heads_shape", [0, 0, hidden_size], np.int64)
    scale = g.const("/encoder/attention_scale", math.sqrt(head_dim))
    sqrt2 = g.const("/encoder/gelu_sqrt2", math.sqrt(2.0))
    one = g.const("/encoder/gelu_one", 1.0)
    half = g.const("/encoder/gelu_half", 0.5)

    for layer in range(num_layers):
        p = f"encoder.layer.{layer}"
        n = f"/encoder/layer.{layer}"
        heads = {}
        for which, perm in (("query", [0, 2, 1, 3]), ("key", [0, 2, 3, 1]), ("value", [0, 2, 1, 3])):
            t = g.linear(x, f"{n}/attention/self/{which}", hidden_size, hidden_size)
            t = g.node("Reshape", [t, split_heads], f"{n}/attention/self/{which}/Reshape")
            heads[which] = g.node("Transpose", [t], f"{n}/attention/self/{which}/Transpose", perm=perm)
        scores = g.node("MatMul", [heads["query"], heads["key"]], f"{n}/attention/self/MatMul")
        scores = g.node("Div", [scores, scale], f"{n}/attention/self/Div")
        scores = g.node("Add", [scores, mask], f"{n}/attention/self/Add")
        probs = g.node("Softmax", [scores], f"{n}/attention/self/Softmax", axis=-1)
        context = g.node("MatMul", [probs, heads["value"]], f"{n}/attention/self/MatMul_1")
        context = g.node("Transpose", [context], f"{n}/attention/self/Transpose", perm=[0, 2, 1, 3])
        context = g.node("Reshape", [context, merge_heads], f"{n}/attention/self/Reshape")
        attn = g.linear(context, f"{n}/attention/output", hidden_size, hidden_size)
        attn = g.node("Add", [attn, x], f"{n}/attention/residual/Add")
        x = _layer_norm(g, attn, f"{p}.attention.LayerNorm", hidden_size)

        planted = layer == plant_outlier_layer
        h = _ffn_intermediate(g, x, p, n, hidden_size, intermediate_size, planted)
        # GELU written as transformers exports it: x * (1 + erf(x / sqrt(2))) * 0.5.
        e = g.node("Div", [h, sqrt2], f"{n}/ffn/gelu/Div")
        e = g.node("Erf", [e], f"{n}/ffn/gelu/Erf")
        e = g.node("Add", [e, one], f"{n}/ffn/gelu/Add")
        e = g.node("Mul", [h, e], f"{n}/ffn/gelu/Mul")
        h = g.node("Mul", [e, half], f"{n}/ffn/gelu/Mul_1")
        h = _ffn_output(g, h, p, n, hidden_size, intermediate_size, planted)
        h = g.node("Add", [h, x], f"{n}/ffn/residual/Add")
        last = layer == num_layers - 1
        x = _layer_norm(g, h, f"{p}.ffn.LayerNorm", hidden_size, output="last_hidden_state" if last else None)

    ids = ["batch", "sequence"]
    return (
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ids),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ids),
            helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ids),
        ],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*ids, hidden_size])],
    )


def _layer_norm(g: _GraphBuilder, x: str, prefix: str, hidden: int, output: str | None = None) -> str:
    gamma = g.const(f"{prefix}.weight", 1.0 + 0.05 * g.rng.standard_normal(hidden))
    beta = g.weight(f"{prefix}.bias", (hidden,), 0.02)
    name = f"/{prefix.replace('.', '/')}/LayerNormalization"
    return g.node("LayerNormalization", [x, gamma, beta], name, output=output, axis=-1, epsilon=1e-12)


def _ffn_intermediate(g: _GraphBuilder, x: str, p: str, n: str, hidden: int, intermediate: int, planted: bool) -> str:
    w = g.rng.standard_normal((hidden, intermediate)) / math.sqrt(hidden)
    b = g.rng.standard_normal(intermediate) * 0.02
    if planted:
        # Outlier channels: a large bias (and small weights) keeps them near +300 for every token, where
        # GELU is the identity, while the other channels stay small.
        w[:, :_OUTLIER_CHANNELS] *= 0.05
        b[:_OUTLIER_CHANNELS] = _OUTLIER_MAGNITUDE
    w_name = g.const(f"{p}.ffn.intermediate.weight", w)
    b_name = g.const(f"{p}.ffn.intermediate.bias", b)
    y = g.node("MatMul", [x, w_name], f"{n}/ffn/intermediate/MatMul")
    return g.node("Add", [y, b_name], f"{n}/ffn/intermediate/Add")


def _ffn_output(g: _GraphBuilder, h: str, p: str, n: str, hidden: int, intermediate: int, planted: bool) -> str:
    w = g.rng.standard_normal((intermediate, hidden)) / math.sqrt(intermediate)
    b = g.rng.standard_normal(hidden) * 0.02
    if planted:
        # Scale the outlier rows down so their fp32 contribution is of ordinary size.
        w[:_OUTLIER_CHANNELS] /= _OUTLIER_MAGNITUDE
    w_name = g.const(f"{p}.ffn.output.weight", w)
    b_name = g.const(f"{p}.ffn.output.bias", b)
    y = g.node("MatMul", [h, w_name], f"{n}/ffn/output/MatMul")
    return g.node("Add", [y, b_name], f"{n}/ffn/output/Add")


def save_model(proto: onnx.ModelProto, directory: str | Path, file_name: str = "model.onnx") -> ONNXModelHandler:
    """Write ``proto`` to ``directory/file_name`` (creating the folder) and return its handler."""
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    onnx.save(proto, str(path / file_name))
    return ONNXModelHandler(model_path=str(path / file_name))


def _load_proto(model: ONNXModelHandler | onnx.ModelProto) -> onnx.ModelProto:
    if isinstance(model, onnx.ModelProto):
        return model
    return model.load_model(load_external_data=False)


def _index_ranges(proto: onnx.ModelProto) -> dict[str, int]:
    """For integer inputs that index an embedding table, the table's row count."""
    tables = {init.name: int(init.dims[0]) for init in proto.graph.initializer if init.dims}
    # Follow Casts so that ids cast to int32 (as optimized graphs do) still find their table.
    aliases = {name: name for name in (i.name for i in proto.graph.input)}
    ranges: dict[str, int] = {}
    for node in proto.graph.node:
        if node.op_type == "Cast" and node.input and node.input[0] in aliases:
            aliases[node.output[0]] = aliases[node.input[0]]
        elif node.op_type == "Gather" and len(node.input) == 2 and node.input[1] in aliases:
            if node.input[0] in tables:
                ranges.setdefault(aliases[node.input[1]], tables[node.input[0]])
        elif node.op_type == "EmbedLayerNormalization":
            # inputs: input_ids, segment_ids, word_embedding, position_embedding, segment_embedding, ...
            for ids_index, table_index in ((0, 2), (1, 4)):
                if (
                    len(node.input) > table_index
                    and node.input[ids_index] in aliases
                    and node.input[table_index] in tables
                ):
                    ranges.setdefault(aliases[node.input[ids_index]], tables[node.input[table_index]])
    return ranges


def random_inputs(
    model: ONNXModelHandler | onnx.ModelProto, batch_size: int = 2, sequence_length: int = 16, seed: int = 0
) -> dict[str, np.ndarray]:
    """Seeded inputs for every graph input of ``model``, keyed by input name.

    Symbolic dimensions become ``batch_size`` when their name mentions "batch" (or, unnamed, when they
    come first) and ``sequence_length`` otherwise. Integer inputs whose name mentions "mask" are ones;
    other integer inputs are ids in ``[0, rows)`` of the embedding table they index (``[0, 100)`` when
    none is found). Float inputs are standard normal; bool inputs are all True.
    """
    proto = _load_proto(model)
    rng = np.random.default_rng(seed)
    initializers = {init.name for init in proto.graph.initializer}
    ranges = _index_ranges(proto)
    inputs: dict[str, np.ndarray] = {}
    for value in proto.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor_type.elem_type))
        shape = []
        for axis, dim in enumerate(tensor_type.shape.dim):
            if dim.HasField("dim_value"):
                shape.append(dim.dim_value)
            elif "batch" in dim.dim_param.lower() or (not dim.dim_param and axis == 0):
                shape.append(batch_size)
            else:
                shape.append(sequence_length)
        if dtype == np.bool_:
            array = np.ones(shape, dtype=dtype)
        elif np.issubdtype(dtype, np.integer):
            if "mask" in value.name.lower():
                array = np.ones(shape, dtype=dtype)
            else:
                array = rng.integers(0, ranges.get(value.name, DEFAULT_VOCAB), size=shape).astype(dtype)
        else:
            array = rng.standard_normal(shape).astype(dtype)
        inputs[value.name] = array
    return inputs


def write_npz_dataset(
    path: str | Path,
    model: ONNXModelHandler | onnx.ModelProto,
    num_samples: int = 16,
    sequence_length: int = 16,
    seed: int = 0,
    with_labels: bool = False,
) -> Path:
    """Write ``num_samples`` random samples for ``model`` to an ``.npz`` file and return its path.

    Arrays are keyed by input name, with the samples on the first axis (the model's batch axis), as
    the ``NpzDataContainer`` reads them. With ``with_labels``, a ``labels`` array holds the model's own
    predictions (argmax over the last axis of its first output), so the unmodified model scores
    accuracy 1.0 and a pass's accuracy shows how many predictions it changed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = random_inputs(model, batch_size=num_samples, sequence_length=sequence_length, seed=seed)
    if with_labels:
        import onnxruntime as ort

        proto = _load_proto(model)
        session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
        first_output = session.run(None, arrays)[0]
        arrays = {**arrays, "labels": np.argmax(first_output, axis=-1).astype(np.int64)}
    # Write to a temporary name first so a failure never leaves a half-written dataset behind.
    tmp = path.with_name(path.name + ".tmp.npz")
    try:
        np.savez(tmp, **arrays)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def output_cosine(
    a: Mapping[str, np.ndarray] | Sequence[np.ndarray], b: Mapping[str, np.ndarray] | Sequence[np.ndarray]
) -> float:
    """Mean over samples of the cosine similarity between two sets of outputs.

    ``a`` and ``b`` are either dicts keyed by output name (compared on ``a``'s keys) or lists in the same
    order (as ``InferenceSession.run`` returns them). Each sample (first axis) is flattened across all
    outputs into one vector, compared by :func:`olive.measure.cosine_similarities` (identical vectors score
    exactly 1.0, two zero vectors count as identical).
    """
    if isinstance(a, Mapping):
        if not isinstance(b, Mapping):
            raise TypeError("output_cosine: compare a dict with a dict, or a list with a list")
        missing = [k for k in a if k not in b]
        if missing:
            raise KeyError(f"output_cosine: outputs {missing} are missing from the second set")
        left, right = [a[k] for k in a], [b[k] for k in a]
    else:
        left, right = list(a), list(b)
        if len(left) != len(right):
            raise ValueError(f"output_cosine: {len(left)} outputs against {len(right)}")
    if not left:
        raise ValueError("output_cosine: no outputs to compare")
    for x, y in zip(left, right, strict=True):
        if np.shape(x) != np.shape(y):
            raise ValueError(f"output_cosine: shapes differ, {np.shape(x)} vs {np.shape(y)}")
    samples = np.shape(left[0])[0] if np.ndim(left[0]) else 1
    u = np.concatenate([np.asarray(x, dtype=np.float64).reshape(samples, -1) for x in left], axis=1)
    v = np.concatenate([np.asarray(y, dtype=np.float64).reshape(samples, -1) for y in right], axis=1)
    return float(cosine_similarities(u, v).mean())
