"""The extractive data answer's wording."""
import pytest

from agent.compose import Sources, extractive_data_answer
from ops.tools import ToolResult

pytestmark = pytest.mark.django_db


def test_a_one_sentence_summary_is_not_followed_by_a_colon():
    # Was 「…合计 ¥967.00。：」: the member summary has no 「：」 to lead into the rows.
    row = {"member": "M00002", "name": "王*", "phone": "138****1234", "home_store": "广州天河店", "principal_balance": 800.0,
           "bonus_balance": 167.0, "total_balance": 967.0}
    result = ToolResult("member_balance", {}, [row], "会员 M00002（王*）储值本金 ¥800.00，赠送余额 ¥167.00，合计 ¥967.00。", list(row))
    answer = extractive_data_answer(result, Sources(data=[{"ref": "D1", "row": row}]))
    assert answer == f"{result.summary} [D1]" and "。：" not in answer  # said once, cited


def test_the_busiest_hours_lead_the_hourly_answer():
    # Was 「…订单最多的时段：」 followed by every hour in clock order: the peak itself was cut off.
    from ops.tools import run_tool

    result = run_tool("hourly_peak", {"store": "天河店", "period": "最近30天"}, user=None)
    rows = result.rows
    answer = extractive_data_answer(result, Sources(data=[{"ref": f"D{i}", "row": r} for i, r in enumerate(rows, 1)]))
    busiest = max(rows, key=lambda r: r["orders"])
    first = answer.splitlines()[0]
    assert first == result.summary and f"{busiest['hour']}（{busiest['orders']} 单）" in first
    assert len(answer.splitlines()) == len(rows) + 1
