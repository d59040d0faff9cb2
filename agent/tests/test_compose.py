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
    assert answer.splitlines()[0] == result.summary and "。：" not in answer
