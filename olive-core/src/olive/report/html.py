"""``report.html``: one self-contained page per output folder.

It holds a Pareto chart of the first two objectives (inline SVG), a table of every candidate with its pass
chain, searched values, config and metrics, the input model (its type, and a Hugging Face model's task) and
the model the metrics compared with as the baseline row, every pass run (with the check that pass made of its
own output: a conversion's against its input model, an accuracy guard's on the samples it fit on), and the
distributions (with versions) whose passes ran. No script and nothing loaded from outside the file; every
string that came from a config, a model path or an error message is escaped.

Latency is given as the ranking uses it: a paired ratio (``latency-ratio_p50``), the candidate and the baseline
timed in alternating rounds. Each model's own figures (``latency-p50``) were timed apart, at other moments and
under other load, so they stand in columns of their own, labelled so, and never make a comparison. Long ids,
pass chains and configs wrap, so the page fits a 1280 px window.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping
from html import escape
from pathlib import Path
from typing import Any

from olive.evaluator.metric import RATIO_PREFIX
from olive.report.chart import Point, scatter_svg
from olive.report.data import (
    ACCURACY_GUARD,
    CONVERSION_CHECK,
    FIT_PREFIX,
    ReportData,
    conversion_check,
    goals_of,
    load_report_data,
    report_data_from_footprint,
    report_data_from_output,
)
from olive.report.table import change_words, is_paired_ratio, is_timed_apart, spread_words, unit_of

REPORT_FILE = "report.html"

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1200px;
       padding: 0 1rem; color: #1f2328; }
h1 { font-size: 1.5rem; margin-bottom: .2rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
.meta { color: #59636e; } .meta span { margin-right: 1.2rem; }
.summary { background: #f6f8fa; border: 1px solid #d1d9e0; border-radius: 6px; padding: .8rem 1rem; }
.summary.failed { background: #fff5f5; border-color: #f5b5b5; }
table { border-collapse: collapse; width: 100%; font-size: .88rem; }
th, td { border-bottom: 1px solid #d1d9e0; padding: .35rem .5rem; text-align: left; vertical-align: top; }
/* Long ids, pass names and params wrap inside their cell (at the <wbr>s the page puts between their parts),
   so the page never scrolls sideways. */
td, th { overflow-wrap: break-word; }
th { background: #f6f8fa; position: sticky; top: 0; font-weight: 600; }
th small, td small { font-weight: normal; color: #59636e; }
th.metric { text-align: right; }
/* A note as narrow as a number column, so that the pass chains get the room. */
th.metric small { display: block; max-width: 8rem; margin-left: auto; }
/* Many metric columns: smaller type, so that the numbers (which never wrap) still fit. */
table.many { font-size: .78rem; } table.many th, table.many td { padding: .3rem .3rem; }
th.apart, td.apart { background: #fbf8ef; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; overflow-wrap: normal; }
td.num .served { font-size: 0.8em; color: #666; }
td.star { width: 1rem; } td.model { min-width: 12rem; }
.table-box { overflow-x: auto; }
ol.chain { margin: .2rem 0 0; padding-left: 1.2rem; }
tr.baseline td { background: #f1f6ff; font-style: italic; }
tr.chosen td { background: #eefbf0; font-weight: 600; }
tr.failed td, tr.pruned td { color: #8c959f; }
code, pre { font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; font-size: .8rem; }
pre { background: #f6f8fa; padding: .5rem; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
.notes { color: #59636e; font-size: .88rem; }
.status-ok { color: #1a7f37; } .status-failed { color: #cf222e; } .status-pruned { color: #9a6700; }
.error { color: #cf222e; white-space: pre-wrap; }
svg.pareto-chart { max-width: 100%; height: auto; font-size: 12px; }
svg .plot-area { fill: #fbfcfd; stroke: #d1d9e0; } svg .grid { stroke: #eaeef2; }
svg .tick { fill: #59636e; } svg .axis-label { fill: #1f2328; font-weight: 600; }
svg .front { fill: none; stroke: #1a7f37; stroke-width: 1.5; stroke-dasharray: 5 4; pointer-events: none; }
svg .candidate { stroke: #fff; stroke-width: 1; } svg .dominated { fill: #8c959f; }
svg .pareto { fill: #1a7f37; } svg .missed-goals { fill: #cf222e; }
svg .chosen-ring { fill: none; stroke: #0969da; stroke-width: 2.5; }
svg .baseline { fill: #0969da; fill-opacity: .25; stroke: #0969da; stroke-width: 1.5; }
.legend span { margin-right: 1.2rem; } .swatch { display: inline-block; width: .8rem; height: .8rem;
       border-radius: 50%; vertical-align: middle; margin-right: .3rem; }
"""


