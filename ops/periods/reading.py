"""Reading the periods of a question: one period (parse_period, find_period), all of them
(find_periods), the one before or the same days before, and a period bounded to the data."""
from __future__ import annotations

import calendar
import re
from datetime import date, timedelta

from .base import (
    FUTURE,
    HOURS_OF_DAY,
    RE_DOT_RANGE,
    RE_ISO_DAY,
    RE_ISO_RANGE,
    RE_MD_DAY,
    RE_MD_RANGE,
    SO_FAR,
    VAGUE,
    Period,
    PeriodError,
    month_range,
    shift_month,
)
from .rules import read_period

# What a period parameter may be made of: digits and numerals, date and calendar words, range
# separators. Anything else (「昨天abc」) means the parameter says more than the parser read.
_PERIOD_CHARS = re.compile(r"[\d零〇一二两三四五六七八九十百年月日号天周星期礼拜上本这个当今昨前去大最近过半季度初末底同期"
                           r"至到为止截目现在以来双元旦国庆劳动节平安夜圣诞黄金假长间儿晚头份的\s~～\-—./]")


MAX_PERIOD_TEXT = 40


_RANGE_JOIN = re.compile(r"到|至|~|～|—")


_UP_TO = re.compile(r"截至|截止|为止")


def parse_period(text: str, today: date) -> Period:
    """Parse one period parameter (the API's, a tool call's). Stricter than find_period: the
    whole text must be a period — 「昨天abc」, 「2026-11-01..2026-11-07」 (two dates, no 到) or
    a period repeated a thousand times is an error, never silently its first part. Raises
    PeriodError when it can't say exactly which days."""
    original = (text or "").strip()
    t = original.replace(" ", "")
    if not t:
        raise PeriodError("没有给出时间范围。可以说：昨天、上周、本月、最近7天、11月1日到7日。")
    if len(t) > MAX_PERIOD_TEXT:
        raise PeriodError(f"时间范围最多 {MAX_PERIOD_TEXT} 个字。可以说：昨天、上周、本月、最近7天、11月1日到7日。")
    if (future := next((w for w in FUTURE if w in t), None)) and read_period(t.replace(future, ""), today, original) is None:
        raise PeriodError(f"「{original}」是未来的时间，还没有数据。")
    extra = _PERIOD_CHARS.sub("", t)
    if extra:
        raise PeriodError(f"时间「{original}」里的「{extra[:10]}」看不懂。可以说：昨天、上周、本月、最近7天、2026-11-01到2026-11-07。")
    period = read_period(t, today, original)
    if period is not None:
        _both_dates_read(t, period, original)
    if period is not None and _UP_TO.search(t) and not _RANGE_JOIN.search(t.replace("截至", "").replace("截止", "")) \
            and not any(w in t for w in SO_FAR) and period.start == period.end:
        # 「截至11月7日」 names where a range ends, not where it starts: one day would be a guess.
        raise PeriodError(f"「{original}」是从哪天算起？请说完整，比如 11月1日到11月7日、本月到目前为止。")
    if period is None:
        if any(word in t for word in FUTURE):
            raise PeriodError(f"「{original}」是未来的时间，还没有数据。")
        raise PeriodError(f"看不懂时间「{original}」。可以说：昨天、上周、本月、最近7天、11月1日到7日。")
    return period


def find_period(text: str, today: date) -> Period | None:
    """Find a period inside a whole question; None when the question names none.

    Raises PeriodError when the question names a period that is vague or invalid
    (「最近卖得怎么样」), so the caller can ask instead of guessing.
    """
    t = (text or "").replace(" ", "")
    # 「这个月截至今天」 is this month: the so-far words only say the range runs up to today.
    so_far = next((w for w in SO_FAR if w in t), None)
    period = read_period(t.replace(so_far, "，") if so_far else t, today, text)
    if period is not None:
        _one_period_only(t, today)
        _both_dates_read(t, period, text)
        if period.start == period.end and (hours := HOURS_OF_DAY.search(t)):
            # The tools count whole days: say so rather than pass a day off as an evening.
            period = Period(period.start, period.end, f"{period.label}（{hours.group(0)}按全天统计）")
        return period
    if so_far:
        raise PeriodError(f"「{so_far}」是从哪天算起？请说完整，比如 这个月到目前为止、月初到现在、今年以来。")
    for word in FUTURE:
        if word in t:
            raise PeriodError(f"「{word}」是未来的时间，还没有数据。")
    for word in VAGUE:
        if word in t:
            raise PeriodError(f"「{word}」指的是哪段时间？请说具体一些，比如 最近7天、上周、本月。")
    return None


# Between two periods being compared: 「上周跟上上周比」「11月1号到7号和8号到14号」.
_COMPARE_JOIN = re.compile(r"跟|和|与|同(?!期|比)|对比|相比|比起|环比|(?<!同)比|vs|VS|还是|[，,。；;？?！!]")


