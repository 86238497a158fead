"""Int8 variants of one model that differ only in which nodes stay in float.

``Int8Variants`` scores variants of one float model (every candidate in int8 except a chosen set, or
only one candidate in int8) against the float model on one fixed
:class:`~olive_passes_quant._guard_data.EvalSet`, remembering each score so that no set of float nodes is
scored twice. Dynamic variants are derived from one quantizer run by graph edits
(:func:`restore_float_nodes`); static ones are quantized for real into a scratch folder and deleted
once scored.
"""

from __future__ import annotations

import inspect
import logging
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import OliveError
from olive.logs import onnxruntime_logs
from olive.passes.onnx.common import copy_external_data, load_without_weights

if TYPE_CHECKING:
    import onnx

    from olive_passes_quant._guard_data import EvalSet

logger = logging.getLogger(__name__)

#: Op types quantized by default: the weight-heavy ones. Embedding lookups (Gather,
#: EmbedLayerNormalization) are left out on purpose: int8 tables save memory but not time, and on
#: all-MiniLM-L6-v2 keeping them in float lifts the worst sentence's cosine from 0.957 to 0.971.
DEFAULT_OP_TYPES = ("MatMul", "Gemm", "Attention")
EMBEDDING_OP_TYPES = ("Gather", "EmbedLayerNormalization")

# Where each op type keeps the weight whose quantization makes it a candidate.
_WEIGHT_INPUT = {"Gather": 0, "EmbedLayerNormalization": 2}


class QuantSettings:
    """What every variant shares: mode, weight/activation types, op types and extra options."""

    def __init__(
        self,
        mode: str = "dynamic",
        per_channel: bool = True,
        reduce_range: bool = False,
        precision: str = "int8",
        op_types: Sequence[str] = DEFAULT_OP_TYPES,
        extra_options: dict[str, Any] | None = None,
        calibration_batches: list[dict[str, Any]] | None = None,
    ):
        self.mode = mode
        self.per_channel = per_channel
        self.reduce_range = reduce_range
        self.precision = precision
        self.op_types = list(op_types)
        self.extra_options = dict(extra_options or {})
        self.calibration_batches = calibration_batches

    def to_json(self) -> dict[str, Any]:
        return {
            "quant_mode": self.mode,
            "per_channel": self.per_channel,
            "reduce_range": self.reduce_range,
            "precision": self.precision,
            "op_types_to_quantize": sorted(self.op_types),
        }


def candidate_nodes(proto: onnx.ModelProto, op_types: Iterable[str]) -> list[tuple[str, str]]:
    """``(name, op_type)`` of nodes of ``op_types`` whose weight is a constant, in graph order."""
    wanted = set(op_types)
    constants = {init.name for init in proto.graph.initializer}
    constants |= {n.output[0] for n in proto.graph.node if n.op_type == "Constant" and n.output}
    found = []
    for node in proto.graph.node:
        if node.op_type not in wanted:
            continue
        index = _WEIGHT_INPUT.get(node.op_type, 1)
        if len(node.input) > index and node.input[index] in constants:
            found.append((node.name, node.op_type))
    return found


def name_unnamed_nodes(proto: onnx.ModelProto) -> bool:
    """Give every unnamed node a unique name (nodes are excluded by name); True when any changed."""
    taken = {n.name for n in proto.graph.node if n.name}
    changed = False
    for index, node in enumerate(proto.graph.node):
        if not node.name:
            name = f"{node.op_type}_{index}"
            while name in taken:
                name += "_"
            node.name = name
            taken.add(name)
            changed = True
    return changed


def float_nodes_left(quantized: onnx.ModelProto, original: onnx.ModelProto, candidates: Sequence[str]) -> set[str]:
    """Which candidates the quantizer left in float (unsupported shapes, types or weights).

    Quantizers keep each node's output name; a candidate whose output still comes from an unchanged copy
    of the node (same op type, same inputs) was left alone.
    """
    originals = {n.name: n for n in original.graph.node}
    producers = {out: n for n in quantized.graph.node for out in n.output if out}
    left = set()
    for name in candidates:
        node = originals[name]
        now = producers.get(node.output[0])
        if now is not None and now.op_type == node.op_type and list(now.input) == list(node.input):
            left.add(name)
    return left