# -------------------------------------------------------------------------------------------------
# Values
# -------------------------------------------------------------------------------------------------
def _number(entry: Any) -> float | None:
    value = entry.get("value") if isinstance(entry, Mapping) else entry
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def metric_value(node: Mapping[str, Any], key: str) -> float | None:
    return _number((node.get("metrics") or {}).get(key))


def _is_bytes(key: str) -> bool:
    return key.endswith("-bytes")


def format_bytes(value: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(value) >= size:
            return f"{value / size:.3g} {unit}"
    return f"{value:.0f} B"


def format_metric(key: str, value: float | None) -> str:
    if value is None:
        return "-"
    if _is_bytes(key):
        return format_bytes(value)
    return f"{value:.6g}"


def _axis_scale(key: str, values: list[float]) -> tuple[float, str]:
    """A divisor and unit that give byte axes round ticks (0.5 MiB, not 524288 B)."""
    if not _is_bytes(key) or not values:
        return 1.0, ""
    largest = max(abs(v) for v in values)
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if largest >= size:
            return float(size), unit
    return 1.0, "B"


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)


def _compact(value: Any) -> str:
    return json.dumps(value, default=str) if not isinstance(value, str) else value


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


# -------------------------------------------------------------------------------------------------
# Sections
# -------------------------------------------------------------------------------------------------
def _comparison(data: ReportData) -> str:
    """One line per objective: the chosen model against the baseline. A paired latency ratio is the comparison
    itself, worded as ``olive optimize`` prints it; the models' own p50s never stand in for it."""
    best, baseline = data.best, data.baseline
    if best is None or baseline is None:
        return ""
    whose = "the input's" if data.reference_is_input else "the reference model's"
    items = []
    for key in [o.key for o in data.objectives] or data.metric_keys():
        new, old = metric_value(best, key), metric_value(baseline, key)
        if new is None:
            continue
        if is_paired_ratio(key):
            text = (
                f"{new:.2f}x {whose} {_statistic(key)} (the two timed in alternating rounds{spread_words(best, key)})"
            )
        elif old is None:
            continue
        else:
            text = f"{format_metric(key, old)} → {format_metric(key, new)}"
            higher = data.higher_is_better(key)
            change = change_words(old, new, unit_of(key, higher)[1]) if higher is False else ""
            if change:
                text += f" ({change})"
            elif higher is True and new != old:
                text += f" ({new - old:+.4g})"
            if is_timed_apart(key):
                text += "; each timed apart, not comparable with a paired ratio"
        goal = data.goals.get(key)
        if goal:
            text += f"; goal: {goal}"
        items.append(f"<li><code>{_e(key)}</code>: {_e(text)}</li>")
    return "<ul>" + "".join(items) + "</ul>" if items else ""


def _statistic(key: str) -> str:
    sub = key.rpartition("-")[2].removeprefix(RATIO_PREFIX)
    return "median" if sub == "p50" else sub


