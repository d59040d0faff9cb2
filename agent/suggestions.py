"""Follow-up questions offered under an answer, one tap to ask (what users of MaxKB, Dify or
FastGPT expect): for a rules answer, the sections beside the cited one in its document; for a
figure, the data tool's natural next question about the same store and period. Worded so the
router and the planner read them as they read a person's question."""
from __future__ import annotations

MAX_SUGGESTIONS = 3

# The next question after each data tool, about the same store and period: (tool it leads to, wording).
_NEXT = {
    "store_sales": ("{period}{store}每天卖了多少", "{period}{store}热销前五", "{period}{store}几点最忙"),
    "channel_sales": ("{period}{store}每天卖了多少", "{period}{store}热销前五"),
    "period_compare": ("{period}{store}每天卖了多少", "{period}{store}热销前五"),
    "daily_trend": ("{period}{store}几点最忙", "{period}{store}热销前五"),
    "hourly_peak": ("{period}{store}每天卖了多少", "{period}{store}热销前五"),
    "top_products": ("{period}{store}每天卖了多少", "{period}{store}几点最忙"),
    "compare_stores": ("{period}各店每天营业额趋势", "{period}热销前五"),
    "product_sales": ("{product}还剩多少",),
    "product_daily": ("{period}{store}{product}卖了多少", "{product}还剩多少"),
}

# After a single day's figures (「今天几点最忙」): a day has no days to list, and the day's total
# is the natural next question where the answer was not already it.
_ONE_DAY_NEXT = {
    "store_sales": ("{period}{store}热销前五", "{period}{store}几点最忙"),
    "channel_sales": ("{period}{store}卖了多少", "{period}{store}热销前五"),
    "period_compare": ("{period}{store}热销前五", "{period}{store}几点最忙"),
    "hourly_peak": ("{period}{store}卖了多少", "{period}{store}热销前五"),
    "top_products": ("{period}{store}卖了多少", "{period}{store}几点最忙"),
    "compare_stores": ("{period}热销前五",),
}


def data_follow_ups(tool: str, params: dict) -> list[str]:
    period = (params.get("period") or {}).get("label", "") if isinstance(params.get("period"), dict) else str(params.get("period") or "")
    period = period.split("（", 1)[0]
    store = params.get("store") or ""
    store = "" if "、" in store or store in ("全部门店",) else store
    values = {"period": period, "store": store, "product": params.get("product") or ""}
    if not period and tool != "product_sales":
        return []
    asked = params.get("period") if isinstance(params.get("period"), dict) else {}
    one_day = bool(asked.get("start")) and asked.get("start") == asked.get("end")
    # 「今天几点最忙」 offered 「今天广州天河店每天卖了多少」.
    texts = _ONE_DAY_NEXT.get(tool, _NEXT.get(tool, ())) if one_day else _NEXT.get(tool, ())
    return [text.format(**values) for text in texts][:MAX_SUGGESTIONS]


def section_follow_ups(document_id: int, section_path: str, title: str) -> list[str]:
    from knowledge.questions import GENERIC_HEADINGS, clean_heading
    from knowledge.selectors import neighbour_sections

    out = []
    for path in neighbour_sections(document_id, section_path):
        heading = clean_heading(path.split(" > ")[-1])
        # 「适用范围」「目的」 beside a rule are parts of every SOP, not a next question
        if heading and heading != title and heading not in GENERIC_HEADINGS:
            out.append(f"{heading}有什么规定" if len(heading) <= 12 else heading)
    return out[:2]


def follow_ups(*, intent: str, tool: str | None, params: dict | None, citations: list[dict], refused: bool, question: str) -> list[str]:
    """Up to MAX_SUGGESTIONS follow-ups; none for a refusal (nothing to build on)."""
    if refused:
        return []
    out: list[str] = []
    if tool and params:
        out += data_follow_ups(tool, params)
    if citations and citations[0].get("document_id"):
        c = citations[0]
        out += section_follow_ups(c["document_id"], c["section_path"], c.get("document", ""))
    seen = {question.strip()}
    return [q for q in dict.fromkeys(out) if q not in seen][:MAX_SUGGESTIONS]
