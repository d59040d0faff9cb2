"""Small server-rendered SVG bar charts for data answers (no JS, no build step).

One bar per tool row; every bar carries its label and value as data attributes and a
<title>, and the whole chart has the numbers as its text alternative (aria-label), so a
screen reader, a test and a person see the same figures.
"""
from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from ops.tools import Chart, column, format_cell

WIDTH = 360
FONT = 12
LINES_WIDTH = 480  # a line per store needs more room than a bar per day
LINES_FONT = 15  # drawn at 480 and shown at a phone's 350 px: still ~11 px
# On a wide screen the same chart is drawn on a wider canvas (it filled half its card, its text
# scaled up); the page shows one or the other by the screen's width.
WIDE = {"bar": 640, "lines": 760}


def responsive(draw, rows: list[dict], chart: Chart, *, title: str, narrow: int, wide: int) -> SafeString:
    return mark_safe(f'<div class="chart-narrow">{draw(rows, chart, title=title, width=narrow)}</div>'
                     f'<div class="chart-wide">{draw(rows, chart, title=title, width=wide)}</div>')


def _short(label: str, key: str) -> str:
    if column(key).kind == "date" and len(label) == 10:  # 2026-11-23 → 11-23
        return label[5:]
    return label


def _fmt_axis(value: float, kind: str) -> str:
    if kind == "money" and value >= 10000:
        return f"{value / 10000:.1f}万"
    return f"{value:,.0f}"


def _axis_label(x: float, y: float, text: str, *, width: int = WIDTH, font: int = FONT - 1) -> str:
    """An x-axis label kept inside the chart: the first one was cut at the left edge (「.1-01」)."""
    half = len(text) * font * 0.3
    anchor, x = ("start", 1.0) if x - half < 1 else ("end", width - 1.0) if x + half > width - 1 else ("middle", x)
    return f'<text x="{x:.1f}" y="{y}" text-anchor="{anchor}" font-size="{font}">{escape(text)}</text>'


# One colour per series (a store), distinguishable for the common colour blindnesses.
SERIES_COLOURS = ("#8b1e3f", "#1f6f8b", "#d08c12", "#3b7d3b", "#6b4fa0", "#5f6b7a", "#b5485d", "#2a9d8f")