def check_summary(check: Mapping[str, Any]) -> str:
    """One line of a conversion's check against its input model."""
    parts = []
    for key, label in (("max_abs_diff", "max abs diff"), ("cosine_min", "cosine min"), ("cosine_mean", "mean")):
        value = check.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            parts.append(f"{label} {value:.3g}" if key == "max_abs_diff" else f"{label} {value:.6f}")
    text = ", ".join(parts) or "no numbers"
    if check.get("source"):
        text += f" on {check['source']}"
    if check.get("passed") is False:
        text += " (failed)"
    return text


def guard_summary(guard: Mapping[str, Any]) -> str:
    """One line of an accuracy guard's check of its own output, on the samples it fit on."""
    achieved = guard.get("achieved") if isinstance(guard.get("achieved"), Mapping) else {}
    parts = [
        f"{name} {value:.3g}" if name == "max_abs_diff" else f"{name} {value:.6f}"
        for name, value in achieved.items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    ]
    text = ", ".join(parts) or "no numbers"
    count = guard.get("num_samples")
    if isinstance(count, int) and not isinstance(count, bool):
        text += f" on the {count} sample(s) it fit on"
    floats = guard.get("fp32_nodes")
    if isinstance(floats, list):
        text += f", {len(floats)} node(s) kept in float"
    if guard.get("target_met") is False:
        text += " (target missed)"
    return text


def _own_checks(data: ReportData, node: Mapping[str, Any]) -> str:
    """What this pass checked of its own output, each check once: a quantization after a conversion carries the
    conversion's check along, and must not seem to have passed it again."""
    lines = []
    check = data.own_check(node, CONVERSION_CHECK)
    if check is not None:
        lines.append(f"against its input model: {check_summary(check)}")
    guard = data.own_check(node, ACCURACY_GUARD)
    if guard is not None:
        lines.append(f"accuracy guard: {guard_summary(guard)}")
    return "<br>".join(_e(line) for line in lines)


def _input_section(data: ReportData) -> str:
    model = data.input_model()
    if model["type"] is None:
        return ""
    text = f"<strong>{_e(model['type'])}</strong>"
    if model["model_path"]:
        text += f" <code>{_e(model['model_path'])}</code>"
    if model["task"]:
        text += f", task <code>{_e(model['task'])}</code>"
    base = data.baseline
    if base is not None and not data.reference_is_input:
        text += (
            f". onnxruntime cannot run it, so every metric (agreement, <code>ratio_*</code> latency, goals relative "
            f"to the input model) compares with <code>{_e(base['model_id'])}</code>, the output of pass "
            f"<code>{_e(base.get('pass_key'))}</code> ({_e(base.get('pass_name'))})"
        )
        check = conversion_check(base)
        if check is not None:
            text += f", which was checked against the input model: {_e(check_summary(check))}"
    return f"<p>{text}.</p>"


def _summary(data: ReportData) -> str:
    best = data.best
    if best is None:
        reason = data.reason or "no model was chosen"
        return f'<div class="summary failed"><strong>No model was chosen.</strong> {_e(reason)}</div>'
    steps = " → ".join(f"{s.pass_key} ({s.pass_name})" for s in data.chain(best))
    where = f"<br>Written to <code>{_e(data.output_model)}</code>" if data.output_model else ""
    label = (best.get("target") or {}).get("label")
    on = f", on {label}" if (label and len(data.targets()) > 1) or (label and not label.startswith("cpu-cpu")) else ""
    deploy = ""
    if data.deploy:
        deploy = "<br>Run it with onnxruntime alone:<pre>" + _e("\n".join(data.deploy)) + "</pre>"
    return (
        f'<div class="summary"><strong>Chosen model:</strong> <code>{_e(best["model_id"])}</code>, '
        f"from {_e(steps or 'the input model')}{_e(on)}{where}{_comparison(data)}{deploy}</div>"
    )


