"""Pick a whitelisted ops tool for a question and fill its parameters.

The model never writes SQL: this module chooses among the tools in ops.tools by the shared
signal table (agent/vocabulary.py, the router reads the same one) and fills store (store list
and aliases only) and period (Chinese period parser). An unknown store or a vague period
becomes a clarifying question, never a zero.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta

from ops.models import Product
from ops.periods import (
    SAME_TIME_BEFORE,
    Period,
    PeriodError,
    cn_number,
    find_period,
    find_periods,
    is_so_far,
    names_two_periods,
    previous_period,
    same_time_before,
)
from ops.selectors import (
    UnknownStore,
    city_in_text,
    find_product_in_text,
    find_store_in_text,
    find_stores_in_text,
    known_products_text,
    products_named_in_text,
)

from . import vocabulary as vocab
from .vocabulary import (
    CHANNEL_SALES,
    COMPARE_STORES,
    LOW_STOCK,
    MEMBER_BALANCE,
    PERIOD_COMPARE,
    PRODUCT_SALES,
    PRODUCT_STOCK,
    STORE_SALES,
    TOP_PRODUCTS,
)

PERIOD_TOOLS = {"store_sales", "top_products", "compare_stores", "hourly_peak", "daily_trend", "product_sales", "channel_sales",
                "period_compare"}
HOURLY_PEAK = "hourly_peak"
# 「一般几点最忙」 with no period: the usual day over the last four whole weeks.
PEAK_DEFAULT_DAYS = 28
TYPICALLY = re.compile(r"一般|平时|通常|平常|往常|一向|向来|通常来说")
_PHONE = re.compile(r"(?<!\d)1[3-9]\d{9}(?!\d)")
_MEMBER_NO = re.compile(r"(?<![A-Za-z0-9])M\d{5}(?!\d)", re.IGNORECASE)
_N = r"([0-9一二两三四五六七八九十]+)"
_TOP_N = (
    re.compile(rf"前\s*{_N}{vocab.NOT_A_PERIOD}|top\s*(\d+)", re.IGNORECASE),  # 「前一周」「前10天」 are periods
    re.compile(rf"最(?:好|多|火|畅销)的?\s*{_N}\s*(?:个|款|样|种|名|位)"),
    re.compile(rf"{_N}\s*(?:个|款|样|种)[^，。？！]{{0,6}}最(?:好|多|火)"),
)
_THE_ONE_BEFORE = re.compile(r"^(那么?|那)?\s*(再往前|往前|再前|前)\s*(一|1)\s*(个)?(周|星期|礼拜|天|日|月)")
_FIRST = re.compile(r"第一(?!周|天|次|季度)")


@dataclass
class DataPlan:
    tool: str | None
    params: dict = field(default_factory=dict)
    clarify: str | None = None
    reason: str = ""
    store_words: str = ""  # how the question named the store (「福田店」), for messages that echo it
    note: str = ""  # said after the figures: what the answer could not do as asked

    def as_dict(self) -> dict:
        return {"tool": self.tool, "params": self.params, "clarify": self.clarify, "reason": self.reason}


# Something meant as a member key that is not one: 「M1001」「M0001」, 「尾号1234」, a short number.
_MALFORMED_KEY = re.compile(r"(?<![A-Za-z0-9])[Mm]\d{1,4}(?!\d)|(?<![A-Za-z0-9])[Mm]\d{6,}|尾号|(?<!\d)1\d{5,9}(?!\d)")


def choose_tool(question: str) -> tuple[str | None, str]:
    """The tool whose table entries weigh most in the question; the reason names them."""
    hits = vocab.match(question)
    scores = vocab.tool_scores(hits)
    if not (_PHONE.search(question) or _MEMBER_NO.search(question)):
        if len(scores) > 1:  # a balance needs a phone number or a member number: another tool fits better
            scores.pop(MEMBER_BALANCE, None)
    elif MEMBER_BALANCE in scores:
        scores[MEMBER_BALANCE] += 10  # a member key plus a balance word leaves no doubt
    extra = ""
    if len(find_stores_in_text(question)) >= 2:
        scores[COMPARE_STORES] = scores.get(COMPARE_STORES, 0) + 3
        extra = "、两家以上门店×1"
    tool = vocab.best_tool(scores)
    if tool is None:
        return None, ""
    entries = "、".join(h.label() for h in hits if h.signal.tool == tool)
    return tool, f"{tool}：{entries}{extra}（{scores[tool]} 分" + (f"，其他 {', '.join(f'{t} {s}' for t, s in scores.items() if t != tool)}" if len(scores) > 1 else "") + "）"


def top_n(question: str) -> int:
    for pattern in _TOP_N:
        m = pattern.search(question)
        if m:
            raw = next(g for g in m.groups() if g)
            return max(1, min(50, cn_number(raw)))
    return 1 if _FIRST.search(question) else 5


SHORT_FOLLOW_UP = 12  # characters: a question this short right after a data answer keeps its period and store


def _cannot_compare(tool: str, what: str, shown: str, before: str, now: str) -> str:
    from ops.tools import TOOLS

    return (f"{TOOLS[tool].title}不能把{what}放在一起比：上面是{shown}的，{before}的在上一条回答里。"
            f"营业额和订单数可以直接比，比如「{before}跟{now}比」。")


def compared_store(question: str) -> str | None:
    """「跟福田比」「和福田店比呢」: a short follow-up that sets one named store beside the last answer's
    (the words it was named with). The router and the planner both ask this."""
    if len(question.strip()) > SHORT_FOLLOW_UP or not vocab.STORES_COMPARED.search(question):
        return None
    named = find_stores_in_text(question)
    return named[0][0] if len(named) == 1 else None


def _names_a_period(question: str, today: date) -> bool:
    try:
        return bool(find_periods(question, today))
    except PeriodError:
        return True  # a period was said, only not one that parses


def plan_data(question: str, *, today: date, previous: dict | None = None) -> DataPlan:
    """Choose the tool and its parameters; inherit from the previous turn for follow-ups
    such as 「那福田店呢」 (same tool and period, another store). A period before the first
    recorded sale is bounded by the tool (ops.tools), for chat, API and MCP alike."""
    previous = previous or {}
    tool, reason = choose_tool(question)
    if tool is None and vocab.STOCK_LEFT.search(question) and find_product_in_text(question):
        tool, reason = LOW_STOCK, "商品名 + 还有多少（库存）"  # becomes product_stock below
    if tool is None and vocab.FIGURE_COMPARE.search(question) and names_two_periods(question, today):
        tool, reason = STORE_SALES, "两段时间的营业额对比（没有指明指标时按营业额）"  # 「这周跟上周比怎么样」
    inherited = False
    prev_params = previous.get("params") or {}
    compared_with: list[str] | None = None
    other_store = compared_store(question) if tool is None and previous.get("tool") else None
    if other_store and previous["tool"] in (STORE_SALES, COMPARE_STORES, PERIOD_COMPARE):
        # 「上周卖了多少」 → 「跟福田比」 (answered from the membership rules): the store just asked
        # about against the one named now; every store in scope when the last answer covered them all.
        tool, reason = COMPARE_STORES, f"追问，上一轮的门店与「{other_store}」对比"
        if prev_params.get("store"):
            compared_with = [prev_params["store"], other_store]
    if tool is None and previous.get("tool"):
        tool, reason, inherited = previous["tool"], f"追问，沿用上一轮的工具 {previous['tool']}", True
    # 「上周卖了多少」 → 「外卖占多少」: a short question right after a data answer that names another
    # figure but no period or store keeps the previous turn's (it asked for the period again).
    # One that states its own period is a question of its own and keeps nothing: 「上周外卖卖了多少」
    # after a 福田 question was answered for 福田 alone.
    carried = inherited or (bool(previous.get("tool")) and len(question.strip()) <= SHORT_FOLLOW_UP
                            and not _names_a_period(question, today))
    if tool is None and (named := find_product_in_text(question)):
        product = named[1]
        return DataPlan(None, clarify=f"想查{product}的哪一项？可以问「{named[0]}还剩多少」（库存）、「{named[0]}上周卖了多少」（销量）；"
                                      "问制度或酒水知识，请把情况说完整一些。", reason=f"只说了商品名「{named[0]}」")
    if tool is None:
        return DataPlan(None, clarify="想查哪项经营数据？可以问营业额、每日趋势、热销排行、门店对比、高峰时段、低库存或会员余额。", reason="没有匹配的数据工具")
    params: dict = {}
    store_words = ""
    # A sales question that names a product asks how much of *it* sold (「科罗娜卖了几瓶」), and a
    # follow-up naming another product (「那百威呢」) asks the same of that one.
    if inherited and tool not in (STORE_SALES, PRODUCT_SALES, LOW_STOCK, PRODUCT_STOCK) and (named := find_product_in_text(question)):
        # 「几点最忙」 → 「那科罗娜呢」: the tool counts orders per store, not per product. Say so.
        from ops.tools import TOOLS

        return DataPlan(tool, clarify=f"{TOOLS[tool].title}只按门店统计，不能按商品拆分。"
                                      f"可以问「{named[0]}卖了多少」看这个商品的销量。", reason=reason)
    product = find_product_in_text(question) if tool in (STORE_SALES, PRODUCT_SALES, LOW_STOCK, PRODUCT_STOCK, COMPARE_STORES) else None
    if tool == COMPARE_STORES and product and not vocab.CHANNEL_WORDS.search(question):
        # 「上周哪家店科罗娜卖得最多」 was the stores' whole revenue ranked, 科罗娜 dropped: it is that
        # product's sales in every store the asker may see.
        tool, reason = PRODUCT_SALES, f"{PRODUCT_SALES}：各门店的商品「{product[0]}」+ " + reason
    if product and len(named := products_named_in_text(question)) > 1:
        # 「青岛和科罗娜还剩多少」 answered for 科罗娜 alone, 青岛 silently dropped: one product a question.
        what, example = ("库存", "还剩多少") if tool in (LOW_STOCK, PRODUCT_STOCK) else ("销量", "卖了多少")
        return DataPlan(tool, clarify=f"你问到了{'、'.join(named)}。{what}一次查一个商品，请分开问，比如「{named[0]}{example}」。",
                        reason=reason)
    compared: list = []
    defaulted = ""  # a period chosen for the asker, said in the answer
    if tool in (STORE_SALES, COMPARE_STORES) and not product and len(find_stores_in_text(question)) < 2 \
            and vocab.PERIOD_CHANGE.search(question):
        # 「上周跟上上周比涨了还是跌了」: two periods side by side; one period and 环比 / 涨了还是跌了:
        # it against the one before it. (Two stores and 对比 stay a store comparison.)
        periods = find_periods(question, today)
        same_time = SAME_TIME_BEFORE.search(question)
        if len(periods) == 1 and same_time:
            # 「这周跟上周同期比」「今天跟上周同期比」: 「同期」 is the named period's own days, earlier
            # (it was declined as unrelated to the store, 「上周同期」 alone being no period).
            compared = [periods[0], same_time_before(periods[0], same_time.group(1))]
        elif len(periods) >= 2:  # the later one against the earlier one, however they were said
            compared = sorted(periods[:2], key=lambda p: p.start, reverse=True)
            if is_so_far(compared[0]) and compared[1].start == previous_period(compared[0]).start \
                    and not compared[1].label.endswith("同期"):
                # 「这周比上周」: three days against last week's same three. Not when 同期 was said: 「上个月同期
                # 跟这个月比」 on the 30th was compared with the whole of October.
                compared[1] = previous_period(compared[0])
        elif len(periods) == 1 and vocab.CHANGE_FROM_BEFORE.search(question):
            compared = [periods[0], previous_period(periods[0])]
        elif len(periods) == 1 and inherited and (before := prev_params.get("period")):
            # 「上周营业额多少」 → 「跟上上周比呢」: the period just asked about against the one named now
            asked = Period(date.fromisoformat(before["start"]), date.fromisoformat(before["end"]), before["label"])
            if (asked.start, asked.end) != (periods[0].start, periods[0].end):
                compared = sorted([asked, periods[0]], key=lambda p: p.start, reverse=True)
        if compared and (tool == COMPARE_STORES or vocab.ACROSS_STORES.search(question)):
            # 「哪家店上周环比涨得最多」: a change per store is not a tool yet; one total would drop the stores.
            return DataPlan(COMPARE_STORES, clarify="各门店的环比还不能一次列出。可以一家一家问，比如「天河店上周跟上上周比」，"
                                                    "或者问「上周各店对比」看各店的排名。", reason=reason)
        if compared:
            tool, reason = PERIOD_COMPARE, f"{PERIOD_COMPARE}：{compared[0].label} 对比 {compared[1].label} + " + reason
    if tool == TOP_PRODUCTS and "渠道" in question:  # 「上个月哪个渠道卖得最好」: channels, not products
        tool, reason = CHANNEL_SALES, f"{CHANNEL_SALES}：问的是渠道 + " + reason
    if tool == COMPARE_STORES and (channel := vocab.CHANNEL_WORDS.search(question)):
        if vocab.SHARE.search(question) and not (vocab.ACROSS_STORES.search(question) or len(find_stores_in_text(question)) >= 2):
            tool, reason = CHANNEL_SALES, f"{CHANNEL_SALES}：「{channel.group(0)}」的占比 + " + reason  # 「上周外卖占比多少」
        else:  # 「上周各店外卖销售额对比」「哪家店退款最多」 (or 「那外卖呢」 after a ranking): not split by channel
            example = "退款了几单" if channel.group(0).startswith("退") else f"{channel.group(0)}卖了多少"
            return DataPlan(tool, clarify=f"门店对比按全部渠道的已支付订单统计，还不能按「{channel.group(0)}」拆分。"
                                          f"可以一家一家问，比如「上周天河店{example}」。", reason=reason)
    if tool == STORE_SALES and not product and (channel := vocab.CHANNEL_WORDS.search(question)):
        tool, reason = CHANNEL_SALES, f"{CHANNEL_SALES}：「{channel.group(0)}」按渠道 + " + reason
    if tool == LOW_STOCK and product:  # 「黑牌还剩几瓶」: that product's stock, whatever its level
        tool, reason = PRODUCT_STOCK, f"{PRODUCT_STOCK}：商品「{product[0]}」+ " + reason
    if tool == STORE_SALES and (product or any(h.signal.name == vocab.COUNTED_SALES for h in vocab.match(question))):
        # Counted in bottles or glasses (「嗨棒卖了多少杯」) is a product's sales even when the
        # product is not one we sell: ask which, never answer with the store's revenue.
        tool, reason = PRODUCT_SALES, f"{PRODUCT_SALES}：" + (f"商品「{product[0]}」+ " if product else "按件数问 + ") + reason
    if tool in (PRODUCT_SALES, PRODUCT_STOCK):
        if product:
            params["product"] = product[1]
        elif inherited and prev_params.get("product"):
            params["product"] = prev_params["product"]
        else:
            return DataPlan(tool, clarify=f"想查哪个商品的销量？可以查询的商品：{known_products_text()}。", reason=reason)

    if tool == MEMBER_BALANCE:
        m = _PHONE.search(question) or _MEMBER_NO.search(question)
        if not m:
            hint = "会员号是 M 加 5 位数字（如 M00012），手机号是 11 位；" if _MALFORMED_KEY.search(question) else ""
            return DataPlan(tool, clarify=f"{hint}请提供会员的手机号或会员号（如 M00012），我再查余额。", reason=reason)
        return DataPlan(tool, {"member": m.group(0).upper() if m.group(0)[0] in "mM" else m.group(0)}, reason=reason)

    if tool != COMPARE_STORES:
        try:
            match, unknown = find_store_in_text(question), None
        except UnknownStore as exc:
            match, unknown = None, getattr(exc, "mention", None)
            if not unknown:
                return DataPlan(tool, clarify=exc.messages[0], reason=reason)
        if unknown:
            # The tool resolves the name within the asker's stores and names only those (never
            # the whole store list: a store outside them must read exactly like a typo).
            params["store"] = store_words = unknown
        elif match is not None:
            params["store"] = match.store.name if match.store else None
            store_words = match.matched if match.store else ""
        elif carried and "store" in prev_params:
            params["store"] = prev_params["store"]
        else:
            params["store"] = None

    if tool == COMPARE_STORES:  # before the period: asked for the period, the next turn keeps the stores
        # The asker's own words: the tool resolves them within their stores, and a store outside
        # them is echoed as asked (never by its full name, which would confirm it exists).
        named = [words for words, _ in find_stores_in_text(question)]
        city = city_in_text(question)
        if compared_with:
            params["stores"] = compared_with
        elif len(named) >= 2:  # 「天河跟福田比」: those two, not every store
            params["stores"] = named
        elif city:  # 「广州各店对比」: the asker's stores in that city
            params["stores"] = [city, *named]
        elif inherited and prev_params.get("stores") and not named:
            params["stores"] = prev_params["stores"]
        params["metric"] = "avg_ticket" if "客单价" in question else "orders" if re.search(r"订单|单数|多少单|单子|单量|最忙|人最多|客人最多|客流", question) else "revenue"
    if tool == PERIOD_COMPARE and not compared:
        # A follow-up to a comparison (「那上个月呢」「那福田店呢」): a new period is compared with the
        # one before it, else both periods stay.
        try:
            period = find_period(question, today)
        except PeriodError as exc:
            return DataPlan(tool, params, clarify=f"{exc}", reason=reason)
        if period is not None:
            compared = [period, previous_period(period)]
        elif prev_params.get("period") and prev_params.get("baseline"):
            params["period"], params["baseline"] = prev_params["period"], prev_params["baseline"]
    if tool == PERIOD_COMPARE and compared:
        params["period"], params["baseline"] = ({"label": p.label, "start": p.start.isoformat(), "end": p.end.isoformat()} for p in compared)
    elif tool in PERIOD_TOOLS and tool != PERIOD_COMPARE:
        try:
            period = find_period(question, today)
        except PeriodError as exc:
            return DataPlan(tool, params, clarify=f"{exc}", reason=reason)
        if carried and (before := prev_params.get("period")) and (step := _THE_ONE_BEFORE.search(question)):
            # 「上周科罗娜卖了几瓶」 → 「那前一周呢」 is the week before that one, not the last seven days;
            # only when the unit is the period's own (「前一天」 after 上个月 is not the month before).
            asked = Period(date.fromisoformat(before["start"]), date.fromisoformat(before["end"]), before["label"])
            days = (asked.end - asked.start).days + 1
            unit = step.group(5)
            # By the period's kind: this week or month so far is shorter than its unit (「本周」 → 「那前一周呢」).
            weekly = days == 7 or asked.label.startswith(("本周", "这周"))
            monthly = asked.start.day == 1 and (28 <= days <= 31 or asked.label.startswith(("本月", "这个月", "这月")))
            if (unit in ("周", "星期", "礼拜") and weekly) or (unit in ("天", "日") and days == 1) or (unit == "月" and monthly):
                period = previous_period(asked)
        if period is None and tool == HOURLY_PEAK and (TYPICALLY.search(question) or not (carried and prev_params.get("period"))):
            # 「一般几点最忙」 asks about a usual day: the last four whole weeks, said as such (it asked
            # for a period, or kept the previous turn's 「今天」).
            period = Period(today - timedelta(days=PEAK_DEFAULT_DAYS), today - timedelta(days=1), "最近四周")
            defaulted = "没说时间，按最近四周统计；要看别的时间可以说「上周几点最忙」。"
        if period is not None:
            params["period"] = {"label": period.label, "start": period.start.isoformat(), "end": period.end.isoformat()}
        elif carried and prev_params.get("period"):
            params["period"] = prev_params["period"]
        else:
            return DataPlan(tool, params, clarify="请问要查哪段时间？比如 昨天、上周、本月、最近7天。", reason=reason)

    # 「哪个时段最忙」 → 「跟上上周比呢」 / 「跟福田比」 showed the other period's or store's figures as if
    # they were the comparison: say what is shown and which comparison can be asked.
    note = defaulted
    if inherited and tool in ("hourly_peak", TOP_PRODUCTS, "daily_trend", PRODUCT_SALES) and vocab.STORES_COMPARED.search(question) \
            and (asked := prev_params.get("period")) and params.get("period") and params["period"] != asked:
        note = _cannot_compare(tool, "两段时间", params["period"]["label"], asked["label"], params["period"]["label"])
    elif inherited and other_store and prev_params.get("store") and params.get("store") != prev_params["store"]:
        note = _cannot_compare(tool, "两家店", store_words or other_store, prev_params["store"], other_store)
    if tool == vocab.DAILY_TREND and params.get("store") is None and (vocab.ACROSS_STORES.search(question)
                                                                     or (carried and prev_params.get("by_store"))):
        params["by_store"] = True  # 「11月各店每天营业额趋势」: a series per store, not the chain's total
    if tool == TOP_PRODUCTS:
        params["n"] = top_n(question)
        for category in Product.Category.values:
            if category in question:
                params["category"] = category
                break
    return DataPlan(tool, params, reason=reason + ("（追问）" if inherited else ""), store_words=store_words, note=note)
