"""The period rules (ops.periods.PERIOD_RULES): one case each, named by the rule that reads it.
A rule added to the table without a case here fails the last test."""
from datetime import date

import pytest

from ops.periods import PERIOD_RULES, PeriodError, matching_rule

TODAY = date(2026, 12, 4)  # a Friday

# rule: (text, the period's label, first day, last day) — or the error's words for a rule that refuses
CASES = {
    "too_many_shang": ("上上上周", PeriodError, "是哪段时间"),
    "iso_range": ("2026-11-01到2026-11-07", "2026-11-01 至 2026-11-07", "2026-11-01", "2026-11-07"),
    "month_day_range": ("11月1日到7日", "2026-11-01 至 2026-11-07", "2026-11-01", "2026-11-07"),
    "dot_range": ("11.1-11.7", "2026-11-01 至 2026-11-07", "2026-11-01", "2026-11-07"),
    "lunar_holiday": ("春节", PeriodError, "每年的日期不一样"),
    "holiday": ("国庆", "2026年国庆", "2026-10-01", "2026-10-07"),
    "same_time_last_month": ("上个月同期", "上月同期", "2026-11-01", "2026-11-04"),
    "month_so_far": ("月初到现在", "月初至今", "2026-12-01", "2026-12-04"),
    "these_days": ("这三天", "这三天", "2026-12-02", "2026-12-04"),
    "iso_day": ("2026-11-20", "2026-11-20", "2026-11-20", "2026-11-20"),
    "month_day": ("11月20日", "11月20日", "2026-11-20", "2026-11-20"),
    "relative_day": ("前天", "前天", "2026-12-02", "2026-12-02"),
    "first_days_of_year": ("今年前10天", "今年前10天", "2026-01-01", "2026-01-10"),
    "half_month": ("上个月上半月", "2026年11月上半月", "2026-11-01", "2026-11-15"),
    "first_days_of_month": ("11月前10天", "11月前10天", "2026-11-01", "2026-11-10"),
    "same_time_of_what": ("同期", PeriodError, "和哪段时间对比"),
    "last_n": ("最近7天", "最近7天", "2026-11-27", "2026-12-03"),
    "last_one": ("最近半个月", "最近半个月", "2026-11-19", "2026-12-03"),
    "named_weekend": ("上周末", "上周末", "2026-11-28", "2026-11-29"),
    "weekday": ("上周三", "上周三", "2026-11-25", "2026-11-25"),
    "weekend": ("周末", "周末", "2026-11-28", "2026-11-29"),
    "week": ("上周", "上周", "2026-11-23", "2026-11-29"),
    "relative_month": ("上个月", "上月", "2026-11-01", "2026-11-30"),
    "quarter": ("上季度", "上季度", "2026-07-01", "2026-09-30"),
    "named_month": ("10月", "10月", "2026-10-01", "2026-10-31"),
    "this_year": ("今年", "今年", "2026-01-01", "2026-12-04"),
    "last_year": ("去年", "去年", "2025-01-01", "2025-12-31"),
    "named_year": ("2025年", "2025年", "2025-01-01", "2025-12-31"),
}


@pytest.mark.parametrize("rule", list(CASES))
def test_rule(rule):
    text, *expected = CASES[rule]
    if expected[0] is PeriodError:
        with pytest.raises(PeriodError, match=expected[1]):
            matching_rule(text, TODAY, text)
        earlier = [name for name, fn in PERIOD_RULES[: [n for n, _ in PERIOD_RULES].index(rule)] if fn(text, TODAY, text)]
        assert not earlier, earlier  # refused by this rule, not by one before it
        return
    name, period = matching_rule(text, TODAY, text)
    assert (name, period.label, period.start.isoformat(), period.end.isoformat()) == (rule, *expected)


def test_every_rule_has_a_case_and_every_case_a_rule():
    assert [name for name, _ in PERIOD_RULES] == list(CASES)
