"""The surgeons of GraphSurgeries, under Microsoft Olive's names and params.

Each surgeon rewrites an ``onnx_ir`` model in place and returns how many places it changed. The params a surgery
takes are its ``__init__``'s keyword arguments (those without a default are required), so the pass checks a
workflow's surgeries against the signatures before any model is loaded.

Written here: the surgeons Olive's example workflows and olive-recipes name most that apply to any ONNX model
(the LLM-specific ones that rewrite onnxruntime-genai's attention, rotary caches or quantized embeddings are not).
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import numpy as np
    import onnx
    import onnx_ir as ir

logger = logging.getLogger(__name__)

#: Surgeons of Microsoft Olive that no surgeon here implements (so a workflow naming one is told so plainly).
OLIVE_ONLY_SURGEONS = (
    "AddIntermediateTensorsToOutputs",
    "DecomposeQuickGelu",
    "DecomposeRotaryEmbedding",
    "ExposeOutputs",
    "ExposeQuantizedOutput",
    "Flatten",
    "Gather",
    "GatherElements",
    "InferShapes",
    "MatMulToTransposeConvTranspose",
    "Non4DExpand",
    "Non4DInitializers",
    "Non4DLpNorm",
    "Non4DModelInputs",
    "Non4DModelOutputs",
    "Non4DReshape",
    "Non4DSlice",
    "Non4DTranspose",
    "PackedAttentionToLoopMHA",
    "PackedAttentionToPackedMHA",
    "QDQToClip",
    "QuantizeEmbeddingInt8",
    "ReduceMax",
    "RemoveAllTensorValueShapes",
    "RemoveDeqLin",
    "RemoveInitializerFromInputs",
    "RemoveInputs",
    "RemoveIntermediarySqueezeAndUnsqueeze",
    "RemoveQDQ",
    "RemoveShapes",
    "ReorderInputs",
    "ReplaceErfWithTanh",
    "ReshapeClipReduceSum",
    "ReshapeReduceSum",
    "RMSNormToL2Norm",
    "ShareEmbeddingLmHead",
    "SimplifiedLayerNormToRMSNorm",
    "StandaloneReduceSum",
    "ZeroOutInput",
)


class Surgeon:
    """A named rewrite of an ONNX IR model; subclasses register under their class name (any case in workflows)."""

    registry: ClassVar[dict[str, type[Surgeon]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        Surgeon.registry[cls.__name__.lower()] = cls

    #: True for a surgeon that works on the ``onnx.ModelProto``: on a graph onnx_ir would refuse to read.
    on_proto: ClassVar[bool] = False

    def apply(self, model: ir.Model) -> int:
        """Rewrite ``model`` in place; the number of places changed."""
        raise NotImplementedError

    def apply_proto(self, proto: onnx.ModelProto) -> int:
        """Rewrite ``proto`` in place (surgeons with ``on_proto``); the number of places changed."""
        raise NotImplementedError


class SurgeonParamError(ValueError):
    """A surgeon's param has a value it cannot work with (the pass turns it into a param error)."""


def _unique_name(graph: ir.Graph, base: str, taken: set[str]) -> str:
    if not taken:
        taken.update(graph.initializers)
        taken.update(v.name for v in graph.inputs if v.name)
        taken.update(o.name for node in graph.all_nodes() for o in node.outputs if o.name)
        taken.update(node.name for node in graph.all_nodes() if node.name)
    name, suffix = base, 0
    while name in taken:
        suffix += 1
        name = f"{base}_{suffix}"
    taken.add(name)
    return name


def _constant(graph: ir.Graph, name: str, array: np.ndarray) -> ir.Value:
    import onnx_ir as ir

    value = ir.Value(name=name, const_value=ir.tensor(array, name=name))
    graph.register_initializer(value)
    return value


def _const_array(value: ir.Value | None) -> np.ndarray | None:
    if value is None:
        return None
    if value.const_value is not None:
        return value.const_value.numpy()
    producer = value.producer()
    if producer is not None and producer.op_type == "Constant" and "value" in producer.attributes:
        return producer.attributes["value"].value.numpy()
    return None


def _attr(node: ir.Node, name: str, default: Any) -> Any:
    attr = node.attributes.get(name)
    return default if attr is None else attr.value


