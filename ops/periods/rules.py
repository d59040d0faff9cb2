"""The period rules: (name, rule), tried in order; the first that reads a period wins.

Each rule reads the text (`t`, normalised), today and the question as asked (`original`, for
messages); it returns a Period, None (not its kind of period) or raises PeriodError (its kind,
but not one that can be answered: a month 13, a lunar holiday, 「上上上周」)."""
from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta

from .base import (
    HOLIDAYS,
    LUNAR,
    RE_DOT_RANGE,
    RE_HALF_MONTH,
    RE_ISO_DAY,
    RE_ISO_RANGE,
    RE_LAST_N,
    RE_LAST_ONE,
    RE_MD_DAY,
    RE_MD_RANGE,
    RE_MONTH,
    RE_MONTH_FIRST_N,
    RE_THESE_DAYS,
    RE_TOO_MANY_SHANG,
    RE_WEEKDAY,
    RE_YEAR,
    RE_YEAR_FIRST_N,
    RELATIVE_DAY_LABELS,
    RELATIVE_DAYS,
    WEEKDAYS,
    Period,
    PeriodError,
    cn_number,
    explicit_range,
    finish,
    last_days,
    month_range,
    safe_date,
    shift_month,
    week_start,
    weekend,
    year_for_month,
)


def _too_many_shang(t: str, today: date, original: str) -> Period | None:
    if (m := RE_TOO_MANY_SHANG.search(t)):
        raise PeriodError(f"「{m.group(0)}…」是哪段时间？请直接说日期，比如 10月1日到10月7日。")
    return None


def _iso_range(t: str, today: date, original: str) -> Period | None:
    if not (m := RE_ISO_RANGE.search(t)):
        return None
    y1, m1, d1, y2, m2, d2 = (int(x) for x in m.groups())
    start, end = safe_date(y1, m1, d1, m.group(0)), safe_date(y2, m2, d2, m.group(0))
    return explicit_range(start, end, today, m.group(0))


def _month_day_range(t: str, today: date, original: str) -> Period | None:
    if not (m := RE_MD_RANGE.search(t)):
        return None
    year_s, m1, d1, year2_s, m2, d2 = m.groups()
    month1 = cn_number(m1)
    month2 = cn_number(m2) if m2 else month1
    for month in (month1, month2):
        if not 1 <= month <= 12:
            raise PeriodError(f"「{m.group(0)}」里的{month}月不是有效的月份（月份是 1 到 12）。")
    year = year_for_month(month1, today, int(year_s) if year_s else None)
    start = safe_date(year, month1, cn_number(d1), m.group(0))
    end_year = int(year2_s) if year2_s else year + 1 if month2 < month1 else year
    end = safe_date(end_year, month2, cn_number(d2), m.group(0))
    return explicit_range(start, end, today, m.group(0))


def _dot_range(t: str, today: date, original: str) -> Period | None:
    if not (m := RE_DOT_RANGE.search(t)):
        return None
    m1, d1, m2, d2 = (int(x) for x in m.groups())
    if not (1 <= m1 <= 12 and 1 <= m2 <= 12):
        raise PeriodError(f"「{m.group(0)}」不是有效的日期范围（月份是 1 到 12）。")
    year = year_for_month(m1, today, None)
    start = safe_date(year, m1, d1, m.group(0))
    end = safe_date(year + 1 if m2 < m1 else year, m2, d2, m.group(0))
    return explicit_range(start, end, today, m.group(0))


def _lunar_holiday(t: str, today: date, original: str) -> Period | None:
    for word in LUNAR:
        if word in t:
            raise PeriodError(f"「{word}」每年的日期不一样，请给出具体日期，比如 2月16日到2月22日。")
    return None


def _holiday(t: str, today: date, original: str) -> Period | None:
    for words, (m1, d1), (m2, d2), label in HOLIDAYS:
        if any(w in t for w in words):
            year = today.year if (today.month, today.day) >= (m1, d1) else today.year - 1
            return finish(date(year, m1, d1), date(year, m2, d2), f"{year}年{label}", today, original)
    return None


def _same_time_last_month(t: str, today: date, original: str) -> Period | None:
    if not any(w in t for w in ("上个月同期", "上月同期")):
        return None
    y, mo = shift_month(today.year, today.month, -1)
    first, last = month_range(y, mo)
    return finish(first, min(last, first.replace(day=min(today.day, last.day))), "上月同期", today, original)


def _month_so_far(t: str, today: date, original: str) -> Period | None:
    if not any(w in t for w in ("月初到现在", "月初至今", "月初到今天", "这个月初到现在", "本月初至今")):
        return None
    return finish(date(today.year, today.month, 1), today, "月初至今", today, original)


def _these_days(t: str, today: date, original: str) -> Period | None:
    if not (m := RE_THESE_DAYS.search(t)):
        return None
    n = cn_number(m.group(1))
    return Period(today - timedelta(days=n - 1), today, m.group(0))


