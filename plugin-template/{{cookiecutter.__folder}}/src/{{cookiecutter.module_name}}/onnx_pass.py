"""The {{ cookiecutter.class_name }} pass.

Writing a pass takes three steps, marked below. The example transform removes doc strings from an ONNX
model (smaller files, identical outputs); replace it with your own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, model_proto_to_olive_model
from olive.search.search_parameter import Boolean

if TYPE_CHECKING:
    import onnx
    from olive.hardware import AcceleratorSpec
    from olive.model import ONNXModelHandler
    from olive.passes import BasePassConfig


# Step 1: define a class deriving from Pass. Workflows use it by its entry-point name
# ("type": "{{ cookiecutter.class_name }}"), declared in pyproject.toml.
class {{ cookiecutter.class_name }}(Pass):
    """{{ cookiecutter.__docstring }}"""

    # Step 2: declare the config. Each PassConfigParam is one option of the pass; one with
    # search_defaults is searched when the workflow has a search_strategy.
    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "keep_graph_doc_string": PassConfigParam(
                type_=bool,
                default_value=False,
                search_defaults=Boolean(),
                description="Keep the doc string of the main graph (node doc strings are always removed).",
            ),
            # save_as_external_data and friends, for models over 2 GB.
            **get_external_data_config(),
        }

    # Step 3: implement the run. Read the input model, write the optimized one under output_model_path
    # and return a handler for it; config holds one resolved value per param (config.name or config["name"]).
    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        proto = model.load_model()
        proto.doc_string = ""
        for graph in _graphs(proto.graph):
            if graph is not proto.graph or not config.keep_graph_doc_string:
                graph.doc_string = ""
            for node in graph.node:
                node.doc_string = ""
        return model_proto_to_olive_model(proto, output_model_path, config)


def _graphs(graph: onnx.GraphProto) -> list[onnx.GraphProto]:
    """The graph and every subgraph inside it (If / Loop / Scan bodies), depth first."""
    found = [graph]
    for node in graph.node:
        for attribute in node.attribute:
            subgraphs = [attribute.g] if attribute.HasField("g") else list(attribute.graphs)
            for subgraph in subgraphs:
                found.extend(_graphs(subgraph))
    return found
