"""Pick a whitelisted ops tool for a question and fill its parameters.

The model never writes SQL: this module chooses among the tools in ops.tools by the shared
signal table (agent/vocabulary.py, the router reads the same one) and fills store (store list
and aliases only) and period (Chinese period parser). An unknown store or a vague period
becomes a clarifying question, never a zero.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import cached_property

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
    store_by_exact_name,
)
from ops.tools import MAX_TOP_N, TOOLS
from ops.trading_day import store_today

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

PERIOD_TOOLS = {name for name, tool in TOOLS.items() if "period" in tool.schema["properties"]}  # the tools a period is asked for
HOURLY_PEAK = "hourly_peak"
# 「一般几点最忙」 with no period: the usual day over the last four whole weeks.
PEAK_DEFAULT_DAYS = 28
TYPICALLY = re.compile(r"一般|平时|通常|平常|往常|一向|向来|通常来说")
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
    rules: list[str] = field(default_factory=list)  # the planning rules that fired, in order (RULES)
    refused: tuple[str, ...] = ()  # the parameters the tool refused (「store」: out of the asker's scope, unknown)

    def as_dict(self) -> dict:
        return {"tool": self.tool, "params": self.params, "clarify": self.clarify, "reason": self.reason, "rules": self.rules}


# Something meant as a member key that is not one: 「M1001」「M0001」, 「尾号1234」, a short number.
_MALFORMED_KEY = re.compile(r"(?<![A-Za-z0-9])[Mm]\d{1,4}(?!\d)|(?<![A-Za-z0-9])[Mm]\d{6,}|尾号|(?<!\d)1\d{5,9}(?!\d)")


def choose_tool(question: str) -> tuple[str | None, str]:
    """The tool whose table entries weigh most in the question; the reason names them."""
    hits = vocab.match(question)
    scores = vocab.tool_scores(hits)
    if not vocab.MEMBER_KEY.search(question):
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
            return max(1, min(MAX_TOP_N, cn_number(raw)))
    return 1 if _FIRST.search(question) else 5


SHORT_FOLLOW_UP = 12  # characters: a question this short right after a data answer keeps its period and store


def _cannot_compare(tool: str, what: str, shown: str, before: str, now: str) -> str:
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


# --- planning: named rules, in order ----------------------------------------------------------
#
# plan_data() starts from the tool the signal table weighs most (choose_tool) and runs RULES in
# order. A rule is (name, when, then): `when` reads the draft, `then` changes it (another tool, a
# parameter) or ends the plan (a DataPlan: a clarifying question, or a plan complete early). The
# names of the rules that fired travel with the plan into the trace: why a question got its tool
# is one hop from the trace to the rule.


@dataclass
class Draft:
    """A plan being made: the question, what the last turn asked, and what the rules decided so far."""

    question: str
    today: date
    previous: dict
    tool: str | None = None
    reason: str = ""
    inherited: bool = False  # the tool is the last turn's (a follow-up that named no tool)
    carried: bool = False  # a follow-up that keeps the last turn's period and store
    other_store: str | None = None  # 「跟福田比」 after a store's figures
    compared_with: list[str] | None = None
    product: tuple[str, str] | None = None  # (as said, product name)
    params: dict = field(default_factory=dict)
    store_words: str = ""
    compared: list = field(default_factory=list)  # two periods side by side
    defaulted: str = ""  # a period chosen for the asker, said in the answer
    note: str = ""
    fired: list[str] = field(default_factory=list)

    @property
    def prev_params(self) -> dict:
        return self.previous.get("params") or {}

    @property
    def day(self) -> date:
        """「今天」 for this plan: on the clock of the one store it asks about (by the name the store
        rule put in the parameters), else the chain's (ops.trading_day.store_today)."""
        named = self.params.get("store")
        store = store_by_exact_name(named) if isinstance(named, str) else None
        return store_today(store.timezone, self.today) if store is not None else self.today

    @cached_property
    def named_product(self) -> tuple[str, str] | None:
        """The product the question names (as said, its name), read once per plan."""
        return find_product_in_text(self.question)

    def state(self) -> tuple:
        """What a rule may change: a rule is listed in the trace when it changed it or ended the plan."""
        return (self.tool, self.reason, self.inherited, self.carried, self.other_store, self.compared_with, self.product,
                repr(self.params), self.store_words, repr(self.compared), self.defaulted, self.note)

    def switch(self, tool: str, why: str) -> None:
        """Another tool; the reason leads with why (`why` ends in its own 「+ 」)."""
        self.tool, self.reason = tool, f"{tool}：{why}{self.reason}"

    def plan(self, tool: str | None = None, params: dict | None = None, *, clarify: str | None = None) -> DataPlan:
        return DataPlan(tool, params if params is not None else {}, clarify=clarify, reason=self.reason, rules=self.fired)