def _iso_day(t: str, today: date, original: str) -> Period | None:
    if not (m := RE_ISO_DAY.search(t)):
        return None
    day = safe_date(*(int(x) for x in m.groups()), original)
    return finish(day, day, day.isoformat(), today, original)


def _month_day(t: str, today: date, original: str) -> Period | None:
    if not (m := RE_MD_DAY.search(t)):
        return None
    year_s, mo, d = m.groups()
    month = cn_number(mo)
    if not 1 <= month <= 12:
        raise PeriodError(f"「{m.group(0)}」里的月份不对：{month}月不是有效的月份（月份是 1 到 12）。")
    year = year_for_month(month, today, int(year_s) if year_s else None)
    day = safe_date(year, month, cn_number(d), m.group(0))
    if day > today and not year_s:
        day = safe_date(year - 1, month, day.day, m.group(0))
    return finish(day, day, f"{month}月{day.day}日", today, original)


def _relative_day(t: str, today: date, original: str) -> Period | None:
    for word in sorted(RELATIVE_DAYS, key=len, reverse=True):
        if word in t:
            day = today - timedelta(days=RELATIVE_DAYS[word])
            return Period(day, day, RELATIVE_DAY_LABELS.get(word, word))
    return None


def _first_days_of_year(t: str, today: date, original: str) -> Period | None:
    if not (m := RE_YEAR_FIRST_N.search(t)):
        return None
    year = today.year - (1 if m.group(1) == "去年" else 0)
    n = cn_number(m.group(2))
    if not 1 <= n <= 366:
        raise PeriodError(f"「{m.group(0)}」的天数不合理。")
    first = date(year, 1, 1)
    return finish(first, min(first + timedelta(days=n - 1), date(year, 12, 31)), m.group(0), today, original)


def _half_month(t: str, today: date, original: str) -> Period | None:
    if not (m := RE_HALF_MONTH.search(t)):
        return None
    relative, month_s, half = m.groups()
    if month_s:
        mo = cn_number(month_s)
        if not 1 <= mo <= 12:
            raise PeriodError(f"「{m.group(0)}」里的月份不对：{mo}月不是有效的月份（月份是 1 到 12）。")
        y = year_for_month(mo, today, None)
    else:  # 「上半月」 alone: this month's
        back = 2 if relative and relative.startswith("上上") else 1 if relative and relative.startswith("上") else 0
        y, mo = shift_month(today.year, today.month, -back)
    first, last = month_range(y, mo)
    start, end = (first, first.replace(day=15)) if half == "上" else (first.replace(day=16), last)
    return finish(start, end, f"{y}年{mo}月{half}半月", today, original)


def _first_days_of_month(t: str, today: date, original: str) -> Period | None:
    if not (m := RE_MONTH_FIRST_N.search(t)):
        return None
    relative, month_s, n_s = m.groups()
    if relative:
        back = 2 if relative.startswith("上上") else 1 if relative.startswith("上") else 0
        y, mo = shift_month(today.year, today.month, -back)
    else:
        mo = cn_number(month_s)
        if not 1 <= mo <= 12:
            raise PeriodError(f"「{m.group(0)}」里的月份不对：{mo}月不是有效的月份（月份是 1 到 12）。")
        y = year_for_month(mo, today, None)
    first, last = month_range(y, mo)
    n = cn_number(n_s)
    if not 1 <= n <= last.day:
        raise PeriodError(f"「{m.group(0)}」的天数不合理。")
    return finish(first, first + timedelta(days=n - 1), m.group(0), today, original)


def _same_time_of_what(t: str, today: date, original: str) -> Period | None:
    if "同期" in t:
        # 「去年同期」「上周同期」: the same days of which period? Asked, never guessed.
        raise PeriodError("「同期」是和哪段时间对比？请直接说日期，比如 2025年11月1日到11月30日。")
    return None


def _last_n(t: str, today: date, original: str) -> Period | None:
    if not (m := RE_LAST_N.search(t)):
        return None
    n, unit = cn_number(m.group(1)), m.group(2)
    if n <= 0 or n > 366:
        raise PeriodError(f"「{original}」的天数不合理。")
    days = n if unit in ("天", "日") else n * 7 if "周" in unit or "星期" in unit else n * 30
    return last_days(days, today, m.group(0))


def _last_one(t: str, today: date, original: str) -> Period | None:
    if not (m := RE_LAST_ONE.search(t)):
        return None
    word = m.group(1)
    days = 7 if ("周" in word or "星期" in word) else 15 if "半" in word else 30
    return last_days(days, today, m.group(0))


