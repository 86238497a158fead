"""The candidates table that ``olive run`` and ``olive quickstart`` print, readable at any terminal width.

Each row is labelled by its model id and, below it, its passes with the params the search varied (the pass
name too where one pass key had alternatives, so a dynamic and a static quantization never look alike).
Headers carry their unit (ms, MiB, ratio, 1/s) and a direction arrow; values have four significant digits.
Nothing is cut inside a word: the table keeps every column at the width of its longest word, and when that
does not fit the terminal each model becomes a block of lines instead.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from olive.cli.layout import minimum_width
from olive.evaluator.metric import LATENCY_SUB_TYPES, RATIO_PREFIX

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from olive.report.data import ReportData

#: A param value longer than this is shortened in a label (the footprint keeps it whole).
_MAX_VALUE_CHARS = 24
_MIB = float(1 << 20)
_LABEL_MAX_WIDTH = 44
_INDENT = 4
INPUT_MODEL_LABEL = "input model"
#: the row metrics compared with when the input model could not be evaluated (its conversion)
REFERENCE_MODEL_LABEL = "reference model"


def unit_of(key: str, higher_is_better: bool | None) -> tuple[float, str]:
    """``(divisor, unit)`` a metric value is shown in: ms, 1/s (samples per second), ratio, MiB, or none."""
    sub = key.rpartition("-")[2]
    if sub.startswith(RATIO_PREFIX):
        return 1.0, "ratio"
    if sub in LATENCY_SUB_TYPES:
        return (1.0, "1/s") if higher_is_better else (1.0, "ms")
    if sub == "bytes":
        return _MIB, "MiB"
    return 1.0, ""


def change_words(old: float, new: float, unit: str) -> str:
    """How a lower-is-better figure changed, one phrasing everywhere (olive optimize, quickstart, report.html):
    ``3.82x smaller`` for a size, ``1.30x faster`` for a latency, ``1.30x lower`` otherwise; empty when either is
    not positive or nothing changed."""
    if not (old > 0 and new > 0) or old == new:
        return ""
    better, worse = {"MiB": ("smaller", "larger"), "ms": ("faster", "slower")}.get(unit, ("lower", "higher"))
    ratio = old / new
    return f"{ratio:.2f}x {better}" if ratio > 1 else f"{1 / ratio:.2f}x {worse}"


def is_paired_ratio(key: str) -> bool:
    """A latency ratio (``latency-ratio_p50``): the model's time over the input model's, the two timed in
    alternating rounds, so a change of machine load touches both alike. The ranking uses it."""
    return key.rpartition("-")[2].startswith(RATIO_PREFIX)


def is_timed_apart(key: str) -> bool:
    """An absolute latency or throughput figure (``latency-p50``): each model timed on its own, at another moment
    and under other load than the rest, so two of them can contradict the paired ratio."""
    return not is_paired_ratio(key) and key.rpartition("-")[2] in LATENCY_SUB_TYPES


def format_value(value: float | None, divisor: float = 1.0) -> str:
    """Four significant digits, without an exponent for the values tables usually hold."""
    if value is None:
        return "-"
    value /= divisor
    if value == 0 or 1e-3 <= abs(value) < 1e5:
        text = f"{value:.4g}"
        return text if "e" not in text else f"{value:.0f}"
    return f"{value:.3g}"


def metric_value(node: Mapping[str, Any], key: str) -> float | None:
    """A node's value of metric ``key`` as a float, or None."""
    entry = (node.get("metrics") or {}).get(key)
    value = entry.get("value") if isinstance(entry, Mapping) else entry
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def spread_words(node: Mapping[str, Any], key: str) -> str:
    """``", ±N% between rounds"`` for a value whose spread was measured (paired ratios), else ``""``."""
    entry = (node.get("metrics") or {}).get(key)
    spread = entry.get("noise") if isinstance(entry, Mapping) else None
    if not isinstance(spread, int | float) or isinstance(spread, bool) or not spread > 0:
        return ""
    return f", ±{spread * 100:.0f}% between rounds"