def _chart(data: ReportData) -> str:
    # Without two objectives, the first measured metrics stand in (metric_keys lists objectives first).
    keys = data.metric_keys()[:2]
    if len(keys) < 2:
        return "<p>The chart needs two metrics; this run measured fewer.</p>"
    x_key, y_key = keys
    x_higher = data.higher_is_better(x_key) is True
    y_higher = data.higher_is_better(y_key) is True

    def plottable(node: Mapping[str, Any]) -> bool:
        values = (metric_value(node, x_key), metric_value(node, y_key))
        return all(v is not None and math.isfinite(v) for v in values)

    plotted = [n for n in data.candidates() if plottable(n)]
    base = data.baseline
    if base is not None and not plottable(base):
        base = None
    if not plotted:
        return "<p>No candidate has both plotted metrics, so there is nothing to chart.</p>"
    everything = [*plotted, *([base] if base else [])]
    x_div, x_unit = _axis_scale(x_key, [metric_value(n, x_key) for n in everything])
    y_div, y_unit = _axis_scale(y_key, [metric_value(n, y_key) for n in everything])
    points = []
    for node in plotted:
        points.append(
            Point(
                model_id=node["model_id"],
                x=metric_value(node, x_key) / x_div,
                y=metric_value(node, y_key) / y_div,
                tooltip=_tooltip(data, node, x_key, y_key),
                pareto=bool(node.get("is_pareto")),
                chosen=node["model_id"] == data.best_model_id,
                meets_goals=node.get("meets_goals"),
            )
        )
    baseline = None
    if base is not None:
        baseline = Point(
            base["model_id"],
            metric_value(base, x_key) / x_div,
            metric_value(base, y_key) / y_div,
            _tooltip(data, base, x_key, y_key, _baseline_name(data)),
        )
    x_label = f"{x_key}, {x_unit}" if x_unit else x_key
    y_label = f"{y_key}, {y_unit}" if y_unit else y_key
    svg = scatter_svg(points, x_label, y_label, x_higher, y_higher, baseline)
    legend = (
        '<p class="legend"><span><i class="swatch" style="background:#1a7f37"></i>on the Pareto front (all '
        'objectives)</span><span><i class="swatch" style="background:#8c959f"></i>dominated</span>'
        '<span><i class="swatch" style="background:#cf222e"></i>misses a goal</span>'
        '<span><i class="swatch" style="border:2.5px solid #0969da"></i>chosen</span>'
        '<span><i class="swatch" style="background:#9cc3f5;border-radius:0"></i>input model</span>'
        + ("<span>dashed line: front of the two plotted objectives</span>" if 'class="front"' in svg else "")
        + "</p>"
    )
    return svg + legend


def _baseline_name(data: ReportData) -> str:
    return "input model (baseline)" if data.reference_is_input else "reference model (baseline)"


def _tooltip(data: ReportData, node: Mapping[str, Any], x_key: str, y_key: str, title: str | None = None) -> str:
    lines = [title or node["model_id"]]
    for step in data.chain(node):
        varied = ", ".join(f"{k}={_compact(v)}" for k, v in step.varied.items())
        lines.append(f"{step.pass_key}: {step.pass_name}" + (f" ({varied})" if varied else ""))
    for key in data.metric_keys():
        value = metric_value(node, key)
        if value is not None:
            apart = " (timed apart)" if is_timed_apart(key) else ""
            lines.append(f"{key} = {format_metric(key, value)}{apart}")
    return "\n".join(lines)


def _chain_cell(data: ReportData, node: Mapping[str, Any]) -> str:
    steps = data.chain(node)
    if not steps:
        return ""
    rendered = []
    for step in steps:
        varied = ", ".join(f"{k}={_compact(v)}" for k, v in step.varied.items())
        text = f"<code>{_breakable(step.pass_key)}</code>: {_breakable(step.pass_name)}"
        if varied:
            text += f"<br><small>{_breakable(varied)}</small>"
        rendered.append(f"<li>{text}</li>")
    return f'<ol class="chain">{"".join(rendered)}</ol>'