def _topological_sort(model: ir.Model) -> None:
    from onnx_ir.passes.common import TopologicalSortPass

    TopologicalSortPass()(model)


class RenameInputs(Surgeon):
    """Rename graph inputs: ``old_names[i]`` becomes ``new_names[i]``."""

    def __init__(self, old_names: list[str], new_names: list[str]):
        if len(old_names) != len(new_names):
            raise SurgeonParamError(f"old_names has {len(old_names)} names but new_names {len(new_names)}")
        self.mapping = dict(zip(old_names, new_names, strict=True))

    def apply(self, model: ir.Model) -> int:
        return _rename(model.graph.inputs, self.mapping, "input")


class RenameOutputs(RenameInputs):
    """Rename graph outputs: ``old_names[i]`` becomes ``new_names[i]``."""

    def apply(self, model: ir.Model) -> int:
        return _rename(model.graph.outputs, self.mapping, "output")


def _rename(values: Any, mapping: dict[str, str], what: str) -> int:
    names = {v.name for v in values}
    missing = sorted(set(mapping) - names)
    if missing:
        raise SurgeonParamError(f"the model has no {what} named {missing}; its {what}s are {sorted(names)}")
    for value in values:
        if value.name in mapping:
            value.name = mapping[value.name]
    return len(mapping)


class RenameInputDims(Surgeon):
    """Give dimension ``dim_idx`` of one input (``input_name``, or ``input_idx``) the symbolic name ``dim_name``."""

    def __init__(self, dim_idx: int, dim_name: str, input_name: str | None = None, input_idx: int | None = None):
        if input_name is None and input_idx is None:
            raise SurgeonParamError("give input_name or input_idx")
        self.dim_idx, self.dim_name, self.input_name, self.input_idx = dim_idx, dim_name, input_name, input_idx

    def apply(self, model: ir.Model) -> int:
        inputs = list(model.graph.inputs)
        if self.input_name is not None:
            target = next((v for v in inputs if v.name == self.input_name), None)
            if target is None:
                raise SurgeonParamError(
                    f"the model has no input '{self.input_name}'; its inputs are {[v.name for v in inputs]}"
                )
        elif not 0 <= self.input_idx < len(inputs):
            raise SurgeonParamError(f"input_idx {self.input_idx} is out of range: the model has {len(inputs)} inputs")
        else:
            target = inputs[self.input_idx]
        return _rename_dim(target, self.dim_idx, self.dim_name)


class RenameOutputDims(Surgeon):
    """Give dimension ``dim_idx`` of output ``output_idx`` the symbolic name ``dim_name``."""

    def __init__(self, output_idx: int, dim_idx: int, dim_name: str):
        self.output_idx, self.dim_idx, self.dim_name = output_idx, dim_idx, dim_name

    def apply(self, model: ir.Model) -> int:
        outputs = model.graph.outputs
        if not 0 <= self.output_idx < len(outputs):
            raise SurgeonParamError(
                f"output_idx {self.output_idx} is out of range: the model has {len(outputs)} outputs"
            )
        return _rename_dim(outputs[self.output_idx], self.dim_idx, self.dim_name)


def _rename_dim(value: ir.Value, dim_idx: int, dim_name: str) -> int:
    import onnx_ir as ir

    if value.shape is None:
        raise SurgeonParamError(f"'{value.name}' has no shape in the model; there is no dimension to rename")
    if not 0 <= dim_idx < len(value.shape):
        raise SurgeonParamError(f"dim_idx {dim_idx} is out of range: '{value.name}' has {len(value.shape)} dimensions")
    dims = list(value.shape)
    dims[dim_idx] = dim_name
    value.shape = ir.Shape(dims)
    return 1


