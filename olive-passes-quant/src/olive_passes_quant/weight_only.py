"""What the MatMulNBits (weight-only) passes share: the MatMuls they quantize, their params and checks, one run.

RTN (``blockwise``), HQQ (``hqq``), k-quant (``k_quant``) and GPTQ (``gptq``) are :class:`MatMulNBitsPass`
subclasses that give only their onnxruntime configuration (``_algo_config``) and their own params. Written once here:
which MatMuls (:func:`quantizable_matmuls`), the block size MatMulNBits takes (:func:`check_block_size`), the bit
widths, the accuracy levels (:class:`~olive_passes_quant._types.AccuracyLevel`), and the run: the graph loaded
without its weights (each read from the model's folder when it is quantized), quantized in rounds of one
:class:`Setting` each through :func:`~olive_passes_quant.ort_quantizer.quantize_matmuls`, and saved. A model type
that wraps its graph in more (``GenAIModel``: ``genai_config.json`` and the tokenizer) gives its handler
``with_graph(onnx_model)``, and the output is of the input's type (:func:`same_model_type`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from olive.exceptions import PassParamError
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, load_without_weights, model_proto_to_olive_model
from olive_passes_quant._checks import applied, warn_unknown_nodes
from olive_passes_quant._types import AccuracyLevel
from olive_passes_quant.ort_quantizer import quantize_matmuls

if TYPE_CHECKING:
    import onnx

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import OliveModelHandler, ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

#: The bit widths MatMulNBits runs.
BITS = (4, 8)


class Setting(NamedTuple):
    """One round of quantizing: the MatMuls quantized alike."""

    bits: int
    block_size: int
    is_symmetric: bool


def is_block_size(value: Any) -> bool:
    """Whether MatMulNBits takes ``value`` as a block size: a power of two, at least 16."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 16 and not value & (value - 1)


def check_block_size(value: Any, param: str = "block_size") -> None:
    if not is_block_size(value):
        raise PassParamError(
            f"param '{param}' is {value}, which MatMulNBits does not take; use a power of two >= 16 (16, 32, 64, 128)",
            params=param,
        )


NODE_PARAMS = {
    "nodes_to_exclude": "MatMul node names to keep in float.",
    "nodes_to_include": "Quantize only these MatMul nodes (None: every MatMul with a constant 2-D weight).",
}


def common_params(block_size: int, nodes: tuple[str, ...] = tuple(NODE_PARAMS), external: bool = True) -> dict:
    """``block_size`` (default ``block_size``), ``accuracy_level``, the ``nodes`` params of :data:`NODE_PARAMS` and
    the external-data params (:func:`external_data_params`)."""
    return {
        "block_size": PassConfigParam(
            type_=int,
            default_value=block_size,
            # Not searched by default, as in Olive: it would multiply every search by four unasked. A search
            # parameter in the workflow (Categorical [32, 128]) searches it.
            description=f"Weights per block along K: a power of two, at least 16 (default {block_size}). Smaller is "
            "more accurate and larger on disk.",
        ),
        "accuracy_level": PassConfigParam(
            type_=AccuracyLevel | None,
            default_value=None,
            description="MatMulNBits accuracy_level, the minimum compute type: "
            + ", ".join(f"{level.value}/{level.name}" for level in AccuracyLevel)
            + " (int8 is the fastest on CPUs).",
        ),
        **{
            name: PassConfigParam(type_=list[str] | None, default_value=None, description=NODE_PARAMS[name])
            for name in nodes
        },
        **external_data_params(external),
    }


def external_data_params(external: bool = False) -> dict[str, PassConfigParam]:
    """:func:`~olive.passes.onnx.common.get_external_data_config`'s params; ``external``: save weights in a file
    of their own by default (a decoder's weights pass 2 GB from about 500M parameters on)."""
    params = get_external_data_config()
    if external:
        params["save_as_external_data"] = PassConfigParam(
            type_=bool, default_value=True, description="Save weights in a separate file (needed above 2 GB)."
        )
    return params


def quantizable_matmuls(proto: onnx.ModelProto) -> dict[str, int]:
    """MatMul node name -> K, for MatMuls whose second input is a constant 2-D float initializer.

    An initializer that is also a graph input is not constant: a run may feed it (an adapter's LoRA weights after
    ExtractAdapters, whose defaults are empty), so it stays as it is; so does an empty weight."""
    import onnx

    inputs = {i.name for i in proto.graph.input}
    weights = {
        init.name: list(init.dims)
        for init in proto.graph.initializer
        if init.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16)
        and len(init.dims) == 2
        and all(d > 0 for d in init.dims)
        and init.name not in inputs
    }
    return {
        node.name: int(weights[node.input[1]][0])
        for node in proto.graph.node
        if node.op_type == "MatMul" and len(node.input) == 2 and node.input[1] in weights
    }


def accuracy_level(config: BasePassConfig) -> int | None:
    """The config's ``accuracy_level`` as onnxruntime takes it (None: unset)."""
    level = applied(config, "accuracy_level")
    return int(level) if level is not None else None


