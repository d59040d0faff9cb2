"""Chinese period expressions → exact date ranges (inclusive), with an injectable "today".

Ambiguous or unparseable input raises PeriodError with a message that says what to
write instead; a period is never guessed silently. Future periods are rejected: there
are no sales for them yet.
"""
from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta

CN_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "1": 0, "2": 1, "3": 2, "4": 3, "5": 4, "6": 5, "7": 6}
NUM = r"(?:\d{1,3}|[零〇一二两三四五六七八九十]{1,4})"


class PeriodError(ValueError):
    """The expression is ambiguous, unparseable or in the future."""


@dataclass(frozen=True)
class Period:
    start: date
    end: date  # inclusive
    label: str

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    def describe(self) -> str:
        """The period as an answer states it. A period that runs into the trading day under way
        says what that day is (at 01:53 a user could not tell why 12-01 was 「今天」)."""
        today = _trading_day_now()
        if self.end == today[0]:
            so_far = f"营业日 {today[0].month}月{today[0].day}日 {today[1]:02d}:00 起，截至 {today[2]}"
            if self.start == self.end or self.start.isoformat() in self.label:
                return f"{self.label}（{so_far}）"
            return f"{self.label}（{self.start.isoformat()} 至 {self.end.isoformat()}；{so_far}）"
        if self.start.isoformat() in self.label:  # 「2026-11-01 至 2026-11-07」 says its dates already
            return self.label
        if self.start == self.end:
            return f"{self.label}（{self.start.isoformat()}）"
        return f"{self.label}（{self.start.isoformat()} 至 {self.end.isoformat()}）"

    def as_params(self) -> dict:
        return {"label": self.label, "start": self.start.isoformat(), "end": self.end.isoformat()}


def _trading_day_now() -> tuple[date, int, str]:
    """(the trading day under way, the hour it opened, the local time now as HH:MM)."""
    from django.utils import timezone

    from .trading_day import DAY_STARTS_AT, TZ, local_today

    return local_today(), DAY_STARTS_AT, timezone.localtime(timezone.now(), TZ).strftime("%H:%M")


_CN_UNITS = {"十": 10, "百": 100, "千": 1000}


def cn_number(text: str) -> int:
    """'7' → 7, '七' → 7, '十五' → 15, '二十' → 20, '一百' → 100, '两百五' → 250, '一百零五' → 105,
    '三千五百' → 3500, '一万' → 10000; digits without units read positionally ('二零二六' → 2026).
    Raises ValueError for anything else."""
    text = (text or "").strip()
    if text.isdigit():
        return int(text)
    if not text or any(ch not in CN_DIGITS and ch not in _CN_UNITS and ch != "万" for ch in text):
        raise ValueError(f"「{text}」不是数字。")
    if not any(ch in _CN_UNITS or ch == "万" for ch in text):
        value = 0
        for ch in text:
            value = value * 10 + CN_DIGITS[ch]
        return value
    total = section = 0
    digit: int | None = None
    last_unit = 1
    zero = False  # a 零 since the last unit: 「一千零五」's 五 is ones, not hundreds
    for ch in text:
        if ch in ("零", "〇"):
            zero, digit = True, None
        elif ch in CN_DIGITS:
            digit = CN_DIGITS[ch]
        elif ch == "万":
            total += (section + (digit or 0)) * 10000
            section, digit, last_unit, zero = 0, None, 10000, False
        else:
            last_unit = _CN_UNITS[ch]
            section += (1 if digit is None else digit) * last_unit
            digit, zero = None, False
    if digit is not None:
        # 「两百五」 is 250 and 「一万五」 15000: a digit right after a unit (no 零 between)
        # counts in the next unit down.
        if not zero and len(text) >= 2 and (text[-2] in _CN_UNITS or text[-2] == "万") and last_unit >= 100:
            digit *= last_unit // 10
        section += digit
    return total + section


def _week_start(d: date) -> date:
    return d - timedelta(days=d.weekday())


