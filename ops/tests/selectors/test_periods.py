from datetime import date

import pytest

from ops.periods import PeriodError, find_period, parse_period

TODAY = date(2026, 11, 18)  # a Wednesday


@pytest.mark.parametrize(
    "text,start,end",
    [
        ("今天", "2026-11-18", "2026-11-18"),
        ("今晚", "2026-11-18", "2026-11-18"),  # a bar's night is its business day (it was asked which period)
        ("昨天", "2026-11-17", "2026-11-17"),
        ("昨日", "2026-11-17", "2026-11-17"),
        ("前天", "2026-11-16", "2026-11-16"),
        ("大前天", "2026-11-15", "2026-11-15"),
        ("本周", "2026-11-16", "2026-11-18"),
        ("这周", "2026-11-16", "2026-11-18"),
        ("上周", "2026-11-09", "2026-11-15"),
        ("上个星期", "2026-11-09", "2026-11-15"),
        ("上上周", "2026-11-02", "2026-11-08"),
        ("本月", "2026-11-01", "2026-11-18"),
        ("上月", "2026-10-01", "2026-10-31"),
        ("上个月", "2026-10-01", "2026-10-31"),
        ("上上个月", "2026-09-01", "2026-09-30"),
        ("最近7天", "2026-11-11", "2026-11-17"),
        ("近30天", "2026-10-19", "2026-11-17"),
        ("近十五天", "2026-11-03", "2026-11-17"),
        ("过去两周", "2026-11-04", "2026-11-17"),
        ("最近一周", "2026-11-11", "2026-11-17"),
        ("近一个月", "2026-10-19", "2026-11-17"),
        ("近3个月", "2026-08-20", "2026-11-17"),
        ("11月", "2026-11-01", "2026-11-18"),
        ("十一月", "2026-11-01", "2026-11-18"),
        ("10月份", "2026-10-01", "2026-10-31"),
        ("12月", "2025-12-01", "2025-12-31"),
        ("2025年11月", "2025-11-01", "2025-11-30"),
        ("11月1日到7日", "2026-11-01", "2026-11-07"),
        ("11月1号到7号", "2026-11-01", "2026-11-07"),
        ("10月28日至11月3日", "2026-10-28", "2026-11-03"),
        ("11月3日", "2026-11-03", "2026-11-03"),
        ("2026-11-01到2026-11-07", "2026-11-01", "2026-11-07"),
        ("2026-10-05", "2026-10-05", "2026-10-05"),
        ("周末", "2026-11-14", "2026-11-15"),
        ("上周末", "2026-11-14", "2026-11-15"),
        ("上上周末", "2026-11-07", "2026-11-08"),
        ("上周三", "2026-11-11", "2026-11-11"),
        ("周一", "2026-11-16", "2026-11-16"),
        ("周五", "2026-11-13", "2026-11-13"),
        ("星期天", "2026-11-15", "2026-11-15"),
        ("今年", "2026-01-01", "2026-11-18"),
        ("去年", "2025-01-01", "2025-12-31"),
        ("2025年", "2025-01-01", "2025-12-31"),  # a bare year: chat asked which period, the API said 400
        ("2026年", "2026-01-01", "2026-11-18"),
        ("本季度", "2026-10-01", "2026-11-18"),
        ("上季度", "2026-07-01", "2026-09-30"),
    ],
)
def test_period_expressions_give_exact_ranges(text, start, end):
    period = parse_period(text, TODAY)
    assert (period.start.isoformat(), period.end.isoformat()) == (start, end)


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("最近", "看不懂"),
        ("明天", "未来"),
        ("下周", "未来"),
        ("13月", "月份不对"),
        ("2月30日", "不是有效日期"),
        ("11月5日到3日", "晚于"),
        ("本周末", "还没到"),
        ("随便", "看不懂"),
        ("", "没有给出"),
    ],
)
def test_bad_periods_are_reported_not_guessed(text, fragment):
    with pytest.raises(PeriodError) as exc:
        parse_period(text, TODAY)
    assert fragment in str(exc.value)