def _config_cell(data: ReportData, node: Mapping[str, Any]) -> str:
    steps = data.chain(node)
    if not steps:
        return ""
    configs = {step.pass_key or step.model_id: step.config for step in steps}
    return f"<details><summary>config</summary><pre>{_e(_json(configs))}</pre></details>"


def _target_cell(node: Mapping[str, Any]) -> str:
    target = node.get("target") or {}
    text = _e(target.get("label") or "")
    if target.get("nodes_not_taken_count"):
        left = ", ".join(target.get("nodes_not_taken") or [])
        text += (
            f'<div class="error">{_e(target["nodes_not_taken_count"])} node(s) left to another provider: '
            f"{_e(left)}</div>"
        )
    return text


def _breakable(text: Any) -> str:
    """``text`` escaped, with a line break allowed after its separators and between the words of a CamelCase
    name: a metric key, a pass name or a list of values is one long word that would otherwise widen its column
    past the page."""
    text = "" if text is None else str(text)
    out = []
    for i, char in enumerate(text):
        if char.isupper() and i > 0 and text[i - 1].islower():
            out.append("<wbr>")
        out.append(_e(char))
        if char in "-_,=/:" and i + 1 < len(text):
            out.append("<wbr>")
    return "".join(out)


def _column_keys(data: ReportData) -> list[str]:
    """The metric columns: the objectives, the other measured metrics, the accuracy guard's own figures beside
    them, and last the figures timed apart, away from the paired ratio they could seem to contradict."""
    keys = data.metric_keys()
    fit = [k for k in keys if k.startswith(FIT_PREFIX)]
    apart = [k for k in keys if is_timed_apart(k) and k not in fit]
    rest = [k for k in keys if k not in fit and k not in apart]
    return rest + fit + apart


def _served(node: Mapping[str, Any], key: str) -> tuple[dict[str, Any], str]:
    metric, _, sub = key.rpartition("-")
    served = (node.get("batch_sizes") or {}).get(metric)
    return (served if isinstance(served, dict) else {}), sub


def _served_at(node: Mapping[str, Any], key: str) -> str:
    """`` at batch 32``, under a figure measured at several served batch sizes: the one it was the worst at."""
    served, sub = _served(node, key)
    at = (served.get("worst_at") or {}).get(sub)
    if len(served.get("served") or []) < 2 or not isinstance(at, int):
        return ""
    return f'<div class="served">at batch {_e(str(at))}</div>'


def _served_title(node: Mapping[str, Any], key: str) -> str:
    """Every served batch size's own figure, as the cell's tooltip."""
    served, sub = _served(node, key)
    by_size = served.get("by_batch_size") or {}
    parts = [
        f"batch {size}: {format_metric(key, figures[sub])}"
        for size, figures in sorted(by_size.items(), key=lambda item: int(item[0]))
        if isinstance(figures, dict) and isinstance(figures.get(sub), int | float)
    ]
    return f' title="{_e("; ".join(parts))}"' if len(parts) > 1 else ""


def _served_sizes(data: ReportData, key: str) -> list[int] | None:
    metric = key.rpartition("-")[0]
    found = {tuple(((n.get("batch_sizes") or {}).get(metric) or {}).get("served") or ()) for n in data.candidates()} - {
        ()
    }
    return list(found.pop()) if len(found) == 1 else None


def _held_out_count(data: ReportData, key: str) -> int | None:
    metric = key.rpartition("-")[0]
    counts = {(n.get("samples") or {}).get(metric) for n in data.candidates()} - {None}
    return counts.pop() if len(counts) == 1 and isinstance(next(iter(counts)), int) else None