def _stock_left_of_a_product(d: Draft):
    d.tool, d.reason = LOW_STOCK, "商品名 + 还有多少（库存）"  # becomes product_stock below


def _two_periods_of_revenue(d: Draft):
    d.tool, d.reason = STORE_SALES, "两段时间的营业额对比（没有指明指标时按营业额）"  # 「这周跟上周比怎么样」


def _against_another_store(d: Draft):
    # 「上周卖了多少」 → 「跟福田比」 (answered from the membership rules): the store just asked about
    # against the one named now; every store in scope when the last answer covered them all.
    d.other_store = compared_store(d.question)
    if d.other_store and d.previous["tool"] in (STORE_SALES, COMPARE_STORES, PERIOD_COMPARE):
        d.tool, d.reason = COMPARE_STORES, f"追问，上一轮的门店与「{d.other_store}」对比"
        if d.prev_params.get("store"):
            d.compared_with = [d.prev_params["store"], d.other_store]


def _keeps_the_last_tool(d: Draft):
    d.tool, d.reason, d.inherited = d.previous["tool"], f"追问，沿用上一轮的工具 {d.previous['tool']}", True


def _keeps_period_and_store(d: Draft):
    # 「上周卖了多少」 → 「外卖占多少」: a short question right after a data answer that names another
    # figure but no period or store keeps the previous turn's (it asked for the period again).
    # One that states its own period is a question of its own and keeps nothing: 「上周外卖卖了多少」
    # after a 福田 question was answered for 福田 alone.
    d.carried = True


def _only_a_product_named(d: Draft):
    said, product = d.named_product
    return DataPlan(None, clarify=f"想查{product}的哪一项？可以问「{said}还剩多少」（库存）、「{said}上周卖了多少」（销量）；"
                                  "问制度或酒水知识，请把情况说完整一些。", reason=f"只说了商品名「{said}」", rules=d.fired)


def _no_tool(d: Draft):
    return DataPlan(None, clarify="想查哪项经营数据？可以问营业额、每日趋势、热销排行、门店对比、高峰时段、低库存或会员余额。",
                    reason="没有匹配的数据工具", rules=d.fired)


_COUNTS_PRODUCTS = (STORE_SALES, PRODUCT_SALES, LOW_STOCK, PRODUCT_STOCK, vocab.PRODUCT_DAILY)


def _product_on_a_store_tool(d: Draft):
    # 「几点最忙」 → 「那科罗娜呢」: the tool counts orders per store, not per product. Say so.
    said = d.named_product[0]
    return d.plan(d.tool, clarify=f"{TOOLS[d.tool].title}只按门店统计，不能按商品拆分。可以问「{said}卖了多少」看这个商品的销量。")


def _the_product(d: Draft):
    # A sales question that names a product asks how much of *it* sold (「科罗娜卖了几瓶」), and a
    # follow-up naming another product (「那百威呢」) asks the same of that one.
    d.product = d.named_product


def _store_ranking_of_a_product(d: Draft):
    # 「上周哪家店科罗娜卖得最多」 was the stores' whole revenue ranked, 科罗娜 dropped: it is that
    # product's sales in every store the asker may see.
    d.switch(PRODUCT_SALES, f"各门店的商品「{d.product[0]}」+ ")


def _several_products(d: Draft):
    # 「青岛和科罗娜还剩多少」 answered for 科罗娜 alone, 青岛 silently dropped: one product a question.
    named = products_named_in_text(d.question)
    what, example = ("库存", "还剩多少") if d.tool in (LOW_STOCK, PRODUCT_STOCK) else ("销量", "卖了多少")
    return d.plan(d.tool, clarify=f"你问到了{'、'.join(named)}。{what}一次查一个商品，请分开问，比如「{named[0]}{example}」。")


def _asks_for_a_change(d: Draft) -> bool:
    return d.tool in (STORE_SALES, COMPARE_STORES) and not d.product and len(find_stores_in_text(d.question)) < 2 \
        and bool(vocab.PERIOD_CHANGE.search(d.question))


