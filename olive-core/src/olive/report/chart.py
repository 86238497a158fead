"""An inline SVG scatter plot of two objectives, with the Pareto front drawn and the input model marked.

Plain SVG elements and ``<title>`` tooltips: no script, no stylesheet or font from outside the file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

import attrs

WIDTH, HEIGHT = 680, 420
LEFT, RIGHT, TOP, BOTTOM = 76, 24, 20, 56


@attrs.frozen
class Point:
    model_id: str
    x: float
    y: float
    tooltip: str
    pareto: bool = False
    chosen: bool = False
    meets_goals: bool | None = None


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values (1, 2 or 5 times a power of ten) covering ``[low, high]``."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low]
    raw = (high - low) / max(count, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    start = math.ceil(low / step - 1e-9) * step
    ticks = []
    value = start
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def _tick(value: float) -> str:
    return f"{value:.4g}"


def _extent(values: Sequence[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    pad = (abs(low) * 0.05 or 1.0) if high == low else (high - low) * 0.08
    return low - pad, high + pad


def front_2d(points: Sequence[Point], x_higher: bool, y_higher: bool) -> list[Point]:
    """The points no other point beats on both plotted objectives, sorted by x."""

    def better_or_equal(a: Point, b: Point) -> bool:
        ax, bx = (a.x, b.x) if x_higher else (-a.x, -b.x)
        ay, by = (a.y, b.y) if y_higher else (-a.y, -b.y)
        return ax >= bx and ay >= by and (ax > bx or ay > by)

    front = [p for p in points if not any(better_or_equal(q, p) for q in points)]
    return sorted(front, key=lambda p: (p.x, p.y))


def scatter_svg(
    points: Sequence[Point],
    x_label: str,
    y_label: str,
    x_higher: bool,
    y_higher: bool,
    baseline: Point | None = None,
) -> str:
    """One ``<circle class="candidate ...">`` per point, the baseline as a square, and a dashed line along the 2-D
    front where it has two points or more (``class="front"``, drawn last)."""
    everything = [*points, *([baseline] if baseline else [])]
    x_low, x_high = _extent([p.x for p in everything])
    y_low, y_high = _extent([p.y for p in everything])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(value: float) -> float:
        return LEFT + (value - x_low) / (x_high - x_low) * plot_w

    def sy(value: float) -> float:
        return TOP + plot_h - (value - y_low) / (y_high - y_low) * plot_h

    parts = [
        f'<svg class="pareto-chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
        f'aria-label="{escape(y_label)} against {escape(x_label)}">',
        f'<rect class="plot-area" x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}"/>',
    ]
    for tick in nice_ticks(x_low, x_high):
        x = sx(tick)
        parts.append(f'<line class="grid" x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + plot_h}"/>')
        parts.append(
            f'<text class="tick" x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{_tick(tick)}</text>'
        )
    for tick in nice_ticks(y_low, y_high):
        y = sy(tick)
        parts.append(f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}"/>')
        parts.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_tick(tick)}</text>')
    x_dir = "higher is better" if x_higher else "lower is better"
    y_dir = "higher is better" if y_higher else "lower is better"
    parts.append(
        f'<text class="axis-label" x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 12}" text-anchor="middle">'
        f"{escape(x_label)} ({x_dir})</text>"
    )
    parts.append(
        f'<text class="axis-label" x="14" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {TOP + plot_h / 2:.1f})">{escape(y_label)} ({y_dir})</text>'
    )
    front = front_2d(points, x_higher, y_higher)
    if baseline is not None:
        bx, by = sx(baseline.x), sy(baseline.y)
        parts.append(
            f'<rect class="baseline" x="{bx - 6:.1f}" y="{by - 6:.1f}" width="12" height="12">'
            f"<title>{escape(baseline.tooltip)}</title></rect>"
        )
    # Dominated points first so the front is drawn on top of them.
    for point in sorted(points, key=lambda p: (p.pareto, p.chosen)):
        classes = ["candidate", "pareto" if point.pareto else "dominated"]
        if point.chosen:
            classes.append("chosen")
        if point.meets_goals is False:
            classes.append("missed-goals")
        cx, cy = sx(point.x), sy(point.y)
        if point.chosen:
            parts.append(f'<circle class="chosen-ring" cx="{cx:.1f}" cy="{cy:.1f}" r="10"/>')
        parts.append(
            f'<circle class="{" ".join(classes)}" cx="{cx:.1f}" cy="{cy:.1f}" r="5" data-model-id="'
            f'{escape(point.model_id)}"><title>{escape(point.tooltip)}</title></circle>'
        )
    if len(front) > 1:
        # Drawn over the points: under them, a front of nearby points is hidden entirely (a dash is 5 px, a point
        # 10 px across). It lets the pointer through to the points' tooltips.
        coords = " ".join(f"{sx(p.x):.1f},{sy(p.y):.1f}" for p in front)
        parts.append(f'<polyline class="front" points="{coords}"/>')
    parts.append("</svg>")
    return "\n".join(parts)