def _column_note(data: ReportData, key: str, paired: bool) -> str:
    """What a metric column's numbers are, under its header."""
    whose = "input's" if data.reference_is_input else "reference model's"
    if key.startswith(FIT_PREFIX):
        return "the accuracy guard's own check, on the samples it fit on"
    if is_paired_ratio(key):
        return f"times the {whose} {_statistic(key)}, the two timed in alternating rounds"
    if is_timed_apart(key):
        unit = "1/s" if data.higher_is_better(key) else "ms"
        return f"{unit}, each model timed apart" + (": not comparable with the ratio" if paired else "")
    if _is_bytes(key):
        return "on disk"
    count = _held_out_count(data, key)
    if count is None:
        return ""
    # Beside a guard's figures, say which samples are which: these are the ones it did not fit on.
    fitted = any(k.startswith(FIT_PREFIX) for k in data.metric_keys())
    note = f"on {count} held-out sample(s)" if fitted else f"on {count} sample(s)"
    sizes = _served_sizes(data, key)
    if sizes and len(sizes) == 1:
        note += f", at batch size {sizes[0]}"
    elif sizes:
        note += f", the worst over batch sizes {' and '.join(str(s) for s in sizes)}"
    return note


def _metric_header(data: ReportData, key: str, paired: bool) -> str:
    higher = data.higher_is_better(key)
    arrow = {True: " ↑", False: " ↓"}.get(higher, "")  # type: ignore[call-overload]
    note = _column_note(data, key, paired)
    classes = ["metric"] + (["apart"] if is_timed_apart(key) else []) + (["fit"] if key.startswith(FIT_PREFIX) else [])
    return (
        f'<th class="{" ".join(classes)}" title="{_e(key)}" data-key="{_e(key)}"><code>{_breakable(key)}</code>'
        f"{_e(arrow)}" + (f"<br><small>{_e(note)}</small>" if note else "") + "</th>"
    )


def _candidate_table(data: ReportData) -> str:
    keys = _column_keys(data)
    paired = any(is_paired_ratio(k) for k in keys)
    # One provider for every candidate: the page's header says which, and the column would repeat it.
    left_out = any((n.get("target") or {}).get("nodes_not_taken_count") for n in data.nodes)
    show_target = len(data.targets()) > 1 or left_out
    head = ['<th class="star"></th>', '<th class="model">model, passes (searched values), config</th>']
    if show_target:
        head.append("<th>execution provider (options)</th>")
    head += [_metric_header(data, k, paired) for k in keys]
    head.append("<th>goals</th>")
    rows = []
    base = data.baseline
    rows_nodes: list[tuple[str, Mapping[str, Any]]] = []
    if base is not None:
        rows_nodes.append(("baseline", base))
    rows_nodes += [("candidate", n) for n in data.candidates() if base is None or n["model_id"] != base["model_id"]]
    rows_nodes += [("problem", n) for n in data.problem_nodes()]
    for kind, node in rows_nodes:
        chosen = node["model_id"] == data.best_model_id
        status = node.get("status", "ok")
        classes = [kind, status] + (["chosen"] if chosen else [])
        if kind == "baseline":
            label = ("input" if data.reference_is_input else "reference") + " (baseline)"
            state = f"<em>{_e(label)}</em>"
        else:
            state = f'<span class="status-{_e(status)}">{_e(status)}</span>'
        model = f"<code>{_breakable(node['model_id'])}</code> {state}"
        if node.get("error"):
            model += f'<div class="error">{_e(node["error"])}</div>'
        model += _chain_cell(data, node) + _config_cell(data, node)
        cells = ['<td class="star">★</td>' if chosen else '<td class="star"></td>', f'<td class="model">{model}</td>']
        if show_target:
            cells.append(f"<td>{_target_cell(node)}</td>")
        cells += [
            f'<td class="num{" apart" if is_timed_apart(k) else ""}"{_served_title(node, k)}>'
            f"{_e(format_metric(k, metric_value(node, k)))}{_served_at(node, k)}</td>"
            for k in keys
        ]
        goals = {True: "met", False: "missed", None: ""}.get(node.get("meets_goals"), "")
        flags = [f for f in (goals, "Pareto" if node.get("is_pareto") else "") if f]
        cells.append(f'<td class="flags">{"<br>".join(_e(f) for f in flags)}</td>')
        row_class = " ".join(_e(c) for c in classes)
        rows.append(f'<tr class="{row_class}" data-model-id="{_e(node["model_id"])}">{"".join(cells)}</tr>')
    return f'<table class="candidates"><thead><tr>{"".join(head)}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _column_notes(data: ReportData) -> str:
    """Why two kinds of latency and of agreement figures stand in one table."""
    keys = data.metric_keys()
    notes = []
    ratios = [k for k in keys if is_paired_ratio(k)]
    apart = [k for k in keys if is_timed_apart(k)]
    if ratios:
        notes.append(
            f"{', '.join(f'<code>{_e(k)}</code>' for k in ratios)}: the latency the ranking uses, each candidate's "
            "time over the baseline's, the two timed in alternating rounds so that a change of machine load touches "
            "both alike."
        )
    if apart:
        notes.append(
            f"{', '.join(f'<code>{_e(k)}</code>' for k in apart)} (shaded): each model's own figure, timed apart at "
            "another moment and under other load"
            + ("; two of them can disagree with the paired ratio, which is the comparison." if ratios else ".")
        )
    fit = [k for k in keys if k.startswith(FIT_PREFIX)]
    if fit:
        notes.append(
            f"{', '.join(f'<code>{_e(k)}</code>' for k in fit)}: what the accuracy guard measured on the samples it "
            "fit on, beside the same measure on samples it did not fit on; the gap is how much the fit flatters "
            "the model."
        )
    return '<ul class="notes">' + "".join(f"<li>{n}</li>" for n in notes) + "</ul>" if notes else ""