def header_parts(key: str, higher_is_better: bool | None) -> tuple[str, str, str]:
    """A metric column's header: its name, its sub type, and its unit with a direction arrow."""
    metric, _, sub = key.rpartition("-")
    if not metric:
        metric, sub = sub, ""
    _, unit = unit_of(key, higher_is_better)
    if sub.startswith(RATIO_PREFIX):
        sub = sub[len(RATIO_PREFIX) :]
    arrow = {True: "↑", False: "↓", None: ""}[higher_is_better]
    return metric, "" if sub == "bytes" else sub, " ".join(p for p in (unit, arrow) if p)


def _short(value: Any) -> str:
    scalar = isinstance(value, str | int | float | bool) or value is None
    text = str(value) if scalar else json.dumps(value, default=str)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 1] + "…"


def _camel_words(name: str) -> list[str]:
    return re.findall(r"[A-Z]+(?![a-z])|[A-Z][a-z0-9]*|[a-z0-9]+", name) or [name]


def distinguishing_names(names: Sequence[str]) -> dict[str, str]:
    """Each pass name without the words all of them share at the start and the end
    (``OnnxDynamicQuantization``, ``OnnxStaticQuantization`` -> ``Dynamic``, ``Static``); whole names when
    that would leave one empty or make two alike."""
    words = {name: _camel_words(name) for name in names}
    if len(words) < 2:
        return {name: name for name in names}
    lists = list(words.values())
    head = 0
    while all(len(w) > head for w in lists) and len({w[head] for w in lists}) == 1:
        head += 1
    tail = 0
    while all(len(w) > head + tail for w in lists) and len({w[-1 - tail] for w in lists}) == 1:
        tail += 1
    short = {name: "".join(w[head : len(w) - tail]) for name, w in words.items()}
    if not all(short.values()) or len(set(short.values())) != len(short):
        return {name: name for name in names}
    return short


def step_labels(data: ReportData, node: Mapping[str, Any]) -> list[str]:
    """One line per pass of ``node``'s chain: ``key: [Pass] name=value ...`` (the values the search varied;
    the pass, shortened to what tells it apart, where one pass key had alternatives)."""
    names_by_key: dict[str, set[str]] = {}
    for run in data.pass_runs():
        names_by_key.setdefault(run.get("pass_key") or "", set()).add(run.get("pass_name") or "")
    short = {key: distinguishing_names(sorted(names)) for key, names in names_by_key.items()}
    lines = []
    for step in data.chain(node):
        parts = [f"{step.pass_key}:"]
        alternatives = short.get(step.pass_key or "", {})
        if len(alternatives) > 1:
            parts.append(alternatives.get(step.pass_name or "", step.pass_name or "?"))
        parts.extend(f"{name}={_short(value)}" for name, value in step.varied.items())
        lines.append(" ".join(parts) if len(parts) > 1 else f"{step.pass_key} ({step.pass_name})")
    target = node.get("target") if node.get("target_of") else None
    if isinstance(target, Mapping) and target.get("label"):
        # One of several targets: where the model ran is a searched value too.
        lines.append(f"on={target['label']}")
    return lines


def _rows(data: ReportData) -> list[dict[str, Any]]:
    rows = []
    base = data.baseline
    if base is not None and base.get("metrics"):
        label = INPUT_MODEL_LABEL if data.reference_is_input else REFERENCE_MODEL_LABEL
        rows.append({"node": base, "label": ["  " + label], "chosen": False, "baseline": True})
    candidates = data.candidates()
    candidates.sort(key=lambda n: n["model_id"] != data.best_model_id)
    for node in candidates:
        chosen = node["model_id"] == data.best_model_id
        rows.append(
            {
                "node": node,
                "label": [("* " if chosen else "  ") + node["model_id"], *step_labels(data, node)],
                "chosen": chosen,
                "baseline": False,
            }
        )
    return rows


def _goal(node: Mapping[str, Any]) -> str:
    if node.get("status") not in (None, "ok"):
        return str(node["status"])
    return {True: "met", False: "missed", None: ""}[node.get("meets_goals")]


def _longest_word(lines: Sequence[str]) -> int:
    return max((len(word) for line in lines for word in line.split()), default=1)