def _two_periods(d: Draft):
    # 「上周跟上上周比涨了还是跌了」: two periods side by side; one period and 环比 / 涨了还是跌了:
    # it against the one before it. (Two stores and 对比 stay a store comparison.)
    question, periods = d.question, find_periods(d.question, d.day)
    same_time = SAME_TIME_BEFORE.search(question)
    if len(periods) == 1 and same_time:
        # 「这周跟上周同期比」「今天跟上周同期比」: 「同期」 is the named period's own days, earlier
        # (it was declined as unrelated to the store, 「上周同期」 alone being no period).
        d.compared = [periods[0], same_time_before(periods[0], same_time.group(1))]
    elif len(periods) >= 2:  # the later one against the earlier one, however they were said
        d.compared = sorted(periods[:2], key=lambda p: p.start, reverse=True)
        if is_so_far(d.compared[0]) and d.compared[1].start == previous_period(d.compared[0]).start \
                and not d.compared[1].label.endswith("同期"):
            # 「这周比上周」: three days against last week's same three. Not when 同期 was said: 「上个月同期
            # 跟这个月比」 on the 30th was compared with the whole of October.
            d.compared[1] = previous_period(d.compared[0])
    elif len(periods) == 1 and (before := d.prev_params.get("period")) and (
            vocab.AGAINST_THE_NAMED.match(question) or (d.inherited and not vocab.CHANGE_FROM_BEFORE.search(question))):
        # 「上周营业额多少」 → 「跟上上周比呢」「比上上周涨了吗」: the figure just given (its period and store)
        # against the period named now; the same period named again: it against the one before it.
        asked = _period_of(before)
        if (asked.start, asked.end) != (periods[0].start, periods[0].end):
            d.compared = sorted([asked, periods[0]], key=lambda p: p.start, reverse=True)
        else:
            d.compared = [periods[0], previous_period(periods[0])]
        d.carried = True
    elif len(periods) == 1 and vocab.CHANGE_FROM_BEFORE.search(question):
        d.compared = [periods[0], previous_period(periods[0])]
    if d.compared and (d.tool == COMPARE_STORES or vocab.ACROSS_STORES.search(question)):
        # 「哪家店上周环比涨得最多」: a change per store is not a tool yet; one total would drop the stores.
        return d.plan(COMPARE_STORES, clarify="各门店的环比还不能一次列出。可以一家一家问，比如「天河店上周跟上上周比」，"
                                              "或者问「上周各店对比」看各店的排名。")
    if d.compared:
        d.switch(PERIOD_COMPARE, f"{d.compared[0].label} 对比 {d.compared[1].label} + ")
    return None


def _channels_not_products(d: Draft):  # 「上个月哪个渠道卖得最好」: channels, not products
    d.switch(CHANNEL_SALES, "问的是渠道 + ")


def _store_ranking_by_channel(d: Draft):
    channel = vocab.CHANNEL_WORDS.search(d.question).group(0)
    if vocab.SHARE.search(d.question) and not (vocab.ACROSS_STORES.search(d.question) or len(find_stores_in_text(d.question)) >= 2):
        d.switch(CHANNEL_SALES, f"「{channel}」的占比 + ")  # 「上周外卖占比多少」
        return None
    # 「上周各店外卖销售额对比」「哪家店退款最多」 (or 「那外卖呢」 after a ranking): not split by channel
    example = "退款了几单" if channel.startswith("退") else f"{channel}卖了多少"
    return d.plan(d.tool, clarify=f"门店对比按全部渠道的已支付订单统计，还不能按「{channel}」拆分。"
                                  f"可以一家一家问，比如「上周天河店{example}」。")


def _sales_by_channel(d: Draft):
    d.switch(CHANNEL_SALES, f"「{vocab.CHANNEL_WORDS.search(d.question).group(0)}」按渠道 + ")


_COUNTED_PER_DAY = re.compile(r"卖(了|出了?|掉了?)?\s*(多少|几)\s*(瓶|杯|份|箱|桶|扎|支|罐|打)")


def _daily_of_a_product(d: Draft):
    # 「最近7天科罗娜每天卖几瓶」 was the store's daily revenue, 科罗娜 dropped: that product, day by day
    # (and 「每天卖几瓶」 with no product asks which one).
    d.switch(vocab.PRODUCT_DAILY, f"商品「{d.product[0]}」每天 + " if d.product else "每天按件数问 + ")


