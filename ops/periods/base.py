"""What periods are made of: Period and PeriodError, Chinese numerals, the calendar helpers and the
patterns the rules read with."""
from __future__ import annotations

import calendar
import re
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

    from ..trading_day import DAY_STARTS_AT, TZ, local_today

    return local_today(), DAY_STARTS_AT, timezone.localtime(timezone.now(), TZ).strftime("%H:%M")


_CN_UNITS = {"十": 10, "百": 100, "千": 1000}


def cn_number(text: str) -> int:
    """'7' → 7, '七' → 7, '十五' → 15, '二十' → 20, '一百' → 100, '两百五' → 250, '一百零五' → 105,
    '三千五百' → 3500, '一万' → 10000; digits without units read positionally ('二零二六' → 2026).
    Raises ValueError for anything else. Kept by hand rather than cn2an: over every string of one to
    four of these characters the two disagree on 42,614 of 69,904 (cn2an refuses 「百」「十十」 and other
    forms typed in a hurry that this reads), so a swap would change what periods and top-N read."""
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


def week_start(d: date) -> date:
    return d - timedelta(days=d.weekday())


def month_range(year: int, month: int) -> tuple[date, date]:
    return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])


def shift_month(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


def safe_date(year: int, month: int, day: int, original: str) -> date:
    try:
        return date(year, month, day)
    except ValueError:
        raise PeriodError(f"「{original}」不是有效日期。") from None


def year_for_month(month: int, today: date, explicit_year: int | None) -> int:
    # A bare month means the most recent one: in November, 「12月」 is last December.
    if explicit_year:
        return explicit_year
    return today.year if month <= today.month else today.year - 1


def finish(start: date, end: date, label: str, today: date, original: str) -> Period:
    if start > end:
        raise PeriodError(f"「{original}」的开始日期晚于结束日期。")
    if start > today:  # the period by its name: 「本周五和上周五对比一下营业额」 was quoted whole as the date
        raise PeriodError(f"「{label}」（{start.isoformat()}）还没到，没有数据。")
    return Period(start=start, end=min(end, today), label=label)


# Order matters: longer, more specific patterns first.
RELATIVE_DAYS = {"今天": 0, "今日": 0, "今儿": 0, "今晚": 0, "今夜": 0, "昨天": 1, "昨日": 1, "昨儿": 1, "昨晚": 1, "前天": 2, "前儿": 2,
                 "大前天": 3}
# A bar's night is its business day: 「今晚卖了多少」 is today's (it was asked which period was meant).
RELATIVE_DAY_LABELS = {"今晚": "今天", "今夜": "今天"}


FUTURE = ("明天", "后天", "下周", "下个月", "下月", "明年", "下星期")


VAGUE = ("最近", "近期", "前几天", "这几天", "前阵子", "之前", "以前", "过去")


RE_ISO_RANGE = re.compile(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\s*(?:到|至|~|～|-|—)\s*(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})")


RE_ISO_DAY = re.compile(r"(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})")


RE_MD_RANGE = re.compile(
    rf"(?:(\d{{4}})年)?({NUM})月({NUM})[日号]?\s*(?:到|至|~|～|-|—)\s*(?:(\d{{4}})年)?(?:({NUM})月)?({NUM})[日号]"
)


# 「10.1-11.15」「10/1到11/15」: only as a range (a lone 「10.5」 is more likely a price).
RE_DOT_RANGE = re.compile(r"(?<![\d.])(\d{1,2})[./](\d{1,2})\s*(?:到|至|~|～|-|—)\s*(\d{1,2})[./](\d{1,2})(?![\d.])")


RE_THESE_DAYS = re.compile(r"这([两二三])天")


RE_TOO_MANY_SHANG = re.compile(r"上{3,}")


# Fixed-date holidays: (words, (month, day) first, (month, day) last, label). Lunar ones are asked about.
HOLIDAYS = (
    (("国庆", "十一黄金周", "十一假期", "十一长假", "十一期间"), (10, 1), (10, 7), "国庆"),
    (("五一", "劳动节"), (5, 1), (5, 5), "五一"),
    (("元旦",), (1, 1), (1, 1), "元旦"),
    (("平安夜",), (12, 24), (12, 24), "平安夜"),
    (("圣诞",), (12, 25), (12, 25), "圣诞节"),
    (("双十一", "双11"), (11, 11), (11, 11), "双十一"),
    (("双十二", "双12"), (12, 12), (12, 12), "双十二"),
)


LUNAR = ("春节", "过年", "除夕", "中秋", "端午", "元宵", "七夕", "清明")


SO_FAR = ("到目前为止", "截至今天", "截止今天", "截至目前", "截止目前", "截至现在", "到现在为止", "至今", "到今天为止")


HOURS_OF_DAY = re.compile(r"早上|上午|中午|下午|傍晚|晚上|夜里|半夜|凌晨")


MAX_RANGE_DAYS = 366


RE_MD_DAY = re.compile(rf"(?:(\d{{4}})年)?({NUM})月({NUM})[日号]")


# A year standing alone (「2025年卖了多少」「2025年的营业额」); a year with a part named after it
# (第一季度、上半年、第三周、到2026年) is not the whole year: it is asked about, never widened.
RE_YEAR = re.compile(r"(?<!\d)(\d{4})年(?:的?(?:全年|整年|一整年))?"
                      r"(?!的?(?:第|上半|下半|前|后|头|初|底|末|中|季|Q|[\d零〇一二两三四五六七八九十]|到|至|-|~|～|—))")


RE_MONTH = re.compile(rf"(?:(\d{{4}}|今|去)年)?({NUM})月份?")


# 「本月前10天」「上个月头五天」「11月前十天」: the first days of a month, not the last days before today.
RE_MONTH_FIRST_N = re.compile(rf"(?:(上上个?月|上个?月|本月|这个?月|当月)|({NUM})月份?)的?(?:前|头)({NUM})(?:天|日)")


RE_YEAR_FIRST_N = re.compile(rf"(今年|本年|去年)的?(?:前|头)({NUM})(?:天|日)")


# 「11月上半月」「上个月下半月」「本月上半月」: the 1st–15th or the 16th–last of a month.
RE_HALF_MONTH = re.compile(rf"(?:(上上个?月|上个?月|本月|这个?月|当月)|({NUM})月份?)?的?([上下])半月")


RE_LAST_N = re.compile(rf"(?:最近|近|过去|前)({NUM})(天|日|周|个星期|星期|个月|月)")


RE_LAST_ONE = re.compile(r"(?:最近|近|过去)(一周|一个星期|一星期|一个月|半个月|半月)")


# 「周天」 is left out on purpose: 「上周天河店」 is last week at 天河店, not last Sunday.
# 「一共」「一起」「一样」 after 周 are words of their own: 「上周一共卖了多少」 is last week.
# 「上周四家店排名」 is last week's four stores: a number word before 家/个/间/店/位 counts things.
RE_WEEKDAY = re.compile(r"(上上|上|本|这)?(?:周([一二三四五六日])|(?:星期|礼拜)([一二三四五六日天]))(?![共起直样般些定致切下点])"
                         r"(?!(家|个|间)(店|门店|分店))")


def explicit_range(start: date, end: date, today: date, original: str) -> Period:
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


def last_days(days: int, today: date, label: str) -> Period:
    # "Last N days" means N whole days ending yesterday: today's sales are still coming in.
    end = today - timedelta(days=1)
    return Period(end - timedelta(days=days - 1), end, label)


def weekend(saturday: date, today: date, label: str, original: str) -> Period:
    return finish(saturday, saturday + timedelta(days=1), label, today, original)