def candidates_table(data: ReportData, keys: Sequence[str], width: int) -> RenderableType:
    """The candidates of ``data`` with the metrics ``keys``: a table when it fits ``width``, else blocks."""
    rows = _rows(data)
    directions = {key: data.higher_is_better(key) for key in keys}
    cells = {
        id(row["node"]): [format_value(metric_value(row["node"], k), unit_of(k, directions[k])[0]) for k in keys]
        for row in rows
    }
    headers = {key: header_parts(key, directions[key]) for key in keys}
    label_width = max(_longest_word(row["label"]) for row in rows) + _INDENT if rows else 5
    widths = [max(_longest_word(headers[k]), *(len(cells[id(r["node"])][i]) for r in rows)) for i, k in enumerate(keys)]
    for merge in (False, True):
        table = _table(rows, keys, headers, cells, label_width, widths, merge)
        # Rich would squeeze a table wider than the terminal by cutting words; measure, and when a separate
        # pareto column does not fit let the goals column say both, and when even that does not fit, give
        # each model a block of lines.
        if minimum_width(table, width) <= width:
            return table
    return _blocks(rows, keys, headers, cells)


def _table(
    rows: list[dict[str, Any]],
    keys: Sequence[str],
    headers: Mapping[str, tuple[str, str, str]],
    cells: Mapping[int, list[str]],
    label_width: int,
    widths: Sequence[int],
    merge: bool,
) -> Any:
    from rich import box
    from rich.console import Group
    from rich.padding import Padding
    from rich.table import Table
    from rich.text import Text

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    # Wide enough for the longest word, and no wider than a comfortable line: a label wraps between words.
    table.add_column("model", min_width=label_width, max_width=max(label_width, _LABEL_MAX_WIDTH), overflow="fold")
    for key, column_width in zip(keys, widths, strict=True):
        table.add_column("\n".join(p for p in headers[key] if p), justify="right", no_wrap=True, min_width=column_width)
    table.add_column("goals\npareto" if merge else "goals", no_wrap=True)
    if not merge:
        table.add_column("pareto", no_wrap=True)
    for row in rows:
        node = row["node"]
        style = "italic" if row["baseline"] else "bold green" if row["chosen"] else None
        if not row["baseline"] and node.get("status") not in (None, "ok"):
            style = "dim"
        label = Group(Text(row["label"][0]), *(Padding(Text(line), (0, 0, 0, _INDENT)) for line in row["label"][1:]))
        goal = "" if row["baseline"] else _goal(node)
        pareto = "pareto" if merge and node.get("is_pareto") else "yes" if node.get("is_pareto") else ""
        flags = ["\n".join(f for f in (goal, pareto) if f)] if merge else [goal, pareto]
        table.add_row(label, *cells[id(node)], *flags, style=style)
    return table


def _blocks(
    rows: list[dict[str, Any]],
    keys: Sequence[str],
    headers: Mapping[str, tuple[str, str, str]],
    cells: Mapping[int, list[str]],
) -> RenderableType:
    from rich.console import Group
    from rich.padding import Padding
    from rich.text import Text

    parts: list[Any] = []
    for row in rows:
        node = row["node"]
        flags = [] if row["baseline"] else [f for f in (_goal(node), "pareto" if node.get("is_pareto") else "") if f]
        title = row["label"][0] + (f"  ({', '.join(flags)})" if flags else "")
        style = "italic" if row["baseline"] else "bold green" if row["chosen"] else None
        parts.append(Text(title, style=style))
        for line in row["label"][1:]:
            parts.append(Padding(Text(line), (0, 0, 0, _INDENT)))
        for key, value in zip(keys, cells[id(node)], strict=True):
            metric, sub, unit = headers[key]
            name = " ".join(p for p in (metric, sub) if p)
            parts.append(Padding(Text(f"{name}: {value} {unit}".rstrip()), (0, 0, 0, _INDENT)))
    return Group(*parts)


def print_candidates(
    data: ReportData, keys: Sequence[str] | None = None, console: Console | None = None, title: str | None = None
) -> None:
    """Print the candidates table (``keys``: the objectives when not given) and how the chosen one was ranked."""
    from rich.console import Console

    console = console or Console()
    keys = list(keys) if keys is not None else [o.key for o in data.objectives] or data.metric_keys()
    if title:
        console.print(title, style="bold", highlight=False)
    console.print(candidates_table(data, keys, console.width))
    if data.objectives:
        console.print(f"ranking: {data.ranking_rule}", highlight=False)
    if data.chosen_because:
        console.print(data.chosen_because, highlight=False)
    if data.tie_note:
        console.print(f"tie: {data.tie_note}", highlight=False)