def _stock_of_a_product(d: Draft):  # 「黑牌还剩几瓶」: that product's stock, whatever its level
    d.switch(PRODUCT_STOCK, f"商品「{d.product[0]}」+ ")


def _counted_sales(d: Draft) -> bool:
    return any(h.signal.name == vocab.COUNTED_SALES for h in vocab.match(d.question))


def _sales_of_a_product(d: Draft):
    # Counted in bottles or glasses (「嗨棒卖了多少杯」) is a product's sales even when the
    # product is not one we sell: ask which, never answer with the store's revenue.
    d.switch(PRODUCT_SALES, f"商品「{d.product[0]}」+ " if d.product else "按件数问 + ")


def _product_param(d: Draft):
    if d.product:
        d.params["product"] = d.product[1]
    elif d.inherited and d.prev_params.get("product"):
        d.params["product"] = d.prev_params["product"]
    else:
        return d.plan(d.tool, clarify=f"想查哪个商品的销量？可以查询的商品：{known_products_text()}。")
    return None


def _member_key(d: Draft):
    m = vocab.PHONE.search(d.question) or vocab.MEMBER_NO.search(d.question)
    if not m:
        hint = "会员号是 M 加 5 位数字（如 M00012），手机号是 11 位；" if _MALFORMED_KEY.search(d.question) else ""
        return d.plan(d.tool, clarify=f"{hint}请提供会员的手机号或会员号（如 M00012），我再查余额。")
    return d.plan(d.tool, {"member": m.group(0).upper() if m.group(0)[0] in "mM" else m.group(0)})


def _store_param(d: Draft):
    try:
        match, unknown = find_store_in_text(d.question), None
    except UnknownStore as exc:
        match, unknown = None, getattr(exc, "mention", None)
        if not unknown:
            return d.plan(d.tool, clarify=exc.messages[0])
    if unknown:
        # The tool resolves the name within the asker's stores and names only those (never
        # the whole store list: a store outside them must read exactly like a typo).
        d.params["store"] = d.store_words = unknown
    elif match is not None:
        d.params["store"] = match.store.name if match.store else None
        d.store_words = match.matched if match.store else ""
    elif d.carried and "store" in d.prev_params:
        d.params["store"] = d.prev_params["store"]
    else:
        d.params["store"] = None
    return None


_ORDERS_ASKED = re.compile(r"订单|单数|多少单|单子|单量|最忙|人最多|客人最多|客流")


def _stores_compared(d: Draft):  # before the period: asked for the period, the next turn keeps the stores
    # The asker's own words: the tool resolves them within their stores, and a store outside
    # them is echoed as asked (never by its full name, which would confirm it exists).
    named = [words for words, _ in find_stores_in_text(d.question)]
    city = city_in_text(d.question)
    if d.compared_with:
        d.params["stores"] = d.compared_with
    elif len(named) >= 2:  # 「天河跟福田比」: those two, not every store
        d.params["stores"] = named
    elif city:  # 「广州各店对比」: the asker's stores in that city
        d.params["stores"] = [city, *named]
    elif d.inherited and d.prev_params.get("stores") and not named:
        d.params["stores"] = d.prev_params["stores"]
    d.params["metric"] = "avg_ticket" if "客单价" in d.question else "orders" if _ORDERS_ASKED.search(d.question) else "revenue"


def _comparison_follow_up(d: Draft):
    # A follow-up to a comparison (「那上个月呢」「那福田店呢」): a new period is compared with the
    # one before it, else both periods stay.
    try:
        period = find_period(d.question, d.day)
    except PeriodError as exc:
        return d.plan(d.tool, d.params, clarify=f"{exc}")
    if period is not None:
        d.compared = [period, previous_period(period)]
    elif d.prev_params.get("period") and d.prev_params.get("baseline"):
        d.params["period"], d.params["baseline"] = d.prev_params["period"], d.prev_params["baseline"]
    return None


def _period_pair(d: Draft):
    d.params["period"], d.params["baseline"] = (_period_param(p) for p in d.compared)