def line_chart(rows: list[dict], chart: Chart, *, title: str, width: int = LINES_WIDTH) -> SafeString:
    """One line per value of `chart.series` (a store) over the labels (the days), with a legend;
    each line carries its label and values as data attributes, the figure its numbers as text."""
    labels = list(dict.fromkeys(str(r.get(chart.label, "")) for r in rows))
    series = list(dict.fromkeys(str(r.get(chart.series, "")) for r in rows))
    value = {(str(r.get(chart.series, "")), str(r.get(chart.label, ""))): float(r.get(chart.value) or 0) for r in rows}
    peak = max(value.values(), default=0.0) or 1.0
    value_col = column(chart.value)
    legend_h = 22 * ((len(series) + 1) // 2)
    # 18 px each side: the first and last day's labels fit under their points.
    height, top, bottom, left = 190 + legend_h, 24 + legend_h, 26, 22
    plot_h = height - top - bottom
    step = (width - left * 2) / max(1, len(labels) - 1)
    parts: list[str] = []
    alt_parts = []
    for k, name in enumerate(series):
        colour = SERIES_COLOURS[k % len(SERIES_COLOURS)]
        points = [(left + i * step, top + plot_h - plot_h * value.get((name, lab), 0.0) / peak) for i, lab in enumerate(labels)]
        figures = [value.get((name, lab), 0.0) for lab in labels]
        parts.append(
            f'<polyline class="series" fill="none" stroke="{colour}" stroke-width="2" points="'
            + " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            + f'" data-series="{escape(name)}" data-values="{",".join(f"{v:g}" for v in figures)}"><title>{escape(name)}</title></polyline>'
        )
        lx, ly = 4 + (k % 2) * (width / 2), 20 + 22 * (k // 2)
        parts.append(f'<rect x="{lx:.1f}" y="{ly - 10}" width="14" height="5" fill="{colour}"/>'
                     f'<text x="{lx + 19:.1f}" y="{ly - 3}" font-size="{LINES_FONT}" class="legend">{escape(name)}</text>')
        alt_parts.append(f"{name}：" + "、".join(f"{_short(lab, chart.label)} {format_cell(chart.value, {chart.value: value.get((name, lab), 0.0)})}"
                                                for lab in labels))
    every = 1 if len(labels) <= 8 else (len(labels) + 7) // 8
    for i, lab in enumerate(labels):
        if i % every == 0:
            parts.append(_axis_label(left + i * step, height - 6, _short(lab, chart.label), width=width, font=LINES_FONT - 1))
    parts.append(f'<text x="{left}" y="{top - 3}" font-size="{LINES_FONT - 1}" class="val">最高 {escape(_fmt_axis(peak, value_col.kind))}</text>')
    alt = f"{title}（{value_col.label}，每家门店一条线）：" + "；".join(alt_parts)
    return mark_safe(
        f'<svg class="chart chart-lines" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(alt)}" '
        f'data-value-key="{chart.value}" xmlns="http://www.w3.org/2000/svg"><desc>{escape(alt)}</desc>{"".join(parts)}</svg>'
    )


def bar_chart(rows: list[dict], chart: Chart, *, title: str, width: int = WIDTH) -> SafeString:
    values = [float(r.get(chart.value) or 0) for r in rows]
    labels = [str(r.get(chart.label, "")) for r in rows]
    peak = max(values) or 1.0
    value_col = column(chart.value)
    alt = f"{title}（{value_col.label}）：" + "；".join(f"{lab} {format_cell(chart.value, r)}" for lab, r in zip(labels, rows))
    parts: list[str] = []
    if chart.orientation == "horizontal":
        row_h, label_w, value_w = 22, 118, 74
        height = row_h * len(rows) + 4
        bar_room = width - label_w - value_w
        for i, (lab, val, r) in enumerate(zip(labels, values, rows)):
            y = 2 + i * row_h
            w = max(1.0, bar_room * val / peak)
            name = lab if len(lab) <= 9 else lab[:8] + "…"
            parts.append(
                f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end" font-size="{FONT}">{escape(name)}</text>'
                f'<rect class="bar" x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row_h - 7}" rx="2" '
                f'data-label="{escape(lab)}" data-value="{val:g}"><title>{escape(lab)}：{escape(format_cell(chart.value, r))}</title></rect>'
                f'<text x="{label_w + w + 4:.1f}" y="{y + 15}" font-size="{FONT}" class="val">{escape(format_cell(chart.value, r))}</text>'
            )
    else:
        height, top, bottom, left = 150, 14, 22, 4
        plot_h = height - top - bottom
        slot = (width - left * 2) / len(rows)
        bar_w = max(2.0, slot * 0.7)
        every = 1 if len(rows) <= 12 else (len(rows) + 11) // 12
        for i, (lab, val, r) in enumerate(zip(labels, values, rows)):
            h = plot_h * val / peak
            x = left + i * slot + (slot - bar_w) / 2
            y = top + plot_h - h
            parts.append(
                f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{bar_w:.1f}" height="{max(h, 0.5):.1f}" rx="2" '
                f'data-label="{escape(lab)}" data-value="{val:g}"><title>{escape(lab)}：{escape(format_cell(chart.value, r))}</title></rect>'
            )
            if i % every == 0:
                parts.append(_axis_label(x + bar_w / 2, height - 6, _short(lab, chart.label), width=width))
        parts.append(f'<text x="{left}" y="{top - 3}" font-size="{FONT - 1}" class="val">最高 {escape(_fmt_axis(peak, value_col.kind))}</text>')
    svg = (
        f'<svg class="chart chart-{chart.orientation}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(alt)}" data-value-key="{chart.value}" xmlns="http://www.w3.org/2000/svg">'
        f'<desc>{escape(alt)}</desc>{"".join(parts)}</svg>'
    )
    return mark_safe(svg)