class _ListReader:
    """Calibration batches already in memory, as onnxruntime's CalibrationDataReader."""

    def __init__(self, batches: list[dict[str, Any]]):
        self.batches = batches
        self.index = 0

    def get_next(self) -> dict[str, Any] | None:
        if self.index >= len(self.batches):
            return None
        self.index += 1
        return self.batches[self.index - 1]

    def rewind(self) -> None:
        self.index = 0


def quantize(
    model_path: str | Path,
    output_path: str | Path,
    settings: QuantSettings,
    nodes_to_exclude: Iterable[str] = (),
    nodes_to_quantize: Iterable[str] | None = None,
    scratch: Path | None = None,
) -> None:
    """Write the int8 model of ``model_path`` with ``settings`` to ``output_path``."""
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    weight_type = QuantType.QInt8 if settings.precision == "int8" else QuantType.QUInt8
    # Fused graphs carry contrib ops without type information; without a default type the quantizer fails.
    extra = {"DefaultTensorType": onnx.TensorProto.FLOAT, **settings.extra_options}
    kwargs: dict[str, Any] = {
        "op_types_to_quantize": settings.op_types,
        "per_channel": settings.per_channel,
        "reduce_range": settings.reduce_range,
        "weight_type": weight_type,
        "nodes_to_exclude": sorted(nodes_to_exclude),
        "nodes_to_quantize": sorted(nodes_to_quantize) if nodes_to_quantize is not None else None,
        "extra_options": extra,
    }
    try:
        with onnxruntime_logs(logger):
            if settings.mode == "dynamic":
                quantize_dynamic(str(model_path), str(output_path), **kwargs)
            else:
                reader = type("_Reader", (_ListReader, CalibrationDataReader), {})(settings.calibration_batches or [])
                if scratch is not None and "calibration_cache_path" in inspect.signature(quantize_static).parameters:
                    # Ranges of the float model do not depend on which nodes are excluded: calibrate once.
                    kwargs["calibration_cache_path"] = str(scratch / "calibration_ranges.json")
                quantize_static(
                    str(model_path),
                    str(output_path),
                    reader,
                    quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8 if settings.precision == "int8" else QuantType.QUInt8,
                    **kwargs,
                )
    except OliveError:
        raise
    except Exception as exc:
        raise OliveError(
            f"onnxruntime's {settings.mode} quantizer failed on '{model_path}' ({type(exc).__name__}: {exc})"
        ) from exc