class ReplaceAttentionMaskValue(Surgeon):
    """Replace float constants below ``threshold`` (an attention mask's "minus infinity", such as float32's
    lowest) with ``replacement``, where every consumer is an op a mask feeds (Add, Mul, Expand, Where, Shape):
    such extreme values quantize badly."""

    CONSUMERS: ClassVar[frozenset[str]] = frozenset({"Add", "Mul", "Expand", "Where", "Shape"})

    def __init__(self, threshold: float = -3e30, replacement: float = -1e4):
        self.threshold, self.replacement = float(threshold), float(replacement)

    def apply(self, model: ir.Model) -> int:
        import onnx_ir as ir

        changed = 0
        graph = model.graph
        for node in graph:
            if node.op_type not in ("Constant", "ConstantOfShape"):
                continue
            attr = node.attributes.get("value")
            if attr is None or attr.type != ir.AttributeType.TENSOR or attr.value.dtype != ir.DataType.FLOAT:
                continue
            if not self._mask_like(node.outputs[0]):
                continue
            new = self._replaced(attr.value.numpy())
            if new is not None:
                node.attributes["value"] = ir.AttrTensor("value", ir.tensor(new))
                changed += 1
        for value in list(graph.initializers.values()):
            tensor = value.const_value
            if tensor is None or tensor.dtype != ir.DataType.FLOAT or not self._mask_like(value):
                continue
            new = self._replaced(tensor.numpy())
            if new is not None:
                value.const_value = ir.tensor(new, name=value.name)
                changed += 1
        return changed

    def _mask_like(self, value: ir.Value) -> bool:
        uses = list(value.uses())
        # A large weight is never a mask; not reading it keeps external weights on disk.
        return bool(uses) and all(use.node.op_type in self.CONSUMERS for use in uses)

    def _replaced(self, array: np.ndarray) -> np.ndarray | None:
        import numpy as np

        below = array < self.threshold
        if not np.any(below):
            return None
        return np.where(below, np.float32(self.replacement), array).astype(np.float32)


