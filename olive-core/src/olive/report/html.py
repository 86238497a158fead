"""``report.html``: one self-contained page per output folder.

It holds a Pareto chart of the first two objectives (inline SVG), a table of every candidate with its pass
chain, searched values, config and metrics, the input model (its type, and a Hugging Face model's task) and
the model the metrics compared with as the baseline row, every pass run (with a conversion's check against
its input), and the distributions (with versions) whose passes ran. No script and nothing loaded from outside
the file; every string that came from a config, a model path or an error message is escaped.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping
from html import escape
from pathlib import Path
from typing import Any

from olive.report.chart import Point, scatter_svg
from olive.report.data import (
    ReportData,
    conversion_check,
    goals_of,
    load_report_data,
    report_data_from_footprint,
    report_data_from_output,
)

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
th { background: #f6f8fa; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.baseline td { background: #f1f6ff; font-style: italic; }
tr.chosen td { background: #eefbf0; font-weight: 600; }
tr.failed td, tr.pruned td { color: #8c959f; }
code, pre { font-family: ui-monospace, "SF Mono", Menlo, Consolas, monospace; font-size: .8rem; }
pre { background: #f6f8fa; padding: .5rem; max-width: 520px; overflow-x: auto; white-space: pre-wrap; }
.status-ok { color: #1a7f37; } .status-failed { color: #cf222e; } .status-pruned { color: #9a6700; }
.error { color: #cf222e; white-space: pre-wrap; }
svg.pareto-chart { max-width: 100%; height: auto; font-size: 12px; }
svg .plot-area { fill: #fbfcfd; stroke: #d1d9e0; } svg .grid { stroke: #eaeef2; }
svg .tick { fill: #59636e; } svg .axis-label { fill: #1f2328; font-weight: 600; }
svg .front { fill: none; stroke: #1a7f37; stroke-width: 1.5; stroke-dasharray: 5 4; }
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
    """One line per objective: the chosen model against the input model."""
    best, baseline = data.best, data.baseline
    if best is None or baseline is None:
        return ""
    items = []
    for key in [o.key for o in data.objectives] or data.metric_keys():
        new, old = metric_value(best, key), metric_value(baseline, key)
        if new is None or old is None:
            continue
        text = f"{format_metric(key, old)} → {format_metric(key, new)}"
        higher = data.higher_is_better(key)
        if higher is False and new > 0 and old > 0 and new != old:
            ratio = old / new
            text += f" ({ratio:.2f}x {'lower' if ratio > 1 else 'higher'})"
        elif higher is True and new != old:
            text += f" ({new - old:+.4g})"
        goal = data.goals.get(key)
        if goal:
            text += f"; goal: {goal}"
        items.append(f"<li><code>{_e(key)}</code>: {_e(text)}</li>")
    return "<ul>" + "".join(items) + "</ul>" if items else ""


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
        "<span>dashed line: front of the two plotted objectives</span></p>"
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
            lines.append(f"{key} = {format_metric(key, value)}")
    return "\n".join(lines)


def _chain_cell(data: ReportData, node: Mapping[str, Any]) -> str:
    steps = data.chain(node)
    if not steps:
        return "<em>input model</em>"
    rendered = []
    for step in steps:
        varied = ", ".join(f"{k}={_compact(v)}" for k, v in step.varied.items())
        text = f"<code>{_e(step.pass_key)}</code>: {_e(step.pass_name)}"
        if varied:
            text += f"<br><small>{_e(varied)}</small>"
        rendered.append(text)
    return " →<br>".join(rendered)


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


def _candidate_table(data: ReportData) -> str:
    keys = data.metric_keys()
    head = ["", "model", "status", "passes (searched values)", "execution provider (options)"]
    head += [
        f"{k}{' ↑' if data.higher_is_better(k) else ' ↓' if data.higher_is_better(k) is False else ''}" for k in keys
    ]
    head += ["goals", "Pareto", "config"]
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
        cells = [
            "★" if chosen else "",
            f"<code>{_e(node['model_id'])}</code>",
            (("input" if data.reference_is_input else "reference") + " (baseline)")
            if kind == "baseline"
            else f'<span class="status-{_e(status)}">{_e(status)}</span>',
            _chain_cell(data, node),
            _target_cell(node),
        ]
        cells += [f'<td class="num">{_e(format_metric(k, metric_value(node, k)))}</td>' for k in keys]
        goals = {True: "met", False: "missed", None: ""}.get(node.get("meets_goals"), "")
        cells += [_e(goals), "yes" if node.get("is_pareto") else "", _config_cell(data, node)]
        if node.get("error"):
            cells[2] += f'<div class="error">{_e(node["error"])}</div>'
        rendered = "".join(c if c.startswith("<td") else f"<td>{c}</td>" for c in cells)
        rows.append(
            f'<tr class="{" ".join(_e(c) for c in classes)}" data-model-id="{_e(node["model_id"])}">{rendered}</tr>'
        )
    header = "".join(f"<th>{_e(h)}</th>" for h in head)
    return f'<table class="candidates"><thead><tr>{header}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _runs_table(data: ReportData) -> str:
    rows = []
    for node in data.pass_runs():
        timings = node.get("timings") or {}
        run_s = timings.get("original_run") if node.get("cached") else timings.get("run")
        dist = node.get("pass_distribution")
        version = node.get("pass_version")
        cells = [
            f"<code>{_e(node['model_id'])}</code>",
            f"<code>{_e(node.get('parent_model_id'))}</code>",
            f"<code>{_e(node.get('pass_key'))}</code>",
            _e(node.get("pass_name")),
            _e(f"{dist}=={version}" if dist and version else dist or ""),
            _e(node.get("status")) + (f'<div class="error">{_e(node["error"])}</div>' if node.get("error") else ""),
            "yes" if node.get("cached") else "no",
        ]
        rendered = "".join(f"<td>{c}</td>" for c in cells)
        rendered += f'<td class="num">{_e(f"{run_s:.3f}" if isinstance(run_s, int | float) else "-")}</td>'
        check = conversion_check(node)
        rendered += f'<td class="check">{_e(check_summary(check)) if check is not None else ""}</td>'
        rows.append(f"<tr>{rendered}</tr>")
    head = ["model", "parent", "pass key", "pass", "distribution", "status", "cached", "run s", "checked against input"]
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
            _summary(data),
            "<h2>Input model</h2>",
            _input_section(data),
            "<h2>Objectives</h2>",
            _chart(data),
            "<h2>Candidates</h2>",
            f"<p>The {'input' if data.reference_is_input else 'reference'} model is the baseline row; ★ marks the "
            "chosen model. ↑ higher is better, ↓ lower is better. Hover a point in the chart for its values.</p>",
            _candidate_table(data),
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