class Int8Variants:
    """Scores int8 variants of one float model; each distinct set of float nodes is scored once.

    :meth:`start` quantizes every candidate once. In dynamic mode later variants are derived from that
    model by putting the chosen nodes' float originals back (:func:`restore_float_nodes`) instead of
    running the quantizer again: per-channel weight quantization is most of a quantizer run, and it is
    the same for every variant. The first derived variant is checked against a real quantizer run; if
    they ever disagree, every later variant is quantized for real. Static variants are always
    quantized for real (their activation ranges are calibrated once and cached).
    """

    def __init__(self, model_path: str | Path, settings: QuantSettings, evalset: EvalSet, scratch: Path):
        self.model_path = Path(model_path)
        self.settings = settings
        self.evalset = evalset
        self.scratch = scratch
        self.scores: dict[tuple[str, frozenset[str]], dict[str, float]] = {}
        #: quantizer runs (variants derived by graph edits need none)
        self.quantizations = 0
        self.derive = settings.mode == "dynamic"
        self._checked = False
        self._base: frozenset[str] = frozenset()
        self._candidates: frozenset[str] = frozenset()
        self._int8: onnx.ModelProto | None = None
        self._float: onnx.ModelProto | None = None

    def start(self, base_float: Iterable[str], candidates: Iterable[str], path: Path) -> onnx.ModelProto:
        """Quantize every candidate except ``base_float`` into ``path``, score it, and return the proto."""

        self._base = frozenset(base_float)
        self._candidates = frozenset(candidates)
        self._int8 = self.full(self._base, path)
        self.scores[("exclude", self._base)] = self.evalset.score(path, "the fully quantized model")
        if self.derive:
            # The float graph; only the weights of the nodes a variant puts back are read (see _derived).
            self._float = load_without_weights(self.model_path)
            # Nodes with subgraphs read outer names the pruning below cannot see; derive nothing then.
            has_subgraphs = any(a.type in (a.GRAPH, a.GRAPHS) for n in self._float.graph.node for a in n.attribute)
            self.derive = not has_subgraphs and self._int8.ByteSize() < 2**31 - 1
        return self._int8

    @property
    def variants_scored(self) -> int:
        return len(self.scores)

    def set_candidates(self, candidates: Iterable[str]) -> None:
        self._candidates = frozenset(candidates)

    def excluding(self, float_nodes: Iterable[str]) -> dict[str, float]:
        """Agreement of the model with every candidate quantized except ``float_nodes``."""
        nodes = frozenset(float_nodes)
        key = ("exclude", nodes)
        if key not in self.scores:
            if self.derive and nodes >= self._base:
                self.scores[key] = self._derived(nodes - self._base, {"nodes_to_exclude": nodes})
            else:
                self.scores[key] = self._quantized(nodes_to_exclude=nodes)
        return self.scores[key]

    def only(self, node: str) -> dict[str, float]:
        """Agreement of the model with only ``node`` quantized."""
        key = ("only", frozenset([node]))
        if key not in self.scores:
            if self.derive:
                self.scores[key] = self._derived(self._candidates - {node}, {"nodes_to_quantize": [node]})
            else:
                self.scores[key] = self._quantized(nodes_to_quantize=[node])
        return self.scores[key]

    def full(self, float_nodes: Iterable[str], path: Path) -> onnx.ModelProto:
        """Quantize with ``float_nodes`` excluded into ``path`` and return the proto (kept on disk)."""
        import onnx

        quantize(self.model_path, path, self.settings, nodes_to_exclude=float_nodes, scratch=self.scratch)
        self.quantizations += 1
        return onnx.load(str(path))

    def _derived(self, restore: frozenset[str], quantizer_args: dict[str, Any]) -> dict[str, float]:
        assert self._int8 is not None and self._float is not None
        proto = restore_float_nodes(self._int8, self._float, restore)
        _load_weights(proto, self.model_path.parent)
        derived = self.evalset.score(proto.SerializeToString(), "an int8 variant")
        if not self._checked:
            self._checked = True
            real = self._quantized(**quantizer_args)
            if not all(abs(derived[k] - real[k]) <= 1e-6 * max(1.0, abs(real[k])) for k in real):
                logger.info("int8 variants derived by graph edits differ from the quantizer's; quantizing each one")
                self.derive = False
                return real
        return derived

    def _quantized(self, **quantizer_args: Any) -> dict[str, float]:
        path = self.scratch / f"variant_{self.quantizations}.onnx"
        quantize(self.model_path, path, self.settings, scratch=self.scratch, **quantizer_args)
        self.quantizations += 1
        try:
            return self.evalset.score(path, f"the int8 variant {path.name}")
        finally:
            path.unlink(missing_ok=True)
            Path(f"{path}.data").unlink(missing_ok=True)


def _load_weights(proto: onnx.ModelProto, folder: Path) -> None:
    """Read into ``proto`` the data of its initializers still in files of ``folder`` (the float weights a
    variant put back), so the model runs from its bytes."""
    import onnx
    from onnx.external_data_helper import load_external_data_for_tensor, uses_external_data

    for tensor in proto.graph.initializer:
        if uses_external_data(tensor):
            load_external_data_for_tensor(tensor, str(folder))
            tensor.data_location = onnx.TensorProto.DEFAULT
            del tensor.external_data[:]


