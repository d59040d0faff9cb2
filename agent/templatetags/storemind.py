"""Template helpers for the chat page: clickable citations and readable trace details."""
import json
import re

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

register = template.Library()
_REF = re.compile(r"\[(D?\d+)\]")


@register.filter
def cite_links(answer: str, message_id) -> str:
    """[1] → link to source card 1, [D1] → link to data row D1 (escaped text otherwise)."""

    def link(m):
        ref = m.group(1)
        target = f"row-{message_id}-{ref}" if ref.startswith("D") else f"src-{message_id}-{ref}"
        kind = "data" if ref.startswith("D") else "doc"
        return f'<a href="#{target}" class="cite cite-{kind}" data-target="{target}">[{ref}]</a>'

    html = _REF.sub(link, escape(answer or ""))
    return mark_safe(html.replace("\n", "<br>"))


@register.filter
def pretty_json(value) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1, default=str)


@register.filter
def intent_label(intent: str) -> str:
    return {"policy": "制度", "data": "数据", "both": "制度+数据", "action": "操作", "out_of_scope": "超出范围"}.get(intent, intent)


@register.filter
def step_label(step: str) -> str:
    return {
        "route": "意图路由", "guards": "并行检索/查数", "retrieval_gate": "检索分闸门", "judge": "证据判定", "rewrite": "改写检索词",
        "retrieve_again": "重新检索", "select_round": "选用轮次", "answer": "生成回答", "refuse": "拒答", "propose": "生成提案",
        "offer_restock": "补货建议",
    }.get(step, step)


@register.filter
def row_cells(row: dict, columns) -> list:
    return [row.get(c, "") for c in columns] if columns else list(row.values())