def same_model_type(source: OliveModelHandler, onnx_model: ONNXModelHandler) -> OliveModelHandler:
    """``onnx_model`` (a pass's rewritten graph of ``source``) as ``source``'s model type where that type wraps its
    graph in more (its handler's ``with_graph``), else as it is."""
    with_graph = getattr(source, "with_graph", None)
    return with_graph(onnx_model) if callable(with_graph) else onnx_model


class MatMulNBitsPass(Pass):
    """A weight-only pass: MatMul weights into com.microsoft MatMulNBits nodes (see the module docstring).

    A subclass gives ``algorithm`` (how its failures name it), its params (``block_size`` at least; ``bits``,
    ``is_symmetric``, ``nodes_to_exclude``, ``nodes_to_include`` where it takes them) and :meth:`_algo_config`.
    """

    accepts_model_types: ClassVar[tuple[str, ...]] = ("ONNXModel", "GenAIModel")
    #: the name failures give the method, e.g. ``k-quant``
    algorithm: ClassVar[str] = ""
    #: the graph is loaded with its weights (GPTQ runs the model on its calibration data); the other methods read
    #: one weight at a time from the model's folder
    loads_weights: ClassVar[bool] = False

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        check_block_size(config.block_size)
        bits = applied(config, "bits")
        if bits is not None and bits not in BITS:
            raise PassParamError(f"param 'bits' is {bits}; use 4 or 8", params="bits")

    def _algo_config(self, config: BasePassConfig, setting: Setting, nodes: list[str], data: Any) -> Any:
        """onnxruntime's ``*WeightOnlyQuantConfig`` for one round (``nodes``: its MatMuls); ``data``: what
        :meth:`_quantize` was given."""
        raise NotImplementedError

    def _settings(self, config: BasePassConfig, setting: Setting) -> str:
        """The settings a failure names."""
        return f"{self.algorithm}, {setting.bits} bits, block_size {setting.block_size}"

    def _rounds(
        self, model: ONNXModelHandler, proto: onnx.ModelProto, chosen: dict[str, int], config: BasePassConfig
    ) -> dict[Setting, list[str]]:
        """The MatMuls of each round, in order; ``chosen`` (name -> K) is every MatMul to quantize."""
        return {self._setting(config): sorted(chosen)}

    @staticmethod
    def _setting(config: BasePassConfig) -> Setting:
        return Setting(applied(config, "bits") or 4, config.block_size, bool(applied(config, "is_symmetric")))

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> OliveModelHandler:
        return self._quantize(model, config, output_model_path)

    def _quantize(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str, data: Any = None
    ) -> OliveModelHandler:
        owner = self.config_owner()
        # Without its weights, the graph holds only the packed blocks in memory; the quantizer reads each weight
        # it quantizes from the model's folder (the working directory while it runs).
        proto = model.load_model() if self.loads_weights else load_without_weights(model)
        weights_dir = None if self.loads_weights else Path(model.model_path).parent
        chosen = self._chosen(proto, config, model.model_path)
        level = accuracy_level(config)
        for setting, nodes in self._rounds(model, proto, chosen, config).items():
            if nodes:
                proto = quantize_matmuls(
                    proto,
                    self._algo_config(config, setting, nodes, data),
                    nodes,
                    bits=setting.bits,
                    block_size=setting.block_size,
                    is_symmetric=setting.is_symmetric,
                    accuracy_level=level,
                    owner=owner,
                    settings=self._settings(config, setting),
                    weights_dir=weights_dir,
                )
        out = model_proto_to_olive_model(proto, output_model_path, config, weights_dir=weights_dir)
        return same_model_type(model, out)

    def _chosen(self, proto: onnx.ModelProto, config: BasePassConfig, where: str) -> dict[str, int]:
        """The MatMuls to quantize (name -> K), with a warning for names the graph lacks and for padded blocks."""
        owner = self.config_owner()
        node_names = [node.name for node in proto.graph.node]
        exclude = set(applied(config, "nodes_to_exclude") or ())
        include = applied(config, "nodes_to_include")
        for param, names in (("nodes_to_exclude", exclude), ("nodes_to_include", include)):
            if names:
                warn_unknown_nodes(sorted(names), param, node_names)
        targets = quantizable_matmuls(proto)
        chosen = {
            name: k for name, k in targets.items() if name not in exclude and (not include or name in set(include))
        }
        if not chosen:
            logger.warning("%s: no MatMul with a constant 2-D weight to quantize in %s", owner, where)
        padded = sorted(name for name, k in chosen.items() if k % config.block_size)
        if padded:
            logger.warning(
                "%s: K of %d MatMul(s) is not a multiple of block_size %d (e.g. %s); their last block is padded, "
                "which costs bytes and no accuracy is gained. A block_size dividing K avoids it.",
                owner,
                len(padded),
                config.block_size,
                padded[0],
            )
        return chosen
