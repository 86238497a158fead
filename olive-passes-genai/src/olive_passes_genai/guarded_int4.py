"""``OnnxGuardedInt4``: int4 weights everywhere except the MatMuls that cost the goal most, kept at 8 bits.

Fixed recipes (the builder's ``k_quant_mixed``, NNCF's ``ratio``) keep a set list of layers at 8 bits; this pass
keeps as few as a stated goal allows, measured on the user's text:

1. The text (``data_config``, the workflow's text data config, or ``data_path``: ``.txt`` one sample per line, or
   ``.jsonl``; :mod:`olive_passes_genai.text_windows`) is tokenized once and cut into windows of ``window`` tokens
   (at most ``max_windows``). Even windows rank, odd windows check the goal, so the ranking is not checked on
   the text it was made on. In a workflow whose metrics judge on the same data config the pass sees only its
   fitting part, and the workflow's figures are measured on text the pass never saw.
2. **Sensitivity**: each MatMul alone is quantized to int4 (k-quant, onnxruntime's ``KQuantWeightOnlyQuantConfig``)
   and scored by the mean next-token KL against the float model on the first ``rank_windows`` (2) fitting windows:
   one run of the model per MatMul, which is most of the pass's time; the goal below is checked on every judging
   window, so a coarser ranking can cost a keep more, never the goal.
3. **Keeps**: the most sensitive MatMuls are kept at 8 bits, one more at a time (smallest model first), until
   the goal holds on the held-out windows: ``top1_agreement`` with the float model ``>= goal_value`` (default
   0.98), or ``perplexity_ratio`` (the model's perplexity over the float model's) ``<= goal_value``.

The output is a :class:`GenAIModelHandler`; ``model_attributes["guarded_int4"]`` records the sensitivities, the
MatMuls kept, the goal and the held-out value reached (or by how much it was missed when even ``max_kept``
keeps do not reach it).
"""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from olive.exceptions import PassParamError
from olive.passes import Pass, PassConfigParam
from olive_passes_genai.genai_model import GenAIModelHandler
from olive_passes_genai.metrics import _Decoder, _log_softmax
from olive_passes_genai.text_windows import check_text_params, pass_samples, text_params, windows
from olive_passes_genai.weight_only import OnnxKQuantQuantization, _external_data_params, quantizable_matmuls

if TYPE_CHECKING:
    import numpy as np

    from olive.hardware.accelerator import AcceleratorSpec
    from olive.passes.pass_config import BasePassConfig

logger = logging.getLogger(__name__)

GOALS = ("top1_agreement", "perplexity_ratio")


