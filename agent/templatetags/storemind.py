"""Template helpers for the chat page: clickable citations and readable trace details."""
import dataclasses
import json
import re

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

from knowledge.rendering import TABLE_ROW as _TABLE_ROW
from knowledge.rendering import text_html

from ..router import SMALL_TALK_REASON

register = template.Library()
_REF = re.compile(r"\[(D?\d+)\]")


FOLD_ROWS = 8  # a data table longer than this is folded
CARD_COLUMNS = 5  # a data table wider than this is a card per row on a narrow screen


@register.filter
def cite_links(answer: str, message_id) -> str:
    """[1] → link to source card 1, [D1] → link to data row D1 (escaped text otherwise)."""

    def link(m):
        ref = m.group(1)
        target = f"row-{message_id}-{ref}" if ref.startswith("D") else f"src-{message_id}-{ref}"
        kind = "data" if ref.startswith("D") else "doc"
        return f'<a href="#{target}" class="cite cite-{kind}" data-target="{target}">[{ref}]</a>'

    def inline(text: str) -> str:
        return _REF.sub(link, escape(text))

    return text_html("\n".join(_cite_once_per_paragraph((answer or "").split("\n"))), inline)


_TRAILING_REF = re.compile(r"\[(D?\d+)\]\s*$")


def _cite_once_per_paragraph(lines: list[str]) -> list[str]:
    """Lines that each end citing the same source read with the citation once, at the end of
    their run (「[1]」 after every sentence of one section); the stored answer keeps every one."""
    out = list(lines)
    for i in range(len(out) - 1):
        here, after = _TRAILING_REF.search(out[i]), _TRAILING_REF.search(out[i + 1])
        if here and after and here.group(1) == after.group(1) and not _TABLE_ROW.match(out[i]) and not _TABLE_ROW.match(out[i + 1]):
            out[i] = out[i][:here.start()].rstrip()
    return out


@register.filter
def pretty_json(value) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1, default=str)


@register.filter
def intent_label(intent: str) -> str:
    return {"policy": "制度", "data": "数据", "both": "制度+数据", "action": "操作", "out_of_scope": "超出范围"}.get(intent, intent)


@register.filter
def step_label(step: str) -> str:
    return {
        "repair": "纠正同音错字", "route": "意图路由", "guards": "并行检索/查数", "retrieval_gate": "检索分闸门", "judge": "证据判定", "rewrite": "改写检索词",
        "retrieve_again": "重新检索", "select_round": "选用轮次", "answer": "生成回答", "refuse": "拒答", "propose": "生成提案",
        "pending_action": "接续待办操作",
        "offer_restock": "补货建议",
    }.get(step, step)


_PROGRESS = {
    "repair": "理解问题", "route": "理解问题", "guards": "查资料和数据", "retrieval_gate": "检查相关度", "judge": "核对依据", "rewrite": "换个说法再查",
    "retrieve_again": "重新查资料", "select_round": "挑选最好的依据", "answer": "写回答", "refuse": "确认无法回答",
    "propose": "生成提案", "pending_action": "接着上一步的操作", "offer_restock": "算补货建议",
}


@register.filter
def progress_label(step: str) -> str:
    """A finished pipeline step as staff read it while an async answer is being prepared."""
    return _PROGRESS.get(step, "处理中")


@register.filter
def row_cells(row: dict, columns) -> list:
    return [row.get(c, "") for c in columns] if columns else list(row.values())


# --- staff view: answers in plain Chinese ---------------------------------------------------