def _month_range(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def _shift_month(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


def _safe_date(year: int, month: int, day: int, original: str) -> date:
    try:
        return date(year, month, day)
    except ValueError:
        raise PeriodError(f"「{original}」不是有效日期。") from None


def _year_for_month(month: int, today: date, explicit_year: int | None) -> int:
    # A bare month means the most recent one: in November, 「12月」 is last December.
    if explicit_year:
        return explicit_year
    return today.year if month <= today.month else today.year - 1


def _finish(start: date, end: date, label: str, today: date, original: str) -> Period:
    if start > end:
        raise PeriodError(f"「{original}」的开始日期晚于结束日期。")
    if start > today:
        raise PeriodError(f"「{original}」还没到，没有数据。")
    return Period(start=start, end=min(end, today), label=label)


# Order matters: longer, more specific patterns first.
_RELATIVE_DAYS = {"今天": 0, "今日": 0, "今儿": 0, "昨天": 1, "昨日": 1, "昨儿": 1, "昨晚": 1, "前天": 2, "前儿": 2, "大前天": 3}
_FUTURE = ("明天", "后天", "下周", "下个月", "下月", "明年", "下星期")
_VAGUE = ("最近", "近期", "前几天", "这几天", "前阵子", "之前", "以前", "过去")

_RE_ISO_RANGE = re.compile(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\s*(?:到|至|~|～|-|—)\s*(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})")
_RE_ISO_DAY = re.compile(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})")
_RE_MD_RANGE = re.compile(
    rf"(?:(\d{{4}})年)?({NUM})月({NUM})[日号]?\s*(?:到|至|~|～|-|—)\s*(?:(\d{{4}})年)?(?:({NUM})月)?({NUM})[日号]"
)
# 「10.1-11.15」「10/1到11/15」: only as a range (a lone 「10.5」 is more likely a price).
_RE_DOT_RANGE = re.compile(r"(?<![\d.])(\d{1,2})[./](\d{1,2})\s*(?:到|至|~|～|-|—)\s*(\d{1,2})[./](\d{1,2})(?![\d.])")
_RE_THESE_DAYS = re.compile(r"这([两二三])天")
_RE_TOO_MANY_SHANG = re.compile(r"上{3,}")
# Fixed-date holidays: (words, (month, day) first, (month, day) last, label). Lunar ones are asked about.
_HOLIDAYS = (
    (("国庆", "十一黄金周", "十一假期", "十一长假", "十一期间"), (10, 1), (10, 7), "国庆"),
    (("五一", "劳动节"), (5, 1), (5, 5), "五一"),
    (("元旦",), (1, 1), (1, 1), "元旦"),
    (("平安夜",), (12, 24), (12, 24), "平安夜"),
    (("圣诞",), (12, 25), (12, 25), "圣诞节"),
    (("双十一", "双11"), (11, 11), (11, 11), "双十一"),
    (("双十二", "双12"), (12, 12), (12, 12), "双十二"),
)
_LUNAR = ("春节", "过年", "除夕", "中秋", "端午", "元宵", "七夕", "清明")
_SO_FAR = ("到目前为止", "截至今天", "截止今天", "截至目前", "截止目前", "截至现在", "到现在为止", "至今", "到今天为止")
_HOURS_OF_DAY = re.compile(r"早上|上午|中午|下午|傍晚|晚上|夜里|半夜|凌晨")
MAX_RANGE_DAYS = 366
_RE_MD_DAY = re.compile(rf"(?:(\d{{4}})年)?({NUM})月({NUM})[日号]")
# A year standing alone (「2025年卖了多少」「2025年的营业额」); a year with a part named after it
# (第一季度、上半年、第三周、到2026年) is not the whole year: it is asked about, never widened.
_RE_YEAR = re.compile(r"(?<!\d)(\d{4})年(?:的?(?:全年|整年|一整年))?"
                      r"(?!的?(?:第|上半|下半|前|后|头|初|底|末|中|季|Q|[\d零〇一二两三四五六七八九十]|到|至|-|~|～|—))")
_RE_MONTH = re.compile(rf"(?:(\d{{4}}|今|去)年)?({NUM})月份?")
# 「本月前10天」「上个月头五天」「11月前十天」: the first days of a month, not the last days before today.
_RE_MONTH_FIRST_N = re.compile(rf"(?:(上上个?月|上个?月|本月|这个?月|当月)|({NUM})月份?)的?(?:前|头)({NUM})(?:天|日)")
_RE_YEAR_FIRST_N = re.compile(rf"(今年|本年|去年)的?(?:前|头)({NUM})(?:天|日)")
# 「11月上半月」「上个月下半月」「本月上半月」: the 1st–15th or the 16th–last of a month.
_RE_HALF_MONTH = re.compile(rf"(?:(上上个?月|上个?月|本月|这个?月|当月)|({NUM})月份?)?的?([上下])半月")
_RE_LAST_N = re.compile(rf"(?:最近|近|过去|前)({NUM})(天|日|周|个星期|星期|个月|月)")
_RE_LAST_ONE = re.compile(r"(?:最近|近|过去)(一周|一个星期|一星期|一个月|半个月|半月)")
# 「周天」 is left out on purpose: 「上周天河店」 is last week at 天河店, not last Sunday.
# 「一共」「一起」「一样」 after 周 are words of their own: 「上周一共卖了多少」 is last week.
# 「上周四家店排名」 is last week's four stores: a number word before 家/个/间/店/位 counts things.
_RE_WEEKDAY = re.compile(r"(上上|上|本|这)?(?:周([一二三四五六日])|(?:星期|礼拜)([一二三四五六日天]))(?![共起直样般些定致切下点])"
                         r"(?!(家|个|间)(店|门店|分店))")


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
    if (future := next((w for w in _FUTURE if w in t), None)) and _match(t.replace(future, ""), today, original) is None:
        raise PeriodError(f"「{original}」是未来的时间，还没有数据。")
    extra = _PERIOD_CHARS.sub("", t)
    if extra:
        raise PeriodError(f"时间「{original}」里的「{extra[:10]}」看不懂。可以说：昨天、上周、本月、最近7天、2026-11-01到2026-11-07。")
    period = _match(t, today, original)
    if period is not None:
        _both_dates_read(t, period, original)
    if period is not None and _UP_TO.search(t) and not _RANGE_JOIN.search(t.replace("截至", "").replace("截止", "")) \
            and not any(w in t for w in _SO_FAR) and period.start == period.end:
        # 「截至11月7日」 names where a range ends, not where it starts: one day would be a guess.
        raise PeriodError(f"「{original}」是从哪天算起？请说完整，比如 11月1日到11月7日、本月到目前为止。")
    if period is None:
        if any(word in t for word in _FUTURE):
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
    so_far = next((w for w in _SO_FAR if w in t), None)
    period = _match(t.replace(so_far, "，") if so_far else t, today, text)
    if period is not None:
        _one_period_only(t, today)
        _both_dates_read(t, period, text)
        if period.start == period.end and (hours := _HOURS_OF_DAY.search(t)):
            # The tools count whole days: say so rather than pass a day off as an evening.
            period = Period(period.start, period.end, f"{period.label}（{hours.group(0)}按全天统计）")
        return period
    if so_far:
        raise PeriodError(f"「{so_far}」是从哪天算起？请说完整，比如 这个月到目前为止、月初到现在、今年以来。")
    for word in _FUTURE:
        if word in t:
            raise PeriodError(f"「{word}」是未来的时间，还没有数据。")
    for word in _VAGUE:
        if word in t:
            raise PeriodError(f"「{word}」指的是哪段时间？请说具体一些，比如 最近7天、上周、本月。")
    return None


# Between two periods being compared: 「上周跟上上周比」「11月1号到7号和8号到14号」.
_COMPARE_JOIN = re.compile(r"跟|和|与|同(?!期|比)|对比|相比|比起|环比|(?<!同)比|vs|VS|还是|[，,。；;？?！!]")


def find_periods(text: str, today: date) -> list[Period]:
    """Every distinct period a question names, in order (「上周跟上上周比」 → 上周, 上上周). A part
    that names only days or a half (「8号到14号」 after 「11月1号到7号」, 「下半月」 after 「10月上半月」)
    takes the month of the part before."""
    t = (text or "").replace(" ", "")
    found: list[Period] = []
    month = None
    for part in _COMPARE_JOIN.split(t):
        if not part:
            continue
        try:
            p = _match(part, today, part)
            if month and re.match(r"\d{1,2}[日号]|[上下]半月", part):  # 「…和8号到14号」「10月上半月和下半月」
                p = _match(month + part, today, part)
        except PeriodError:
            p = None
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
        y, m = _shift_month(start.year, start.month, -1)
        first, last = _month_range(y, m)
        if (end + timedelta(days=1)).day == 1:
            return Period(first, last, f"{y}年{m}月")
        return Period(first, first.replace(day=min(end.day, last.day)), "上月同期")  # 3月30日 → 2月28日, not an error
    if period.label.startswith(("本周", "这周")):
        return Period(start - timedelta(days=7), end - timedelta(days=7), "上周同期")
    days = period.days
    label = {"上周": "上上周", "昨天": "前天", "今天": "昨天"}.get(period.label, f"之前 {days} 天")
    return Period(start - timedelta(days=days), start - timedelta(days=1), label)


SAME_TIME_BEFORE = re.compile(r"(上周|上个?月|去年)同期")


def names_two_periods(text: str, today: date) -> bool:
    """Two periods set side by side (「上周跟上上周」), or one and its 「上周同期」/「去年同期」."""
    periods = find_periods(text, today)
    return len(periods) >= 2 or (len(periods) == 1 and bool(SAME_TIME_BEFORE.search(text or "")))


def same_time_before(period: Period, unit: str) -> Period:
    """The same days one week, month or year before `period` (「今天跟上周同期比」 → the same
    weekday last week; 「这个月跟去年同期比」 → these days of the month a year ago). A day the
    earlier month lacks (3月31日 → 2月) is its last day."""
    def back(d: date) -> date:
        if unit == "上周":
            return d - timedelta(days=7)
        y, m = _shift_month(d.year, d.month, -12 if unit == "去年" else -1)
        return date(y, m, min(d.day, calendar.monthrange(y, m)[1]))

    label = {"上周": "上周同期", "去年": "去年同期"}.get(unit, "上月同期")
    return Period(back(period.start), back(period.end), label)


def _both_dates_read(t: str, period: Period, original: str) -> None:
    """Two dates and one day read (「2025年12月1日到2026-10-01」 mixes two formats no range
    pattern joins): the rest of the range would be dropped without a word."""
    dates = _RE_ISO_DAY.findall(t) + _RE_MD_DAY.findall(t)
    if len(dates) >= 2 and period.start == period.end and not any(rx.search(t) for rx in (_RE_ISO_RANGE, _RE_MD_RANGE, _RE_DOT_RANGE)):
        raise PeriodError(f"「{original}」里有两个日期：日期范围请用同一种写法并用「到」连接，比如 2026-11-01到2026-11-07。")


def _one_period_only(t: str, today: date) -> None:
    """「上周营业额多少，跟上上周比呢」 names two periods; answering one of them would be a
    silently wrong figure for the question asked."""
    found = []
    for clause in re.split(r"[，,。；;？?！!]+", t):
        try:
            p = _match(clause, today, clause) if clause else None
        except PeriodError:
            p = None
        if p is not None and all((p.start, p.end) != (q.start, q.end) for q in found):
            found.append(p)
    if len(found) > 1:
        raise PeriodError(f"这句话里有两段时间：{'、'.join(p.label for p in found)}；一次只能查一段，请分开问。")


# --- the period rules: (name, rule), tried in order; the first that reads a period wins ------------
#
# Each rule reads the text (`t`, normalised), today and the question as asked (`original`, for
# messages); it returns a Period, None (not its kind of period) or raises PeriodError (its kind,
# but not one that can be answered: a month 13, a lunar holiday, 「上上上周」).


def _too_many_shang(t: str, today: date, original: str) -> Period | None:
    if (m := _RE_TOO_MANY_SHANG.search(t)):
        raise PeriodError(f"「{m.group(0)}…」是哪段时间？请直接说日期，比如 10月1日到10月7日。")
    return None


def _iso_range(t: str, today: date, original: str) -> Period | None:
    if not (m := _RE_ISO_RANGE.search(t)):
        return None
    y1, m1, d1, y2, m2, d2 = (int(x) for x in m.groups())
    start, end = _safe_date(y1, m1, d1, m.group(0)), _safe_date(y2, m2, d2, m.group(0))
    return _explicit_range(start, end, today, m.group(0))


def _month_day_range(t: str, today: date, original: str) -> Period | None:
    if not (m := _RE_MD_RANGE.search(t)):
        return None
    year_s, m1, d1, year2_s, m2, d2 = m.groups()
    month1 = cn_number(m1)
    month2 = cn_number(m2) if m2 else month1
    for month in (month1, month2):
        if not 1 <= month <= 12:
            raise PeriodError(f"「{m.group(0)}」里的{month}月不是有效的月份（月份是 1 到 12）。")
    year = _year_for_month(month1, today, int(year_s) if year_s else None)
    start = _safe_date(year, month1, cn_number(d1), m.group(0))
    end_year = int(year2_s) if year2_s else year + 1 if month2 < month1 else year
    end = _safe_date(end_year, month2, cn_number(d2), m.group(0))
    return _explicit_range(start, end, today, m.group(0))


def _dot_range(t: str, today: date, original: str) -> Period | None:
    if not (m := _RE_DOT_RANGE.search(t)):
        return None
    m1, d1, m2, d2 = (int(x) for x in m.groups())
    if not (1 <= m1 <= 12 and 1 <= m2 <= 12):
        raise PeriodError(f"「{m.group(0)}」不是有效的日期范围（月份是 1 到 12）。")
    year = _year_for_month(m1, today, None)
    start = _safe_date(year, m1, d1, m.group(0))
    end = _safe_date(year + 1 if m2 < m1 else year, m2, d2, m.group(0))
    return _explicit_range(start, end, today, m.group(0))


def _lunar_holiday(t: str, today: date, original: str) -> Period | None:
    for word in _LUNAR:
        if word in t:
            raise PeriodError(f"「{word}」每年的日期不一样，请给出具体日期，比如 2月16日到2月22日。")
    return None


def _holiday(t: str, today: date, original: str) -> Period | None:
    for words, (m1, d1), (m2, d2), label in _HOLIDAYS:
        if any(w in t for w in words):
            year = today.year if (today.month, today.day) >= (m1, d1) else today.year - 1
            return _finish(date(year, m1, d1), date(year, m2, d2), f"{year}年{label}", today, original)
    return None


def _same_time_last_month(t: str, today: date, original: str) -> Period | None:
    if not any(w in t for w in ("上个月同期", "上月同期")):
        return None
    y, mo = _shift_month(today.year, today.month, -1)
    first, last = _month_range(y, mo)
    return _finish(first, min(last, first.replace(day=min(today.day, last.day))), "上月同期", today, original)


def _month_so_far(t: str, today: date, original: str) -> Period | None:
    if not any(w in t for w in ("月初到现在", "月初至今", "月初到今天", "这个月初到现在", "本月初至今")):
        return None
    return _finish(date(today.year, today.month, 1), today, "月初至今", today, original)


def _these_days(t: str, today: date, original: str) -> Period | None:
    if not (m := _RE_THESE_DAYS.search(t)):
        return None
    n = cn_number(m.group(1))
    return Period(today - timedelta(days=n - 1), today, m.group(0))


def _iso_day(t: str, today: date, original: str) -> Period | None:
    if not (m := _RE_ISO_DAY.search(t)):
        return None
    day = _safe_date(*(int(x) for x in m.groups()), original)
    return _finish(day, day, day.isoformat(), today, original)


def _month_day(t: str, today: date, original: str) -> Period | None:
    if not (m := _RE_MD_DAY.search(t)):
        return None
    year_s, mo, d = m.groups()
    month = cn_number(mo)
    if not 1 <= month <= 12:
        raise PeriodError(f"「{m.group(0)}」里的月份不对：{month}月不是有效的月份（月份是 1 到 12）。")
    year = _year_for_month(month, today, int(year_s) if year_s else None)
    day = _safe_date(year, month, cn_number(d), m.group(0))
    if day > today and not year_s:
        day = _safe_date(year - 1, month, day.day, m.group(0))
    return _finish(day, day, f"{month}月{day.day}日", today, original)


def _relative_day(t: str, today: date, original: str) -> Period | None:
    for word in sorted(_RELATIVE_DAYS, key=len, reverse=True):
        if word in t:
            day = today - timedelta(days=_RELATIVE_DAYS[word])
            return Period(day, day, word)
    return None


def _first_days_of_year(t: str, today: date, original: str) -> Period | None:
    if not (m := _RE_YEAR_FIRST_N.search(t)):
        return None
    year = today.year - (1 if m.group(1) == "去年" else 0)
    n = cn_number(m.group(2))
    if not 1 <= n <= 366:
        raise PeriodError(f"「{m.group(0)}」的天数不合理。")
    first = date(year, 1, 1)
    return _finish(first, min(first + timedelta(days=n - 1), date(year, 12, 31)), m.group(0), today, original)


def _half_month(t: str, today: date, original: str) -> Period | None:
    if not (m := _RE_HALF_MONTH.search(t)):
        return None
    relative, month_s, half = m.groups()
    if month_s:
        mo = cn_number(month_s)
        if not 1 <= mo <= 12:
            raise PeriodError(f"「{m.group(0)}」里的月份不对：{mo}月不是有效的月份（月份是 1 到 12）。")
        y = _year_for_month(mo, today, None)
    else:  # 「上半月」 alone: this month's
        back = 2 if relative and relative.startswith("上上") else 1 if relative and relative.startswith("上") else 0
        y, mo = _shift_month(today.year, today.month, -back)
    first, last = _month_range(y, mo)
    start, end = (first, first.replace(day=15)) if half == "上" else (first.replace(day=16), last)
    return _finish(start, end, f"{y}年{mo}月{half}半月", today, original)


def _first_days_of_month(t: str, today: date, original: str) -> Period | None:
    if not (m := _RE_MONTH_FIRST_N.search(t)):
        return None
    relative, month_s, n_s = m.groups()
    if relative:
        back = 2 if relative.startswith("上上") else 1 if relative.startswith("上") else 0
        y, mo = _shift_month(today.year, today.month, -back)
    else:
        mo = cn_number(month_s)
        if not 1 <= mo <= 12:
            raise PeriodError(f"「{m.group(0)}」里的月份不对：{mo}月不是有效的月份（月份是 1 到 12）。")
        y = _year_for_month(mo, today, None)
    first, last = _month_range(y, mo)
    n = cn_number(n_s)
    if not 1 <= n <= last.day:
        raise PeriodError(f"「{m.group(0)}」的天数不合理。")
    return _finish(first, first + timedelta(days=n - 1), m.group(0), today, original)


def _same_time_of_what(t: str, today: date, original: str) -> Period | None:
    if "同期" in t:
        # 「去年同期」「上周同期」: the same days of which period? Asked, never guessed.
        raise PeriodError("「同期」是和哪段时间对比？请直接说日期，比如 2025年11月1日到11月30日。")
    return None


def _last_n(t: str, today: date, original: str) -> Period | None:
    if not (m := _RE_LAST_N.search(t)):
        return None
    n, unit = cn_number(m.group(1)), m.group(2)
    if n <= 0 or n > 366:
        raise PeriodError(f"「{original}」的天数不合理。")
    days = n if unit in ("天", "日") else n * 7 if "周" in unit or "星期" in unit else n * 30
    return _last_days(days, today, m.group(0))


def _last_one(t: str, today: date, original: str) -> Period | None:
    if not (m := _RE_LAST_ONE.search(t)):
        return None
    word = m.group(1)
    days = 7 if ("周" in word or "星期" in word) else 15 if "半" in word else 30
    return _last_days(days, today, m.group(0))


def _named_weekend(t: str, today: date, original: str) -> Period | None:
    if "上上周末" in t or "上上个周末" in t:
        return _weekend(_week_start(today) - timedelta(days=9), today, "上上周末", original)
    if "上周末" in t or "上个周末" in t:
        return _weekend(_week_start(today) - timedelta(days=2), today, "上周末", original)
    if any(w in t for w in ("本周末", "这周末", "这个周末")):
        return _weekend(_week_start(today) + timedelta(days=5), today, "本周末", original)
    return None


def _weekday(t: str, today: date, original: str) -> Period | None:
    m = _RE_WEEKDAY.search(t)
    if not m or "周末" in t:
        return None
    prefix, wd_char = m.group(1) or "", m.group(2) or m.group(3)
    wd = WEEKDAYS[wd_char]
    weeks_back = {"上上": 2, "上": 1, "本": 0, "这": 0}.get(prefix, 0)
    day = _week_start(today) - timedelta(days=7 * weeks_back) + timedelta(days=wd)
    if not prefix and day > today:
        day -= timedelta(days=7)  # a bare 「周三」 is the most recent Wednesday
    label = f"{prefix}周{wd_char}" if prefix else f"周{wd_char}"
    return _finish(day, day, label, today, original)


def _weekend_bare(t: str, today: date, original: str) -> Period | None:
    if "周末" not in t:
        return None
    # The weekend under way, else the last one that ended.
    saturday = _week_start(today) + timedelta(days=5)
    if today < saturday:
        saturday -= timedelta(days=7)
    return _weekend(saturday, today, "周末", original)


def _week(t: str, today: date, original: str) -> Period | None:
    for words, weeks_back, label in (
        (("上上周", "上上个星期", "上上星期", "上上个礼拜"), 2, "上上周"),
        (("上周", "上个星期", "上星期", "上个礼拜", "上礼拜"), 1, "上周"),
        (("本周", "这周", "这个星期", "本星期", "这星期", "这礼拜"), 0, "本周"),
    ):
        if any(w in t for w in words):
            start = _week_start(today) - timedelta(days=7 * weeks_back)
            return _finish(start, start + timedelta(days=6), label, today, original)
    return None


def _relative_month(t: str, today: date, original: str) -> Period | None:
    for words, months_back, label in (
        (("上上个月", "上上月"), 2, "上上月"),
        (("上个月", "上月"), 1, "上月"),
        (("本月", "这个月", "这月", "当月"), 0, "本月"),
    ):
        if any(w in t for w in words):
            y, mo = _shift_month(today.year, today.month, -months_back)
            start, end = _month_range(y, mo)
            return _finish(start, end, label, today, original)
    return None


def _quarter(t: str, today: date, original: str) -> Period | None:
    for words, quarters_back, label in ((("上季度", "上个季度"), 1, "上季度"), (("本季度", "这个季度", "这季度"), 0, "本季度")):
        if any(w in t for w in words):
            q_start_month = (today.month - 1) // 3 * 3 + 1
            y, mo = _shift_month(today.year, q_start_month, -3 * quarters_back)
            start = date(y, mo, 1)
            ey, emo = _shift_month(y, mo, 2)
            return _finish(start, _month_range(ey, emo)[1], label, today, original)
    return None


def _named_month(t: str, today: date, original: str) -> Period | None:
    if not (m := _RE_MONTH.search(t)):
        return None
    year_s, mo = m.groups()
    month = cn_number(mo)
    if not 1 <= month <= 12:
        raise PeriodError(f"「{m.group(0)}」里的月份不对：{month}月不是有效的月份（月份是 1 到 12）。")
    explicit = {"今": today.year, "去": today.year - 1}.get(year_s or "", int(year_s) if year_s and year_s.isdigit() else None)
    year = _year_for_month(month, today, explicit)
    start, end = _month_range(year, month)
    label = f"{year}年{month}月" if explicit else f"{month}月"
    return _finish(start, end, label, today, original)


def _this_year(t: str, today: date, original: str) -> Period | None:
    if any(w in t for w in ("今年", "本年", "年初至今", "年初到现在")):
        return _finish(date(today.year, 1, 1), today, "今年", today, original)
    return None


def _last_year(t: str, today: date, original: str) -> Period | None:
    if "去年" in t:
        return _finish(date(today.year - 1, 1, 1), date(today.year - 1, 12, 31), "去年", today, original)
    return None


def _named_year(t: str, today: date, original: str) -> Period | None:
    if len(re.findall(r"(?<!\d)\d{4}年", t)) == 1 and (m := _RE_YEAR.search(t)):  # 「2025年」: that year (so far, for this one)
        year = int(m.group(1))
        if not 2000 <= year <= today.year + 1:
            raise PeriodError(f"「{m.group(0)}」不是能查的年份。")
        return _finish(date(year, 1, 1), date(year, 12, 31), f"{year}年", today, original)
    return None


PERIOD_RULES: tuple[tuple[str, Callable[[str, date, str], Period | None]], ...] = (
    ("too_many_shang", _too_many_shang), ("iso_range", _iso_range), ("month_day_range", _month_day_range),
    ("dot_range", _dot_range), ("lunar_holiday", _lunar_holiday), ("holiday", _holiday),
    ("same_time_last_month", _same_time_last_month), ("month_so_far", _month_so_far), ("these_days", _these_days),
    ("iso_day", _iso_day), ("month_day", _month_day), ("relative_day", _relative_day),
    ("first_days_of_year", _first_days_of_year), ("half_month", _half_month), ("first_days_of_month", _first_days_of_month),
    ("same_time_of_what", _same_time_of_what), ("last_n", _last_n), ("last_one", _last_one), ("named_weekend", _named_weekend),
    ("weekday", _weekday), ("weekend", _weekend_bare), ("week", _week), ("relative_month", _relative_month),
    ("quarter", _quarter), ("named_month", _named_month), ("this_year", _this_year), ("last_year", _last_year),
    ("named_year", _named_year),
)


def matching_rule(t: str, today: date, original: str) -> tuple[str, Period] | None:
    """The first rule that reads a period in `t`, and that period (PeriodError: one that cannot be answered)."""
    for name, rule in PERIOD_RULES:
        if (period := rule(t, today, original)) is not None:
            return name, period
    return None


def _match(t: str, today: date, original: str) -> Period | None:
    found = matching_rule(t, today, original)
    return found[1] if found else None


def _explicit_range(start: date, end: date, today: date, original: str) -> Period:
    """A range the user typed out: longer than a year is questioned; a part after today is
    cut off and the label says so (never silently)."""
    if start > end:
        raise PeriodError(f"「{original}」的开始日期晚于结束日期。")
    if start > today:
        raise PeriodError(f"「{original}」还没到，没有数据。")
    days = (end - start).days + 1
    if days > MAX_RANGE_DAYS:
        raise PeriodError(f"「{original}」跨了 {days} 天，超过一年；请缩小到一年以内，或分段来问。")
    label = f"{start.isoformat()} 至 {end.isoformat()}"
    if end > today:
        label += f"（{end.isoformat()} 还没到，按截至今天 {today.isoformat()} 统计）"
        end = today
    return Period(start, end, label)


def bound_to_data(period: Period, data_since: date | None) -> Period:
    """A range that starts before the first recorded sale starts there instead, and says so."""
    if data_since is None or period.start >= data_since:
        return period
    if period.end < data_since:
        raise PeriodError(f"{period.describe()}没有数据：销售记录从 {data_since.isoformat()} 开始。")
    return Period(data_since, period.end, f"{period.label}（销售记录从 {data_since.isoformat()} 开始，按此起算）")


def _last_days(days: int, today: date, label: str) -> Period:
    # "Last N days" means N whole days ending yesterday: today's sales are still coming in.
    end = today - timedelta(days=1)
    return Period(end - timedelta(days=days - 1), end, label)


def _weekend(saturday: date, today: date, label: str, original: str) -> Period:
    return _finish(saturday, saturday + timedelta(days=1), label, today, original)