def _the_one_before(d: Draft, period: Period | None) -> Period | None:
    """「上周科罗娜卖了几瓶」 → 「那前一周呢」 is the week before that one, not the last seven days;
    only when the unit is the period's own (「前一天」 after 上个月 is not the month before)."""
    if not (d.carried and (before := d.prev_params.get("period")) and (step := _THE_ONE_BEFORE.search(d.question))):
        return period
    asked = _period_of(before)
    days = (asked.end - asked.start).days + 1
    unit = step.group(5)
    # By the period's kind: this week or month so far is shorter than its unit (「本周」 → 「那前一周呢」).
    weekly = days == 7 or asked.label.startswith(("本周", "这周"))
    monthly = asked.start.day == 1 and (28 <= days <= 31 or asked.label.startswith(("本月", "这个月", "这月")))
    if (unit in ("周", "星期", "礼拜") and weekly) or (unit in ("天", "日") and days == 1) or (unit == "月" and monthly):
        return previous_period(asked)
    return period


def _period(d: Draft):
    today = d.day
    try:
        period = find_period(d.question, today)
    except PeriodError as exc:
        return d.plan(d.tool, d.params, clarify=f"{exc}")
    period = _the_one_before(d, period)
    if period is None and d.tool == HOURLY_PEAK and (TYPICALLY.search(d.question) or not (d.carried and d.prev_params.get("period"))):
        # 「一般几点最忙」 asks about a usual day: the last four whole weeks, said as such (it asked
        # for a period, or kept the previous turn's 「今天」).
        period = Period(today - timedelta(days=PEAK_DEFAULT_DAYS), today - timedelta(days=1), "最近四周")
        d.defaulted = "没说时间，按最近四周统计；要看别的时间可以说「上周几点最忙」。"
    if period is not None:
        d.params["period"] = _period_param(period)
    elif d.carried and d.prev_params.get("period"):
        d.params["period"] = d.prev_params["period"]
    else:
        return d.plan(d.tool, d.params, clarify="请问要查哪段时间？比如 昨天、上周、本月、最近7天。")
    return None


def _other_period_shown(d: Draft) -> bool:
    # 「哪个时段最忙」 → 「跟上上周比呢」 / 「跟福田比」 showed the other period's or store's figures as if
    # they were the comparison: say what is shown and which comparison can be asked.
    return d.inherited and d.tool in (HOURLY_PEAK, TOP_PRODUCTS, vocab.DAILY_TREND, PRODUCT_SALES, vocab.PRODUCT_DAILY) \
        and bool(vocab.STORES_COMPARED.search(d.question)) and bool(asked := d.prev_params.get("period")) \
        and bool(d.params.get("period")) and d.params["period"] != asked


def _cannot_compare_periods(d: Draft):
    shown, asked = d.params["period"]["label"], d.prev_params["period"]["label"]
    d.note = _cannot_compare(d.tool, "两段时间", shown, asked, shown)


def _other_store_shown(d: Draft) -> bool:
    return not _other_period_shown(d) and d.inherited and bool(d.other_store) and bool(d.prev_params.get("store")) \
        and d.params.get("store") != d.prev_params["store"]


def _cannot_compare_stores(d: Draft):
    d.note = _cannot_compare(d.tool, "两家店", d.store_words or d.other_store, d.prev_params["store"], d.other_store)


def _trend_per_store(d: Draft):
    d.params["by_store"] = True  # 「11月各店每天营业额趋势」: a series per store, not the chain's total


# 「按销售额」「按金额排呢」「哪个卖的钱最多」: ranked by sales, not by quantity (it listed by quantity).
_TOP_N_SAID = re.compile(r"\d|[一二两三四五六七八九十]+(名|个|款|种|位)|前|第一|最")
BY_REVENUE = re.compile(r"按(销售额|金额|营业额|收入|钱)|(销售额|金额|营业额|收入)(最高|最多|排|前)|卖的?钱最多|赚(钱)?最多")
BY_QUANTITY = re.compile(r"按(销量|数量|件数|瓶数|杯数)|(销量|数量)(最高|最多|排)")


def _best_sellers_of_each_store(d: Draft) -> bool:
    """「各店上周卖得最好的是什么」「天河店和福田店各自卖得最好的酒」: a ranking per store (the first got
    the chain's one ranking, the second a comparison of revenue with no product in it)."""
    each = vocab.EACH_STORE.search(d.question) or ("各自" in d.question and len(find_stores_in_text(d.question)) >= 2)
    if not each or "渠道" in d.question:
        return False
    return d.tool == TOP_PRODUCTS or (d.tool == COMPARE_STORES and TOP_PRODUCTS in vocab.tool_scores(vocab.match(d.question)))


