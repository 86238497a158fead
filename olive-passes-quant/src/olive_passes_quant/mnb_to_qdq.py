"""``MatMulNBitsToQDQ``: com.microsoft MatMulNBits nodes rewritten as standard ONNX DequantizeLinear + MatMul."""

from __future__ import annotations

import logging
import math
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, ir_model_to_olive_model
from olive_passes_quant._checks import warn_unknown_nodes

if TYPE_CHECKING:
    import numpy as np
    import onnx_ir as ir

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

#: The ai.onnx opset that blocked DequantizeLinear needs (4-bit and 8-bit; 2-bit types need 25).
BLOCKED_DQ_OPSET = 21
INT2_OPSET = 25


class MatMulNBitsToQDQ(Pass):
    """Rewrite each MatMulNBits with constant weights as DequantizeLinear (block-wise along K, the same
    integers, scales and zero points) feeding a MatMul (plus Add for a bias): the QDQ form that execution
    providers without MatMulNBits (QNN, DirectML, OpenVINO) take. The weights are not requantized, so the
    output equals MatMulNBits' up to float rounding.

    ``use_signed_int`` (or ``use_int4`` for 4 bits) stores int4/int8 values shifted by the midpoint, and drops
    zero points that are all the midpoint unless ``add_zero_point``; unsigned storage always has zero points
    (MatMulNBits' default is the midpoint, DequantizeLinear's is 0). Nodes whose ``g_idx`` is not the trivial
    order, whose zero points are float, or whose bits are not 2, 4 or 8 are left as they are. The model's
    ai.onnx opset is raised to 21 (25 with 2-bit weights) where lower, as blocked DequantizeLinear needs.
    """

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "use_transpose_op": PassConfigParam(
                type_=bool,
                default_value=False,
                description="Store the weight as N x K and add a Transpose after DequantizeLinear (else K x N).",
            ),
            "use_int4": PassConfigParam(
                type_=bool, default_value=False, description="Signed int4 for 4-bit weights (see use_signed_int)."
            ),
            "use_signed_int": PassConfigParam(
                type_=bool, default_value=False, description="Signed integer weights (int4/int8) instead of unsigned."
            ),
            "add_zero_point": PassConfigParam(
                type_=bool, default_value=False, description="Keep zero points even when they are all 0 (signed)."
            ),
            "nodes_to_exclude": PassConfigParam(
                type_=list[str] | None, default_value=None, description="MatMulNBits node names to leave as they are."
            ),
            **get_external_data_config(),
        }

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        from onnx_ir.passes.common import RemoveUnusedNodesPass, TopologicalSortPass

        ir_model = model.load_ir_model()
        excluded = set(config.nodes_to_exclude or [])
        mnb_names = [n.name for n in ir_model.graph.all_nodes() if n.op_type == "MatMulNBits"]
        warn_unknown_nodes(excluded, "nodes_to_exclude", mnb_names)
        taken = {n.name for n in ir_model.graph.all_nodes() if n.name}
        converted, bits_seen = 0, set()
        for node in list(ir_model.graph.all_nodes()):
            if node.op_type != "MatMulNBits" or node.domain != "com.microsoft" or node.name in excluded:
                continue
            bits = _attr(node, "bits", 4)
            use_signed = config.use_signed_int or (bits == 4 and config.use_int4)
            if _rewrite(node, bits, use_signed, config.add_zero_point, config.use_transpose_op, taken):
                converted += 1
                bits_seen.add(bits)
        logger.info("MatMulNBitsToQDQ: %d MatMulNBits nodes rewritten as DequantizeLinear + MatMul", converted)
        if converted:
            RemoveUnusedNodesPass()(ir_model)
            TopologicalSortPass()(ir_model)
            needed = INT2_OPSET if 2 in bits_seen else BLOCKED_DQ_OPSET
            ir_model.opset_imports[""] = max(needed, ir_model.opset_imports.get("", needed))
        source = Path(model.model_path)
        target = Path(output_model_path)
        target = target if target.suffix == ".onnx" else target / source.name
        existed = target.parent.exists()
        try:
            result = ir_model_to_olive_model(ir_model, target, config)
        except BaseException:
            # Nothing half-written stays in the output folder.
            if not existed:
                shutil.rmtree(target.parent, ignore_errors=True)
            raise
        result.model_attributes = dict(model.model_attributes or {})
        result.inference_settings = model.inference_settings
        return result


