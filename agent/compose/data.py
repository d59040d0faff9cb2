"""A data answer in prose: the tool's summary, a line per row (each tool's own row sentence), and
what the question asked of the rows (the best day, the store that sold most, a daily average)."""
from __future__ import annotations

import re
from datetime import date

from ops.tools import TOOLS, ToolResult, column, format_cell

from .. import vocabulary as vocab
from .sources import Sources


def _labelled_row(row: dict) -> str:
    """Any tool without its own sentence: 「门店 广州天河店，营业额 ¥1.00」 from the column metadata."""
    return "，".join(f"{column(k).label} {format_cell(k, row)}" for k in row if k != "unit")


def row_sentence(tool: str):
    """How one row of this tool reads in prose: the tool's own sentence, else its column labels."""
    spec = TOOLS.get(tool)
    return spec.row_sentence if spec and spec.row_sentence else _labelled_row


def row_key(tool: str, row: dict) -> str:
    """The value that identifies a row in prose (guard 3 looks for it)."""
    spec = TOOLS.get(tool)
    if spec and spec.row_key:  # one product, a row per store: the store
        return str(row[spec.row_key])
    for key in ("product", "store", "hour", "date", "member", "channel", "period"):
        if key in row:
            return str(row[key])
    return ""


def _per_store_trend_lines(sources: Sources) -> list[str]:
    lines = []
    for store in dict.fromkeys(d["row"]["store"] for d in sources.data):
        mine = [d for d in sources.data if d["row"]["store"] == store]
        if not any(d["row"]["orders"] for d in mine):
            lines.append(f"- {store}：没有已支付订单 [{mine[0]['ref']}]")
            continue
        best = max(mine, key=lambda d: d["row"]["revenue"])
        worst = min(mine, key=lambda d: d["row"]["revenue"])
        total = sum(d["row"]["revenue"] for d in mine)
        lines.append(f"- {store}：合计 ¥{total:,.2f}，{sum(d['row']['orders'] for d in mine):,} 单；"
                     f"最高 {best['row']['date']}（{best['row']['weekday']}）¥{best['row']['revenue']:,.2f} [{best['ref']}]，"
                     f"最低 {worst['row']['date']}（{worst['row']['weekday']}）¥{worst['row']['revenue']:,.2f} [{worst['ref']}]")
    return lines


def _lead(tool_result: ToolResult, sources: Sources, question: str) -> str:
    """「上周天河店的营业额：…」 leads into the rows; a summary that is one sentence (a member's
    balance, the busiest hours) stays as it is. 「上个月外卖卖了多少」: that channel's figure first."""
    summary = tool_result.summary
    lead = summary.split("：")[0] + "：" if tool_result.rows and "：" in summary else summary
    if tool_result.tool == "channel_sales":
        asked = [d for d in sources.data if d["row"]["channel"] in question]
        if len(asked) == 1:
            lead = lead.removesuffix("：").removesuffix(" 按渠道") + f" {row_sentence('channel_sales')(asked[0]['row'])} [{asked[0]['ref']}]。各渠道："
    return lead


def _best_and_weakest_day(r: ToolResult, sources: Sources, question: str, store_named: bool) -> str | None:
    # 「上周哪天生意最好」: the best and the weakest day, not only the list
    if r.tool == "product_daily" and len(sources.data) >= 2 and any(d["row"]["qty"] for d in sources.data):
        most = max(sources.data, key=lambda d: d["row"]["qty"])
        least = min(sources.data, key=lambda d: d["row"]["qty"])
        # The tool's own total (its summary: 「…每天的销量：合计 12瓶，销售额 ¥1,234.00；最多…」), not a second sum here.
        total = r.summary.split("：", 1)[-1].split("；", 1)[0] + "（只计已支付订单）；"
        return (total + f"卖得最多的是 {most['row']['date']}（{most['row']['weekday']}）{most['row']['qty']:,}{most['row']['unit']} [{most['ref']}]，"
                f"最少的是 {least['row']['date']}（{least['row']['weekday']}）{least['row']['qty']:,}{least['row']['unit']} [{least['ref']}]。")
    if r.tool != "daily_trend" or len(sources.data) < 2 or not any(d["row"]["orders"] for d in sources.data):
        return None
    best = max(sources.data, key=lambda d: d["row"]["revenue"])
    worst = min(sources.data, key=lambda d: d["row"]["revenue"])
    return (f"营业额最高的是 {best['row']['date']}（{best['row']['weekday']}）¥{best['row']['revenue']:,.2f} [{best['ref']}]，"
            f"最低的是 {worst['row']['date']}（{worst['row']['weekday']}）¥{worst['row']['revenue']:,.2f} [{worst['ref']}]。")


def _the_store_that_sold_most(r: ToolResult, sources: Sources, question: str, store_named: bool) -> str | None:
    # 「上周哪家店科罗娜卖得最多」: the store that sold most, not only the list in store order
    if r.tool != "product_sales" or len(sources.data) < 2 or not vocab.WHICH_STORE.search(question) \
            or not any(d["row"]["qty"] for d in sources.data):
        return None
    best = max(sources.data, key=lambda d: d["row"]["qty"])
    return f"卖得最多的是{best['row']['store']}：{best['row']['qty']:,}{best['row']['unit']} [{best['ref']}]。"