def _per_store_ranking(d: Draft):
    if d.tool != TOP_PRODUCTS:
        d.switch(TOP_PRODUCTS, "每家店各自 + ")
    d.params["by_store"] = True
    named = [words for words, _ in find_stores_in_text(d.question)]
    city = city_in_text(d.question)
    if len(named) >= 2 or city:  # those stores (or the asker's in that city), not every one
        d.params["stores"] = [*([city] if city else []), *named]
        d.params["store"] = None


def _named_category(question: str) -> str | None:
    return next((c for c in Product.Category.values if c in question), None)


def _sales_of_a_category(d: Draft):
    # 「上周威士忌卖了多少」 was answered with the whole store's revenue: that category's products, every one.
    d.switch(TOP_PRODUCTS, f"品类「{_named_category(d.question)}」+ ")
    d.params["n"] = MAX_TOP_N


def _how_many_and_which_category(d: Draft):
    d.params["n"] = d.params.get("n") or top_n(d.question)
    if d.inherited and d.prev_params.get("n") and not _TOP_N_SAID.search(d.question):
        d.params["n"] = d.prev_params["n"]  # 「按金额排呢」 after every whisky: still every one
    if BY_REVENUE.search(d.question):
        d.params["by"] = "revenue"
    elif d.inherited and d.prev_params.get("by") and not BY_QUANTITY.search(d.question):
        d.params["by"] = d.prev_params["by"]
    if d.inherited and d.prev_params.get("by_store") and not d.params.get("store"):  # 「那上个月呢」 after each store's: still each
        d.params["by_store"] = True
        if d.prev_params.get("stores") and not d.params.get("stores"):
            d.params["stores"] = d.prev_params["stores"]
    if category := _named_category(d.question):
        d.params["category"] = category
        return
    if vocab.SOFT_DRINKS.search(d.question):  # 「无酒精饮料」 before 酒
        d.params["category"] = Product.Category.SOFT.value
    elif vocab.ANY_ALCOHOL.search(d.question):
        d.params["category"] = Product.ALCOHOL
    elif d.inherited and d.prev_params.get("category") and not vocab.EVERY_PRODUCT.search(d.question):
        d.params["category"] = d.prev_params["category"]  # 「那上上周呢」 after the best-selling 酒: still 酒


def _period_of(params: dict) -> Period:
    return Period(date.fromisoformat(params["start"]), date.fromisoformat(params["end"]), params["label"])


def _period_param(period: Period) -> dict:
    return {"label": period.label, "start": period.start.isoformat(), "end": period.end.isoformat()}


@dataclass(frozen=True)
class Rule:
    name: str
    when: Callable[[Draft], bool]
    then: Callable[[Draft], DataPlan | None]


