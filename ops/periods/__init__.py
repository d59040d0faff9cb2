"""Chinese period expressions → exact date ranges (inclusive), with an injectable "today".

Ambiguous or unparseable input raises PeriodError with a message that says what to
write instead; a period is never guessed silently. Future periods are rejected: there
are no sales for them yet. base.py (Period, numerals, calendar helpers), rules.py
(PERIOD_RULES: one named rule per kind of period), reading.py (parse_period, find_periods,
previous_period …). Every public name is importable from `ops.periods`."""
from .base import (
    CN_DIGITS,
    MAX_RANGE_DAYS,
    NUM,
    WEEKDAYS,
    Period,
    PeriodError,
    cn_number,
)
from .reading import (
    MAX_PERIOD_TEXT,
    SAME_TIME_BEFORE,
    SO_FAR_LABELS,
    bound_to_data,
    find_period,
    find_periods,
    is_so_far,
    names_two_periods,
    parse_period,
    previous_period,
    same_time_before,
)
from .rules import (
    PERIOD_RULES,
    matching_rule,
)

__all__ = [
    "CN_DIGITS",
    "MAX_RANGE_DAYS",
    "NUM",
    "Period",
    "PeriodError",
    "WEEKDAYS",
    "cn_number",
    "PERIOD_RULES",
    "matching_rule",
    "MAX_PERIOD_TEXT",
    "SAME_TIME_BEFORE",
    "SO_FAR_LABELS",
    "bound_to_data",
    "find_period",
    "find_periods",
    "is_so_far",
    "names_two_periods",
    "parse_period",
    "previous_period",
    "same_time_before",
]
