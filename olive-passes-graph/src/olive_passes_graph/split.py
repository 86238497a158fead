"""CaptureSplitInfo and SplitModel: divide a model's layers into consecutive splits, then cut the ONNX graph there.

CaptureSplitInfo records ``split_assignments`` (module name -> split index, e.g. ``model.layers.0 -> 0``); it is
kept in the model's attributes and, for an ONNX model, in its ``metadata_props`` as ``name1=0;name2=1``, where
Microsoft Olive's SplitModel reads it. SplitModel assigns each node by its name (``/model/layers.3/attn/MatMul``
is module ``model.layers.3.attn.MatMul``: the longest assigned prefix wins) and writes one ONNX model per split.
"""

from __future__ import annotations

import copy
import csv
import logging
import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import PassParamError, PassRunError
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config, ir_model_to_olive_model, load_without_weights
from olive.passes.pass_config import ParamCategory
from olive_passes_graph._common import carry_over, check_loads, first_line, output_guard
from olive_passes_graph.composite_model import CompositeModelHandler

if TYPE_CHECKING:
    import onnx_ir as ir

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import OliveModelHandler, ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

ASSIGNMENTS_KEY = "split_assignments"
#: The transformer layers' module of a Hugging Face model, by ``model_type``, where it is not ``model.layers``.
_HF_LAYER_BLOCKS = {
    "bloom": "transformer.h",
    "falcon": "transformer.h",
    "gpt2": "transformer.h",
    "gpt_neox": "gpt_neox.layers",
    "gptj": "transformer.h",
    "opt": "model.decoder.layers",
}
_HF_EMBEDS = {"gpt2": ["transformer.wte", "transformer.wpe"], "opt": ["model.decoder.embed_tokens"]}
_LAYER_RE = re.compile(r"^(?P<block>.+?)\.(?P<index>\d+)(?:\.|$)")


def module_name(node_name: str) -> str:
    """``/model/layers.0/attn/MatMul`` -> ``model.layers.0.attn.MatMul``: the node's name as a module path."""
    return node_name.replace("/", ".").lstrip(".")


def parse_assignments(value: Any, where: str) -> dict[str, int]:
    """``{"a": 0}`` or ``"a=0;b=1"`` as a dict; a :class:`ValueError` naming ``where`` for another shape."""
    if isinstance(value, Mapping):
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value.values()):
            raise ValueError(f"{where} maps module names to split indices (0, 1, ...); got {dict(value)}")
        return {str(k): int(v) for k, v in value.items()}
    parsed = {}
    for item in str(value).split(";"):
        name, sep, index = item.strip().partition("=")
        if not sep or not name or not index.strip().isdigit():
            raise ValueError(f"{where} is 'name1=0;name2=1...'; '{item}' is not 'name=index'")
        parsed[name.strip()] = int(index)
    return parsed


def format_assignments(assignments: Mapping[str, int]) -> str:
    return ";".join(f"{name}={index}" for name, index in assignments.items())