def _attr(node: ir.Node, name: str, default: Any) -> Any:
    attr = node.attributes.get(name)
    return default if attr is None else attr.value


def _rewrite(node: ir.Node, bits: int, signed: bool, add_zero_point: bool, transpose: bool, taken: set[str]) -> bool:
    """Replace ``node`` in its graph; False (and nothing changed) where its form cannot be expressed in QDQ."""
    import numpy as np
    import onnx_ir as ir

    if bits not in (2, 4, 8):
        logger.info("MatMulNBitsToQDQ: %s has %d-bit weights; only 2, 4 and 8 are rewritten", node.name, bits)
        return False
    graph = node.graph
    inputs = list(node.inputs) + [None] * (6 - len(node.inputs))
    x, weight, scales, zeros, g_idx, bias = inputs[:6]
    constants = [v for v in (weight, scales, zeros, g_idx, bias) if v is not None]
    if any(v.const_value is None or v.is_graph_input() for v in constants):
        return False
    k, n, block = _attr(node, "K", None), _attr(node, "N", None), _attr(node, "block_size", None)
    if k is None or n is None or block is None:
        return False
    blocks = math.ceil(k / block)
    if g_idx is not None and not np.array_equal(g_idx.const_value.numpy().ravel(), np.arange(k) // block):
        logger.info("MatMulNBitsToQDQ: %s reorders K with g_idx, which DequantizeLinear cannot; left as is", node.name)
        return False
    if zeros is not None and zeros.const_value.numpy().dtype != np.uint8:
        logger.info("MatMulNBitsToQDQ: %s has float zero points, which DequantizeLinear cannot take", node.name)
        return False
    midpoint = 1 << (bits - 1)
    q = _unpack(weight.const_value.numpy().reshape(n, -1), bits)[:, :k].astype(np.int16)
    scale = scales.const_value.numpy().reshape(n, -1)[:, :blocks]
    if zeros is not None:
        zp = _unpack(zeros.const_value.numpy().reshape(n, -1), bits)[:, :blocks].astype(np.int16)
    else:
        zp = np.full((n, blocks), midpoint, dtype=np.int16)
    if signed:
        q, zp = q - midpoint, zp - midpoint
    keep_zp = add_zero_point or not signed or bool(np.any(zp != 0))
    per_axis = blocks == 1
    if per_axis:
        scale, zp = scale.reshape(n), zp.reshape(n)
    elif not transpose:
        scale, zp = scale.T, zp.T
    if not transpose:
        q = q.T
    base = _base_name(node.name)
    dq_name = _unique(f"{base}DequantizeLinear" if base else f"{node.name}_DequantizeLinear", taken)
    element = _int_type(bits, signed)
    dq_inputs = [
        _initializer(graph, f"{dq_name}.qweight", q, element),
        _initializer(graph, f"{dq_name}.scales", np.ascontiguousarray(scale), None),
    ]
    if keep_zp:
        dq_inputs.append(_initializer(graph, f"{dq_name}.qzeros", zp, element))
    # Per-axis DequantizeLinear scales the N axis; blocked scales K in blocks.
    axis = (1 if transpose else 0) if not per_axis else (0 if transpose else 1)
    attributes: dict[str, Any] = {"axis": axis}
    if not per_axis:
        attributes["block_size"] = block
    dq = ir.node("DequantizeLinear", dq_inputs, attributes=attributes, name=dq_name)
    dq.outputs[0].name = f"{dq_name}/output_0"
    new_nodes = [dq]
    dequantized = dq.outputs[0]
    if transpose:
        t = ir.node("Transpose", [dequantized], attributes={"perm": [1, 0]}, name=_unique(f"{base}Transpose", taken))
        t.outputs[0].name = f"{t.name}/output_0"
        new_nodes.append(t)
        dequantized = t.outputs[0]
    matmul = ir.node("MatMul", [x, dequantized], name=_unique(f"{base}MatMul" if base else node.name, taken))
    matmul.outputs[0].name = f"{matmul.name}/output_0"
    new_nodes.append(matmul)
    result = matmul.outputs[0]
    if bias is not None:
        add = ir.node("Add", [result, bias], name=_unique(f"{base}Add", taken))
        add.outputs[0].name = f"{add.name}/output_0"
        new_nodes.append(add)
        result = add.outputs[0]
    old = node.outputs[0]
    result.type, result.shape = old.type, old.shape
    graph.insert_before(node, new_nodes)
    is_output = old in graph.outputs
    name = old.name
    old.replace_all_uses_with(result, replace_graph_outputs=True)
    graph.remove(node, safe=True)
    if is_output:
        result.name = name
    return True


def _base_name(name: str) -> str:
    for suffix in ("MatMulNBits", "MatMul_Q4", "MatMul_Q8"):
        if name and suffix in name:
            return name[: name.index(suffix)]
    return ""


def _unique(name: str, taken: set[str]) -> str:
    candidate, index = name, 0
    while candidate in taken:
        candidate = f"{name}_{index}"
        index += 1
    taken.add(candidate)
    return candidate


def _unpack(packed: np.ndarray, bits: int) -> np.ndarray:
    """Rows of bytes holding ``8 // bits`` values each, low bits first (MatMulNBits' layout), as one value each."""
    import numpy as np

    if bits == 8:
        return packed.astype(np.uint8)
    per_byte = 8 // bits
    shifts = np.arange(per_byte, dtype=np.uint8) * bits
    values = (packed[:, :, None] >> shifts) & ((1 << bits) - 1)
    return values.reshape(packed.shape[0], -1).astype(np.uint8)


def _int_type(bits: int, signed: bool) -> Any:
    import onnx_ir as ir

    return {
        (2, True): ir.DataType.INT2,
        (2, False): ir.DataType.UINT2,
        (4, True): ir.DataType.INT4,
        (4, False): ir.DataType.UINT4,
        (8, True): ir.DataType.INT8,
        (8, False): ir.DataType.UINT8,
    }[(bits, signed)]


def _initializer(graph: ir.Graph, name: str, array: np.ndarray, element: Any) -> ir.Value:
    import onnx_ir as ir

    if element is None:
        tensor = ir.tensor(array, name=name)
    elif element in (ir.DataType.INT8, ir.DataType.UINT8):
        tensor = ir.tensor(array.astype(element.numpy()), name=name)
    else:
        # ONNX packs 2- and 4-bit tensors flat, low bits first.
        tensor = ir.PackedTensor(_pack(array, element.bitwidth), element, shape=ir.Shape(array.shape), name=name)
    value = ir.Value(name=name, const_value=tensor, type=ir.TensorType(tensor.dtype), shape=tensor.shape)
    graph.register_initializer(value)
    return value


def _pack(values: np.ndarray, bits: int) -> np.ndarray:
    import numpy as np

    flat = (values.astype(np.int16).ravel() & ((1 << bits) - 1)).astype(np.uint8)
    per_byte = 8 // bits
    flat = np.pad(flat, (0, -len(flat) % per_byte))
    packed = np.zeros(len(flat) // per_byte, dtype=np.uint8)
    for i in range(per_byte):
        packed |= flat[i::per_byte] << (i * bits)
    return packed
