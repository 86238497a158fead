"""``OnnxSensitivityAnalysis``: which nodes cost the most output agreement when quantized to int8.

The analysis quantizes the model once with every candidate node (MatMul, Gemm, Attention with constant
weights) in int8, then measures each node's effect on how closely the outputs agree with the float
model's on ``data_config``:

- ``exclude_one`` (default): the fully quantized model with only that node left in float. The gain over
  the fully quantized model is exactly what keeping that node in float buys, which is what
  :class:`~olive_passes_quant.accuracy_guarded.OnnxAccuracyGuardedQuantization` needs. One variant per
  node.
- ``quantize_one``: only that node in int8; its loss against the float model. Also one variant per node.
- ``local_error``: no quantization per node. The float model runs once with every candidate's input
  exposed; each node's own int8 error is computed in numpy (activation per tensor as dynamic
  quantization does, weights per channel). It misses how errors grow through the graph, so the top
  ``verify_top_k`` nodes are then measured exactly (``exclude_one``) and ranked first.

Every variant is scored on the same in-memory samples, served at ``batch_size`` (one size or a list: shuffled
with a fixed seed and batched together, the worst over the sizes; :func:`olive.measure.served_batches`), against
reference outputs computed once. In dynamic mode the quantizer runs once: each variant is derived from
the fully quantized model by putting the chosen float nodes back (checked once against a real quantizer
run), which saves the per-channel weight quantization that is most of a quantizer call; a variant then
costs one session and one pass over the samples.

Measured on a busy 2-core machine: the 2-layer test encoder (12 candidates, 16 samples) takes about
1 s. A 6-layer encoder with all-MiniLM-L6-v2's shapes (hidden 384, 36 candidates, 32 samples of 128
tokens) takes 80-90 s with ``exclude_one`` (about 2 s per node, mostly running the samples; 250 s when
every variant was quantized for real) and 6-12 s with ``local_error`` and ``verify_top_k: 4``. The proxy
found the planted node there too, but it can miss a node whose error grows downstream; it is for models
with hundreds of candidates.

The ranked table goes into the output model's ``model_attributes["quantization_sensitivity"]`` (and so
into the workflow's footprint); the model itself is unchanged.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.exceptions import OliveError, PassConfigError, PassParamError, closest_match_hint
from olive.measure import rebatch
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config
from olive_passes_quant._agreement import AGREEMENT_METRICS
from olive_passes_quant._guard_config import (
    agreement_params,
    check_common,
    op_types,
    quant_params,
    sample_params,
    sensitivity_params,
)
from olive_passes_quant._guard_data import scores_on_target, scoring_settings

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig
    from olive_passes_quant._agreement import Target
    from olive_passes_quant._guard_data import EvalSet
    from olive_passes_quant._int8_variants import Int8Variants, QuantSettings

logger = logging.getLogger(__name__)

ATTRIBUTE = "quantization_sensitivity"
PROXY_SAMPLES = 4


class Ranker:
    """Orders nodes by sensitivity: by the gain in ``metric``, or, given targets, by how much closer to them.

    Keys are ``(score, tie-break)``; a higher key is a more sensitive node.
    """

    def __init__(self, metric: str, targets: Sequence[Target] | None = None):
        from olive_passes_quant._agreement import AGREEMENT_METRICS

        self.metric = metric
        self.higher_is_better = AGREEMENT_METRICS[metric]
        self.targets = list(targets or [])

    def _gain(self, before: Mapping[str, float], after: Mapping[str, float]) -> float:
        delta = after[self.metric] - before[self.metric]
        return delta if self.higher_is_better else -delta

    def key(self, method: str, measured: Mapping[str, float], full: Mapping[str, float]) -> tuple[float, float]:
        from olive_passes_quant._agreement import total_shortfall

        if method == "quantize_one":
            perfect = {"cosine_mean": 1.0, "cosine_min": 1.0, "max_abs_diff": 0.0}
            primary = self._gain(measured, perfect)
            return (total_shortfall(self.targets, measured), primary) if self.targets else (primary, primary)
        primary = self._gain(full, measured)
        if self.targets:
            return total_shortfall(self.targets, full) - total_shortfall(self.targets, measured), primary
        return primary, primary


def measure_sensitivity(
    variants: Int8Variants,
    candidates: Sequence[tuple[str, str]],
    method: str,
    ranker: Ranker,
    float_nodes: Iterable[str] = (),
    verify_top_k: int | None = None,
    proxy_feeds: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Measure every candidate and return the ranked table (JSON-serializable)."""
    from olive_passes_quant._agreement import rounded
    from olive_passes_quant._int8_variants import local_errors

    start = time.perf_counter()
    base = frozenset(float_nodes)
    full = variants.excluding(base)
    op_of = dict(candidates)
    entries: dict[str, dict[str, Any]] = {}
    exact: list[str] = [name for name, _ in candidates]
    if method == "local_error":
        # A few samples give each activation's range well enough to pre-rank, at a fraction of the cost.
        feeds = proxy_feeds or rebatch(variants.evalset.batches, PROXY_SAMPLES)[0]
        errors = local_errors(variants.model_path, list(op_of), feeds, variants.settings, variants.scratch)
        for name in op_of:
            entries[name] = {"node": name, "op_type": op_of[name], "local_error": round(errors.get(name, 0.0), 6)}
        by_error = sorted(op_of, key=lambda n: -errors.get(n, 0.0))
        exact = by_error[: verify_top_k or 0]
    for name in exact:
        measured = variants.only(name) if method == "quantize_one" else variants.excluding(base | {name})
        key = ranker.key("quantize_one" if method == "quantize_one" else "exclude_one", measured, full)
        entries.setdefault(name, {"node": name, "op_type": op_of[name]})
        entries[name].update(
            {"score": round(key[0], 6), "metric_gain": round(key[1], 6), "agreement": rounded(measured)}
        )

    def order(name: str) -> tuple[int, float, float]:
        entry = entries[name]
        if "score" in entry:
            return (0, -entry["score"], -entry["metric_gain"])
        return (1, -entry.get("local_error", 0.0), 0.0)

    ranked = sorted(entries, key=order)
    nodes = []
    for rank, name in enumerate(ranked, start=1):
        entry = entries[name]
        nodes.append({"rank": rank, **entry, "exact": "agreement" in entry})
    return {
        "method": method,
        "metric": ranker.metric,
        "targets": [{"metric": t.metric, "value": t.value} for t in ranker.targets],
        "settings": variants.settings.to_json(),
        "float_nodes": sorted(base),
        "num_samples": variants.evalset.num_samples,
        "fully_quantized": rounded(full),
        "nodes": nodes,
        "quantizations": variants.quantizations,
        "variants_scored": variants.variants_scored,
        "seconds": round(time.perf_counter() - start, 3),
    }