class OnnxGuardedInt4(Pass):
    """int4 (k-quant) with the most goal-sensitive MatMuls kept at 8 bits until a goal holds on held-out text."""

    accepts_model_types: ClassVar[tuple[str, ...]] = ("GenAIModel",)

    @classmethod
    def _default_config(cls, accelerator_spec: AcceleratorSpec) -> dict[str, PassConfigParam]:
        return {
            **text_params(
                "Text to fit on (even windows rank the MatMuls, odd windows check the goal)",
                "Windows read from the text (half rank, half check).",
            ),
            "goal_metric": PassConfigParam(
                type_=str,
                default_value="top1_agreement",
                description=f"What must hold on the held-out windows: {' or '.join(GOALS)}.",
            ),
            "goal_value": PassConfigParam(
                type_=float | None,
                default_value=None,
                description="The goal: top1_agreement >= value (default 0.98) or perplexity_ratio <= value "
                "(default 1.02).",
            ),
            "block_size": PassConfigParam(type_=int, default_value=32, description="int4 block size along K."),
            "is_symmetric": PassConfigParam(type_=bool, default_value=True, description="Symmetric int4 blocks."),
            "accuracy_level": PassConfigParam(
                type_=int | None,
                # As the builder on the CPU: int8 compute, without which onnxruntime runs the 8-bit keeps on a
                # slow path (0.1x fp32 decode speed on the trained test decoder, against 0.8x at 4).
                default_value=4,
                description="MatMulNBits accuracy_level: 4 (int8 compute, the default), 1 fp32, 0 unset.",
            ),
            "rank_windows": PassConfigParam(
                type_=int | None,
                default_value=2,
                description="The MatMuls are ranked on this many of the fitting windows (None: all of them); the goal "
                "is checked on every judging window whatever this is. Ranking runs the model once per MatMul, so this "
                "sets most of the pass's time.",
            ),
            "max_kept": PassConfigParam(
                type_=float,
                default_value=0.5,
                description="At most this share of the MatMuls is kept at 8 bits.",
            ),
            **_external_data_params(),
        }

    @classmethod
    def _check_config(cls, config: BasePassConfig, accelerator_spec: AcceleratorSpec) -> None:
        if config.goal_metric not in GOALS:
            raise PassParamError(
                f"param 'goal_metric' is {config.goal_metric!r}; use one of {', '.join(GOALS)}", params="goal_metric"
            )
        if config.rank_windows is not None and config.rank_windows < 1:
            raise PassParamError(
                f"param 'rank_windows' is {config.rank_windows}; use 1 or more (or null: every fitting window)",
                params="rank_windows",
            )
        if not 0 <= config.max_kept <= 1:
            raise PassParamError(f"param 'max_kept' is {config.max_kept}; use a share from 0 to 1", params="max_kept")
        # one window to rank on, one to check the goal on
        check_text_params(config, min_windows=2)

    def _quantize(self, model: GenAIModelHandler, config: BasePassConfig, out: Path, **params: Any) -> Any:
        settings = {
            "bits": 4,
            "block_size": config.block_size,
            "is_symmetric": config.is_symmetric,
            "accuracy_level": config.accuracy_level,
            **params,
        }
        return OnnxKQuantQuantization(self.accelerator_spec, settings).run(model, str(out))

    def _run_for_config(
        self, model: GenAIModelHandler, config: BasePassConfig, output_model_path: str
    ) -> GenAIModelHandler:
        import numpy as np

        owner = self.config_owner()
        goal = config.goal_value
        if goal is None:
            goal = 0.98 if config.goal_metric == "top1_agreement" else 1.02
        float_model = _Decoder(model.folder)
        samples, source = pass_samples(config, owner)
        cut = windows(float_model.encode("\n".join(samples)), config.window, config.window, config.max_windows)
        fit, judge = cut[0::2], cut[1::2]
        if not judge:
            raise PassParamError(
                f"{owner}: {source} gives {len(cut)} window(s) of {config.window} tokens; give more text or a "
                "smaller window (one window ranks, the next checks the goal)",
                params="data_config" if config.data_config is not None else "data_path",
            )
        rank = fit if config.rank_windows is None else fit[: config.rank_windows]
        rank_ref = [_log_softmax(float_model.window_logits(w)).astype(np.float32) for w in rank]
        judge_ref = [_log_softmax(float_model.window_logits(w)).astype(np.float32) for w in judge]
        ref_nll = _nll(judge_ref, judge)
        targets = list(quantizable_matmuls(_graph(model)))
        scratch = Path(tempfile.mkdtemp(prefix="olive-guarded-int4-"))
        try:
            sensitivity = {}
            for scored, name in enumerate(targets):
                self.report_progress(scored, len(targets), "MatMuls scored")
                alone = self._quantize(
                    model, config, scratch / "alone", nodes_to_exclude=[n for n in targets if n != name]
                )
                sensitivity[name] = _mean_kl(_Decoder(alone.folder), rank, rank_ref)
                shutil.rmtree(scratch / "alone", ignore_errors=True)
            self.report_progress(len(targets), len(targets), "MatMuls scored")
            order = sorted(targets, key=lambda n: -sensitivity[n])
            limit = math.floor(config.max_kept * len(targets))
            reached, kept, value = None, [], float("nan")
            for count in range(limit + 1):
                kept = order[:count]
                trial = scratch / f"keep-{count}"
                candidate = self._quantize(
                    model, config, trial, customized_weight_config={n: {"bits": 8} for n in kept}
                )
                value = _goal_value(_Decoder(candidate.folder), judge, judge_ref, ref_nll, config.goal_metric)
                logger.info("%s: %d kept at 8 bits: %s %.4f (goal %s)", owner, count, config.goal_metric, value, goal)
                held = value >= goal if config.goal_metric == "top1_agreement" else value <= goal
                if held or count == limit:
                    reached = held
                    break
                shutil.rmtree(trial, ignore_errors=True)
            if not reached:
                miss = goal - value if config.goal_metric == "top1_agreement" else value - goal
                logger.warning(
                    "%s: the goal %s %s %s is missed by %.4f on held-out text with %d of %d MatMuls at 8 bits "
                    "(max_kept %.2f); the model with those keeps is returned",
                    owner,
                    config.goal_metric,
                    ">=" if config.goal_metric == "top1_agreement" else "<=",
                    goal,
                    miss,
                    len(kept),
                    len(targets),
                    config.max_kept,
                )
            output = Path(output_model_path)
            shutil.move(str(trial), str(output))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        result = GenAIModelHandler(str(output), model_attributes=model.model_attributes)
        result.model_attributes["guarded_int4"] = {
            "goal": {"metric": config.goal_metric, "value": goal, "held": bool(reached)},
            "held_out_value": value,
            "kept_at_8_bits": kept,
            "matmuls": len(targets),
            "sensitivity_kl": dict(sorted(sensitivity.items(), key=lambda kv: -kv[1])),
            "split": f"{len(rank)} of {len(fit)} even windows rank, {len(judge)} odd windows check the goal "
            f"({config.window} tokens "
            f"each, from {source})",
        }
        return result


def _graph(model: GenAIModelHandler) -> Any:
    from olive.passes.onnx.common import load_without_weights

    return load_without_weights(model)


def _mean_kl(decoder: _Decoder, windows: list[np.ndarray], references: list[np.ndarray]) -> float:
    import numpy as np

    total, count = 0.0, 0
    for tokens, log_q in zip(windows, references, strict=True):
        log_p = _log_softmax(decoder.window_logits(tokens))
        total += float((np.exp(log_q) * (log_q - log_p)).sum())
        count += len(tokens)
    return total / count


def _nll(log_probs: list[np.ndarray], windows: list[np.ndarray]) -> float:
    import numpy as np

    total, count = 0.0, 0
    for log_p, tokens in zip(log_probs, windows, strict=True):
        total -= float(log_p[np.arange(len(tokens) - 1), tokens[1:]].sum())
        count += len(tokens) - 1
    return total / count


def _goal_value(
    decoder: _Decoder, windows: list[np.ndarray], references: list[np.ndarray], ref_nll: float, metric: str
) -> float:
    import numpy as np

    log_probs = [_log_softmax(decoder.window_logits(w)) for w in windows]
    if metric == "perplexity_ratio":
        return math.exp(_nll(log_probs, windows) - ref_nll)
    same = sum(int((p.argmax(-1) == q.argmax(-1)).sum()) for p, q in zip(log_probs, references, strict=True))
    return same / sum(len(w) for w in windows) if windows else float(np.nan)