class CaptureSplitInfo(Pass):
    """Divide the children of ``block_to_split`` (the transformer layers by default) into ``num_splits``
    consecutive groups, or cut where ``cost_model`` says a group would pass the accelerator's memory or switch
    between memory- and compute-bound modules; the model itself is unchanged.

    Takes an ONNX model (modules read from node names) or a Hugging Face model (layers counted from its config,
    nothing loaded), as Microsoft Olive's pass of this name takes the PyTorch model before conversion.
    """

    accepts_model_types = ("ONNXModel", "HfModel")

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "num_splits": PassConfigParam(type_=int | None, default_value=None, description="Number of splits."),
            "block_to_split": PassConfigParam(
                type_=str | list[str] | None,
                default_value=None,
                description="Module(s) whose children are divided; default: the transformer layers.",
            ),
            "cost_model": PassConfigParam(
                type_=str | None,
                default_value=None,
                category=ParamCategory.PATH,
                description="CSV with header module,num_params,num_bytes,num_flops, one row per leaf module in order.",
            ),
            "unique_embeds_lm_head_splits": PassConfigParam(
                type_=bool, default_value=False, description="Give the embeddings and lm_head splits of their own."
            ),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        if config.num_splits is None and config.cost_model is None:
            raise PassParamError("give num_splits or cost_model", params=("num_splits", "cost_model"))
        if config.num_splits is not None and config.num_splits < 1:
            raise PassParamError(f"param 'num_splits' is {config.num_splits}; use 1 or more", params="num_splits")
        if config.num_splits is None and accelerator_spec.memory is None:
            raise PassParamError(
                "cost_model needs the accelerator's memory (bytes) to size the splits: set 'memory' on the "
                "system's accelerator, or give num_splits instead",
                params="cost_model",
            )

    @staticmethod
    def is_accelerator_agnostic(accelerator_spec: AcceleratorSpec) -> bool:
        return False

    def _run_for_config(
        self, model: OliveModelHandler, config: BasePassConfig, output_model_path: str
    ) -> OliveModelHandler:
        hf = model.model_type != "ONNXModel"
        embeds, excluded = self._embeds(model, hf) if config.unique_embeds_lm_head_splits else ([], set())
        assignments = dict.fromkeys(embeds, 0)
        first = 1 if embeds else 0
        if config.num_splits is not None:
            members = [m for m in self._block_members(model, config.block_to_split, hf) if m not in excluded]
            if len(members) < config.num_splits:
                raise PassRunError(
                    f"cannot divide {len(members)} modules into {config.num_splits} splits; lower num_splits",
                    owner=self.config_owner(),
                )
            # As numpy's array_split: the first len % n groups take one module more.
            size, extra = divmod(len(members), config.num_splits)
            start = 0
            for index in range(config.num_splits):
                end = start + size + (1 if index < extra else 0)
                assignments.update(dict.fromkeys(members[start:end], first + index))
                start = end
            last = first + config.num_splits - 1
        else:
            last = self._cost_model_splits(config.cost_model, excluded, first, assignments)
        if config.unique_embeds_lm_head_splits:
            assignments["lm_head"] = last + 1
        logger.info("CaptureSplitInfo: %d splits", len(set(assignments.values())))
        if hf:
            result = copy.copy(model)
            result.model_attributes = {**(model.model_attributes or {}), ASSIGNMENTS_KEY: assignments}
            return result
        return self._onnx_with_assignments(model, assignments, output_model_path)

    def _onnx_with_assignments(
        self, model: ONNXModelHandler, assignments: dict[str, int], output_model_path: str
    ) -> ONNXModelHandler:
        import onnx

        from olive.passes.onnx.common import model_proto_to_olive_model

        proto = load_without_weights(model)
        props = {entry.key: entry.value for entry in proto.metadata_props}
        props[ASSIGNMENTS_KEY] = format_assignments(assignments)
        onnx.helper.set_model_props(proto, props)
        source = Path(model.model_path)
        with output_guard(output_model_path):
            target = Path(output_model_path)
            target = target if target.suffix == ".onnx" else target / source.name
            layout = {"save_as_external_data": bool(model.external_data_files())}
            result = model_proto_to_olive_model(proto, target, layout, weights_dir=source.parent)
        return carry_over(model, result, attributes={ASSIGNMENTS_KEY: assignments})

    def _block_members(self, model: OliveModelHandler, block_to_split: Any, hf: bool) -> list[str]:
        blocks = [block_to_split] if isinstance(block_to_split, str) else block_to_split
        if hf:
            config = _hf_config(model)
            layers = config.get("num_hidden_layers", config.get("n_layer"))
            if not isinstance(layers, int):
                raise PassRunError(
                    f"the Hugging Face config of '{model.model_path}' has no num_hidden_layers; convert the model to "
                    "ONNX first and run CaptureSplitInfo on it",
                    owner=self.config_owner(),
                )
            blocks = blocks if blocks is not None else [_HF_LAYER_BLOCKS.get(config.get("model_type"), "model.layers")]
            return [f"{block}.{i}".lstrip(".") for block in blocks for i in range(layers)]
        names = [module_name(node.name) for node in load_without_weights(model).graph.node if node.name]
        if blocks is None:
            found = Counter()
            seen: dict[str, set[str]] = defaultdict(set)
            for name in names:
                match = _LAYER_RE.match(name)
                if match and match["index"] not in seen[match["block"]]:
                    seen[match["block"]].add(match["index"])
                    found[match["block"]] += 1
            if not found:
                raise PassRunError(
                    f"no numbered layers (like /model/layers.0/...) in the node names of '{model.model_path}'; give "
                    "block_to_split",
                    owner=self.config_owner(),
                )
            blocks = [found.most_common(1)[0][0]]
        members: list[str] = []
        for block in blocks:
            prefix = f"{block}." if block else ""
            children = []
            for name in names:
                if name.startswith(prefix) and len(name) > len(prefix):
                    child = name[len(prefix) :].split(".")[0]
                    if f"{prefix}{child}" not in children:
                        children.append(f"{prefix}{child}")
            if not children:
                raise PassRunError(
                    f"no node of '{model.model_path}' is inside block '{block}'; fix block_to_split",
                    owner=self.config_owner(),
                )
            # Numbered layers in number order (node order may interleave them).
            if all(c.rsplit(".", 1)[-1].isdigit() for c in children):
                children.sort(key=lambda c: int(c.rsplit(".", 1)[-1]))
            members.extend(children)
        return members

    def _embeds(self, model: OliveModelHandler, hf: bool) -> tuple[list[str], set[str]]:
        model_type = _hf_config(model).get("model_type") if hf else None
        embeds = _HF_EMBEDS.get(model_type, ["model.embed_tokens"])
        return embeds, {*embeds, "lm_head"}

    def _cost_model_splits(self, cost_model: str, excluded: set[str], first: int, assignments: dict[str, int]) -> int:
        memory = self.accelerator_spec.memory
        try:
            with Path(cost_model).open(newline="", encoding="utf-8") as handle:
                rows = list(csv.DictReader(handle))
            costs = [(r["module"], int(r["num_params"]), int(r["num_bytes"]), int(r["num_flops"])) for r in rows]
        except (OSError, KeyError, ValueError, TypeError) as exc:
            raise PassRunError(
                f"cost_model '{cost_model}' cannot be read ({first_line(exc)}); it is a CSV with the header "
                "module,num_params,num_bytes,num_flops and integer values",
                owner=self.config_owner(),
            ) from exc
        split, split_bytes, count, memory_bound = first, 0, 0, False
        for name, params, size, flops in costs:
            if name in excluded or name.lower().endswith("dropout"):
                continue
            bound = params > flops > 0
            if count and (bound != memory_bound or split_bytes + size > memory):
                split, split_bytes = split + 1, 0
            assignments[name] = split
            split_bytes += size
            count += 1
            memory_bound = bound
        if not count:
            raise PassRunError(f"cost_model '{cost_model}' lists no module to split", owner=self.config_owner())
        return split


