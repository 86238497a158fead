"""ComposeOnnxModels: join the components of a CompositeModel (SplitModel's output) back into one ONNX model."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import PassRunError
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, ir_model_to_olive_model
from olive_passes_graph._common import check_output_loads, output_guard

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig
    from olive_passes_graph.composite_model import CompositeModelHandler

logger = logging.getLogger(__name__)


class ComposeOnnxModels(Pass):
    """Chain the components in order, linking each input to the earlier output (or graph input) of the same name.

    The composed model's inputs are the components' inputs that no earlier component produces; its outputs are
    the components' outputs that no component reads. A node, initializer or value that several components hold
    (the constants SplitModel copies into each split) is kept once, and must be the same in each.
    """

    accepts_model_types = ("CompositeModel",)

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return get_external_data_config()

    def _run_for_config(
        self, model: CompositeModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        components = getattr(model, "components", None)
        if not callable(components):
            raise PassRunError(
                f"ComposeOnnxModels joins the components of a CompositeModel; '{model.model_path}' is a "
                f"{model.model_type} (split it with SplitModel first)",
                owner=self.config_owner(),
            )
        try:
            composed = compose([(name, component.load_ir_model()) for name, component in components()])
        except ValueError as exc:
            raise PassRunError(
                f"the components of '{model.model_path}' do not compose: {exc}", owner=self.config_owner()
            ) from exc
        with output_guard(output_model_path):
            target = Path(output_model_path)
            target = target if target.suffix == ".onnx" else target / "model.onnx"
            result = ir_model_to_olive_model(composed, target, config)
            check_output_loads(model.model_components[0], result)
        attributes = {k: v for k, v in (model.model_attributes or {}).items() if k != "split_assignments"}
        result.model_attributes = attributes
        return result


def compose(models: list[tuple[str, Any]]) -> Any:
    """One ``onnx_ir`` model from ``(name, model)`` pairs run in order; :class:`ValueError` saying what clashes."""
    import onnx_ir as ir
    from onnx_ir.passes.common import TopologicalSortPass

    values: dict[str, ir.Value] = {}
    inputs: list[ir.Value] = []
    initializers: dict[str, ir.Value] = {}
    nodes: list[ir.Node] = []
    producers: dict[str, Any] = {}
    outputs: list[str] = []
    read: set[str] = set()
    opsets: dict[str, int] = {}

    def value(name: str) -> ir.Value:
        if name not in values:
            values[name] = ir.Value(name=name)
        return values[name]

    for component, model in models:
        graph = model.graph
        for domain, version in graph.opset_imports.items():
            opsets[domain] = max(version, opsets.get(domain, version))
        own_outputs = {v.name for v in graph.outputs}
        earlier_inputs = {v.name for v in inputs} | read
        if own_outputs & earlier_inputs:
            raise ValueError(
                f"component '{component}' produces {sorted(own_outputs & earlier_inputs)}, which an earlier "
                "component reads: components must run in order"
            )
        for graph_input in graph.inputs:
            read.add(graph_input.name)
            known = values.get(graph_input.name)
            if known is not None:
                if known.dtype is not None and graph_input.dtype is not None and known.dtype != graph_input.dtype:
                    raise ValueError(
                        f"component '{component}' reads '{graph_input.name}' as {graph_input.dtype}, but it is "
                        f"{known.dtype} before"
                    )
                continue
            new = value(graph_input.name)
            new.type, new.shape = graph_input.type, graph_input.shape
            inputs.append(new)
        for name, init in graph.initializers.items():
            if name in initializers:
                if not _same_tensor(initializers[name].const_value, init.const_value):
                    raise ValueError(f"initializer '{name}' differs between components")
                continue
            new = value(name)
            new.const_value = init.const_value
            new.type = init.type or ir.TensorType(init.const_value.dtype)
            new.shape = init.shape or ir.Shape(init.const_value.shape)
            initializers[name] = new
        for node in graph:
            names = [o.name for o in node.outputs if o.name]
            earlier = {producers[n] for n in names if n in producers}
            if earlier:
                if len(earlier) == 1 and _same_node(next(iter(earlier)), node):
                    continue  # a copy SplitModel put in several splits
                raise ValueError(f"component '{component}' produces {names}, which an earlier component produces")
            twin = ir.Node(
                node.domain,
                node.op_type,
                inputs=[value(i.name) if i is not None else None for i in node.inputs],
                attributes=list(node.attributes.values()),
                overload=node.overload,
                num_outputs=len(node.outputs),
                version=node.version,
                name=node.name,
            )
            for old, new in zip(node.outputs, twin.outputs, strict=True):
                if not old.name:
                    continue
                if any(v.name == old.name for v in inputs):
                    raise ValueError(f"'{old.name}' is both a graph input and produced by component '{component}'")
                new.name, new.type, new.shape = old.name, old.type, old.shape
                values[old.name] = new
                producers[old.name] = node
            nodes.append(twin)
        for output in graph.outputs:
            if output.name not in outputs:
                outputs.append(output.name)
    final = [values[name] for name in outputs if name not in read]
    composed = ir.Model(
        ir.Graph(
            inputs=inputs,
            outputs=final,
            nodes=nodes,
            initializers=list(initializers.values()),
            name=models[0][1].graph.name,
            opset_imports=opsets,
        ),
        ir_version=max(m.ir_version for _, m in models),
        producer_name=models[0][1].producer_name,
        metadata_props={k: v for k, v in models[0][1].metadata_props.items() if k != "split_assignments"},
    )
    TopologicalSortPass()(composed)
    return composed


def _same_tensor(a: Any, b: Any) -> bool:
    import numpy as np

    if a is None or b is None:
        return a is b
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a.numpy(), b.numpy())


def _same_node(a: Any, b: Any) -> bool:
    from onnx_ir import serde

    return serde.serialize_node(a).SerializeToString() == serde.serialize_node(b).SerializeToString()
