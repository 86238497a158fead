"""OnnxIODataTypeConverter: give graph inputs and outputs of one element type another, with a Cast at the edge."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import PassParamError
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, load_without_weights, model_proto_to_olive_model
from olive_passes_graph._common import carry_over, check_output_loads, output_guard

if TYPE_CHECKING:
    import onnx

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)


class OnnxIODataTypeConverter(Pass):
    """Graph inputs and outputs of element type ``source_dtype`` whose name matches ``name_pattern`` (a regular
    expression searched in the name; empty: every one) become ``target_dtype``: an input is cast back to
    ``source_dtype`` where the graph reads it, an output is cast from the value the graph computes. Names are
    kept, so callers feed and read the same names. Types are ONNX's ``TensorProto`` numbers (1 float, 10 float16,
    16 bfloat16...); the default turns float16 ``logits`` into float32.
    """

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "name_pattern": PassConfigParam(
                type_=str,
                default_value="logits",
                description="Regular expression the input/output names must contain a match of (empty: all).",
            ),
            "source_dtype": PassConfigParam(
                type_=int, default_value=10, description="ONNX element type to convert from (10: float16)."
            ),
            "target_dtype": PassConfigParam(
                type_=int, default_value=1, description="ONNX element type to convert to (1: float)."
            ),
            **get_external_data_config(),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        import onnx

        valid = {v: k for k, v in onnx.TensorProto.DataType.items() if v != onnx.TensorProto.UNDEFINED}
        for name in ("source_dtype", "target_dtype"):
            if config[name] not in valid:
                choices = ", ".join(f"{v} ({k.lower()})" for v, k in sorted(valid.items()))
                raise PassParamError(
                    f"param '{name}' is {config[name]}, which is not an ONNX element type; use one of {choices}",
                    params=name,
                )
        if config.source_dtype == config.target_dtype:
            raise PassParamError(
                f"source_dtype and target_dtype are both {config.source_dtype}; nothing would change",
                params=("source_dtype", "target_dtype"),
            )
        try:
            re.compile(config.name_pattern)
        except re.error as exc:
            raise PassParamError(
                f"param 'name_pattern' {config.name_pattern!r} is not a regular expression ({exc})",
                params="name_pattern",
            ) from None

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        proto = load_without_weights(model)
        pattern = re.compile(config.name_pattern) if config.name_pattern else None
        converted = convert_io(proto, pattern, config.source_dtype, config.target_dtype)
        logger.info(
            "OnnxIODataTypeConverter: %d inputs and %d outputs from type %d to %d",
            len(converted["inputs"]),
            len(converted["outputs"]),
            config.source_dtype,
            config.target_dtype,
        )
        if not converted["inputs"] and not converted["outputs"]:
            logger.warning(
                "OnnxIODataTypeConverter: no input or output of type %d matches %r in '%s'; the model is unchanged",
                config.source_dtype,
                config.name_pattern,
                model.model_path,
            )
        source = Path(model.model_path)
        with output_guard(output_model_path):
            target = Path(output_model_path)
            target = target if target.suffix == ".onnx" else target / source.name
            result = model_proto_to_olive_model(proto, target, config, weights_dir=source.parent)
            check_output_loads(model, result)
        return carry_over(model, result)


def convert_io(proto: onnx.ModelProto, pattern: re.Pattern[str] | None, source: int, target: int) -> dict[str, Any]:
    """Rewrite ``proto`` in place; the names of the inputs and outputs converted."""
    from onnx import helper

    graph = proto.graph
    taken = {v for node in graph.node for v in (*node.input, *node.output)} | {i.name for i in graph.initializer}
    taken |= {v.name for v in (*graph.input, *graph.output)}

    def fresh(base: str) -> str:
        name, index = f"{base}_converted", 0
        while name in taken:
            index += 1
            name = f"{base}_converted_{index}"
        taken.add(name)
        return name

    initializers = {i.name for i in graph.initializer}
    inputs, outputs, casts_in = [], [], []
    input_names = {i.name for i in graph.input}
    for value in graph.input:
        tensor = value.type.tensor_type
        if value.name in initializers or tensor.elem_type != source or not _matches(pattern, value.name):
            continue
        inner = fresh(value.name)
        _rename_reads(graph, value.name, inner)
        casts_in.append(helper.make_node("Cast", [value.name], [inner], name=f"{inner}/Cast", to=source))
        tensor.elem_type = target
        inputs.append(value.name)
    for value in graph.output:
        tensor = value.type.tensor_type
        if tensor.elem_type != source or not _matches(pattern, value.name):
            continue
        if value.name in input_names or value.name in initializers:
            logger.info("OnnxIODataTypeConverter: output '%s' is an input or initializer; left as is", value.name)
            continue
        inner = fresh(value.name)
        for node in graph.node:
            node.output[:] = [inner if o == value.name else o for o in node.output]
        _rename_reads(graph, value.name, inner)
        for info in graph.value_info:
            if info.name == value.name:
                info.name = inner
        graph.node.append(helper.make_node("Cast", [inner], [value.name], name=f"{inner}/Cast", to=target))
        tensor.elem_type = target
        outputs.append(value.name)
    for cast in reversed(casts_in):
        graph.node.insert(0, cast)
    return {"inputs": inputs, "outputs": outputs}


def _matches(pattern: re.Pattern[str] | None, name: str) -> bool:
    return pattern is None or bool(pattern.search(name))


def _rename_reads(graph: onnx.GraphProto, old: str, new: str) -> None:
    """Every read of ``old`` in ``graph`` and its subgraphs (which may read outer values) reads ``new``."""
    for node in graph.node:
        node.input[:] = [new if i == old else i for i in node.input]
        for attr in node.attribute:
            for sub in [attr.g] if attr.HasField("g") else list(attr.graphs):
                shadowed = {v.name for v in sub.input} | {i.name for i in sub.initializer}
                shadowed |= {o for n in sub.node for o in n.output}
                if old not in shadowed:
                    _rename_reads(sub, old, new)
