"""Pareto charts as static SVG text: throughput per GPU against latency or interactivity. No I/O.

- A point is on the frontier when no other point is at least as good on both axes and strictly
  better on one ("good" is lower latency, higher interactivity, higher throughput).
- Frontier points are filled and joined by a dashed step line; the others are hollow.
- An axis whose values span more than `LOG_SPAN` times is drawn on a log scale.
- Every text (labels, titles, legend) is XML-escaped; the SVG needs no script and no network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Literal
from xml.sax.saxutils import escape, quoteattr

Better = Literal["lower", "higher"]
LOG_SPAN = 20.0
WIDTH = 560                                       # small, so its text stays readable scaled to a phone
LEFT, RIGHT, TOP, PLOT_BOTTOM, LINE = 70, 16, 40, 290, 20   # the plot area; axis titles and the legend go below
PALETTE = ("#3f51b5", "#e65100", "#2e7d32", "#ad1457", "#00838f", "#6d4c41", "#5e35b1", "#9e9d24")


@dataclass(frozen=True)
class ChartPoint:
    series: str      # legend entry (a cell)
    label: str       # text beside the marker (a point, e.g. c16)
    x: float
    y: float


@dataclass(frozen=True)
class Axis:
    title: str
    better: Better


@dataclass(frozen=True)
class _Scale:
    lo: float
    hi: float
    log: bool
    start: float     # pixel of lo
    end: float       # pixel of hi

    def __call__(self, value: float) -> float:
        f: Callable[[float], float] = math.log10 if self.log else float
        span = f(self.hi) - f(self.lo)
        t = 0.5 if span == 0 else (f(value) - f(self.lo)) / span
        return self.start + t * (self.end - self.start)


def dominates(a: ChartPoint, b: ChartPoint, x_better: Better) -> bool:
    """True when `a` is at least as good as `b` on both axes and strictly better on one."""
    ax, bx = (a.x, b.x) if x_better == "higher" else (-a.x, -b.x)
    return ax >= bx and a.y >= b.y and (ax > bx or a.y > b.y)


def frontier(points: list[ChartPoint], x_better: Better) -> list[int]:
    """Indices of the non-dominated points, in input order."""
    return [i for i, p in enumerate(points) if not any(dominates(q, p, x_better) for q in points)]


def pareto_svg(points: list[ChartPoint], x: Axis, y: Axis, title: str) -> str:
    """A complete SVG document; an empty `points` list gives a chart that says so."""
    best = set(frontier(points, x.better))
    sx = _scale([p.x for p in points], LEFT, WIDTH - RIGHT)
    sy = _scale([p.y for p in points], PLOT_BOTTOM, TOP)
    series = list(dict.fromkeys(p.series for p in points))
    height = PLOT_BOTTOM + 62 + LINE * len(series) + 14
    parts = [_header(title, height), *_grid(sx, sy, x, y), _frontier_line(points, best, sx, sy, x.better)]
    for i, p in enumerate(points):
        parts.append(_marker(p, i in best, sx, sy, PALETTE[series.index(p.series) % len(PALETTE)]))
    if not points:
        parts.append(_text(WIDTH / 2, PLOT_BOTTOM / 2, "no measured points", "middle", "cb-empty"))
    parts += _legend(series, height)
    parts.append("</svg>")
    return "\n".join(p for p in parts if p) + "\n"


def _header(title: str, height: int) -> str:
    style = ("text{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:15px;fill:#222}"
             ".cb-title{font-size:16px;font-weight:600}.cb-tick{fill:#555;font-size:15px}"
             ".cb-grid{stroke:#e0e0e0}.cb-axis{stroke:#444}.cb-front{fill:none;stroke:#222;stroke-dasharray:5 4}")
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label={quoteattr(title)}>\n'
            f"<title>{escape(title)}</title>\n<style>{style}</style>\n"
            f'<rect width="{WIDTH}" height="{height}" fill="#fff"/>\n'
            + _text(8, 24, title, "start", "cb-title"))


def _scale(values: list[float], start: float, end: float) -> _Scale:
    if not values:
        return _Scale(0.0, 1.0, False, start, end)
    lo, hi = min(values), max(values)
    log = lo > 0 and hi / lo > LOG_SPAN
    if log:
        return _Scale(_log_bound(lo, down=True), _log_bound(hi, down=False), True, start, end)
    pad = 0.06 * ((hi - lo) or abs(hi) or 1.0)          # keep markers and labels off the frame
    lo, hi = (max(lo - pad, 0.0) if lo >= 0 else lo - pad), hi + pad
    step = _nice_step(hi - lo)
    return _Scale(math.floor(lo / step) * step, math.ceil(hi / step) * step, False, start, end)


def _log_bound(value: float, down: bool) -> float:
    """The nearest 1, 2 or 5 x 10^k at or below (`down`) or at or above `value`."""
    k = math.floor(math.log10(value))
    steps = [m * 10.0 ** e for e in (k - 1, k, k + 1) for m in (1, 2, 5)]
    return max(s for s in steps if s <= value) if down else min(s for s in steps if s >= value)


def _nice_step(span: float) -> float:
    raw = span / 5
    mag: float = 10 ** math.floor(math.log10(raw))  # int ** int is typed Any
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


def _ticks(s: _Scale) -> list[float]:
    if s.log:
        decades = range(math.floor(math.log10(s.lo)), math.ceil(math.log10(s.hi)) + 1)
        return [m * 10 ** d for d in decades for m in (1, 2, 5) if s.lo <= m * 10 ** d <= s.hi]
    step = _nice_step(s.hi - s.lo)
    count = round((s.hi - s.lo) / step)
    return [s.lo + k * step for k in range(count + 1)]


def _fmt(value: float) -> str:
    return f"{value / 1000:g}k" if abs(value) >= 1000 else f"{value:g}"


def _grid(sx: _Scale, sy: _Scale, x: Axis, y: Axis) -> list[str]:
    x0, x1, y0, y1 = LEFT, WIDTH - RIGHT, PLOT_BOTTOM, TOP
    out = []
    for t in _ticks(sx):
        px = sx(t)
        out.append(f'<line class="cb-grid" x1="{px:.1f}" y1="{y0}" x2="{px:.1f}" y2="{y1}"/>')
        out.append(_text(px, y0 + 18, _fmt(t), "middle", "cb-tick"))
    for t in _ticks(sy):
        py = sy(t)
        out.append(f'<line class="cb-grid" x1="{x0}" y1="{py:.1f}" x2="{x1}" y2="{py:.1f}"/>')
        out.append(_text(x0 - 6, py + 4, _fmt(t), "end", "cb-tick"))
    out.append(f'<path class="cb-axis" d="M{x0} {y1}V{y0}H{x1}" fill="none"/>')
    arrow = "← better" if x.better == "lower" else "better →"
    out.append(_text((x0 + x1) / 2, y0 + 40, f"{x.title}  ({arrow}{', log scale' if sx.log else ''})", "middle"))
    out.append(f'<text transform="translate(16 {(y0 + y1) / 2:.1f}) rotate(-90)" text-anchor="middle" class="cb-tick">'
               f"{escape(y.title)} (↑ better{', log' if sy.log else ''})</text>")
    return out


def _frontier_line(points: list[ChartPoint], best: set[int], sx: _Scale, sy: _Scale, x_better: Better) -> str:
    ordered = sorted((points[i] for i in best), key=lambda p: p.x, reverse=x_better == "higher")
    if len(ordered) < 2:
        return ""
    d = "M" + " L".join(f"{sx(p.x):.1f} {sy(p.y):.1f}" for p in ordered)
    return f'<path class="cb-front" d="{d}"/>'


def _marker(p: ChartPoint, on_front: bool, sx: _Scale, sy: _Scale, color: str) -> str:
    cx, cy = sx(p.x), sy(p.y)
    fill = color if on_front else "#fff"
    ring = ' stroke-width="2.5"' if on_front else ' stroke-width="1.5"'
    tip = f"{p.series} {p.label}: x={p.x:g}, y={p.y:g}" + (" (Pareto frontier)" if on_front else "")
    side = -1 if cx > WIDTH - RIGHT - 70 else 1          # the label beside the marker, on its left when the right edge is near
    return (f'<g class="{"cb-on-front" if on_front else "cb-off-front"}"><title>{escape(tip)}</title>'
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{6 if on_front else 4.5}" fill="{fill}" stroke="{color}"{ring}/>'
            + _text(cx + 8 * side, cy - 7, p.label + (" ★" if on_front else ""), "end" if side < 0 else "start") + "</g>")


def _legend(series: list[str], height: int) -> list[str]:
    out = []
    y = PLOT_BOTTOM + 62
    for i, name in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        out.append(f'<circle cx="14" cy="{y + i * LINE - 5}" r="6" fill="{color}"/>')
        out.append(_text(26, y + i * LINE, name, "start"))
    out.append(_text(8, height - 6, "filled ★ = Pareto frontier; hollow = dominated", "start", "cb-tick"))
    return out


def _text(x: float, y: float, text: str, anchor: str, cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{klass}>{escape(text)}</text>'