_REASON_PHRASES = {
    "怎么办": "问的是怎么处理", "能不能": "问的是能不能做", "规定": "问到了规定或流程", "细节": "问的是具体细节",
    "知识": "问的是产品或概念", "谁来做": "问的是该找谁", "算不算": "问的是怎么算", "库存规则": "问的是补货规则",
    "营业额": "问的是销售情况", "销量": "问的是销量", "订单指标": "问的是订单情况", "商品排行": "问的是商品排行",
    "卖得最好": "问的是什么卖得好", "哪家店": "要比较门店", "门店排名": "要比较门店", "门店对比": "要比较门店", "哪家最忙": "要比较哪家店最忙",
    "各店": "问的是各门店", "高峰时段": "问的是高峰时段", "库存告急": "问的是库存", "会员余额": "问的是会员余额",
    "每日趋势": "问的是每天的变化", "请求补货": "请我提补货", "申请补货": "请我提补货", "请求建工单": "请我建工单", "客诉请求登记": "请我登记客诉",
    "与门店无关": "与门店运营无关", "个人生活": "与门店运营无关", "代写与作业": "与门店运营无关", "薪资": "涉及个人薪资", "他人隐私": "涉及他人隐私",
}
_SIGNAL_NAME = re.compile(r"([^\s：:、；，（()—]+)×\d+")
_INTENT_HEADS = {
    "policy": "按规则问题处理", "data": "按数据问题处理", "both": "既查规则又查数据", "action": "按操作请求处理",
    "out_of_scope": "不在门店业务范围内",
}


def _signal_phrase(name: str) -> str:
    """A signal without its own phrase reads by the tool it points to (or its own Chinese name)."""
    from ops.tools import TOOLS

    from .. import vocabulary

    signal = next((s for s in vocabulary.SIGNALS if s.name == name), None)
    if signal is None or signal.topic or name == "时间范围":
        return ""
    if signal.tool in TOOLS:
        return f"问的是{TOOLS[signal.tool].title}"
    return f"涉及「{name}」"


@register.simple_tag
def answer_badge(m) -> dict:
    """The badge and the one-line reason a store employee reads (the raw routing reason is
    in the execution trace). A refused answer is never badged as a rules answer."""
    reason = m.route_reason or ""
    if m.refused:
        if m.intent == "out_of_scope" and "拒答阈值" not in reason:
            why = "与门店运营无关，没有查资料"
        else:
            why = "知识库里没有能回答这个问题的内容"
        return {"label": "未能回答", "css": "refused", "reason": why}
    if reason == SMALL_TALK_REASON:  # 「你好」 wore 「操作」, as if something had been done
        return {"label": "闲聊", "css": "chat", "reason": "寒暄或回应，没有查资料，也没有任何操作"}
    phrases = []
    for name in _SIGNAL_NAME.findall(reason):
        phrase = _REASON_PHRASES.get(name) or _signal_phrase(name)
        if phrase and phrase not in phrases:
            phrases.append(phrase)
    if "追问" in reason:
        phrases.insert(0, "接着上一轮追问")
    if not phrases and "LLM" in reason:
        phrases.append("由模型判断")
    head = _INTENT_HEADS.get(m.intent, "已处理")
    return {"label": intent_label(m.intent), "css": m.intent, "reason": f"{head}：{'、'.join(phrases[:2])}" if phrases else head}


def relevance_bounds() -> tuple[float, float]:
    """高/中/低 from the calibrated thresholds: below the stricter of the refusal and judge
    thresholds the section alone would not count as evidence (低); the top third of the
    range above it is 高."""
    from .. import pipeline

    floor = max(pipeline.thresholds())
    return floor, floor + (1.0 - floor) / 3


@register.simple_tag(takes_context=True)
def relevance(context, citation: dict) -> dict:
    if citation.get("taught"):
        return {"label": "高", "css": "high", "title": "店长已把这个问题关联到这一节"}
    score = citation.get("vector_score")
    if score is None:
        return {"label": "", "css": ""}
    if "relevance_bounds" not in context.render_context:
        context.render_context["relevance_bounds"] = relevance_bounds()
    low, high = context.render_context["relevance_bounds"]
    if score >= high:
        return {"label": "高", "css": "high"}
    if score >= low:
        return {"label": "中", "css": "mid"}
    return {"label": "低", "css": "low"}


