"""``OnnxAccuracyGuardedQuantization``: int8 that keeps just enough nodes in float to meet an accuracy target.

Users rarely want "int8"; they want "as fast as possible while the outputs stay this close". This pass
quantizes every MatMul/Gemm/Attention with constant weights (per-channel int8 weights by default;
embeddings stay in float) and compares the outputs with the float model's on ``data_config``. While the
target is missed it keeps nodes in float, most sensitive first (see
:mod:`olive_passes_quant.sensitivity`), one at a time: a node stays in float only if that brings the
outputs closer to the target, and the search stops at the target or at ``max_fp32_nodes``.

Targets are agreement measures: ``cosine_mean`` and ``cosine_min`` (mean and worst-sample cosine of the
outputs) and ``max_abs_diff``; several can be required at once. For sentence embeddings compare the
mean-pooled output: ``"pooling": "mean", "mask_input": "attention_mask"``, or bring your own
``pooled_output_func`` from ``user_script``. Example::

    "quantize": {"type": "OnnxAccuracyGuardedQuantization", "data_config": "calib",
                 "target_metric": ["cosine_mean", "cosine_min"], "target_value": [0.99, 0.97],
                 "pooling": "mean", "mask_input": "attention_mask"}

When the target cannot be met within ``max_fp32_nodes``, the pass fails with an
:class:`AccuracyTargetNotMetError` saying the best it reached (``on_target_missed: "error"``, the
default), so a search records that point as failed with the reason instead of offering a model that
misses the user's bar; ``on_target_missed: "best"`` returns the best model found with a warning. Either
way ``model_attributes["accuracy_guard"]`` holds ``target_met``, ``achieved``, ``fp32_nodes`` and every
step tried, and ``model_attributes["quantization_sensitivity"]`` the ranking used.

Sensitivities from an earlier :class:`~olive_passes_quant.sensitivity.OnnxSensitivityAnalysis` (same
settings) in the input model's attributes are reused instead of measured again.

The target is checked on ``data_config`` itself (up to ``max_samples`` samples); judge the result on data
the pass did not see, e.g. with an ``agreement`` metric and a goal in the workflow's evaluator. Dynamic
int8 takes each activation's range over a whole batch, so a sample's output depends on its batch-mates:
score at the batch size(s) the model serves with (``batch_size``, default 1; a list scores at each and keeps
the worst), the samples shuffled with a fixed seed and batched together as a server batches requests; with
``mask_input`` set, samples served at batch size 1 run at their real length (``trim_padding``), as a batch-1
embedding service runs them. Static int8 (``quant_mode: "static"``, calibrated activation ranges) gives each
sample the same output whatever its batch-mates.
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from olive.config_errors import param_in_range
from olive.exceptions import OliveError
from olive.passes import Pass, PassConfigParam
from olive.passes.onnx.common import get_external_data_config
from olive_passes_quant._agreement import parse_targets
from olive_passes_quant._guard_config import (
    agreement_params,
    check_common,
    quant_params,
    sample_params,
    sensitivity_params,
)
from olive_passes_quant._guard_data import scores_on_target, scoring_settings
from olive_passes_quant._types import OnTargetMissed
from olive_passes_quant.sensitivity import (
    ATTRIBUTE as SENSITIVITY_ATTRIBUTE,
)
from olive_passes_quant.sensitivity import (
    GuardContext,
    Ranker,
    measure_sensitivity,
    reuse_table,
    save_with_attributes,
)

if TYPE_CHECKING:
    from olive.hardware.accelerator import AcceleratorSpec
    from olive.model.handler import ONNXModelHandler
    from olive.passes.pass_config import BasePassConfig
    from olive_passes_quant._agreement import Target

logger = logging.getLogger(__name__)

ATTRIBUTE = "accuracy_guard"


class AccuracyTargetNotMetError(OliveError):
    """No int8 model within ``max_fp32_nodes`` float nodes meets the accuracy target; says the best reached."""


class OnnxAccuracyGuardedQuantization(Pass):
    """Int8 quantization that keeps the most sensitive nodes in float until an output-agreement target is met."""

    @classmethod
    def is_accelerator_agnostic(cls, accelerator_spec: AcceleratorSpec) -> bool:
        # Variants are scored on the target's provider (OpenVINO in bf16 agrees less than the CPU provider).
        return not scores_on_target(accelerator_spec)

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            **sample_params(),
            "target_metric": PassConfigParam(
                type_=str | list[str],
                default_value="cosine_mean",
                description=(
                    "Agreement measure(s) the target is on: cosine_mean, cosine_min (worst sample), max_abs_diff; "
                    "a list requires all of them."
                ),
            ),
            "target_value": PassConfigParam(
                type_=float | list[float],
                default_value=0.99,
                description="The value each target_metric must reach (at least for cosines, at most for max_abs_diff).",
            ),
            "max_fp32_nodes": PassConfigParam(
                type_=int,
                default_value=6,
                description="At most this many quantizable nodes are kept in float (each costs speed).",
            ),
            "on_target_missed": PassConfigParam(
                type_=OnTargetMissed,
                default_value=OnTargetMissed.ERROR,
                description=(
                    "'error' (fail with the best reached, so a search records why) or 'best' (return the closest "
                    "model with a warning)."
                ),
            ),
            **sensitivity_params(),
            **agreement_params(),
            **quant_params(accelerator_spec),
            **get_external_data_config(),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        check_common(config)
        parse_targets(config.target_metric, config.target_value)
        param_in_range(config, "max_fp32_nodes", minimum=0)

    def _run_for_config(
        self, model: ONNXModelHandler, config: BasePassConfig, output_model_path: str
    ) -> ONNXModelHandler:
        from olive_passes_quant._agreement import rounded

        owner = self.config_owner()
        targets = parse_targets(config.target_metric, config.target_value, owner)
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="olive-guarded-int8-") as scratch:
            ctx = GuardContext(owner, model, config, Path(scratch), scoring_settings(self.accelerator_spec))
            search = _GreedySearch(ctx, targets)
            if not search.met(search.measured) and config.max_fp32_nodes > 0:
                search.run(config, model.model_attributes.get(SENSITIVITY_ATTRIBUTE))
            target_met = search.met(search.measured)
            wanted = " and ".join(t.describe() for t in targets)
            added, full, measured = search.added, ctx.full_agreement, search.measured
            if not target_met:
                message = (
                    f"{owner}: the accuracy target ({wanted}) cannot be met with at most {config.max_fp32_nodes} float "
                    f"node(s): plain int8 gives {_show(full)}; the best found, with {len(added)} node(s) in float "
                    f"({', '.join(added) or 'none'}), gives {_show(measured)} (on {ctx.evalset.num_samples} "
                    "samples). Raise max_fp32_nodes, loosen target_value, or set on_target_missed to 'best' to keep "
                    "that model anyway"
                )
                if config.on_target_missed == "error":
                    raise AccuracyTargetNotMetError(message)
                logger.warning("%s; returning the best model found", message)
            else:
                logger.info(
                    "%s: %s met with %d node(s) in float (%s): %s",
                    owner,
                    wanted,
                    len(added),
                    ", ".join(added) or "none",
                    _show(measured),
                )
            proto = ctx.variants.full(sorted(search.float_nodes), Path(scratch) / "final.onnx")
            guard = {
                "target_met": target_met,
                "targets": [{"metric": t.metric, "value": t.value} for t in targets],
                "achieved": rounded(measured),
                "fully_quantized": rounded(full),
                "fp32_nodes": added,
                "always_fp32": list(ctx.base_float),
                "candidates": len(ctx.candidates),
                "ranking": search.ranking,
                "steps": search.steps,
                "num_samples": ctx.evalset.num_samples,
                "quant_mode": str(config.quant_mode),
                **({"batch_sizes": ctx.evalset.batch_sizes} if ctx.evalset.batch_sizes else {}),
                "quantizations": ctx.variants.quantizations,
                "variants_scored": ctx.variants.variants_scored,
                "seconds": round(time.perf_counter() - start, 3),
            }
            attributes: dict[str, Any] = {ATTRIBUTE: guard}
            if search.table is not None:
                attributes[SENSITIVITY_ATTRIBUTE] = search.table
            return save_with_attributes(proto, model, output_model_path, config, attributes)


class _GreedySearch:
    """Keeps nodes in float, most sensitive first, while that brings the outputs closer to the targets."""

    def __init__(self, ctx: GuardContext, targets: list[Target]):
        self.ctx = ctx
        self.targets = targets
        self.float_nodes = set(ctx.base_float)
        self.measured = ctx.full_agreement
        self.added: list[str] = []
        self.steps: list[dict[str, Any]] = []
        self.table: dict[str, Any] | None = None
        self.ranking = "not needed"

    def met(self, values: Mapping[str, float]) -> bool:
        return all(t.met(values) for t in self.targets)

    def run(self, config: BasePassConfig, earlier_table: Any) -> None:
        from olive_passes_quant._agreement import rounded, total_shortfall

        ctx, variants = self.ctx, self.ctx.variants
        ranker = Ranker(self.targets[0].metric, self.targets)
        order = reuse_table(earlier_table, variants.settings, ctx.candidates, ranker, ctx.base_float)
        gains: dict[str, float] = {}
        if order is not None:
            self.ranking = "reused from the input model's quantization_sensitivity"
        else:
            method = config.sensitivity_method
            self.table = measure_sensitivity(
                variants, ctx.candidates, method, ranker, ctx.base_float, config.verify_top_k
            )
            order = [n["node"] for n in self.table["nodes"]]
            if method != "quantize_one":
                gains = {n["node"]: max(n["score"], n["metric_gain"]) for n in self.table["nodes"] if n["exact"]}
            self.ranking = f"measured ({method})"
        for node in order:
            if self.met(self.measured) or len(self.added) >= config.max_fp32_nodes:
                break
            if gains.get(node, 1.0) <= 0:
                # Kept in float alone, this node did not help; with others it will not either, as a rule.
                continue
            trial = variants.excluding(self.float_nodes | {node})
            better = total_shortfall(self.targets, trial) < total_shortfall(self.targets, self.measured) - 1e-12
            self.steps.append({"node": node, "agreement": rounded(trial), "kept_in_float": better})
            if better:
                self.float_nodes.add(node)
                self.added.append(node)
                self.measured = trial


def _show(values: Mapping[str, float]) -> str:
    return ", ".join(f"{k} {v:.4f}" if k.startswith("cosine") else f"{k} {v:.4g}" for k, v in values.items())