def _runs_table(data: ReportData) -> str:
    rows = []
    for node in data.pass_runs():
        timings = node.get("timings") or {}
        run_s = timings.get("original_run") if node.get("cached") else timings.get("run")
        dist = node.get("pass_distribution")
        version = node.get("pass_version")
        cells = [
            f"<code>{_breakable(node['model_id'])}</code>",
            f"<code>{_breakable(node.get('parent_model_id'))}</code>",
            f"<code>{_e(node.get('pass_key'))}</code>: {_breakable(node.get('pass_name'))}",
            _breakable(f"{dist}=={version}" if dist and version else dist or ""),
            _e(node.get("status")) + (f'<div class="error">{_e(node["error"])}</div>' if node.get("error") else ""),
            "yes" if node.get("cached") else "no",
        ]
        rendered = "".join(f"<td>{c}</td>" for c in cells)
        rendered += f'<td class="num">{_e(f"{run_s:.3f}" if isinstance(run_s, int | float) else "-")}</td>'
        rendered += f'<td class="check">{_own_checks(data, node)}</td>'
        rows.append(f'<tr data-model-id="{_e(node["model_id"])}">{rendered}</tr>')
    head = ["model", "parent", "pass", "distribution", "status", "cached", "run s", "its own check of its output"]
    header = "".join(f"<th>{_e(h)}</th>" for h in head)
    return f'<table class="runs"><thead><tr>{header}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _versions(data: ReportData) -> str:
    from importlib import metadata

    rows = [("olive-core", data.olive_core_version or "?", "the engine")]
    rows += [(dist, version or "?", ", ".join(names)) for dist, version, names in data.distributions()]
    for name in ("onnxruntime", "onnx"):
        try:
            rows.append((name, metadata.version(name), "installed when the report was written"))
        except metadata.PackageNotFoundError:
            continue
    body = "".join(f"<tr><td>{_e(d)}</td><td>{_e(v)}</td><td>{_e(p)}</td></tr>" for d, v, p in rows)
    return (
        '<table class="versions"><thead><tr><th>distribution</th><th>version</th><th>passes used</th></tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def render_report(data: ReportData) -> str:
    """The page as one string."""
    title = f"Olive report: {data.workflow_id}" if data.workflow_id else "Olive report"
    objectives = ", ".join(
        f"{o.key} ({'higher' if o.higher_is_better else 'lower'} is better)" for o in data.objectives
    )
    goals = "; ".join(f"{k}: {v}" for k, v in data.goals.items())
    candidates = data.candidates()
    meta = [
        f"<span>generated {_e(data.generated)}</span>",
        f"<span>accelerator: {_e(data.accelerator or '-')}</span>",
        f"<span>{len(candidates)} candidate(s), {len(data.pass_runs())} pass run(s)</span>",
    ]
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
            f"<h1>{_e(title)}</h1>",
            f'<p class="meta">{"".join(meta)}</p>',
            f"<p>Objectives in priority order: {_e(objectives or 'none')}"
            + (f". Goals: {_e(goals)}" if goals else "")
            + "</p>",
            f'<p class="rule">Ranking: {_e(data.ranking_rule)}.</p>',
            f'<p class="rule">{_e(data.chosen_because[0].upper() + data.chosen_because[1:])}.</p>'
            if data.chosen_because
            else "",
            f'<p class="rule">Tie: {_e(data.tie_note)}.</p>' if data.tie_note else "",
            _summary(data),
            "<h2>Input model</h2>",
            _input_section(data),
            "<h2>Objectives</h2>",
            _chart(data),
            "<h2>Candidates</h2>",
            f"<p>The {'input' if data.reference_is_input else 'reference'} model is the baseline row; ★ marks the "
            "chosen model. ↑ higher is better, ↓ lower is better. Hover a point in the chart for its values.</p>",
            _candidate_table(data),
            _column_notes(data),
            "<h2>Pass runs</h2>",
            _runs_table(data),
            "<h2>Distributions</h2>",
            _versions(data),
            "</body></html>",
        ]
    )