@register.filter
def source_label(citation: dict) -> str:
    """「文档（v2）› 章节 › 小节 · 第 3 页」: the document named once (section paths start with its
    title), the version quoted (an old answer names the version it quoted), the page for a PDF or a slide deck."""
    parts = [p.strip() for p in (citation.get("section_path") or "").split(" > ") if p.strip()]
    document = citation.get("document") or ""
    if parts and (parts[0] == document or document.startswith(parts[0]) or parts[0].startswith(document)):
        parts = parts[1:]
    version = citation.get("version")
    head = f"{document}（v{version}）" if document and version else document
    label = " › ".join([head, *parts]) if head else " › ".join(parts)
    return f"{label} · 第 {citation['page']} 页" if citation.get("page") else label


def category_label(category: str) -> str:
    from ops.models import Product

    return Product.category_label(category)


def _describe_params(params: dict) -> str:
    bits = []
    if params.get("store"):
        bits.append(params["store"])
    period = params.get("period")
    if isinstance(period, dict):
        span = period.get("start", "") if period.get("start") == period.get("end") else f"{period.get('start', '')} 至 {period.get('end', '')}"
        bits.append(f"{period.get('label', '')}（{span}）" if period.get("label") else span)
    if params.get("category"):
        bits.append(category_label(params["category"]))
    if params.get("n"):
        bits.append(f"前 {params['n']} 名")
    return " · ".join(bits)


_BULLET = re.compile(r"^\s*- ")


@register.simple_tag
def answer_parts(content: str, view: dict | None) -> dict:
    """A long data answer read on a phone: its first line, the chart, then its rows folded
    (30 bullets came before the chart), then what follows them (the best and weakest day).
    Short answers and answers without a chart stay as they are (`rows` empty)."""
    lines = (content or "").split("\n")
    bullets = [i for i, line in enumerate(lines) if _BULLET.match(line)]
    if not view or not view.get("chart") or len(bullets) <= FOLD_ROWS:
        return {"head": content, "rows": "", "tail": "", "count": 0}
    first, last = bullets[0], bullets[-1]
    if any(not _BULLET.match(line) for line in lines[first:last + 1]):
        return {"head": content, "rows": "", "tail": "", "count": 0}
    return {"head": "\n".join(lines[:first]), "rows": "\n".join(lines[first:last + 1]),
            "tail": "\n".join(lines[last + 1:]), "count": len(bullets)}


@register.simple_tag
def data_view(m) -> dict | None:
    """The data rows of an answer as staff read them: Chinese headers and formatted cells
    from the tool's own column metadata (ops.tools), plus a chart where one helps."""
    from ops.tools import TOOLS, column, format_cell

    if not m.data:
        return None
    first = m.data[0]
    spec = TOOLS.get(first.get("tool"))
    keys = list(first.get("shown") or (spec.columns if spec and spec.columns else first.get("columns") or first["row"]))
    units = {column(k).unit_key for k in keys if column(k).unit_key}
    keys = [k for k in keys if k not in units]  # a unit is shown beside its quantity, not as a column
    rows = [{"ref": d["ref"], "cells": [{"text": format_cell(k, d["row"]), "kind": column(k).kind, "label": column(k).label} for k in keys]}
            for d in m.data]
    period = first.get("params", {}).get("period") or {}
    view = {
        "tool": first.get("tool"), "title": spec.title if spec else "数据", "scope": _describe_params(first.get("params") or {}),
        "headers": [{"key": k, "label": column(k).label, "kind": column(k).kind} for k in keys], "rows": rows,
        "start": period.get("start", "") if isinstance(period, dict) else "", "end": period.get("end", "") if isinstance(period, dict) else "",
        "chart": "",
        # A long table repeats the answer's lines (「上个月每天卖了多少」: 30 lines, the chart, then 30
        # rows): folded under them, opened by a [D…] link.
        "folded": len(rows) > FOLD_ROWS,
        # A wide table (the low-stock list's 8 columns hid 建议补货 off to the right) is a card per row on a phone.
        "cards": len(keys) > CARD_COLUMNS,
    }
    if spec and spec.chart and len(m.data) >= 2:
        from agent.charts import LINES_WIDTH, WIDE, WIDTH, bar_chart, line_chart, responsive

        rows = [d["row"] for d in m.data]
        chart = spec.chart
        if (first.get("params") or {}).get("by") == "revenue" and chart.value == "qty":  # bars as the ranking reads
            chart = dataclasses.replace(chart, value="revenue")
        if spec.chart.series and spec.chart.series in first["row"]:  # one line per store
            view["chart"] = responsive(line_chart, rows, chart, title=spec.title, narrow=LINES_WIDTH, wide=WIDE["lines"])
        else:
            view["chart"] = responsive(bar_chart, rows, chart, title=spec.title, narrow=WIDTH, wide=WIDE["bar"])
    return view