def _hf_config(model: OliveModelHandler) -> dict[str, Any]:
    import json

    config_file = Path(model.model_path) / "config.json"
    if config_file.is_file():
        return json.loads(config_file.read_text(encoding="utf-8"))
    loaded = getattr(model, "hf_config", None)
    return loaded.to_dict() if loaded is not None else {}


class SplitModel(Pass):
    """Write one ONNX model per split of ``split_assignments`` (the param, else what CaptureSplitInfo
    recorded); values that cross splits become outputs of one and inputs of the next, so running the components
    in order (or ComposeOnnxModels) gives the original outputs.

    A node takes the split of the longest assigned prefix of its name, and never an earlier split than its
    inputs; unassigned nodes before the first split join the split that reads them, the rest split 0. Constant
    and DequantizeLinear nodes are copied into every split that reads them; QuantizeLinear stays with its input.
    """

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            "split_assignments": PassConfigParam(
                type_=dict[str, int] | str | None,
                default_value=None,
                description="Module name -> split index, or 'name1=0;name2=1'; overrides CaptureSplitInfo's.",
            ),
            **get_external_data_config(),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        if config.split_assignments is not None:
            try:
                parse_assignments(config.split_assignments, "param 'split_assignments'")
            except ValueError as exc:
                raise PassParamError(str(exc), params="split_assignments") from None

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> CompositeModelHandler:
        import onnx_ir as ir
        from onnx_ir.passes.common import ShapeInferencePass, TopologicalSortPass

        ir_model = model.load_ir_model()
        assignments = self._assignments(model, ir_model, config)
        TopologicalSortPass()(ir_model)
        try:
            ShapeInferencePass()(ir_model)
        except Exception as exc:  # only the types of values that cross splits are needed, checked below
            logger.debug("SplitModel: shape inference failed (%s)", exc)
        graphs = split_graph(ir_model.graph, assignments)
        folder = Path(output_model_path).with_suffix("")
        components, names = [], []
        with output_guard(folder):
            folder.mkdir(parents=True, exist_ok=True)
            for index, graph in enumerate(graphs):
                if len(graph) == 0:
                    logger.info("SplitModel: split %d has no nodes; skipped", index)
                    continue
                missing = [v.name for v in [*graph.inputs, *graph.outputs] if v.type is None]
                if missing:
                    raise PassRunError(
                        f"split {index} of '{model.model_path}' has inputs/outputs of unknown type "
                        f"({', '.join(missing)}) that shape inference could not find; "
                        "add value_info for them to the model",
                        owner=self.config_owner(),
                    )
                graph.opset_imports.update(ir_model.graph.opset_imports)
                part = ir.Model(
                    graph,
                    ir_version=ir_model.ir_version,
                    producer_name=ir_model.producer_name,
                    metadata_props=dict(ir_model.metadata_props),
                )
                TopologicalSortPass()(part)
                name = f"split_{index}"
                layout = {
                    **config.to_dict(),
                    "external_data_name": f"{name}_{config.external_data_name}" if config.external_data_name else None,
                }
                component = ir_model_to_olive_model(part, folder / f"{name}.onnx", layout)
                check_loads(component)
                components.append(component)
                names.append(name)
        if len(components) < 2:
            logger.warning("SplitModel: the split assignments put every node of '%s' in one split", model.model_path)
        attributes = {**(model.model_attributes or {}), ASSIGNMENTS_KEY: assignments}
        return CompositeModelHandler(components, names, model_path=folder, model_attributes=attributes)

    def _assignments(self, model: ONNXModelHandler, ir_model: ir.Model, config: BasePassConfig) -> dict[str, int]:
        if config.split_assignments is not None:
            return parse_assignments(config.split_assignments, "param 'split_assignments'")
        for where, value in (
            ("the model attribute split_assignments", (model.model_attributes or {}).get(ASSIGNMENTS_KEY)),
            ("the model's metadata split_assignments", ir_model.metadata_props.get(ASSIGNMENTS_KEY)),
        ):
            if value:
                try:
                    return parse_assignments(value, where)
                except ValueError as exc:
                    raise PassRunError(str(exc), owner=self.config_owner()) from None
        raise PassRunError(
            f"'{model.model_path}' carries no split assignments; run CaptureSplitInfo before SplitModel, or give "
            "split_assignments (e.g. 'model.layers.0=0;model.layers.1=1')",
            owner=self.config_owner(),
        )