def restore_float_nodes(quantized: onnx.ModelProto, original: onnx.ModelProto, names: Iterable[str]) -> onnx.ModelProto:
    """``quantized`` with the float originals of nodes ``names`` put back; what they alone used is dropped.

    Quantizers keep each node's output name, so the node that now makes it is swapped for the original
    (same place in the graph, so the order stays topological), then nodes whose outputs nobody reads and
    initializers nobody uses are removed, and float weights the originals need are copied back.
    """
    import onnx

    originals = {n.name: n for n in original.graph.node}
    model = onnx.ModelProto()
    model.CopyFrom(quantized)
    graph = model.graph
    nodes = list(graph.node)
    producer = {out: i for i, node in enumerate(nodes) for out in node.output if out}
    for name in names:
        node = originals[name]
        nodes[producer[node.output[0]]] = node
    needed = {o.name for o in graph.output}
    while True:
        read = needed | {i for node in nodes for i in node.input}
        kept = [node for node in nodes if any(o in read for o in node.output if o)]
        if len(kept) == len(nodes):
            break
        nodes = kept
    used = {i for node in nodes for i in node.input}
    present = {init.name for init in graph.initializer}
    initializers = [init for init in graph.initializer if init.name in used]
    initializers += [init for init in original.graph.initializer if init.name in used and init.name not in present]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    return model


def local_errors(
    model_path: str | Path, nodes: Sequence[str], feeds: dict[str, Any], settings: QuantSettings, scratch: Path
) -> dict[str, float]:
    """A cheap sensitivity proxy: each node's own relative output error under simulated int8, on one batch.

    The float model runs once with every candidate's input exposed as an extra output; then, in numpy,
    each MatMul/Gemm input is quantized the way dynamic quantization does (uint8, one scale per tensor,
    range from the batch) and its weight per output channel (or per tensor) to int8, and the error of
    that node's product relative to the float product is its score. It ignores how errors grow or shrink
    through the rest of the graph, so it pre-ranks; the top of the ranking is then measured exactly.
    """
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from olive.measure import create_session
    from olive_passes_quant._guard_data import QUIET

    # The graph alone (large weights stay in their files, as past protobuf's 2 GB limit they must): the probe
    # is saved beside a kernel copy of the data files, and each weight is read when its node is scored.
    proto = load_without_weights(model_path)
    weights_dir = str(Path(model_path).parent)
    weights = {init.name: init for init in proto.graph.initializer}
    by_name = {n.name: n for n in proto.graph.node}
    usable = [
        n
        for n in nodes
        if by_name[n].op_type in ("MatMul", "Gemm")
        and by_name[n].input[1] in weights
        and not _has_transpose(by_name[n])
    ]
    existing = {o.name for o in proto.graph.output}
    for name in usable:
        tensor = by_name[name].input[0]
        if tensor not in existing:
            proto.graph.output.append(onnx.ValueInfoProto(name=tensor))
            existing.add(tensor)
    with tempfile.TemporaryDirectory(prefix="probe-", dir=scratch) as folder:
        probe = Path(folder) / "activation_probe.onnx"
        copy_external_data(model_path, folder)
        onnx.save_model(proto, str(probe))
        sess = create_session(probe, QUIET, what="the activation probe")
        names = [o.name for o in sess.get_outputs()]
        values = dict(zip(names, sess.run(None, feeds), strict=True))
        del sess
    errors = {}
    for name in usable:
        node = by_name[name]
        x = values[node.input[0]].astype(np.float64)
        w = numpy_helper.to_array(weights[node.input[1]], weights_dir).astype(np.float64)
        x2 = x.reshape(-1, x.shape[-1])
        exact = x2 @ w
        approx = _fake_quant_activation(x2) @ _fake_quant_weight(w, settings.per_channel, settings.reduce_range)
        errors[name] = float(np.linalg.norm(approx - exact) / max(np.linalg.norm(exact), 1e-12))
    return errors


def _has_transpose(node: Any) -> bool:
    return any(a.name in ("transA", "transB") and a.i for a in node.attribute)


def _fake_quant_activation(x: Any) -> Any:
    import numpy as np

    low, high = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    scale = (high - low) / 255.0 or 1.0
    zero = np.round(-low / scale)
    return (np.clip(np.round(x / scale) + zero, 0, 255) - zero) * scale


def _fake_quant_weight(w: Any, per_channel: bool, reduce_range: bool) -> Any:
    import numpy as np

    limit = 63.0 if reduce_range else 127.0
    peak = np.abs(w).max(axis=0, keepdims=True) if per_channel else np.abs(w).max()
    scale = np.where(peak > 0, peak / limit, 1.0)
    return np.clip(np.round(w / scale), -limit, limit) * scale
