"""Pick a whitelisted ops tool for a question and fill its parameters.

The model never writes SQL: this module chooses among the tools in ops.tools and fills
store (whitelist resolver) and period (Chinese period parser). An unknown store or a
vague period becomes a clarifying question, never a zero.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date

from ops.models import Product
from ops.periods import PeriodError, cn_number, find_period
from ops.selectors import UnknownStore, find_store_in_text

PERIOD_TOOLS = {"store_sales", "top_products", "compare_stores", "hourly_peak"}
_PHONE = re.compile(r"(?<!\d)1[3-9]\d{9}(?!\d)")
_MEMBER_NO = re.compile(r"(?<![A-Za-z0-9])M\d{5}(?!\d)", re.IGNORECASE)
_TOP_N = re.compile(r"前\s*([0-9一二两三四五六七八九十]+)|top\s*(\d+)", re.IGNORECASE)


@dataclass
class DataPlan:
    tool: str | None
    params: dict = field(default_factory=dict)
    clarify: str | None = None
    reason: str = ""

    def as_dict(self) -> dict:
        return {"tool": self.tool, "params": self.params, "clarify": self.clarify, "reason": self.reason}


def choose_tool(question: str) -> tuple[str | None, str]:
    q = question.lower()
    if re.search(r"余额|储值.{0,4}(还有|多少)", q) and (_PHONE.search(q) or _MEMBER_NO.search(q) or "会员" in q):
        return "member_balance", "问会员储值余额"
    if re.search(r"库存|缺货|快没了|低于安全|还剩多少|剩多少|要补货|该补货|补什么货", q):
        return "low_stock", "问库存"
    if re.search(r"排行|热销|卖得最好|最畅销|卖最多|前\s*[0-9一二两三四五六七八九十]+|top\s*\d+|哪些.{0,4}(卖得好|好卖)", q):
        return "top_products", "问商品排行"
    if re.search(r"高峰|最忙|哪个时段|几点(最|人)多|时段", q):
        return "hourly_peak", "问高峰时段"
    if re.search(r"对比|比较|比一比|哪家店|哪个店|各店|各门店|门店排名|店排名", q):
        return "compare_stores", "门店对比"
    if re.search(r"卖了多少|卖得?(怎么样|如何)|营业额|销售额|营收|流水|业绩|客单价|订单数|多少单|几单", q):
        return "store_sales", "问营业额"
    return None, ""


def plan_data(question: str, *, today: date, previous: dict | None = None) -> DataPlan:
    """Choose the tool and its parameters; inherit from the previous turn for follow-ups
    such as 「那福田店呢」 (same tool and period, another store)."""
    previous = previous or {}
    tool, reason = choose_tool(question)
    inherited = False
    if tool is None and previous.get("tool"):
        tool, reason, inherited = previous["tool"], f"追问，沿用上一轮的工具 {previous['tool']}", True
    if tool is None:
        return DataPlan(None, clarify="想查哪项经营数据？可以问营业额、热销排行、门店对比、高峰时段、低库存或会员余额。", reason="没有匹配的数据工具")
    params: dict = {}
    prev_params = previous.get("params") or {}

    if tool == "member_balance":
        m = _PHONE.search(question) or _MEMBER_NO.search(question)
        if not m:
            return DataPlan(tool, clarify="请提供会员的手机号或会员号（如 M00012），我再查余额。", reason=reason)
        return DataPlan(tool, {"member": m.group(0).upper() if m.group(0)[0] in "mM" else m.group(0)}, reason=reason)

    if tool != "compare_stores":
        try:
            match = find_store_in_text(question)
        except UnknownStore as exc:
            return DataPlan(tool, clarify=exc.messages[0], reason=reason)
        if match is not None:
            params["store"] = match.store.name if match.store else None
        elif inherited and "store" in prev_params:
            params["store"] = prev_params["store"]
        else:
            params["store"] = None

    if tool in PERIOD_TOOLS:
        try:
            period = find_period(question, today)
        except PeriodError as exc:
            return DataPlan(tool, params, clarify=str(exc), reason=reason)
        if period is not None:
            params["period"] = {"label": period.label, "start": period.start.isoformat(), "end": period.end.isoformat()}
        elif inherited and prev_params.get("period"):
            params["period"] = prev_params["period"]
        else:
            return DataPlan(tool, params, clarify="请问要查哪段时间？比如 昨天、上周、本月、最近7天。", reason=reason)

    if tool == "top_products":
        m = _TOP_N.search(question)
        params["n"] = min(50, cn_number(m.group(1)) if m and m.group(1) else int(m.group(2)) if m else 5)
        for category in Product.Category.values:
            if category in question:
                params["category"] = category
                break
    if tool == "compare_stores":
        params["metric"] = "avg_ticket" if "客单价" in question else "orders" if re.search(r"订单|单数|多少单", question) else "revenue"
    return DataPlan(tool, params, reason=reason + ("（追问）" if inherited else ""))
