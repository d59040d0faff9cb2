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


def _short(label: str, key: str) -> str:
    if column(key).kind == "date" and len(label) == 10:  # 2026-11-23 → 11-23
        return label[5:]
    return label


def _fmt_axis(value: float, kind: str) -> str:
    if kind == "money" and value >= 10000:
        return f"{value / 10000:.1f}万"
    return f"{value:,.0f}"


def bar_chart(rows: list[dict], chart: Chart, *, title: str) -> SafeString:
    values = [float(r.get(chart.value) or 0) for r in rows]
    labels = [str(r.get(chart.label, "")) for r in rows]
    peak = max(values) or 1.0
    value_col = column(chart.value)
    alt = f"{title}（{value_col.label}）：" + "；".join(f"{lab} {format_cell(chart.value, r)}" for lab, r in zip(labels, rows))
    parts: list[str] = []
    if chart.orientation == "horizontal":
        row_h, label_w, value_w = 22, 118, 74
        height = row_h * len(rows) + 4
        bar_room = WIDTH - label_w - value_w
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
        slot = (WIDTH - left * 2) / len(rows)
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
                parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{height - 6}" text-anchor="middle" font-size="{FONT - 1}">'
                             f'{escape(_short(lab, chart.label))}</text>')
        parts.append(f'<text x="{left}" y="{top - 3}" font-size="{FONT - 1}" class="val">最高 {escape(_fmt_axis(peak, value_col.kind))}</text>')
    svg = (
        f'<svg class="chart chart-{chart.orientation}" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{escape(alt)}" data-value-key="{chart.value}" xmlns="http://www.w3.org/2000/svg">'
        f'<desc>{escape(alt)}</desc>{"".join(parts)}</svg>'
    )
    return mark_safe(svg)