@pytest.mark.parametrize(
    "question,start,end",
    [
        ("上周天河店卖了多少", "2026-11-09", "2026-11-15"),  # 「周天」 must not read as Sunday
        ("上周广州天河店卖了多少", "2026-11-09", "2026-11-15"),
        ("昨天福田店营业额", "2026-11-17", "2026-11-17"),
        ("最近7天哪个卖得最好", "2026-11-11", "2026-11-17"),
    ],
)
def test_find_period_inside_questions(question, start, end):
    period = find_period(question, TODAY)
    assert (period.start.isoformat(), period.end.isoformat()) == (start, end)


def test_find_period_none_and_vague():
    assert find_period("天河店卖了多少", TODAY) is None
    # A year with a part named after it is not the whole year (they were all of 2025): asked about.
    for text in ("2025年第一季度卖了多少", "2025年上半年", "2025年第三周", "2024年到2025年", "2025年底"):
        assert find_period(text, TODAY) is None, text
    with pytest.raises(PeriodError, match="具体"):
        find_period("天河店最近卖得怎么样", TODAY)


@pytest.mark.parametrize(
    "question,start,end",
    [
        ("这个月到目前为止卖了多少", "2026-11-01", "2026-11-18"),
        ("这个月截至今天营业额", "2026-11-01", "2026-11-18"),
        ("上个礼拜卖了多少", "2026-11-09", "2026-11-15"),
        ("礼拜六晚上几点最忙", "2026-11-14", "2026-11-14"),
        ("这两天卖得咋样", "2026-11-17", "2026-11-18"),
        ("月初到现在的营业额", "2026-11-01", "2026-11-18"),
        ("国庆卖了多少", "2026-10-01", "2026-10-07"),
        ("上个月同期卖了多少", "2026-10-01", "2026-10-18"),
        ("2026年10月1日到2026年11月15日卖了多少", "2026-10-01", "2026-11-15"),
        ("2025年12月20日到2026年1月5日", "2025-12-20", "2026-01-05"),
        ("10.1-11.15营业额", "2026-10-01", "2026-11-15"),
        ("10/1到11/15", "2026-10-01", "2026-11-15"),
        ("10月1号到11月15号", "2026-10-01", "2026-11-15"),
        ("上周一共卖了多少", "2026-11-09", "2026-11-15"),  # 「周一共」 is not Monday
        ("昨儿卖了多少", "2026-11-17", "2026-11-17"),
        ("双十一", "2026-11-11", "2026-11-11"),
        ("五一", "2026-05-01", "2026-05-05"),
    ],
)
def test_everyday_periods_give_exact_ranges(question, start, end):
    period = find_period(question, TODAY)
    assert (period.start.isoformat(), period.end.isoformat()) == (start, end)


def test_an_evening_is_counted_as_the_whole_day_and_says_so():
    period = find_period("礼拜六晚上卖了多少", TODAY)
    assert "晚上按全天统计" in period.label


def test_a_range_past_today_is_bounded_and_says_so():
    period = parse_period("2026年10月1日到2026年12月31日", TODAY)
    assert (period.start, period.end) == (date(2026, 10, 1), TODAY)
    assert "还没到" in period.label and "2026-11-18" in period.label


@pytest.mark.parametrize("text,fragment", [
    ("1900年1月1日到2100年1月1日", "超过一年"),
    ("2025年13月", "13月不是有效的月份"),
    ("2025年13月1日", "13月不是有效的月份"),
    ("13.1-13.5", "月份是 1 到 12"),
    ("到目前为止", "从哪天算起"),
    ("春节", "具体日期"),
    ("上上上个月", "请直接说日期"),
    ("上周营业额多少，跟上上周比呢", "两段时间"),
])
def test_unparseable_parts_are_named_in_the_question_back(text, fragment):
    with pytest.raises(PeriodError) as exc:
        find_period(text, TODAY)
    assert fragment in str(exc.value)