class MatMulAddToGemm(Surgeon):
    """Replace MatMul + Add (a 2-D constant weight and a 1-D bias) with Gemm; an input of more than two
    dimensions, with static shape, is reshaped to 2-D before the Gemm and back after it."""

    def apply(self, model: ir.Model) -> int:
        import numpy as np
        import onnx_ir as ir
        from onnx_ir.passes.common import ShapeInferencePass

        try:
            model = ShapeInferencePass()(model).model
        except Exception as exc:  # shapes of an odd graph may not infer; the rewrite then needs static inputs
            logger.debug("MatMulAddToGemm: shape inference failed (%s)", exc)
        graph, taken, changed = model.graph, set(), 0
        for matmul in list(graph):
            if matmul.op_type != "MatMul" or matmul.graph is not graph:
                continue
            a, b = matmul.inputs
            product = matmul.outputs[0]
            uses = list(product.uses())
            if product in graph.outputs or len(uses) != 1 or uses[0].node.op_type != "Add":
                continue
            add = uses[0].node
            bias = add.inputs[1 - uses[0].idx]
            if a is None or b is None or a.shape is None or b.shape is None or bias is None or bias.shape is None:
                continue
            if len(b.shape) != 2 or len(bias.shape) != 1 or len(a.shape) < 2:
                continue
            if add.outputs[0].dtype not in (ir.DataType.FLOAT, ir.DataType.FLOAT16, ir.DataType.DOUBLE):
                continue
            reshape = len(a.shape) != 2
            if reshape and not all(isinstance(d, int) for d in [*a.shape, *b.shape]):
                continue
            base = matmul.name or product.name or "MatMul"
            gemm_name = base.replace("MatMul", "Gemm") if "MatMul" in base else f"{base}_Gemm"
            first = a
            if reshape:
                rows = math.prod(a.shape[:-1])
                pre = ir.node(
                    "Reshape",
                    [
                        a,
                        _constant(
                            graph,
                            _unique_name(graph, f"{gemm_name}_pre_shape", taken),
                            np.array([rows, a.shape[-1]], dtype=np.int64),
                        ),
                    ],
                    name=_unique_name(graph, f"{gemm_name}_Reshape_pre", taken),
                )
                graph.append(pre)
                first = pre.outputs[0]
            gemm = ir.node(
                "Gemm",
                [first, b, bias],
                attributes={"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0},
                name=_unique_name(graph, gemm_name, taken),
            )
            graph.append(gemm)
            result = gemm.outputs[0]
            if reshape:
                out_shape = [*a.shape[:-1], b.shape[1]]
                post = ir.node(
                    "Reshape",
                    [
                        result,
                        _constant(
                            graph,
                            _unique_name(graph, f"{gemm_name}_post_shape", taken),
                            np.array(out_shape, dtype=np.int64),
                        ),
                    ],
                    name=_unique_name(graph, f"{gemm_name}_Reshape_post", taken),
                )
                graph.append(post)
                result = post.outputs[0]
            _take_over(graph, add.outputs[0], result)
            graph.remove([add, matmul], safe=True)
            changed += 1
        if changed:
            _topological_sort(model)
        return changed


def _take_over(graph: ir.Graph, old: ir.Value, new: ir.Value) -> None:
    """Point every reader of ``old`` (a graph output too, keeping its name, type and shape) at ``new``."""
    name, shape, type_ = old.name, old.shape, old.type
    is_output = old in graph.outputs
    old.replace_all_uses_with(new, replace_graph_outputs=True)
    if is_output:
        old.name = None
        new.name = name
    if new.type is None:
        new.type = type_
    if new.shape is None:
        new.shape = shape


class GemmToMatMulAdd(Surgeon):
    """Replace Gemm (alpha and beta 1, no transA) with MatMul, plus Add for a bias: block-wise int4
    quantizers only take MatMul weights. transB is applied to a constant weight (a new transposed initializer)
    or by a Transpose node."""

    def apply(self, model: ir.Model) -> int:
        import onnx_ir as ir

        graph, taken, changed = model.graph, set(), 0
        for gemm in list(graph):
            if gemm.op_type != "Gemm":
                continue
            if _attr(gemm, "alpha", 1.0) != 1.0 or _attr(gemm, "beta", 1.0) != 1.0 or _attr(gemm, "transA", 0):
                continue
            a, b = gemm.inputs[0], gemm.inputs[1]
            c = gemm.inputs[2] if len(gemm.inputs) > 2 else None
            if a is None or b is None:
                continue
            base = gemm.name or gemm.outputs[0].name or "Gemm"
            if _attr(gemm, "transB", 0):
                weight = _const_array(b) if b.const_value is not None else None
                if weight is not None and b.is_initializer():
                    b = _constant(graph, _unique_name(graph, f"{b.name}_transposed", taken), weight.T.copy())
                else:
                    transpose = ir.node(
                        "Transpose",
                        [b],
                        attributes={"perm": [1, 0]},
                        name=_unique_name(graph, f"{base}_Transpose", taken),
                    )
                    graph.insert_before(gemm, transpose)
                    b = transpose.outputs[0]
            matmul = ir.node("MatMul", [a, b], name=_unique_name(graph, f"{base}_MatMul", taken))
            graph.insert_before(gemm, matmul)
            result = matmul.outputs[0]
            if c is not None:
                add = ir.node("Add", [result, c], name=_unique_name(graph, f"{base}_Add", taken))
                graph.insert_before(gemm, add)
                result = add.outputs[0]
            _take_over(graph, gemm.outputs[0], result)
            graph.remove(gemm, safe=True)
            changed += 1
        return changed


class ReciprocalMulToDiv(Surgeon):
    """Replace ``a * Reciprocal(x)`` with ``Div(a, x)`` (either operand order), so onnxruntime's
    SimplifiedLayerNormalization fusion recognises an RMSNorm exported from ``torch.rsqrt``."""

    def apply(self, model: ir.Model) -> int:
        from onnxscript.rewriter import pattern

        def _pattern(op: Any, x: Any, a: Any) -> Any:
            return op.Mul(a, op.Reciprocal(x))

        def _replacement(op: Any, x: Any, a: Any) -> Any:
            return op.Div(a, x)

        rules = pattern.RewriteRuleSet([pattern.RewriteRule(_pattern, _replacement)], commute=True)
        return rules.apply_to_model(model)


class DeduplicateNodes(Surgeon):
    """Remove a node that produces a tensor name an earlier node already produced (as float16 conversion can
    leave behind); onnxruntime refuses such a model."""

    on_proto = True

    def apply_proto(self, proto: onnx.ModelProto) -> int:
        seen: set[str] = set()
        duplicates = []
        for index, node in enumerate(proto.graph.node):
            outputs = [o for o in node.output if o]
            if any(o in seen for o in outputs):
                duplicates.append(index)
            seen.update(outputs)
        for index in reversed(duplicates):
            del proto.graph.node[index]
        return len(duplicates)


class DeduplicateSubgraphInitializers(Surgeon):
    """Keep the first of initializers of one name inside Loop, If and Scan subgraphs (offline optimization
    can copy one in twice, which breaks the ONNX rule of unique names)."""

    on_proto = True

    def apply_proto(self, proto: onnx.ModelProto) -> int:
        return _dedupe_subgraph_initializers(proto.graph)


def _dedupe_subgraph_initializers(graph: onnx.GraphProto) -> int:
    removed = 0
    for node in graph.node:
        for attr in node.attribute:
            for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
                seen: set[str] = set()
                keep = []
                for init in sub.initializer:
                    if init.name not in seen:
                        seen.add(init.name)
                        keep.append(init)
                removed += len(sub.initializer) - len(keep)
                if len(keep) != len(sub.initializer):
                    del sub.initializer[:]
                    sub.initializer.extend(keep)
                removed += _dedupe_subgraph_initializers(sub)
    return removed


class RemoveMemcpy(Surgeon):
    """Bypass the MemcpyToHost / MemcpyFromHost nodes an offline GPU optimization bakes in (onnxruntime
    inserts the copies it needs when a session starts), in subgraphs too."""

    def apply(self, model: ir.Model) -> int:
        removed = _remove_memcpy(model.graph)
        if removed:
            _topological_sort(model)
        return removed


def _remove_memcpy(graph: ir.Graph) -> int:
    import onnx_ir as ir

    removed = 0
    for node in list(graph):
        for attr in node.attributes.values():
            if attr.type == ir.AttributeType.GRAPH:
                removed += _remove_memcpy(attr.value)
            elif attr.type == ir.AttributeType.GRAPHS:
                removed += sum(_remove_memcpy(sub) for sub in attr.value)
        if node.op_type not in ("MemcpyToHost", "MemcpyFromHost") or len(node.inputs) != 1 or node.inputs[0] is None:
            continue
        source, copy = node.inputs[0], node.outputs[0]
        if copy in graph.outputs:
            if source.is_graph_input() or source in graph.outputs:
                continue  # the copy is what gives the output its own name
            name = copy.name
            copy.replace_all_uses_with(source, replace_graph_outputs=True)
            copy.name = None
            source.name = name
        else:
            copy.replace_all_uses_with(source)
        graph.remove(node, safe=True)
        removed += 1
    return removed


class TieWordEmbeddings(Surgeon):
    """Make the LM head read the token embedding (``Gather`` on ``input_ids``/``inputs_embeds``) instead of its
    own copy when ``logits`` come from ``MatMul(x, W)`` with ``W`` equal to the embedding transposed: the head
    becomes Reshape -> Gemm(transB=1) -> Reshape and the duplicate weight goes."""

    def apply(self, model: ir.Model) -> int:
        import numpy as np
        import onnx_ir as ir

        graph = model.graph
        inputs = {v.name: v for v in graph.inputs}
        ids = next((inputs[n] for n in ("input_ids", "input_embeds", "inputs_embeds") if n in inputs), None)
        logits = next((v for v in graph.outputs if v.name == "logits"), None)
        if ids is None or logits is None:
            return 0
        gather = next((u.node for u in ids.uses() if u.node.op_type == "Gather" and u.idx == 1), None)
        head = logits.producer()
        if gather is None or head is None or head.op_type != "MatMul":
            return 0
        embedding, head_weight, x = gather.inputs[0], head.inputs[1], head.inputs[0]
        embed_array, head_array = _const_array(embedding), _const_array(head_weight)
        if embed_array is None or head_array is None or embed_array.shape != head_array.T.shape:
            return 0
        if not np.array_equal(embed_array, head_array.T):
            logger.info("TieWordEmbeddings: the LM head's weight is not the embedding transposed; left as is")
            return 0
        vocab, hidden = embed_array.shape
        taken: set[str] = set()
        base = head.name or "lm_head"

        def add(op: str, args: list[ir.Value], **attributes: Any) -> ir.Value:
            node = ir.node(op, args, attributes=attributes, name=_unique_name(graph, f"{base}_{op}", taken))
            graph.insert_before(head, node)
            return node.outputs[0]

        def const(suffix: str, values: list[int]) -> ir.Value:
            return _constant(graph, _unique_name(graph, f"{base}_{suffix}", taken), np.array(values, dtype=np.int64))

        flat = add("Reshape", [x, const("flat_shape", [-1, hidden])])
        gemm = add("Gemm", [flat, embedding], alpha=1.0, beta=1.0, transA=0, transB=1)
        leading = add("Slice", [add("Shape", [x]), const("starts", [0]), const("ends", [-1]), const("axes", [0])])
        shape = add("Concat", [leading, const("vocab", [vocab])], axis=0)
        _take_over(graph, logits, add("Reshape", [gemm, shape]))
        graph.remove(head, safe=True)
        if head_weight.is_initializer() and not list(head_weight.uses()):
            graph.initializers.pop(head_weight.name)
        return 1


class RemoveGidxFromMatMulNBits(Surgeon):
    """Drop a MatMulNBits ``g_idx`` that is the default channel order (``arange(K) // block_size``, as GPTQ
    without act-order writes it): the kernel is faster without it and the result is the same."""

    def apply(self, model: ir.Model) -> int:
        import numpy as np

        removed = 0
        for node in list(model.graph.all_nodes()):
            if node.op_type != "MatMulNBits" or len(node.inputs) < 5 or node.inputs[4] is None:
                continue
            g_idx = _const_array(node.inputs[4])
            k, block = _attr(node, "K", None), _attr(node, "block_size", None)
            if g_idx is None or k is None or not block:
                continue
            if not np.array_equal(g_idx.ravel(), np.arange(k) // block):
                logger.info("RemoveGidxFromMatMulNBits: %s reorders channels; its g_idx is kept", node.name)
                continue
            dropped = node.inputs[4]
            if len(node.inputs) > 5 and node.inputs[5] is not None:
                node.replace_input_with(4, None)  # the bias after it keeps its position
            else:
                node.resize_inputs(4)
            if dropped.is_initializer() and not list(dropped.uses()):
                node.graph.initializers.pop(dropped.name)
            removed += 1
        return removed


class SimplifiedLayerNormToL2Norm(Surgeon):
    """Replace SimplifiedLayerNormalization (RMSNorm) by LpNormalization(p=2) times ``scale * sqrt(N)``, and
    SkipSimplifiedLayerNormalization by the Add of its inputs followed by the same: ``x / rms(x)`` is
    ``x / ||x|| * sqrt(N)``, without the epsilon. NPUs that lack RMSNorm run LpNormalization."""

    def apply(self, model: ir.Model) -> int:
        import numpy as np
        import onnx_ir as ir

        graph, taken, changed = model.graph, set(), 0
        for node in list(graph):
            skip = node.op_type == "SkipSimplifiedLayerNormalization" and node.domain == "com.microsoft"
            plain = node.op_type == "SimplifiedLayerNormalization" and node.domain in ("", "ai.onnx")
            if not (skip or plain):
                continue
            inputs = list(node.inputs)
            expected = 3 if skip else 2
            if len(inputs) != expected or any(v is None for v in inputs):
                continue  # a bias input (Skip...) is not rewritten
            if not _is_last_axis(_attr(node, "axis", -1), inputs[0]):
                continue
            # The statistics outputs (mean, inv_std_var) cannot be expressed by the rewrite.
            if any(i in (1, 2) and (list(o.uses()) or o in graph.outputs) for i, o in enumerate(node.outputs)):
                continue
            scale = _const_array(inputs[-1])
            if scale is None or scale.ndim != 1:
                continue
            base = node.name or "SimplifiedLayerNorm"
            root = inputs[0]
            if skip:
                add = ir.node("Add", inputs[:2], name=_unique_name(graph, f"{base}_Add", taken))
                graph.insert_before(node, add)
                root = add.outputs[0]
                if len(node.outputs) > 3:
                    summed = node.outputs[3]
                    if list(summed.uses()) or summed in graph.outputs:
                        _take_over(graph, summed, root)
            norm = ir.node(
                "LpNormalization",
                [root],
                attributes={"axis": -1, "p": 2},
                name=_unique_name(graph, f"{base}_L2Norm", taken),
            )
            graph.insert_before(node, norm)
            factor = np.sqrt(scale.shape[-1]).astype(scale.dtype)
            weight = np.array([1], dtype=scale.dtype) if np.all(scale == 1) else scale
            constant = _constant(
                graph, _unique_name(graph, f"{base}_l2_scale", taken), (weight * factor).astype(scale.dtype)
            )
            mul = ir.node("Mul", [norm.outputs[0], constant], name=_unique_name(graph, f"{base}_Mul", taken))
            graph.insert_before(node, mul)
            _take_over(graph, node.outputs[0], mul.outputs[0])
            graph.remove(node, safe=True)
            changed += 1
        return changed


class PowReduceSumPowDiv2LpNorm(Surgeon):
    """Replace ``x / Pow(ReduceSum(Pow(x, 2), last axis, keepdims), 0.5)`` by LpNormalization(p=2, axis=-1)."""

    def apply(self, model: ir.Model) -> int:
        import onnx_ir as ir

        graph, changed = model.graph, 0
        for div in list(graph):
            if div.op_type != "Div" or div.inputs[1] is None:
                continue
            root = div.inputs[0]
            sqrt = div.inputs[1].producer()
            total = sqrt.inputs[0].producer() if sqrt is not None and sqrt.op_type == "Pow" else None
            square = total.inputs[0].producer() if total is not None and total.op_type == "ReduceSum" else None
            if square is None or square.op_type != "Pow" or square.inputs[0] is not root:
                continue
            if not (_is_scalar(sqrt.inputs[1], 0.5) and _is_scalar(square.inputs[1], 2.0)):
                continue
            if not _reduces_last_axis(total, root):
                continue
            middle = [square.outputs[0], total.outputs[0], sqrt.outputs[0]]
            if any(len(list(v.uses())) != 1 or v in graph.outputs for v in middle):
                continue
            norm = ir.node("LpNormalization", [root], attributes={"axis": -1, "p": 2}, name=f"{div.name}_lp_norm")
            graph.insert_before(div, norm)
            _take_over(graph, div.outputs[0], norm.outputs[0])
            graph.remove([div, sqrt, total, square], safe=True)
            changed += 1
        return changed


def _is_scalar(value: ir.Value | None, expected: float) -> bool:
    array = _const_array(value)
    return array is not None and array.size == 1 and float(array.ravel()[0]) == expected


def _reduces_last_axis(node: ir.Node, root: ir.Value) -> bool:
    if not _attr(node, "keepdims", 1):
        return False
    axes = _const_array(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] is not None else None
    listed = [int(a) for a in axes.ravel()] if axes is not None else list(_attr(node, "axes", None) or [])
    return len(listed) == 1 and _is_last_axis(listed[0], root)


def _is_last_axis(axis: int, value: ir.Value) -> bool:
    return axis == -1 or (value.shape is not None and axis == len(value.shape) - 1)


def _first_node(graph: ir.Graph, op_types: set[str]) -> ir.Node | None:
    return next((node for node in graph if node.op_type in op_types and node.domain == "com.microsoft"), None)


class AttentionMaskToSequenceLengths(Surgeon):
    """In a GroupQueryAttention model (onnxruntime-genai's builder writes them), replace the ``attention_mask``
    input and the nodes that turn it into GQA's ``seqlens_k`` and ``total_sequence_length`` by two int32 inputs,
    ``past_seq_len`` ([batch, 1]: total length - 1 per row) and ``total_seq_len`` (a scalar), as NPU runtimes feed."""

    def apply(self, model: ir.Model) -> int:
        import onnx_ir as ir

        graph = model.graph
        first = _first_node(graph, {"GroupQueryAttention"})
        if first is None or len(first.inputs) < 7:
            return 0
        lengths = {"past_seq_len": first.inputs[5], "total_seq_len": first.inputs[6]}
        if any(v is None or v.is_graph_input() for v in lengths.values()):
            return 0
        mask = next((v for v in graph.inputs if v.name == "attention_mask"), None)
        if mask is None:
            raise SurgeonParamError("the model has GroupQueryAttention but no 'attention_mask' input to replace")
        # Everything computed from the mask, up to GQA's length inputs, goes; it must feed nothing else.
        doomed, frontier = [], [use.node for use in mask.uses()]
        while frontier:
            node = frontier.pop()
            if node in doomed:
                continue
            doomed.append(node)
            for output in node.outputs:
                if output in graph.outputs:
                    raise SurgeonParamError(f"graph output '{output.name}' is computed from attention_mask")
                for use in output.uses():
                    if use.node.op_type == "GroupQueryAttention":
                        if use.idx not in (5, 6):
                            raise SurgeonParamError(
                                f"attention_mask reaches input {use.idx} of {use.node.name}; only the sequence "
                                "lengths (inputs 5 and 6) are replaced"
                            )
                        continue
                    frontier.append(use.node)
        ids = next((v for v in graph.inputs if v.name == "input_ids"), None)
        batch = ids.shape[0] if ids is not None and ids.shape is not None and len(ids.shape) else 1
        shapes = {"past_seq_len": [batch, 1], "total_seq_len": []}
        for name, old in lengths.items():
            new = ir.Value(name=name, shape=ir.Shape(shapes[name]), type=ir.TensorType(ir.DataType.INT32))
            graph.inputs.insert(0, new)
            old.replace_all_uses_with(new)
        for node in reversed(_in_graph_order(graph, doomed)):
            graph.remove(node, safe=True)
        graph.inputs.remove(mask)
        return len(doomed)


def _in_graph_order(graph: ir.Graph, nodes: list[ir.Node]) -> list[ir.Node]:
    wanted = set(nodes)
    return [node for node in graph if node in wanted]


class RemoveRopeMultiCache(Surgeon):
    """Where GroupQueryAttention / RotaryEmbedding read cos/sin caches chosen by an If on the sequence length
    (a short and a long rope cache), read one of them as an initializer instead (``use_large_cache``: the long
    one) and drop the If: static-graph runtimes cannot run the If."""

    def __init__(self, use_large_cache: bool = False):
        self.use_large_cache = bool(use_large_cache)

    def apply(self, model: ir.Model) -> int:
        graph = model.graph
        first = _first_node(graph, {"GroupQueryAttention", "RotaryEmbedding"})
        if first is None:
            return 0
        positions = (7, 8) if first.op_type == "GroupQueryAttention" else (2, 3)
        if len(first.inputs) <= positions[1]:
            return 0
        caches = {"cos_cache": first.inputs[positions[0]], "sin_cache": first.inputs[positions[1]]}
        chooser = {v.producer() for v in caches.values() if v is not None}
        if len(chooser) != 1 or None in chooser or next(iter(chooser)).op_type != "If":
            return 0
        if_node = next(iter(chooser))
        branch = "then_branch" if self.use_large_cache else "else_branch"
        suffix = "large" if self.use_large_cache else "small"
        for key, value in caches.items():
            array = _branch_constant(if_node, branch, value, f"{key}_{suffix}")
            if array is None:
                raise SurgeonParamError(f"the If choosing '{value.name}' has no constant '{key}_{suffix}' to keep")
            single = _constant(graph, _unique_name(graph, f"{key}_single", set()), array)
            value.replace_all_uses_with(single)
        condition = if_node.inputs[0]
        graph.remove(if_node, safe=True)
        producer = condition.producer() if condition is not None else None
        if producer is not None and producer.op_type == "Greater" and not list(condition.uses()):
            graph.remove(producer, safe=True)
        return 1


def _branch_constant(if_node: ir.Node, branch: str, value: ir.Value, name: str) -> np.ndarray | None:
    """The constant of ``if_node``'s ``branch`` that becomes ``value`` (by output position, else by ``name``)."""
    attr = if_node.attributes.get(branch)
    if attr is None:
        return None
    sub = attr.value
    index = list(if_node.outputs).index(value)
    candidates = [sub.outputs[index]] if index < len(sub.outputs) else []
    candidates += [o for node in sub for o in node.outputs if o.name == name]
    candidates += [v for v in sub.initializers.values() if v.name == name]
    for candidate in candidates:
        array = _const_array(candidate)
        if array is not None:
            return array
    return None