def reuse_table(
    table: Any,
    settings: QuantSettings,
    candidates: Sequence[tuple[str, str]],
    ranker: Ranker,
    float_nodes: Iterable[str],
) -> list[str] | None:
    """The node order of an earlier exact table made with the same settings, re-ranked for ``ranker``; else None."""
    if not isinstance(table, Mapping) or table.get("method") not in ("exclude_one", "quantize_one", "local_error"):
        return None
    if table.get("settings") != settings.to_json() or sorted(table.get("float_nodes", [])) != sorted(float_nodes):
        return None
    known = {name for name, _ in candidates}
    if table["method"] == "local_error":
        # Proxy scores cannot be re-ranked for other targets; keep the table's order (verified nodes first).
        order = [n.get("node") for n in table.get("nodes", []) if isinstance(n, Mapping)]
        return order if order and all(name in known for name in order) else None
    nodes = [n for n in table.get("nodes", []) if isinstance(n, Mapping) and n.get("agreement")]
    if not nodes or any(n.get("node") not in known for n in nodes):
        return None
    try:
        full = table["fully_quantized"]
        keyed = [(ranker.key(table["method"], n["agreement"], full), n["node"]) for n in nodes]
    except (KeyError, TypeError):
        return None
    return [name for _, name in sorted(keyed, key=lambda item: (-item[0][0], -item[0][1]))]