def test_a_range_before_the_first_sale_is_bounded_to_it():
    from ops.periods import bound_to_data

    period = bound_to_data(parse_period("2026年9月1日到2026年10月10日", TODAY), date(2026, 10, 1))
    assert (period.start, period.end) == (date(2026, 10, 1), date(2026, 10, 10)) and "销售记录从 2026-10-01 开始" in period.label
    with pytest.raises(PeriodError, match="没有数据"):
        bound_to_data(parse_period("2026年8月", TODAY), date(2026, 10, 1))


@pytest.mark.parametrize("text,value", [
    ("7", 7), ("七", 7), ("十五", 15), ("二十", 20), ("一百", 100), ("两百", 200), ("两百五", 250), ("一百零五", 105),
    ("一百二十", 120), ("三千五百", 3500), ("一千零一", 1001), ("一万", 10000), ("二零二六", 2026),
    ("一千零十", 1010), ("一万五", 15000), ("一万零五百", 10500)])
def test_chinese_numerals_with_hundreds_and_thousands(text, value):
    from ops.periods import cn_number

    assert cn_number(text) == value


def test_what_is_not_a_numeral_is_a_value_error_not_a_key_error():
    from ops.periods import cn_number

    with pytest.raises(ValueError):
        cn_number("十x")


@pytest.mark.parametrize("text,start,end", [
    ("本月前10天", "2026-11-01", "2026-11-10"), ("这个月前十天", "2026-11-01", "2026-11-10"),
    ("上个月头五天", "2026-10-01", "2026-10-05"), ("10月前10天", "2026-10-01", "2026-10-10"),
    ("今年前10天", "2026-01-01", "2026-01-10"),
])
def test_the_first_days_of_a_month_are_not_the_last_days_before_today(text, start, end):
    # 「本月前10天卖了多少」 was read as the ten days before today (11-20..11-29 on 11-30).
    for period in (parse_period(text, TODAY), find_period(f"天河店{text}卖了多少", TODAY)):
        assert (period.start.isoformat(), period.end.isoformat()) == (start, end)


@pytest.mark.parametrize("text,fragment", [
    ("昨天abc", "「abc」看不懂"), ("2026-11-01..2026-11-07", "两个日期"), ("2026-11-01/2026-11-07", "两个日期"),
    ("11月1日/11月7日", "两个日期"), ("2026-11-01,2026-11-07", "看不懂"), ("上周" * 3000, "最多 40 个字"),
    ("去年同期", "同期"), ("上周同期", "同期"), ("截至11月7日", "从哪天算起"),
])
def test_a_period_parameter_must_be_a_period_all_through(text, fragment):
    # The API read only the start of these (one day, or 昨天) and answered 200 with a figure
    # for a period nobody asked for.
    with pytest.raises(PeriodError) as exc:
        parse_period(text, TODAY)
    assert fragment in str(exc.value)


@pytest.mark.parametrize("text", ["2026-11-01到2026-11-01", "11月1日至11月1日", "2026-11-01-2026-11-07"])
def test_an_explicit_range_is_accepted_even_of_one_day(text):
    period = parse_period(text, TODAY)
    assert period.start.isoformat() == "2026-11-01"


@pytest.mark.parametrize("question,expected", [
    ("上周跟上上周比营业额涨了还是跌了", [("2026-11-09", "2026-11-15"), ("2026-11-02", "2026-11-08")]),
    # The second range names only days: it takes the month of the first.
    ("11月1号到7号和8号到14号哪个多", [("2026-11-01", "2026-11-07"), ("2026-11-08", "2026-11-14")]),
    ("上周卖了多少", [("2026-11-09", "2026-11-15")]),
])
def test_find_periods_names_every_period_of_a_comparison(question, expected):
    from ops.periods import find_periods

    assert [(p.start.isoformat(), p.end.isoformat()) for p in find_periods(question, TODAY)] == expected


