"""``OnnxGuardedInt4``: int4 weights everywhere except the MatMuls that cost the goal most, kept at 8 bits.

Fixed recipes (the builder's ``k_quant_mixed``, NNCF's ``ratio``) keep a set list of layers at 8 bits; this pass
keeps as few as a stated goal allows, measured on the user's text:

1. The text (``data_config``, the workflow's text data config, or ``data_path``: ``.txt`` one sample per line, or
   ``.jsonl``; :mod:`olive_passes_genai.text_windows`) is tokenized once and cut into windows of ``window`` tokens
   (at most ``max_windows``). Even windows rank, odd windows check the goal, so the ranking is not checked on
   the text it was made on. In a workflow whose metrics judge on the same data config the pass sees only its
   fitting part, and the workflow's figures are measured on text the pass never saw.
2. **Sensitivity**: each MatMul's weight is quantized alone to int4 (k-quant, onnxruntime's
   ``KQuantWeightOnlyQuantConfig``) and scored by the mean next-token KL against the float model on the first
   ``rank_windows`` (2) fitting windows, with that MatMul alone at int4. All of it runs in one onnxruntime session of
   the float model whose weights a run can replace (:class:`~olive_passes_quant.matmul_pieces.WeightSwapSession`):
   one forward run per MatMul, no model written or loaded per MatMul. Each weight is quantized once per bit width
   and every candidate below is assembled from those pieces (:mod:`olive_passes_quant.matmul_pieces`), so the pass
   quantizes the model about once.
3. **Keeps**: the most sensitive MatMuls are kept at 8 bits, fewest first, until the goal holds on the held-out
   windows: ``top1_agreement`` with the float model ``>= goal_value`` (default 0.98), or ``perplexity_ratio`` (the
   model's perplexity over the float model's) ``<= goal_value``. Plain int4 is checked first (one whole-model
   check); when it misses, 1, 2, 4... keeps, then the gap halved: a handful of checks whatever the number of
   MatMuls. The ranking is a proxy; the goal is always checked on the whole model, on every judging window.

**Adapters**: on a decoder with adapter inputs and files (``ExtractAdapters``' output), the goal must hold with each
adapter active too (``adapter_goals``, default true), against the float model with the same adapter active, on that
adapter's own text (``adapter_data_paths``: name -> ``.txt`` / ``.jsonl``, at most ``max_windows // 2`` windows,
none of which ranks) or, for an adapter given none, on the judging windows. The ranking is the base's: the adapter
inputs and their MatMuls stay float, and the base's MatMuls are what a server shares between adapters.

The output is a :class:`GenAIModelHandler`; ``model_attributes["guarded_int4"]`` records the sensitivities, the
MatMuls kept, the goal, each number of keeps tried with its held-out value, and the value reached (or by how much
it was missed when even ``max_kept`` keeps do not reach it), and under ``adapters`` each adapter's value, keeps
tried and text.
"""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from olive.engine.memory import release_freed_memory
from olive.exceptions import PassParamError
from olive.passes import Pass, PassConfigParam
from olive_passes_genai.genai_model import GenAIModelHandler
from olive_passes_genai.metrics import _Decoder, _log_softmax
from olive_passes_genai.prefill import prefill_feeds
from olive_passes_genai.text_windows import pass_samples, read_samples, windows
from olive_passes_quant.matmul_pieces import MatMulPieces, WeightSwapSession
from olive_passes_quant.text_params import check_text_params, text_params
from olive_passes_quant.weight_only import external_data_params

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
            "is_symmetric": PassConfigParam(
                type_=bool,
                default_value=False,
                description="No effect, kept for workflows that give it: k-quant fits an offset to every block, so "
                "its blocks always carry zero points.",
            ),
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
            "adapter_goals": PassConfigParam(
                type_=bool,
                default_value=True,
                description="On a model with adapter inputs and files (ExtractAdapters'), the goal must hold with each "
                "adapter active too, against the float model with it active.",
            ),
            "adapter_data_paths": PassConfigParam(
                type_=dict | None,
                default_value=None,
                description="Each adapter's own text to check its goal on, adapter name -> .txt (one sample per "
                "line) or .jsonl file; an adapter given none is checked on the judging windows.",
            ),
            **external_data_params(external=True),
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
        paths = config.adapter_data_paths
        if paths is not None and (
            not isinstance(paths, Mapping)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in paths.items())
        ):
            raise PassParamError(
                f"param 'adapter_data_paths' is {paths!r}; give adapter names and text files, like "
                '{"legal": "legal.txt"}',
                params="adapter_data_paths",
            )

    def _run_for_config(
        self, model: GenAIModelHandler, config: BasePassConfig, output_model_path: str
    ) -> GenAIModelHandler:
        import numpy as np

        owner = self.config_owner()
        if config.is_symmetric:
            logger.warning("%s: is_symmetric has no effect on k-quant, which fits an offset to every block", owner)
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
        judge_ref = [_log_softmax(float_model.window_logits(w)).astype(np.float32) for w in judge]
        ref_nll = _nll(judge_ref, judge)
        # What a check compares with: the float model's most likely tokens, and its NLL.
        base_check = _Check(judge, [q.argmax(-1) for q in judge_ref], ref_nll, "the judging windows")
        del judge_ref
        adapter_checks = self._adapter_checks(model, float_model, config, judge) if config.adapter_goals else {}
        del float_model  # its weights are not needed again: candidates are compared with the checks
        release_freed_memory()
        pieces = MatMulPieces(model, config.block_size, config.accuracy_level, owner)
        targets = list(pieces.targets)
        sensitivity = self._rank(pieces, prefill_feeds(model, rank, batch=True))
        release_freed_memory()  # the float session's weights, before candidates are loaded
        order = sorted(targets, key=lambda n: -sensitivity[n])
        limit = math.floor(config.max_kept * len(targets))
        # Candidates are whole models: beside the output, on the disk that takes it (not a /tmp in memory), and only
        # the one that may be returned is kept (the fewest keeps that held so far, or the capped one).
        scratch = Path(tempfile.mkdtemp(prefix=".guarded-int4-", dir=Path(output_model_path).parent))
        tried: dict[int, float] = {}
        adapter_tried: dict[str, dict[int, float]] = {name: {} for name in adapter_checks}
        best: list[int] = []

        def check(count: int) -> bool:
            kept = set(order[:count])
            folder = scratch / f"keep-{count}"
            candidate = pieces.assemble({n: 8 if n in kept else 4 for n in targets}, folder, config)
            decoder = _Decoder(candidate.folder)
            value = _goal_value(decoder, base_check, config.goal_metric)
            tried[count] = value
            for name, (file, adapter_check) in adapter_checks.items():
                active = decoder.with_adapter(name, candidate.folder / file)
                adapter_tried[name][count] = _goal_value(active, adapter_check, config.goal_metric)
            values = [value, *(adapter_tried[name][count] for name in adapter_checks)]
            with_adapters = "".join(f", with {name} {adapter_tried[name][count]:.4f}" for name in adapter_checks)
            logger.info(
                "%s: %d kept at 8 bits: %s %.4f%s (goal %s)",
                owner,
                count,
                config.goal_metric,
                value,
                with_adapters,
                goal,
            )
            meets = (lambda v: v >= goal) if config.goal_metric == "top1_agreement" else (lambda v: v <= goal)
            held = all(meets(v) for v in values)
            if held:
                for previous in best:
                    shutil.rmtree(scratch / f"keep-{previous}", ignore_errors=True)
                best[:] = [count]
            elif count != limit:
                shutil.rmtree(folder, ignore_errors=True)
            return held

        try:
            count, reached = _fewest_keeps(check, limit)
            value = tried[count]
            kept = order[:count]
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
            shutil.move(str(scratch / f"keep-{count}"), str(output))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        result = GenAIModelHandler(str(output), model_attributes=model.model_attributes)
        result.model_attributes["guarded_int4"] = {
            "goal": {"metric": config.goal_metric, "value": goal, "held": bool(reached)},
            "held_out_value": value,
            "kept_at_8_bits": kept,
            "matmuls": len(targets),
            "sensitivity": dict(sorted(sensitivity.items(), key=lambda kv: -kv[1])),
            "sensitivity_measure": "mean next-token KL against the float model on the ranking windows, the MatMul "
            "alone at int4",
            "keeps_tried": {str(c): v for c, v in sorted(tried.items())},
            "split": f"{len(rank)} of {len(fit)} even windows rank, {len(judge)} odd windows check the goal "
            f"({config.window} tokens "
            f"each, from {source})",
        }
        if adapter_checks:
            result.model_attributes["guarded_int4"]["adapters"] = {
                name: {
                    "held_out_value": adapter_tried[name][count],
                    "keeps_tried": {str(c): v for c, v in sorted(adapter_tried[name].items())},
                    "text": f"{len(check.windows)} window(s) of {check.source}",
                }
                for name, (_, check) in adapter_checks.items()
            }
        return result

    def _adapter_checks(
        self, model: GenAIModelHandler, float_model: _Decoder, config: BasePassConfig, judge: list[np.ndarray]
    ) -> dict[str, tuple[str, _Check]]:
        """Per adapter of the model: its file's name and what its goal is checked against (the float model with it
        active, on its own text or the judging windows)."""
        owner = self.config_owner()
        attributes = model.model_attributes or {}
        records = attributes.get("adapters") or {}
        files = {
            name: str(record["file"])
            for name, record in records.items()
            if isinstance(record, Mapping)
            and str(record.get("file", "")).endswith(".onnx_adapter")
            and (model.folder / str(record["file"])).is_file()
        }
        if not attributes.get("adapter_inputs"):
            files = {}
        paths = dict(config.adapter_data_paths or {})
        unknown = sorted(set(paths) - set(files))
        if unknown:
            raise PassParamError(
                f"{owner}: adapter_data_paths names {', '.join(unknown)}, which the model has no adapter file for "
                f"(its adapters: {', '.join(sorted(files)) or 'none'}); name one of those",
                params="adapter_data_paths",
            )
        checks = {}
        for name, file in files.items():
            active = float_model.with_adapter(name, model.folder / file)
            if name in paths:
                samples = read_samples(None, paths[name], f"{owner}: adapter '{name}'")
                cut = windows(
                    active.encode("\n".join(samples)), config.window, config.window, max(1, config.max_windows // 2)
                )
                source = f"'{paths[name]}'"
                if not cut:
                    raise PassParamError(
                        f"{owner}: adapter '{name}': '{paths[name]}' is under 2 tokens long; give more text",
                        params="adapter_data_paths",
                    )
            else:
                cut, source = judge, "the judging windows"
            references = [_log_softmax(active.window_logits(w)) for w in cut]
            checks[name] = (file, _Check(cut, [q.argmax(-1) for q in references], _nll(references, cut), source))
        return checks

    def _rank(self, pieces: MatMulPieces, feeds: list[dict[str, Any]]) -> dict[str, float]:
        """Each MatMul's mean next-token KL against the float model on the ranking windows with that MatMul alone at
        int4: one forward run per MatMul in one session of the float model (:class:`WeightSwapSession`)."""
        targets = list(pieces.targets)
        # Every int4 piece before the float session exists: k-quant's working memory and the session's weights are
        # never held at once.
        for done, name in enumerate(targets):
            self.report_progress(done, 2 * len(targets), "MatMuls quantized and scored")
            pieces.piece(name, 4)
        session = WeightSwapSession(pieces)
        references = [_log_softmax(session.logits(feed)) for feed in feeds]
        sensitivity = {}
        for scored, name in enumerate(targets):
            self.report_progress(len(targets) + scored, 2 * len(targets), "MatMuls quantized and scored")
            weight = {name: pieces.dequantized(name)}
            log_ps = [_log_softmax(session.logits(feed, weight)) for feed in feeds]
            sensitivity[name] = _mean_kl(references, log_ps)
        self.report_progress(2 * len(targets), 2 * len(targets), "MatMuls quantized and scored")
        del session
        return sensitivity


def _fewest_keeps(check: Callable[[int], bool], limit: int) -> tuple[int, bool]:
    """The fewest keeps (0..``limit``) for which ``check`` holds, as ``(count, held)``; ``(limit, False)`` when even
    ``limit`` misses. Plain int4 is tried first, then 1, 2, 4... keeps, then the gap between the last miss and the
    first hold is halved: a handful of whole-model checks, where trying each count in turn took one per keep. The
    goal is taken to hold more often with more keeps (the most sensitive MatMuls go first)."""
    if check(0):
        return 0, True
    missed, step = 0, 1
    while True:
        count = min(step, limit)
        if count <= missed:
            return limit, False
        if check(count):
            break
        missed, step = count, step * 2
    held = count
    while held - missed > 1:
        middle = (missed + held) // 2
        if check(middle):
            held = middle
        else:
            missed = middle
    return held, True


def _mean_kl(references: list[np.ndarray], log_probs: list[np.ndarray]) -> float:
    """Mean over tokens of KL(reference || model), from log-probabilities ``[tokens, vocab]`` per window."""
    import numpy as np

    total = sum(float((np.exp(q) * (q - p)).sum()) for q, p in zip(references, log_probs, strict=True))
    return total / sum(len(q) for q in references)


def _nll(log_probs: list[np.ndarray], windows: list[np.ndarray]) -> float:
    import numpy as np

    total, count = 0.0, 0
    for log_p, tokens in zip(log_probs, windows, strict=True):
        total -= float(log_p[np.arange(len(tokens) - 1), tokens[1:]].sum())
        count += len(tokens) - 1
    return total / count


class _Check(NamedTuple):
    """Windows a goal is checked on, with the float model's most likely next tokens and NLL on them."""

    windows: list[np.ndarray]
    top: list[np.ndarray]
    nll: float
    source: str


def _goal_value(decoder: _Decoder, check: _Check, metric: str) -> float:
    import numpy as np

    log_probs = [_log_softmax(decoder.window_logits(w)) for w in check.windows]
    if metric == "perplexity_ratio":
        return math.exp(_nll(log_probs, check.windows) - check.nll)
    same = sum(int((p.argmax(-1) == q).sum()) for p, q in zip(log_probs, check.top, strict=True))
    return same / sum(len(w) for w in check.windows) if check.windows else float(np.nan)