def _assignment(node_name: str, assignments: Mapping[str, int]) -> int | None:
    """The split of the longest assigned module path the node's name starts with; a converter's wrapper may add
    leading components (``/model/model/layers.0/...`` for module ``model.layers.0``), so those are tried without
    them too."""
    if not node_name:
        return None
    parts = module_name(node_name).split(".")
    for start in range(len(parts)):
        for end in range(len(parts), start, -1):
            found = assignments.get(".".join(parts[start:end]))
            if found is not None:
                return found
    return None


def split_graph(graph: ir.Graph, assignments: Mapping[str, int]) -> list[ir.Graph]:
    """One graph per split index (in index order) of a topologically sorted ``graph``."""
    import onnx_ir as ir

    order = {index: position for position, index in enumerate(sorted(set(assignments.values())))}
    nodes = list(graph)
    placed: dict[Any, list[int]] = {}
    copied = set()  # Constant and DequantizeLinear: a copy in every split that reads them
    for node in nodes:
        if node.op_type == "Constant":
            copied.add(node)
            continue
        if node.op_type == "DequantizeLinear":
            copied.add(node)
        own = None if node.op_type in ("QuantizeLinear", "DequantizeLinear") else _assignment(node.name, assignments)
        parents = [max(placed[p]) for p in node.predecessors() if p in placed]
        if own is None and not parents:
            continue
        # A child never runs in an earlier split than its parents (a module may be listed before its input's).
        placed[node] = [max([*([order[own]] if own is not None else []), *parents])]
    for node in reversed(nodes):
        if node in placed or node.op_type == "Constant":
            continue
        children = [min(placed[c]) for c in node.successors() if c in placed]
        placed[node] = [min(children) if children else 0]
    for node in [n for n in reversed(nodes) if n in copied]:
        readers = sorted({s for c in node.successors() if c in placed for s in placed[c]})
        if readers:
            placed[node] = readers
        elif node not in placed:
            placed[node] = [0]  # a constant only a graph output reads
    graph_inputs, graph_outputs = set(graph.inputs), set(graph.outputs)
    parts = [ir.Graph([], [], nodes=[], name=graph.name) for _ in order]
    values: list[dict[str, ir.Value]] = [{} for _ in order]
    for node in nodes:
        for split in placed.get(node, []):
            part, known = parts[split], values[split]
            inputs = []
            for value in node.inputs:
                if value is None:
                    inputs.append(None)
                    continue
                if value.name not in known:
                    constant = value.const_value if value.is_initializer() else None
                    new = ir.Value(name=value.name, type=value.type, shape=value.shape, const_value=constant)
                    if value.is_initializer():
                        part.register_initializer(new)
                        if value in graph_inputs:
                            part.inputs.append(new)
                    else:
                        part.inputs.append(new)
                    known[value.name] = new
                inputs.append(known[value.name])
            twin = ir.Node(
                node.domain,
                node.op_type,
                inputs=inputs,
                attributes=list(node.attributes.values()),
                overload=node.overload,
                num_outputs=len(node.outputs),
                version=node.version,
                name=node.name,
            )
            part.append(twin)
            for old, new in zip(node.outputs, twin.outputs, strict=True):
                if not old.name:
                    continue
                new.name, new.type, new.shape = old.name, old.type, old.shape
                known[old.name] = new
                crosses = any(set(placed.get(use.node, [])) - set(placed[node]) for use in old.uses())
                if old in graph_outputs or crosses:
                    part.outputs.append(new)
    return parts
