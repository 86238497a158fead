"""What ``olive optimize`` says at the end: the chosen model against the input model, or why none was chosen.

Values come from the run's footprint: latency as the ratio of the candidate's median to the input model's, the
two timed in alternating rounds (``latency-ratio_p50``), size on disk, and agreement with the input model on
the data (``agreement-*``). A decoder's figures are against its float build: decode tokens/s as a paired ratio
(``speed-ratio_decode_tokens_per_s``), size, perplexity and next-token agreement on the judging text.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from olive.engine.results import Status
from olive.optimize.keep import GUARD_METRICS, Keep
from olive.report.table import change_words, spread_words

if TYPE_CHECKING:
    from olive.engine.footprint import FootprintNode
    from olive.engine.output import WorkflowOutput

__all__ = [
    "DECODE_RATIO_KEY",
    "RATIO_KEY",
    "SIZE_KEY",
    "adapter_lines",
    "adapter_usage",
    "closest_miss",
    "comparison_lines",
    "decoder_lines",
    "decoder_miss",
    "figures_by_batch_size",
    "fit_figures",
    "search_cut_short",
    "served_words",
]

RATIO_KEY = "latency-ratio_p50"
#: keeps on the worst sample, whose figure over n samples an unseen sample passes with probability 1 / (n + 1)
WORST_CASE = ("cosine_min", "max_abs_diff")
#: the name of the agreement metric ``olive optimize`` writes (its values are ``agreement-<keep metric>``)
AGREEMENT_METRIC = "agreement"
SIZE_KEY = "size-bytes"
_MIB = 1 << 20


def _agreement_key(keep: Keep) -> str:
    return f"{AGREEMENT_METRIC}-{keep.metric}"


def _number(value: float, metric: str) -> str:
    return f"{value:.4f}" if metric.startswith(("cosine", "top1")) else f"{value:.3g}"


def _size(value: float) -> str:
    # The run's table shows sizes in MiB (four significant digits): the summary says the same numbers.
    return f"{value / _MIB:.4g} MiB"


def _baseline(output: WorkflowOutput) -> FootprintNode | None:
    if output.reference_model_id is not None:
        return output.get_node(output.reference_model_id)
    return output.footprint[0] if output.footprint else None


def _chain(output: WorkflowOutput, node: FootprintNode) -> str:
    steps = " > ".join(n.pass_name or "" for n in output.lineage(node))
    target = (node.target or {}).get("label")
    where = f" on {target}" if target and node.target_of is not None else ""
    return (steps or "the input model") + where


def comparison_lines(output: WorkflowOutput, keeps: tuple[Keep, ...], synthetic: bool = False) -> list[str]:
    """The chosen model against the input model, one line per measure (``synthetic``: the agreement was measured
    on inputs made from the model's input specs, not on held-out samples)."""
    best, base = output.best, _baseline(output)
    if best is None or base is None:
        return []
    new, old = best.metric_values(), base.metric_values()
    converted = base.model_id != (output.footprint[0].model_id if output.footprint else None)
    against = "the input model as converted to ONNX" if converted else "the input model"
    lines = [f"chosen: {_chain(output, best)} (against {against})"]
    ratio = new.get(RATIO_KEY)
    if ratio is not None:
        # Only the paired ratio: the two models' own p50s were timed at different moments, under different load,
        # and side by side they can even contradict it.
        within = spread_words(best.to_json(), RATIO_KEY)
        text = f"latency: {ratio:.2f}x the input's median (the two timed in alternating rounds{within})"
        if ratio > 1.0:
            text += "; no candidate ran faster than the input model (keep it if speed is what you need)"
        lines.append(text)
    if output.tied_model_ids:
        # The ranking could not tell these apart from the winner: say that the order tried chose it.
        lines.append(
            f"tie: {len(output.tied_model_ids)} other candidate(s) measured the same within tolerance and timing "
            "noise; the first tried was chosen, so a rerun chooses it again"
        )
    if new.get(SIZE_KEY) is not None and old.get(SIZE_KEY):
        change = change_words(old[SIZE_KEY], new[SIZE_KEY], "MiB")
        lines.append(f"size: {_size(old[SIZE_KEY])} -> {_size(new[SIZE_KEY])}" + (f" ({change})" if change else ""))
    kept = []
    for keep in keeps:
        value = new.get(_agreement_key(keep))
        if value is not None:
            kept.append(f"{keep.metric} {_number(value, keep.metric)} (keep {keep.op} {keep.value!r})")
    if kept:
        count = best.samples.get(AGREEMENT_METRIC)
        kind = "synthetic" if synthetic else "held-out"
        on = f" on {count} {kind} sample(s)" if count else ""
        lines.append(f"agreement with the input{on}{served_words(best)}: " + ", ".join(kept))
        by_size = figures_by_batch_size(best, keeps)
        if by_size:
            lines.append(by_size)
        if count and not synthetic and any(k.metric in WORST_CASE for k in keeps):
            # Distribution-free: an unseen sample is the worst of count + 1 exchangeable ones with this chance.
            lines.append(
                f"a worst-sample figure over {count} samples: an unseen sample does worse about 1 time in "
                f"{count + 1} ({100 / (count + 1):.0f}%); more --data narrows that"
            )
    fit = fit_figures(best, keeps)
    if fit:
        lines.append(fit)
    return lines


def served_words(node: FootprintNode) -> str:
    """``, at batch size 32`` / ``, the worst over batch sizes 1 and 32``: where the agreement figures of ``node``
    were measured ("" when they were read at the data's own batches)."""
    served = (node.batch_sizes or {}).get(AGREEMENT_METRIC) or {}
    sizes = served.get("served") or []
    if not sizes:
        return ""
    smaller = _smaller(served, sizes)
    if len(sizes) == 1:
        return f", at batch size {sizes[0]}{smaller}"
    return f", the worst over batch sizes {' and '.join(str(s) for s in sizes)}{smaller}"


def _smaller(served: dict, sizes: list[int]) -> str:
    """`` (at 32: one batch of 16, all the samples)`` where there were fewer samples than a batch size."""
    notes = []
    for size in sizes:
        largest = (served.get("largest_batch") or {}).get(str(size))
        if isinstance(largest, int) and 0 < largest < size:
            notes.append(f"at {size}: one batch of {largest}, every sample")
    return f" ({'; '.join(notes)})" if notes else ""


def figures_by_batch_size(node: FootprintNode, keeps: tuple[Keep, ...]) -> str | None:
    """``by batch size: 1: cosine_min 0.9812, cosine_mean 0.9950; 32: ...``: each served size's own figures for
    the keeps (None when the agreement was measured at one size, or at the data's own batches)."""
    served = (node.batch_sizes or {}).get(AGREEMENT_METRIC) or {}
    by_size = served.get("by_batch_size") or {}
    if len(by_size) < 2:
        return None
    parts = []
    for size, figures in sorted(by_size.items(), key=lambda item: int(item[0])):
        if not isinstance(figures, dict):
            continue
        shown = [
            f"{k.metric} {_number(float(figures[k.metric]), k.metric)}"
            for k in keeps
            if isinstance(figures.get(k.metric), int | float)
        ]
        if shown:
            parts.append(f"{size}: {', '.join(shown)}")
    return f"by batch size: {'; '.join(parts)}" if parts else None


def fit_figures(node: FootprintNode, keeps: tuple[Keep, ...]) -> str | None:
    """What the accuracy guard measured on the samples it fit on, beside the held-out figures: the gap between
    the two is how much the fit flatters the model."""
    attributes = ((node.model_json or {}).get("config") or {}).get("model_attributes") or {}
    guard = attributes.get("accuracy_guard")
    if not isinstance(guard, dict) or not isinstance(guard.get("achieved"), dict):
        return None
    achieved = guard["achieved"]
    shown = [
        f"{k.metric} {_number(float(achieved[k.metric]), k.metric)}"
        for k in keeps
        if isinstance(achieved.get(k.metric), int | float) and not isinstance(achieved.get(k.metric), bool)
    ]
    if not shown:
        return None
    count = guard.get("num_samples")
    on = f" on the {count} sample(s) it fit on" if isinstance(count, int) and not isinstance(count, bool) else ""
    sizes = guard.get("batch_sizes")
    if isinstance(sizes, list) and sizes and all(isinstance(s, int) and not isinstance(s, bool) for s in sizes):
        on += f" at batch size{'s' if len(sizes) > 1 else ''} {' and '.join(str(s) for s in sizes)}"
    floats = guard.get("fp32_nodes")
    kept = f", {len(floats)} node(s) kept in float" if isinstance(floats, list) else ""
    return f"the guard's own check{on}: " + ", ".join(shown) + kept


def closest_miss(output: WorkflowOutput, keeps: tuple[Keep, ...], budget: float | None) -> str:
    """Why nothing was chosen, in one line with what to try: the candidate that came closest to the keeps,
    what it reached and at what latency."""
    candidates = [n for n in output.get_output_models() if n.metrics]
    if not candidates:
        return f"{output.reason or 'no model was produced'}"

    def shortfall(node: FootprintNode) -> float:
        values = node.metric_values()
        total = 0.0
        for keep in keeps:
            value = values.get(_agreement_key(keep))
            if value is None:
                return float("inf")
            gap = keep.threshold - value if keep.higher_is_better else value - keep.threshold
            total += max(gap, 0.0) / max(abs(keep.threshold), 1e-12)
        ratio = values.get(RATIO_KEY)
        if budget is not None and ratio is not None:
            total += max(ratio - budget, 0.0) / budget
        return total

    def keeps_all(node: FootprintNode) -> bool:
        values = node.metric_values()
        return all(_agreement_key(k) in values and k.met_by(values[_agreement_key(k)]) for k in keeps)

    kept = [n for n in candidates if keeps_all(n) and RATIO_KEY in n.metric_values()]
    if budget is not None and kept:
        # Agreement was never the problem: the budget was.
        fastest = min(kept, key=lambda n: n.metric_values()[RATIO_KEY])
        ratio = fastest.metric_values()[RATIO_KEY]
        return (
            f"{len(kept)} candidate(s) keep {' and '.join(str(k) for k in keeps)}, but none ran within {budget:g}x "
            f"the input's latency: the fastest of them ({_chain(output, fastest)}) ran at {ratio:.2f}x; raise "
            f"--latency-budget to {math.ceil(ratio * 100) / 100:g} or more, or leave it out for the fastest model "
            "that keeps them"
        )
    closest = min(candidates, key=shortfall)
    values = closest.metric_values()
    reached = ", ".join(
        f"{k.metric} {_number(values[_agreement_key(k)], k.metric)}" for k in keeps if _agreement_key(k) in values
    )
    ratio = values.get(RATIO_KEY)
    at = f" at {ratio:.2f}x the input's latency" if ratio is not None else ""
    wanted = " and ".join(str(k) for k in keeps) + (f" within {budget:g}x latency" if budget is not None else "")
    tries = ["loosen --keep"]
    if not any(k.metric in GUARD_METRICS for k in keeps):
        # top1 alone leaves the accuracy guard out: a keep it aims at brings it in.
        tries.append(
            "add --keep cosine_mean=0.99 to bring in the accuracy guard (it keeps the nodes whose outputs "
            "change most in float)"
        )
    if budget is not None:
        tries.append("raise --latency-budget")
    tries.append("give more representative --data" if any(k.metric == "cosine_min" for k in keeps) else "")
    tries.append("or try --precision fp16")
    advice = ", ".join(t for t in tries if t)
    count = closest.samples.get(AGREEMENT_METRIC)
    held = f" on {count} held-out sample(s)" if count else ""
    by_size = figures_by_batch_size(closest, keeps)
    each = f" ({by_size})" if by_size else ""
    return (
        f"no candidate keeps {wanted}: the closest ({_chain(output, closest)}) reached {reached or 'no agreement'}"
        f"{held}{served_words(closest)}{each}{at}; {advice}"
    )


def search_cut_short(output: WorkflowOutput, search_size: int, max_time: float | None) -> str | None:
    """The line saying ``--max-time`` ended the search before every candidate ran (None when all ran, or when
    no time limit was set: then points left out were pruned, which the run's table shows)."""
    if max_time is None or search_size <= 0:
        return None
    keys = [n.pass_key for n in output.footprint if n.pass_key]
    if not keys:
        ran = 0
    else:
        # A point of the search is a run of its last pass (one per target); pruned points never ran.
        last = keys[-1]
        ran = sum(1 for n in output.footprint if n.pass_key == last and n.status is not Status.PRUNED)
    pruned = sum(1 for n in output.footprint if n.status is Status.PRUNED)
    if ran + pruned >= search_size:
        return None
    return (
        f"--max-time {max_time:g} s stopped the search after {ran} of its {search_size} candidate(s); a larger "
        "--max-time runs the rest (finished runs come from the cache)"
    )


# --------------------------------------------------------------------------------------------- decoders
#: a decoder's figures (olive optimize's metric names; olive-passes-genai's metric types)
DECODE_RATIO_KEY = "speed-ratio_decode_tokens_per_s"
_GUARD_ATTRIBUTE = "guarded_int4"


def _decoder_key(keep_metric: str) -> str:
    return f"{keep_metric}-{keep_metric}"


def _decoder_value(metric: str, value: float) -> str:
    return f"{value:.4f}" if metric in ("top1_agreement", "next_token_kl") else f"{value:.4g}"


def decoder_lines(output: WorkflowOutput, keeps: tuple[Keep, ...], synthetic: bool = False) -> list[str]:
    """A decoder's chosen model against the float build: decode tokens/s as the paired ratio, size, perplexity and
    agreement on the judging text (or on random token ids, ``synthetic``), and what the int4 guard measured on the
    text it fit on."""
    best, base = output.best, _baseline(output)
    if best is None or base is None:
        return []
    new, old = best.metric_values(), base.metric_values()
    lines = [f"chosen: {_chain(output, best)} (against the float build, ModelBuilder fp32)"]
    ratio = new.get(DECODE_RATIO_KEY)
    if ratio is not None:
        text = f"decode: {ratio:.2f}x the float model's tokens/s (the two timed in alternating rounds)"
        if ratio < 1.0:
            text += "; slower than the float model here"
        lines.append(text)
    if new.get(SIZE_KEY) is not None and old.get(SIZE_KEY):
        change = change_words(old[SIZE_KEY], new[SIZE_KEY], "MiB")
        lines.append(f"size: {_size(old[SIZE_KEY])} -> {_size(new[SIZE_KEY])}" + (f" ({change})" if change else ""))
    on = (
        "on random token ids (no --data)"
        if synthetic
        else "on held-out text (the half of --data the guard did not fit on)"
    )
    kept = {k.metric: k for k in keeps}
    perplexity, float_perplexity = new.get(_decoder_key("perplexity")), old.get(_decoder_key("perplexity"))
    if perplexity is not None and float_perplexity:
        ratio_text = f"{perplexity / float_perplexity:.4f}x the float model's"
        text = f"perplexity: {float_perplexity:.4g} -> {perplexity:.4g} ({ratio_text}"
        keep = kept.get("perplexity")
        if keep is not None:
            text += f"; keep {keep.op} {keep.value!r}{'x' if keep.relative else ''}"
        lines.append(f"{text}) {on}")
    for metric in ("top1_agreement", "next_token_kl"):
        value = new.get(_decoder_key(metric))
        if value is None:
            continue
        keep = kept.get(metric)
        goal = f" (keep {keep.op} {keep.value!r})" if keep is not None else ""
        lines.append(f"{metric}: {_decoder_value(metric, value)}{goal} {on}")
    guard = _guard_facts(best)
    if guard is not None:
        lines.append(guard)
    return lines


def _guard_facts(node: FootprintNode) -> str | None:
    attributes = ((node.model_json or {}).get("config") or {}).get("model_attributes") or {}
    guard = attributes.get(_GUARD_ATTRIBUTE)
    if not isinstance(guard, dict):
        return None
    goal = guard.get("goal") or {}
    value, kept, total = guard.get("held_out_value"), guard.get("kept_at_8_bits"), guard.get("matmuls")
    if not isinstance(value, int | float) or not isinstance(kept, list):
        return None
    op = ">=" if goal.get("metric") == "top1_agreement" else "<="
    reached = "" if goal.get("held", True) else ", not reached with the most 8-bit MatMuls it may keep"
    adapters = guard.get("adapters") if isinstance(guard.get("adapters"), dict) else {}
    # The goal held with each adapter active too, each against the float model with it.
    each = "".join(
        f", with {name} active {facts['held_out_value']:.4f}"
        for name, facts in adapters.items()
        if isinstance(facts, dict) and isinstance(facts.get("held_out_value"), int | float)
    )
    return (
        f"the guard's own check on the text it fit on: {goal.get('metric')} {value:.4f}{each} (its goal {op} "
        f"{goal.get('value')}{reached}), {len(kept)} of {total} MatMuls kept at 8 bits"
    )


def decoder_miss(output: WorkflowOutput, keeps: tuple[Keep, ...]) -> str:
    """Why no decoder was chosen: the candidate closest to the keeps, what it reached, and what to try."""
    candidates = [n for n in output.get_output_models() if n.metrics]
    base = _baseline(output)
    if not candidates or base is None:
        return f"{output.reason or 'no model was produced'}"
    old = base.metric_values()

    def shortfall(node: FootprintNode) -> float:
        values, total = node.metric_values(), 0.0
        for keep in keeps:
            value = values.get(_decoder_key(keep.metric))
            if value is None:
                return float("inf")
            bound = keep.threshold * (old.get(_decoder_key(keep.metric)) or 1.0) if keep.relative else keep.threshold
            gap = bound - value if keep.higher_is_better else value - bound
            total += max(gap, 0.0) / max(abs(bound), 1e-12)
        return total

    closest = min(candidates, key=shortfall)
    values = closest.metric_values()
    reached = []
    for keep in keeps:
        value = values.get(_decoder_key(keep.metric))
        if value is None:
            continue
        if keep.relative and old.get(_decoder_key(keep.metric)):
            reached.append(f"{keep.metric} {value / old[_decoder_key(keep.metric)]:.4f}x the float model's")
        else:
            reached.append(f"{keep.metric} {_decoder_value(keep.metric, value)}")
    wanted = " and ".join(str(k) for k in keeps)
    return (
        f"no candidate keeps {wanted} on held-out text: the closest ({_chain(output, closest)}) reached "
        f"{', '.join(reached) or 'no figure'}; loosen --keep, give more --data (the guard fits on half of it), or "
        "try --precision int8"
    )


# --------------------------------------------------------------------------------------------- adapters
def _adapter_key(metric_type: str, adapter: str, sub_type: str) -> str:
    # olive.optimize.recipe.adapter_metric_name, then the sub type
    return f"{metric_type}@{adapter}-{sub_type}"


def adapter_lines(output: WorkflowOutput, adapters: tuple[str, ...], synthetic: bool = False) -> list[str]:
    """One line per adapter of the chosen decoder, with it active: perplexity against the float model's with it,
    top-1 agreement with PyTorch running the base with it merged, decode tokens/s against no adapter."""
    best, base = output.best, _baseline(output)
    if best is None or base is None:
        return []
    new, old = best.metric_values(), base.metric_values()
    on = "random token ids" if synthetic else "held-out text"
    lines = []
    for name in adapters:
        parts = []
        perplexity = new.get(_adapter_key("perplexity", name, "perplexity"))
        float_perplexity = old.get(_adapter_key("perplexity", name, "perplexity"))
        if perplexity is not None and float_perplexity:
            parts.append(
                f"perplexity {float_perplexity:.4g} -> {perplexity:.4g} "
                f"({perplexity / float_perplexity:.4f}x the float model's with it)"
            )
        top1 = new.get(_adapter_key("top1_agreement", name, "top1_agreement"))
        if top1 is not None:
            parts.append(f"top1_agreement {top1:.4f} with PyTorch with it merged")
        ratio = new.get(_adapter_key("speed", name, "ratio_decode_tokens_per_s"))
        if ratio is not None:
            parts.append(f"decode {ratio:.2f}x the tokens/s with no adapter (alternating rounds)")
        text = "; ".join(parts) if parts else "no figure (its metrics failed; see the run's log)"
        lines.append(f"{name}: {text}{f' on {on}' if parts else ''}")
    return lines


def adapter_usage(folder: Path, adapters: tuple[str, ...]) -> list[str]:
    """Where each adapter file is and the few lines of onnxruntime_genai that load them once and switch per
    request."""
    lines = []
    for name in adapters:
        path = folder / f"{name}.onnx_adapter"
        size = f" ({path.stat().st_size / 1024:.4g} KiB)" if path.is_file() else " (missing)"
        lines.append(f"Adapter:  {path}{size}")
    first = adapters[0] if adapters else "NAME"
    lines += [
        "Serve:    import onnxruntime_genai as og",
        f"          model = og.Model('{folder}'); adapters = og.Adapters(model)",
        *(f"          adapters.load('{folder / f'{n}.onnx_adapter'}', '{n}')" for n in adapters),
        "          generator = og.Generator(model, og.GeneratorParams(model))",
        f"          generator.set_active_adapter(adapters, '{first}')  # per request; none active: the base",
    ]
    return lines
