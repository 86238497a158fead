"""What SelectiveMixedPrecision and the weight-only quantizer share: MatMul nodes named as the modules they came
from, and the ``mixed_precision_info`` model attribute (Microsoft Olive's: ``{"default": {...}, "overrides":
{module: {"bits": 8, ...}}}``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import onnx

MIXED_PRECISION_KEY = "mixed_precision_info"
_OP_SUFFIX = re.compile(r"^(MatMul|Gemm|MatMulNBits|MatMul_Q\d)(_\d+)?$")
_LAYER = re.compile(r"(?:^|\.)(?:layers?|h|blocks?)\.(\d+)(?:\.|$)")
#: The last name component of the projections that feed attention (fused into one MatMul by exporters) and of
#: the MLP's output projection, across the common Hugging Face architectures.
QKV_NAMES = frozenset({"q_proj", "k_proj", "v_proj", "qkv_proj", "query", "key", "value", "query_key_value", "c_attn"})
DOWN_NAMES = frozenset({"down_proj", "fc2", "dense_4h_to_h", "w2", "c_proj_mlp"})


def module_of(node_name: str) -> str:
    """``/model/layers.0/mlp/down_proj/MatMul`` -> ``model.layers.0.mlp.down_proj``: the module a node came from."""
    parts = [p for p in node_name.replace("/", ".").split(".") if p]
    if len(parts) > 1 and _OP_SUFFIX.match(parts[-1]):
        parts.pop()
    return ".".join(parts)


def layer_index(module: str) -> int | None:
    match = _LAYER.search(module)
    return int(match.group(1)) if match else None


def is_down_projection(module: str) -> bool:
    parts = module.split(".")
    # BERT-style FFN output ("...layer.3.output.dense" or "...ffn.output") and GPT-2's "mlp.c_proj".
    return (
        parts[-1] in DOWN_NAMES
        or parts[-2:] == ["mlp", "c_proj"]
        or (parts[-1] == "dense" and len(parts) > 1 and parts[-2] == "output" and "attention" not in parts)
        or parts[-2:] == ["ffn", "output"]
    )


def is_attention_input(module: str) -> bool:
    return module.split(".")[-1] in QKV_NAMES


def weight_matmuls(proto: onnx.ModelProto) -> dict[str, tuple[str, str]]:
    """``node name -> (module, weight initializer)`` for MatMuls whose second input is a 2-D float initializer."""
    import onnx

    weights = {
        init.name
        for init in proto.graph.initializer
        if init.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16) and len(init.dims) == 2
    }
    found = {}
    for node in proto.graph.node:
        if node.op_type == "MatMul" and len(node.input) == 2 and node.input[1] in weights:
            module = module_of(node.name) if node.name else node.input[1].removesuffix(".weight")
            found[node.name] = (module, node.input[1])
    return found


def override_for(module: str, overrides: Mapping[str, Any]) -> Any:
    """The override of ``module`` or of a module path it ends with: a converter's wrapper adds leading components
    (OnnxConversion names a Hugging Face decoder's ``model.layers.0.mlp.down_proj`` as
    ``model.model.layers.0.mlp.down_proj``)."""
    parts = module.split(".")
    for start in range(len(parts)):
        found = overrides.get(".".join(parts[start:]))
        if found is not None:
            return found
    return None


def overrides_of(attributes: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The ``overrides`` of a model's ``mixed_precision_info`` (module -> settings), or empty."""
    info = (attributes or {}).get(MIXED_PRECISION_KEY) or {}
    overrides = info.get("overrides") if isinstance(info, Mapping) else None
    return {str(k): dict(v) for k, v in overrides.items() if isinstance(v, Mapping)} if overrides else {}


def fake_quantize(weight: np.ndarray, bits: int, group_size: int, symmetric: bool) -> np.ndarray:
    """Round-to-nearest quantized and dequantized ``weight`` ([K, N], as ONNX MatMul holds it), in groups of
    ``group_size`` along K (-1: one group per column, 0: one for the whole tensor)."""
    import numpy as np

    w = weight.astype(np.float32)
    k, n = w.shape
    if group_size == 0:
        groups = w.reshape(1, -1)
    else:
        size = k if group_size < 0 else group_size
        padded = -k % size
        w_pad = np.pad(w, ((0, padded), (0, 0)))
        groups = w_pad.reshape(-1, size, n).transpose(0, 2, 1).reshape(-1, size)
    if symmetric:
        half = 2 ** (bits - 1)
        scale = np.abs(groups).max(axis=1, keepdims=True) / (half - 0.5)
        scale[scale == 0] = 1.0
        q = np.clip(np.round(groups / scale), -half, half - 1)
        result = q * scale
    else:
        top = 2**bits - 1
        low, high = groups.min(axis=1, keepdims=True), groups.max(axis=1, keepdims=True)
        scale = (high - low) / top
        scale[scale == 0] = 1.0
        zero = np.round(-low / scale)
        q = np.clip(np.round(groups / scale) + zero, 0, top)
        result = (q - zero) * scale
    if group_size == 0:
        return result.reshape(k, n)
    size = k if group_size < 0 else group_size
    restored = result.reshape(-1, n, size).transpose(0, 2, 1).reshape(-1, n)
    return restored[:k]


def units(modules: Iterable[str]) -> list[tuple[str, ...]]:
    """Selection units: the q/k/v projections of one attention block together (exporters fuse them into one
    MatMul, so they share precision), every other module alone."""
    grouped: dict[str, list[str]] = {}
    result: list[tuple[str, ...]] = []
    for module in modules:
        parent, _, last = module.rpartition(".")
        if last in {"q_proj", "k_proj", "v_proj", "query", "key", "value"}:
            grouped.setdefault(parent, []).append(module)
        else:
            result.append((module,))
    result.extend(tuple(members) for members in grouped.values())
    return result
