"""The four guards that hold a draft to its sources, each failing without it; the LLM down."""

import pytest

from agent import compose
from agent.pipeline import answer_question
from agent.tests.fakes import openai_chat
from agent.tests.helpers import _hit, _sources

pytestmark = pytest.mark.django_db


def test_guard_one_removes_citations_that_point_nowhere():
    sources, tool = _sources()
    draft = "不能叠加[1]。单品券可以[2]。店长说可以[7]。库存见[D1][D9]。"
    answer, removed = compose.guard_unknown_citations(draft, sources)
    assert "[7]" in draft and "[7]" not in answer and "[D9]" not in answer
    assert "[1]" in answer and "[D1]" in answer and set(removed) == {"[7]", "[D9]"}


def test_guard_two_documents_and_rows_are_numbered_separately():
    sources, tool = _sources()
    assert [c["ref"] for c in sources.citations] == ["1", "2"]
    assert [d["ref"] for d in sources.data] == [f"D{i}" for i in range(1, len(tool.rows) + 1)]
    # A data row may never be cited as a document: [3] is not a source even if there are 3 rows.
    answer, _ = compose.guard_unknown_citations("见[3]", sources)
    assert answer == "见"


def test_guard_three_every_row_appears(staff):
    sources, tool = _sources()
    assert len(tool.rows) >= 2
    first = tool.rows[0]["product"]
    draft = f"{first} 库存不足[D1]。"
    answer, missing = compose.guard_all_rows(draft, tool, sources)
    for row in tool.rows:
        assert row["product"] in answer
    assert missing and all(m not in draft for m in missing)


def test_guard_four_mandatory_clause_always_included():
    from knowledge.models import Document

    quality = Document.objects.get(title="酒水异味或品质问题处理")
    bottle_keeping = Document.objects.get(title="包厢预订与存酒")

    def cited_from(document):
        hit = _hit("先道歉并更换酒水。", cid=99)
        hit.document_id = document.pk
        return compose.number_sources([hit], None)

    draft = "先道歉并更换酒水[1]。"
    sources = cited_from(quality)
    answer, added = compose.guard_mandatory_clauses("客人说喝了变质的酒", draft, sources, ["staff"])
    assert "就医" not in draft and "就医" in answer and added
    assert any("身体不适" in c["section_path"] for c in sources.citations)  # cited, not invented
    untouched, none = compose.guard_mandatory_clauses("黑牌多少钱", draft, cited_from(quality), ["staff"])
    assert untouched == draft and not none
    # Words with everyday senses (过期, 坏了, 不舒服) count only when the answer is about the rule's
    # own scenario: a voucher or stored liquor that 过期 gets no 「建议客人就医」 …
    for question in ("送的钱会过期吗", "存的酒过期了没人拿怎么办", "存在店里的红酒坏了没有"):
        untouched, none = compose.guard_mandatory_clauses(question, draft, cited_from(bottle_keeping), ["staff"])
        assert untouched == draft and not none, question
    # … while a spoiled drink does, and 拉肚子 (an always-trigger) does whatever the sources are.
    assert "就医" in compose.guard_mandatory_clauses("客人说这瓶酒过期了", draft, cited_from(quality), ["staff"])[0]
    assert "就医" in compose.guard_mandatory_clauses("存的酒过期了，客人喝了拉肚子", draft, cited_from(bottle_keeping), ["staff"])[0]


def test_guards_apply_to_llm_answers(staff, settings, fake_http):
    settings.SM_LLM_BACKEND, settings.SM_OPENAI_BASE = "openai", fake_http.url + "/v1"
    answer_route, judge_route = openai_chat("先道歉并换一杯[1]，按公司规定赔偿[5]。"), openai_chat("OK")
    # Like a real model, the server answers the judge's prompt and the answer prompt differently.
    fake_http.routes["/v1/chat/completions"] = lambda body: (judge_route if "判断参考资料" in body["messages"][0]["content"] else answer_route)(body)
    result, _ = answer_question("客人说喝了变质的酒怎么办", user=staff)
    assert "[5]" not in result.answer and "就医" in result.answer
    answer_step = next(s for s in result.trace if s["step"] == "answer")["detail"]
    assert answer_step["mode"] == "llm" and answer_step["guards"]["citations_removed"] == ["[5]"]


def test_llm_down_degrades_to_extractive(staff, settings):
    settings.SM_LLM_BACKEND, settings.SM_OPENAI_BASE, settings.SM_LLM_TIMEOUT = "openai", "http://127.0.0.1:9/v1", 1.0
    result, _ = answer_question("会员卡能跨店用吗", user=staff)
    answer_step = next(s for s in result.trace if s["step"] == "answer")["detail"]
    assert answer_step["mode"] == "extractive" and "降级" in answer_step["degraded"]
    assert result.citations and "[1]" in result.answer