@pytest.mark.parametrize("start,end,label,expected", [
    ("2026-11-01", "2026-11-30", "本月", ("2026-10-01", "2026-10-31", "2026年10月")),  # a whole month: the month before
    ("2026-11-01", "2026-11-18", "本月", ("2026-10-01", "2026-10-18", "上月同期")),  # a month so far: the same days
    ("2026-03-01", "2026-03-31", "3月", ("2026-02-01", "2026-02-28", "2026年2月")),
    ("2026-11-09", "2026-11-15", "上周", ("2026-11-02", "2026-11-08", "上上周")),
    ("2026-11-17", "2026-11-17", "昨天", ("2026-11-16", "2026-11-16", "前天")),
])
def test_previous_period_is_what_a_single_period_is_compared_with(start, end, label, expected):
    from ops.periods import Period, previous_period

    p = previous_period(Period(date.fromisoformat(start), date.fromisoformat(end), label))
    assert (p.start.isoformat(), p.end.isoformat(), p.label) == expected


def test_a_number_of_stores_after_last_week_is_not_a_weekday():
    # 「上周四家店排名」 ranked last Thursday only.
    period = find_period("上周四家店排名", TODAY)
    assert (period.start.isoformat(), period.end.isoformat()) == ("2026-11-09", "2026-11-15")
    assert find_period("上周四卖了多少", TODAY).start.isoformat() == "2026-11-12"


def test_this_week_so_far_is_compared_with_the_same_days_of_last_week():
    from ops.periods import Period, previous_period

    p = previous_period(Period(date(2026, 11, 16), date(2026, 11, 18), "本周"))
    assert (p.start.isoformat(), p.end.isoformat(), p.label) == ("2026-11-09", "2026-11-11", "上周同期")


@pytest.mark.parametrize("question,start,end", [
    ("上周六店里卖了多少", "2026-11-14", "2026-11-14"),  # 「六店」 is not a number of stores
    ("周五店里生意怎么样", "2026-11-13", "2026-11-13"),
])
def test_a_weekday_before_店里_is_still_a_weekday(question, start, end):
    period = find_period(question, TODAY)
    assert (period.start.isoformat(), period.end.isoformat()) == (start, end)


def test_previous_period_edges():
    from ops.periods import Period, find_periods, previous_period

    # 3月1日–30日 so far against February: its last day, not an error
    p = previous_period(Period(date(2026, 3, 1), date(2026, 3, 30), "本月"))
    assert (p.start.isoformat(), p.end.isoformat(), p.label) == ("2026-02-01", "2026-02-28", "上月同期")
    # a holiday starting on the 1st is not 「this month so far」
    p = previous_period(Period(date(2026, 10, 1), date(2026, 10, 7), "国庆"))
    assert (p.start.isoformat(), p.end.isoformat()) == ("2026-09-24", "2026-09-30")
    # 同期 is one word, not 「同」 joining two periods
    periods = find_periods("本月跟上个月同期比", TODAY)
    assert [(q.start.isoformat(), q.end.isoformat()) for q in periods] == [("2026-11-01", "2026-11-18"), ("2026-10-01", "2026-10-18")]


@pytest.mark.parametrize("text,start,end", [
    ("11月上半月卖了多少", "2026-11-01", "2026-11-15"),  # was the whole of November
    ("上个月下半月营业额", "2026-10-16", "2026-10-31"),
    ("上半月", "2026-11-01", "2026-11-15"),
])
def test_half_months(text, start, end):
    period = find_period(text, TODAY)
    assert (period.start.isoformat(), period.end.isoformat()) == (start, end)


def test_the_second_half_takes_the_month_of_the_first():
    from ops.periods import find_periods

    periods = find_periods("10月上半月和下半月哪个多", TODAY)
    assert [(p.start.isoformat(), p.end.isoformat()) for p in periods] == [("2026-10-01", "2026-10-15"), ("2026-10-16", "2026-10-31")]


def test_tonight_is_labelled_today():
    assert parse_period("今晚", TODAY).label == "今天" and find_period("今晚卖了多少", TODAY).label == "今天"