def _the_change(r: ToolResult, sources: Sources, question: str, store_named: bool) -> str | None:
    return r.summary.split("；", 1)[-1] if r.tool == "period_compare" else None  # after both periods' figures


def _daily_average(r: ToolResult, sources: Sources, question: str, store_named: bool) -> str | None:
    # 「最近7天日均营业额多少」
    if r.tool != "store_sales" or "日均" not in question or not (period := r.params.get("period")):
        return None
    days = (date.fromisoformat(period["end"]) - date.fromisoformat(period["start"])).days + 1
    revenue = sum(d["row"]["revenue"] for d in sources.data)
    orders = sum(d["row"]["orders"] for d in sources.data)
    return f"{days} 天日均营业额 ¥{revenue / days:,.2f}，日均 {orders / days:.1f} 单。"


def _refunds_in_one_line(r: ToolResult, sources: Sources, question: str, store_named: bool) -> str | None:
    # 「昨天退款了几单」: the refunds in one line
    return "合计" + r.summary.rsplit("；", 1)[-1] if r.tool == "channel_sales" and r.rows else None


def _the_total(r: ToolResult, sources: Sources, question: str, store_named: bool) -> str | None:
    if r.tool in ("store_sales", "product_sales") and len(r.rows) > 1 and "：" in r.summary:
        return r.summary.split("：", 1)[-1].replace("（只计已支付订单）", "（合计，只计已支付订单）")
    return None


def _category_total(r: ToolResult, sources: Sources, question: str, store_named: bool) -> str | None:
    # 「上周威士忌卖了多少」: every product of the category that sold, and what they came to together.
    if r.tool != "top_products" or not r.params.get("category") or not r.rows or len(r.rows) >= int(r.params.get("n") or 0):
        return None
    return f"合计：{len(r.rows)} 款，销售额 ¥{sum(row['revenue'] for row in r.rows):,.2f}。"


def _only_store_you_see(r: ToolResult, sources: Sources, question: str, store_named: bool) -> str | None:
    # Only when no store was named: asked for every store, the one row is all the asker may see
    # (「天河店上周卖了多少，占全公司多少」 from head office named one store on purpose). 「四家店上周
    # 各卖了多少」 from a one-store manager showed that store alone, as if the chain had one.
    if r.tool in ("store_sales", "product_sales") and len(r.rows) == 1 and not store_named \
            and (vocab.ALL_STORES_ASKED.search(question) or vocab.WHICH_STORE.search(question)):
        return f"你能查看的门店只有{r.rows[0]['store']}；其他门店的数据请找总部。"
    return None


def _the_usual_busy_hours(r: ToolResult, sources: Sources, question: str, store_named: bool) -> str | None:
    # 「今天几点最忙」 at 14:00, before the bar opens: 「没有已支付订单」 and nothing else to go on.
    period = r.params.get("period") or {}
    if r.tool != "hourly_peak" or r.rows or period.get("start") != period.get("end") or not str(period.get("label", "")).startswith("今天"):
        return None
    return "要看平时几点最忙，可以问「一般几点最忙」（按最近四周统计）。"


# What the question asked of the rows, said after them, in this order; each line only when it applies.
AFTER_THE_ROWS = (_best_and_weakest_day, _the_store_that_sold_most, _the_change, _daily_average, _refunds_in_one_line,
                  _the_total, _category_total, _only_store_you_see, _the_usual_busy_hours)


def extractive_data_answer(tool_result: ToolResult, sources: Sources, question: str = "", *, store_named: bool = False) -> str:
    """`store_named`: the question named its store (the plan's, not the tool's resolved scope)."""
    lines = [_lead(tool_result, sources, question)]
    if tool_result.tool == "daily_trend" and "store" in tool_result.columns:
        # A series per store (head office's 「各店每天营业额趋势」): per store its total and its best
        # and weakest day; every day of every store is in the chart and the table below.
        return "\n".join(lines + _per_store_trend_lines(sources))
    fmt = row_sentence(tool_result.tool)
    after = [line for add in AFTER_THE_ROWS if (line := add(tool_result, sources, question, store_named)) is not None]
    # 「上个月哪天最好」: the day asked for first, then the thirty days it was read from (the answer
    # came after every one of them).
    best_day = _best_and_weakest_day(tool_result, sources, question, store_named) if WHICH_DAY.search(question) else None
    if best_day in after:
        after.remove(best_day)
        lines.append(best_day)
    if len(sources.data) == 1 and lines[0] == tool_result.summary and row_key(tool_result.tool, sources.data[0]["row"]) in lines[0]:
        # A one-sentence summary of the one row (a member's balance) already says it: cited, not said twice.
        lines[0] = f"{lines[0]} [{sources.data[0]['ref']}]"
    else:
        lines += [f"- {fmt(d['row'])} [{d['ref']}]" for d in sources.data]
    return "\n".join(lines + after)


WHICH_DAY = re.compile(r"哪天|哪一天|哪几天|星期几|周几|礼拜几")