RULES: tuple[Rule, ...] = (
    Rule("stock_left_of_a_product", lambda d: d.tool is None and bool(vocab.STOCK_LEFT.search(d.question))
         and bool(d.named_product), _stock_left_of_a_product),
    Rule("two_periods_of_revenue", lambda d: d.tool is None and bool(vocab.FIGURE_COMPARE.search(d.question))
         and names_two_periods(d.question, d.today, counting_the_future=True), _two_periods_of_revenue),
    Rule("against_another_store", lambda d: d.tool is None and bool(d.previous.get("tool")) and compared_store(d.question) is not None,
         _against_another_store),
    # 「按销售额呢」 right after a ranking: the same ranking by sales (it got the stores' revenue).
    Rule("ranking_reordered", lambda d: d.previous.get("tool") == TOP_PRODUCTS and d.tool in (None, STORE_SALES, TOP_PRODUCTS)
         and len(d.question.strip()) <= SHORT_FOLLOW_UP and not vocab.ACROSS_STORES.search(d.question)
         and bool(BY_REVENUE.search(d.question) or BY_QUANTITY.search(d.question)) and not d.named_product, _keeps_the_last_tool),
    Rule("keeps_the_last_tool", lambda d: d.tool is None and bool(d.previous.get("tool")), _keeps_the_last_tool),
    Rule("keeps_period_and_store", lambda d: d.inherited or (bool(d.previous.get("tool")) and len(d.question.strip()) <= SHORT_FOLLOW_UP
                                                               and not _names_a_period(d.question, d.today)), _keeps_period_and_store),
    Rule("only_a_product_named", lambda d: d.tool is None and bool(d.named_product), _only_a_product_named),
    Rule("no_tool", lambda d: d.tool is None, _no_tool),
    Rule("product_on_a_store_tool", lambda d: d.inherited and d.tool not in (*_COUNTS_PRODUCTS, vocab.DAILY_TREND)
         and bool(d.named_product), _product_on_a_store_tool),
    Rule("the_product", lambda d: d.tool in (*_COUNTS_PRODUCTS, COMPARE_STORES, vocab.DAILY_TREND) and bool(d.named_product),
         _the_product),
    Rule("daily_of_a_product", lambda d: d.tool == vocab.DAILY_TREND and (bool(d.product) or bool(_COUNTED_PER_DAY.search(d.question))),
         _daily_of_a_product),
    Rule("store_ranking_of_a_product", lambda d: d.tool == COMPARE_STORES and bool(d.product)
         and not vocab.CHANNEL_WORDS.search(d.question), _store_ranking_of_a_product),
    Rule("several_products", lambda d: bool(d.product) and len(products_named_in_text(d.question)) > 1, _several_products),
    Rule("two_periods", _asks_for_a_change, _two_periods),
    Rule("channels_not_products", lambda d: d.tool == TOP_PRODUCTS and "渠道" in d.question, _channels_not_products),
    Rule("store_ranking_by_channel", lambda d: d.tool == COMPARE_STORES and bool(vocab.CHANNEL_WORDS.search(d.question)),
         _store_ranking_by_channel),
    Rule("sales_by_channel", lambda d: d.tool == STORE_SALES and not d.product and bool(vocab.CHANNEL_WORDS.search(d.question)),
         _sales_by_channel),
    Rule("stock_of_a_product", lambda d: d.tool == LOW_STOCK and bool(d.product), _stock_of_a_product),
    Rule("sales_of_a_product", lambda d: d.tool == STORE_SALES and (bool(d.product) or _counted_sales(d)), _sales_of_a_product),
    Rule("sales_of_a_category", lambda d: d.tool == STORE_SALES and not d.product and _named_category(d.question) is not None,
         _sales_of_a_category),
    Rule("product_param", lambda d: d.tool in (PRODUCT_SALES, PRODUCT_STOCK, vocab.PRODUCT_DAILY), _product_param),
    Rule("member_key", lambda d: d.tool == MEMBER_BALANCE, _member_key),
    Rule("best_sellers_of_each_store", _best_sellers_of_each_store, _per_store_ranking),
    Rule("store_param", lambda d: d.tool != COMPARE_STORES and not d.params.get("stores"), _store_param),
    Rule("stores_compared", lambda d: d.tool == COMPARE_STORES, _stores_compared),
    Rule("comparison_follow_up", lambda d: d.tool == PERIOD_COMPARE and not d.compared, _comparison_follow_up),
    Rule("period_pair", lambda d: d.tool == PERIOD_COMPARE and bool(d.compared), _period_pair),
    Rule("period", lambda d: d.tool in PERIOD_TOOLS and d.tool != PERIOD_COMPARE, _period),
    Rule("cannot_compare_periods", _other_period_shown, _cannot_compare_periods),
    Rule("cannot_compare_stores", _other_store_shown, _cannot_compare_stores),
    Rule("trend_per_store", lambda d: d.tool == vocab.DAILY_TREND and d.params.get("store") is None
         and bool(vocab.ACROSS_STORES.search(d.question) or (d.carried and d.prev_params.get("by_store"))), _trend_per_store),
    Rule("how_many_and_which_category", lambda d: d.tool == TOP_PRODUCTS, _how_many_and_which_category),
)


def plan_data(question: str, *, today: date, previous: dict | None = None) -> DataPlan:
    """Choose the tool and its parameters; inherit from the previous turn for follow-ups
    such as 「那福田店呢」 (same tool and period, another store). A period before the first
    recorded sale is bounded by the tool (ops.tools), for chat, API and MCP alike."""
    d = Draft(question, today, previous or {})
    d.tool, d.reason = choose_tool(question)
    for rule in RULES:
        if not rule.when(d):
            continue
        before = d.state()
        plan = rule.then(d)
        if plan is not None or d.state() != before:
            d.fired.append(rule.name)  # the plan's own list: a plan ended here lists this rule too
        if plan is not None:
            return plan
    return DataPlan(d.tool, d.params, reason=d.reason + ("（追问）" if d.inherited else ""), store_words=d.store_words,
                    note=d.note or d.defaulted, rules=d.fired)