class GuardContext:
    """What both passes set up: checked data, reference outputs, candidates and the variant scorer."""

    def __init__(
        self,
        owner: str,
        model: ONNXModelHandler,
        config: BasePassConfig,
        scratch: Path,
        session_settings: dict[str, Any] | None = None,
    ):
        import onnx

        from olive.measure import OutputVectors
        from olive_passes_quant._guard_data import EvalSet
        from olive_passes_quant._int8_variants import (
            Int8Variants,
            QuantSettings,
            candidate_nodes,
            float_nodes_left,
            name_unnamed_nodes,
        )

        self.owner = owner
        proto = model.load_model()
        model_path = Path(model.model_path)
        if name_unnamed_nodes(proto):
            # Nodes are kept in float by name; give the unnamed ones names in a working copy.
            model_path = scratch / "named.onnx"
            onnx.save(proto, str(model_path))
        #: the float model, every node named (what the sensitivity table's names refer to)
        self.proto = proto
        graph_nodes = [node.name for node in proto.graph.node]
        unknown = [name for name in config.nodes_to_exclude or [] if name not in set(graph_nodes)]
        if unknown:
            raise PassConfigError(
                f"{owner}: nodes_to_exclude names {', '.join(repr(n) for n in unknown)}, not in the model"
                f"{closest_match_hint(unknown[0], graph_nodes)}; use the node names of the input model"
            )
        chosen = op_types(config)
        self.candidates = [c for c in candidate_nodes(proto, chosen) if c[0] not in set(config.nodes_to_exclude or [])]
        if not self.candidates:
            raise OliveError(
                f"{owner}: the model has no {', '.join(chosen)} node with constant float weights, so there is "
                "nothing to quantize; set op_types_to_quantize to the op types it has, or drop this pass"
            )
        names = config.output_name
        vectors = OutputVectors(
            [names] if isinstance(names, str) else names, config.pooling, config.mask_input, config.pooled_output_func
        )
        self.evalset: EvalSet = EvalSet.load(
            config.data_config,
            model,
            vectors,
            config.max_samples,
            config.batch_size,
            owner,
            trim_padding=config.trim_padding,
            settings=session_settings,
        )
        settings = QuantSettings(
            mode=config.quant_mode,
            per_channel=config.per_channel,
            reduce_range=config.reduce_range,
            precision=config.precision,
            op_types=chosen,
            extra_options=config.extra_options,
            calibration_batches=self.evalset.batches if config.quant_mode == "static" else None,
        )
        self.base_float = sorted(config.nodes_to_exclude or [])
        self.variants: Int8Variants = Int8Variants(model_path, settings, self.evalset, scratch)
        # Drop candidates the quantizer leaves in float anyway (an op type it has no int8 form for in this mode):
        # measuring them would only cost time.
        probe = scratch / "all_int8.onnx"
        quantized = self.variants.start(self.base_float, [name for name, _ in self.candidates], probe)
        probe.unlink(missing_ok=True)
        left = float_nodes_left(quantized, proto, [name for name, _ in self.candidates])
        self.full_agreement = self.variants.excluding(self.base_float)
        self.candidates = [c for c in self.candidates if c[0] not in left]
        self.variants.set_candidates(name for name, _ in self.candidates)
        if not self.candidates:
            raise OliveError(
                f"{owner}: onnxruntime's {settings.mode} quantizer quantizes none of the {', '.join(chosen)} nodes of "
                "this model, so there is nothing to quantize; check op_types_to_quantize and quant_mode"
            )


def save_with_attributes(
    proto: Any, model: ONNXModelHandler, output_model_path: str, config: BasePassConfig, attributes: dict[str, Any]
) -> ONNXModelHandler:
    from olive.passes.onnx.common import model_proto_to_olive_model

    output = model_proto_to_olive_model(proto, output_model_path, config)
    output.inference_settings = dict(model.inference_settings) if model.inference_settings else None
    output.model_attributes = {**model.model_attributes, **attributes}
    return output


class OnnxSensitivityAnalysis(Pass):
    """Rank nodes by how much int8 quantizing them hurts output agreement; records the table, keeps the model."""

    @classmethod
    def is_accelerator_agnostic(cls, accelerator_spec: AcceleratorSpec) -> bool:
        # Variants are scored on the target's provider (OpenVINO in bf16 agrees less than the CPU provider).
        return not scores_on_target(accelerator_spec)

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            **sample_params(),
            "metric": PassConfigParam(
                type_=str,
                default_value="cosine_mean",
                description="The agreement measure nodes are ranked by: cosine_mean, cosine_min or max_abs_diff.",
            ),
            **sensitivity_params(),
            **agreement_params(),
            **quant_params(accelerator_spec),
            **get_external_data_config(),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        check_common(config)
        if config.metric not in AGREEMENT_METRICS:
            raise PassParamError(
                f"metric '{config.metric}' is unknown{closest_match_hint(str(config.metric), AGREEMENT_METRICS)}; "
                f"use {', '.join(AGREEMENT_METRICS)}",
                params="metric",
            )

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        owner = self.config_owner()
        with tempfile.TemporaryDirectory(prefix="olive-sensitivity-") as scratch:
            context = GuardContext(owner, model, config, Path(scratch), scoring_settings(self.accelerator_spec))
            table = measure_sensitivity(
                context.variants,
                context.candidates,
                config.sensitivity_method,
                Ranker(config.metric),
                float_nodes=context.base_float,
                verify_top_k=config.verify_top_k,
            )
        top = ", ".join(f"{n['node']} ({n.get('score', n.get('local_error'))})" for n in table["nodes"][:3])
        logger.info(
            "%s: %d nodes ranked in %.1f s; most sensitive: %s", owner, len(table["nodes"]), table["seconds"], top
        )
        return save_with_attributes(context.proto, model, output_model_path, config, {ATTRIBUTE: table})