def find_periods(text: str, today: date, *, not_yet: list | None = None) -> list[Period]:
    """Every distinct period a question names, in order (「上周跟上上周比」 → 上周, 上上周). A part
    that names only days or a half (「8号到14号」 after 「11月1号到7号」, 「下半月」 after 「10月上半月」)
    takes the month of the part before. `not_yet` collects the parts that name a period still to
    come (「这周五」 on a Tuesday)."""
    t = (text or "").replace(" ", "")
    found: list[Period] = []
    month = None
    for part in _COMPARE_JOIN.split(t):
        if not part:
            continue
        try:
            p = read_period(part, today, part)
            if month and re.match(r"\d{1,2}[日号]|[上下]半月", part):  # 「…和8号到14号」「10月上半月和下半月」
                p = read_period(month + part, today, part)
        except PeriodError as exc:
            p = None
            if not_yet is not None and "还没到" in str(exc):
                not_yet.append(part)
        if (m := re.search(r"(\d{4}年)?\d{1,2}月", part)) is not None:
            month = m.group(0)
        if p is not None and all((p.start, p.end) != (q.start, q.end) for q in found):
            found.append(p)
    return found


SO_FAR_LABELS = ("本周", "这周", "本月", "这个月", "这月")  # a period that runs up to today


def is_so_far(period: Period) -> bool:
    return period.label.startswith(SO_FAR_LABELS)


def previous_period(period: Period) -> Period:
    """What a period is compared with when only it is named (「本月环比」「上周涨了还是跌了」): a
    whole calendar month → the month before; this month so far → the same days of the month
    before (上月同期); this week so far → the same weekdays of last week; anything else (国庆,
    11月1日到7日) → as many days right before it."""
    start, end = period.start, period.end
    if start.day == 1 and start.month == end.month and ((end + timedelta(days=1)).day == 1 or period.label.startswith(("本月", "这个月", "这月"))):
        y, m = shift_month(start.year, start.month, -1)
        first, last = month_range(y, m)
        if (end + timedelta(days=1)).day == 1:
            return Period(first, last, f"{y}年{m}月")
        return Period(first, first.replace(day=min(end.day, last.day)), "上月同期")  # 3月30日 → 2月28日, not an error
    if period.label.startswith(("本周", "这周")):
        return Period(start - timedelta(days=7), end - timedelta(days=7), "上周同期")
    days = period.days
    label = {"上周": "上上周", "昨天": "前天", "今天": "昨天"}.get(period.label, f"之前 {days} 天")
    return Period(start - timedelta(days=days), start - timedelta(days=1), label)


SAME_TIME_BEFORE = re.compile(r"(上周|上个?月|去年)同期")


def names_two_periods(text: str, today: date, *, counting_the_future: bool = False) -> bool:
    """Two periods set side by side (「上周跟上上周」), or one and its 「上周同期」/「去年同期」.
    `counting_the_future`: a period still to come counts (「这周五跟上周五比怎么样」 on a Tuesday
    is a comparison of two days' figures, one of them not there yet, not a question about the rules)."""
    not_yet: list[str] = []
    periods = find_periods(text, today, not_yet=not_yet if counting_the_future else None)
    return len(periods) + len(not_yet) >= 2 or (len(periods) == 1 and bool(SAME_TIME_BEFORE.search(text or "")))


def same_time_before(period: Period, unit: str) -> Period:
    """The same days one week, month or year before `period` (「今天跟上周同期比」 → the same
    weekday last week; 「这个月跟去年同期比」 → these days of the month a year ago). A day the
    earlier month lacks (3月31日 → 2月) is its last day."""
    def back(d: date) -> date:
        if unit == "上周":
            return d - timedelta(days=7)
        y, m = shift_month(d.year, d.month, -12 if unit == "去年" else -1)
        return date(y, m, min(d.day, calendar.monthrange(y, m)[1]))

    label = {"上周": "上周同期", "去年": "去年同期"}.get(unit, "上月同期")
    return Period(back(period.start), back(period.end), label)


def _both_dates_read(t: str, period: Period, original: str) -> None:
    """Two dates and one day read (「2025年12月1日到2026-10-01」 mixes two formats no range
    pattern joins): the rest of the range would be dropped without a word."""
    dates = RE_ISO_DAY.findall(t) + RE_MD_DAY.findall(t)
    if len(dates) >= 2 and period.start == period.end and not any(rx.search(t) for rx in (RE_ISO_RANGE, RE_MD_RANGE, RE_DOT_RANGE)):
        raise PeriodError(f"「{original}」里有两个日期：日期范围请用同一种写法并用「到」连接，比如 2026-11-01到2026-11-07。")


def _one_period_only(t: str, today: date) -> None:
    """「上周营业额多少，跟上上周比呢」 names two periods; answering one of them would be a
    silently wrong figure for the question asked."""
    found = []
    for clause in re.split(r"[，,。；;？?！!]+", t):
        try:
            p = read_period(clause, today, clause) if clause else None
        except PeriodError:
            p = None
        if p is not None and all((p.start, p.end) != (q.start, q.end) for q in found):
            found.append(p)
    if len(found) > 1:
        raise PeriodError(f"这句话里有两段时间：{'、'.join(p.label for p in found)}；一次只能查一段，请分开问。")


def bound_to_data(period: Period, data_since: date | None) -> Period:
    """A range that starts before the first recorded sale starts there instead, and says so."""
    if data_since is None or period.start >= data_since:
        return period
    if period.end < data_since:
        raise PeriodError(f"{period.describe()}没有数据：销售记录从 {data_since.isoformat()} 开始。")
    return Period(data_since, period.end, f"{period.label}（销售记录从 {data_since.isoformat()} 开始，按此起算）")