# --- inline SVG icons (no emoji: they render as boxes where no emoji font exists) ----------

_ICONS = {
    "menu": '<path d="M3 6h18M3 12h18M3 18h18"/>',
    "chats": '<path d="M4 5h16v10H8l-4 4z"/>',
    "plus": '<path d="M12 5v14M5 12h14"/>',
    "send": '<path d="M4 12l16-8-6 16-2-7z"/>',
    "up": '<path d="M7 11v9H4v-9zM7 11l4-7c1.5 0 2.5 1 2.2 2.6L12.5 10H19c1.2 0 2 1 1.8 2.2l-1.3 6.3c-.2 1-1 1.5-2 1.5H7"/>',
    "down": '<path d="M7 13V4H4v9zM7 13l4 7c1.5 0 2.5-1 2.2-2.6L12.5 14H19c1.2 0 2-1 1.8-2.2l-1.3-6.3c-.2-1-1-1.5-2-1.5H7"/>',
    "edit": '<path d="M4 20h4L19 9l-4-4L4 16zM14 6l4 4"/>',
    "trash": '<path d="M4 7h16M9 7V4h6v3M6 7l1 13h10l1-13"/>',
    "logout": '<path d="M10 4H5v16h5M14 8l4 4-4 4M18 12H9"/>',
    "close": '<path d="M6 6l12 12M18 6L6 18"/>',
    "copy": '<path d="M9 9h11v11H9zM5 15H4V4h11v1"/>',
    "again": '<path d="M20 11a8 8 0 1 0-2.3 5.7M20 4v7h-7"/>',
}


@register.simple_tag
def icon(name: str, label: str = "") -> str:
    """An inline SVG icon; decorative (aria-hidden) because a text label always goes with it."""
    return mark_safe(
        f'<svg class="icon" viewBox="0 0 24 24" width="18" height="18" fill="none" stroke="currentColor" stroke-width="2" '
        f'stroke-linecap="round" stroke-linejoin="round" aria-hidden="true">{_ICONS[name]}</svg>'
        + (f'<span class="icon-label">{escape(label)}</span>' if label else "")
    )


@register.filter
def relative_time(value) -> str:
    """刚刚 / 5 分钟前 / 3 小时前 / 昨天 14:02 / 11-20 (local time)."""
    from django.utils import timezone

    if not value:
        return ""
    now = timezone.localtime()
    local = timezone.localtime(value)
    seconds = (now - local).total_seconds()
    if seconds < 60:
        return "刚刚"
    if seconds < 3600:
        return f"{int(seconds // 60)} 分钟前"
    if local.date() == now.date():
        return f"{int(seconds // 3600)} 小时前"
    if (now.date() - local.date()).days == 1:
        return f"昨天 {local:%H:%M}"
    if local.year == now.year:
        return f"{local.month}月{local.day}日"
    return f"{local:%Y-%m-%d}"
