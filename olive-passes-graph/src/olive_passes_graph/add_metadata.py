"""AddOliveMetadata: name the graph and write Olive's metadata into the ONNX model's ``metadata_props``."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import olive
from olive.cache.store import hash_model
from olive.exceptions import PassParamError
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, load_without_weights, model_proto_to_olive_model
from olive_passes_graph._common import carry_over, check_output_loads, output_guard

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

#: Model attributes copied into the metadata when ``add_optimization_info`` is on (Microsoft Olive's keys).
OPTIMIZATION_KEYS = ("optimization_passes", "hf_task", "quantization_config")


class AddOliveMetadata(Pass):
    """Set the graph's name to ``graph_name`` and add metadata entries, keeping the weights as they are.

    Written (as strings, overwriting entries of the same key): ``custom_metadata``, ``olive_version``,
    ``hf_model_name`` (the Hugging Face ``_name_or_path`` a converted model carries), ``model_hash`` (the
    sha256 of the input model's content, as the cache computes it) and, with ``add_optimization_info``, the
    model attributes ``optimization_passes``, ``hf_task`` and ``quantization_config`` where present. The
    graph itself is unchanged.
    """

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "graph_name": PassConfigParam(type_=str, required=True, description="Name given to the ONNX graph."),
            "custom_metadata": PassConfigParam(
                type_=dict[str, Any],
                default_value={},
                description="Key-value pairs added to the model's metadata (values written as strings).",
            ),
            "add_optimization_info": PassConfigParam(
                type_=bool,
                default_value=True,
                description="Also write the optimization_passes, hf_task and quantization_config model attributes.",
            ),
            **get_external_data_config(),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        if not config.graph_name.strip():
            raise PassParamError(
                "param 'graph_name' is empty; give the name the graph should have", params="graph_name"
            )

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        import onnx

        metadata = olive_metadata(model, config.custom_metadata, config.add_optimization_info)
        metadata["model_hash"] = hash_model(model)
        proto = load_without_weights(model)
        merged = {entry.key: entry.value for entry in proto.metadata_props}
        merged.update(metadata)
        onnx.helper.set_model_props(proto, merged)
        proto.graph.name = config.graph_name
        source = Path(model.model_path)
        has_external = bool(model.external_data_files())
        with output_guard(output_model_path):
            target = Path(output_model_path)
            target = target if target.suffix == ".onnx" else target / source.name
            # Only metadata changes: a model whose weights are in external data keeps them there, as Olive does.
            layout = {**config.to_dict(), "save_as_external_data": config.save_as_external_data or has_external}
            result = model_proto_to_olive_model(proto, target, layout, weights_dir=source.parent)
            check_output_loads(model, result)
        logger.info("AddOliveMetadata: graph named %r, %d metadata entries written", config.graph_name, len(metadata))
        return carry_over(model, result)


def olive_metadata(model: ONNXModelHandler, custom: dict[str, Any], optimization_info: bool) -> dict[str, str]:
    """The entries :class:`AddOliveMetadata` writes, less ``model_hash``."""
    metadata = {str(key): str(value) for key, value in (custom or {}).items()}
    metadata["olive_version"] = olive.__version__
    attributes = model.model_attributes or {}
    hf_name = attributes.get("_name_or_path")
    if isinstance(hf_name, str) and hf_name:
        metadata["hf_model_name"] = hf_name
    if optimization_info:
        for key in OPTIMIZATION_KEYS:
            if key not in attributes:
                continue
            value = attributes[key]
            metadata[key] = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    return metadata