def _data_for(output_dir: Path, source: Any, goals: Mapping[str, str] | None) -> ReportData:
    if source is None:
        return load_report_data(output_dir, goals)
    if isinstance(source, ReportData):
        return source
    if hasattr(source, "footprint") and hasattr(source, "get_best_candidate"):
        return report_data_from_output(source, goals)
    if isinstance(source, Mapping):
        return report_data_from_footprint(source, goals=goals)
    raise TypeError(f"write_report: cannot make a report from {type(source).__name__}")


def write_report(
    output_dir: str | Path,
    source: Any = None,
    *,
    workflow: Any = None,
    goals: Mapping[str, str] | None = None,
) -> Path:
    """Write ``report.html`` into ``output_dir`` and return its path.

    :param output_dir: a run's output folder.
    :param source: None reads ``footprint.json`` (and ``model_config.json``) from ``output_dir``; a
        ``WorkflowOutput``, the contents of a ``footprint.json`` or a :class:`ReportData` are used as they are.
    :param workflow: the run's ``WorkflowConfig``; when given, the report states its goals.
    :param goals: ``{"metric-sub_type": "threshold 0.99"}``, instead of ``workflow``.
    """
    output_dir = Path(output_dir)
    if goals is None and workflow is not None:
        goals = goals_of(workflow)
    page = render_report(_data_for(output_dir, source, goals))
    output_dir.mkdir(parents=True, exist_ok=True)
    target = output_dir / REPORT_FILE
    # Written under a temp name and renamed, so a reader never sees half a page.
    tmp = output_dir / f".{REPORT_FILE}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        tmp.write_text(page, encoding="utf-8")
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def report_writer(output: Any, workflow: Any, output_dir: Path) -> None:
    """An output writer for ``olive.engine.output_writer.register_output_writer``: reads the files just written."""
    write_report(output_dir, workflow=workflow)
