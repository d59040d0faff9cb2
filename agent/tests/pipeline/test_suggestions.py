"""Follow-up questions under an answer, one tap to ask (#29)."""
import pytest

from agent.data_guard import plan_data
from agent.pipeline import answer_question
from knowledge.models import Chunk
from ops.tools import local_today

pytestmark = pytest.mark.django_db


def test_a_rules_answer_offers_the_sections_beside_the_cited_one(staff):
    result, _ = answer_question("客人说酒有异味怎么办", user=staff)
    cited = result.citations[0]
    paths = list(dict.fromkeys(Chunk.objects.filter(document_id=cited["document_id"]).order_by("ordinal")
                               .values_list("section_path", flat=True)))
    i = paths.index(cited["section_path"])
    beside = {p.split(" > ")[-1] for p in paths[max(0, i - 1):i + 2] if p != cited["section_path"]}
    suggestions = result.context["suggestions"]
    assert suggestions and all(any(h.split(" ", 1)[-1] in q for h in beside) for q in suggestions), (suggestions, beside)
    assert result.as_dict()["suggestions"] == suggestions  # REST and MCP get them too


def test_a_figure_offers_its_natural_next_questions_about_the_same_store_and_period(staff):
    result, _ = answer_question("上周卖了多少", user=staff)
    suggestions = result.context["suggestions"]
    assert len(suggestions) == 3, suggestions
    tools = []
    for q in suggestions:
        plan = plan_data(q, today=local_today())
        assert plan.tool and not plan.clarify, (q, plan)
        assert plan.params.get("store") == "广州天河店" and plan.params["period"]["label"] == "上周", (q, plan)
        tools.append(plan.tool)
    assert tools == ["daily_trend", "top_products", "hourly_peak"]


def test_a_refusal_offers_nothing(staff):
    result, _ = answer_question("今天天气怎么样", user=staff)
    assert result.context["suggestions"] == []


def test_a_single_days_figures_suggest_no_list_of_days():
    # 「今天几点最忙」 was followed by 「今天广州天河店每天卖了多少」.
    from agent.suggestions import data_follow_ups

    today = {"label": "今天", "start": "2026-12-05", "end": "2026-12-05"}
    assert data_follow_ups("hourly_peak", {"store": "广州天河店", "period": today})[0] == "今天广州天河店卖了多少"
    week = {"label": "上周", "start": "2026-11-23", "end": "2026-11-29"}
    assert data_follow_ups("hourly_peak", {"store": "广州天河店", "period": week})[0] == "上周广州天河店每天卖了多少"


def test_no_tool_offers_a_list_of_days_after_one_day_nor_the_question_just_answered():
    # The one-day form was a text replace: 「今天天河店卖了多少」 offered itself again
    # (每天卖了多少 → 卖了多少), and 「今天各店每天营业额趋势」 stayed.
    from agent.suggestions import _NEXT, data_follow_ups

    today = {"label": "今天", "start": "2026-12-05", "end": "2026-12-05"}
    for tool in _NEXT:
        offered = data_follow_ups(tool, {"store": "广州天河店", "period": today, "product": "科罗娜"})
        assert offered and not any("每天" in t for t in offered), tool
    assert "今天广州天河店卖了多少" not in data_follow_ups("store_sales", {"store": "广州天河店", "period": today})