def _named_weekend(t: str, today: date, original: str) -> Period | None:
    if "上上周末" in t or "上上个周末" in t:
        return weekend(week_start(today) - timedelta(days=9), today, "上上周末", original)
    if "上周末" in t or "上个周末" in t:
        return weekend(week_start(today) - timedelta(days=2), today, "上周末", original)
    if any(w in t for w in ("本周末", "这周末", "这个周末")):
        return weekend(week_start(today) + timedelta(days=5), today, "本周末", original)
    return None


def _weekday(t: str, today: date, original: str) -> Period | None:
    m = RE_WEEKDAY.search(t)
    if not m or "周末" in t:
        return None
    prefix, wd_char = m.group(1) or "", m.group(2) or m.group(3)
    wd = WEEKDAYS[wd_char]
    weeks_back = {"上上": 2, "上": 1, "本": 0, "这": 0}.get(prefix, 0)
    day = week_start(today) - timedelta(days=7 * weeks_back) + timedelta(days=wd)
    if not prefix and day > today:
        day -= timedelta(days=7)  # a bare 「周三」 is the most recent Wednesday
    label = f"{prefix}周{wd_char}" if prefix else f"周{wd_char}"
    return finish(day, day, label, today, original)


def _weekend_bare(t: str, today: date, original: str) -> Period | None:
    if "周末" not in t:
        return None
    # The weekend under way, else the last one that ended.
    saturday = week_start(today) + timedelta(days=5)
    if today < saturday:
        saturday -= timedelta(days=7)
    return weekend(saturday, today, "周末", original)


def _week(t: str, today: date, original: str) -> Period | None:
    for words, weeks_back, label in (
        (("上上周", "上上个星期", "上上星期", "上上个礼拜"), 2, "上上周"),
        (("上周", "上个星期", "上星期", "上个礼拜", "上礼拜"), 1, "上周"),
        (("本周", "这周", "这个星期", "本星期", "这星期", "这礼拜"), 0, "本周"),
    ):
        if any(w in t for w in words):
            start = week_start(today) - timedelta(days=7 * weeks_back)
            return finish(start, start + timedelta(days=6), label, today, original)
    return None


def _relative_month(t: str, today: date, original: str) -> Period | None:
    for words, months_back, label in (
        (("上上个月", "上上月"), 2, "上上月"),
        (("上个月", "上月"), 1, "上月"),
        (("本月", "这个月", "这月", "当月"), 0, "本月"),
    ):
        if any(w in t for w in words):
            y, mo = shift_month(today.year, today.month, -months_back)
            start, end = month_range(y, mo)
            return finish(start, end, label, today, original)
    return None


def _quarter(t: str, today: date, original: str) -> Period | None:
    for words, quarters_back, label in ((("上季度", "上个季度"), 1, "上季度"), (("本季度", "这个季度", "这季度"), 0, "本季度")):
        if any(w in t for w in words):
            q_start_month = (today.month - 1) // 3 * 3 + 1
            y, mo = shift_month(today.year, q_start_month, -3 * quarters_back)
            start = date(y, mo, 1)
            ey, emo = shift_month(y, mo, 2)
            return finish(start, month_range(ey, emo)[1], label, today, original)
    return None


def _named_month(t: str, today: date, original: str) -> Period | None:
    if not (m := RE_MONTH.search(t)):
        return None
    year_s, mo = m.groups()
    month = cn_number(mo)
    if not 1 <= month <= 12:
        raise PeriodError(f"「{m.group(0)}」里的月份不对：{month}月不是有效的月份（月份是 1 到 12）。")
    explicit = {"今": today.year, "去": today.year - 1}.get(year_s or "", int(year_s) if year_s and year_s.isdigit() else None)
    year = year_for_month(month, today, explicit)
    start, end = month_range(year, month)
    label = f"{year}年{month}月" if explicit else f"{month}月"
    return finish(start, end, label, today, original)


def _this_year(t: str, today: date, original: str) -> Period | None:
    if any(w in t for w in ("今年", "本年", "年初至今", "年初到现在")):
        return finish(date(today.year, 1, 1), today, "今年", today, original)
    return None


def _last_year(t: str, today: date, original: str) -> Period | None:
    if "去年" in t:
        return finish(date(today.year - 1, 1, 1), date(today.year - 1, 12, 31), "去年", today, original)
    return None


def _named_year(t: str, today: date, original: str) -> Period | None:
    if len(re.findall(r"(?<!\d)\d{4}年", t)) == 1 and (m := RE_YEAR.search(t)):  # 「2025年」: that year (so far, for this one)
        year = int(m.group(1))
        if not 2000 <= year <= today.year + 1:
            raise PeriodError(f"「{m.group(0)}」不是能查的年份。")
        return finish(date(year, 1, 1), date(year, 12, 31), f"{year}年", today, original)
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


def read_period(t: str, today: date, original: str) -> Period | None:
    found = matching_rule(t, today, original)
    return found[1] if found else None
