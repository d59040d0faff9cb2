"""The answer node: a procedure kept whole, a second section only on its own, hedged answers."""

import pytest

from agent import compose, pipeline
from agent.pipeline import answer_question
from agent.router import Route
from agent.tests.fakes import openai_chat
from agent.tests.helpers import _round, _section_hit, coverage_model, state_for
from knowledge.selectors import Hit

pytestmark = pytest.mark.django_db


def test_a_procedure_answer_keeps_every_step_and_leads_with_the_answer(staff):
    from knowledge.embedders import get_embedder
    from knowledge.models import Chunk

    chunk = Chunk.objects.select_related("document").get(section_path="酒水异味或品质问题处理 > 现场处理步骤")
    hit = Hit(chunk.id, chunk.document_id, chunk.document.title, chunk.document.path, chunk.section_path, chunk.text, "staff", score=1.0)
    question = "客人说酒喝着有股怪味怎么办"
    sources = compose.number_sources([hit], None, qvec=get_embedder().embed_query(question))
    answer = compose.extractive_policy_answer(question, sources, [])
    for fact in ("道歉", "免费为客人更换", "200 毫升", "48 小时", "5 分钟内告知值班主管"):
        assert fact in answer, fact
    lines = answer.splitlines()
    assert all(line.endswith("[1]") for line in lines)
    steps = [line for line in lines if line[:2] in {"1.", "2.", "3.", "4.", "5."}]
    assert [s[:2] for s in steps] == ["1.", "2.", "3.", "4.", "5."]  # the procedure whole and in order
    # The old composition kept the two best-matching sentences of a chunk: steps 3–5 were lost.
    assert len(steps) == 5


def test_a_long_section_is_cut_to_what_is_relevant_but_a_table_stays_whole(staff):
    from knowledge.selectors import SectionUnit

    units = [SectionUnit("sentence", f"第{i}条规定的内容。", i, similarity=0.5) for i in range(12)]
    units[7].similarity = 0.9
    units.append(SectionUnit("table", "| 角色 | 免单 |\n| --- | --- |\n| 店长 | 200 元 |", 20, similarity=0.89))
    lines = compose.section_lines(units, [])
    assert lines[0] == "第7条规定的内容。"
    assert "| 角色 | 免单 |\n| --- | --- |\n| 店长 | 200 元 |" in lines
    assert len(lines) <= compose.MAX_LINES


def test_a_question_asking_for_a_figure_is_led_by_the_close_line_that_states_one():
    # 「洗手洗多久」 was answered from a long hygiene section with its closest lines, none of which
    # said how long; the line with 「不少于 20 秒」 was a little less close and was left out.
    from knowledge.answerability import asked_types
    from knowledge.selectors import SectionUnit

    units = [SectionUnit("sentence", f"第{i}条卫生要求。", i, similarity=0.5) for i in range(12)]
    units[3] = SectionUnit("sentence", "进入操作区前必须洗手，先用流动水打湿双手。", 3, similarity=0.90)
    units[9] = SectionUnit("sentence", "用洗手液搓洗双手各个部位，时间不少于 20 秒。", 9, similarity=0.855)
    question = "洗手要洗多长时间"
    assert asked_types(question) == ("duration",)
    lines = compose.section_lines(units, [], asked=asked_types(question))
    assert lines[0] == units[9].text
    assert units[3].text in lines  # the closest line still follows
    # Asking for no figure, the closest line leads as before; a line far from the question does
    # not lead because it states a figure.
    assert compose.section_lines(units, [])[0] == units[3].text
    units[9].similarity = 0.80
    assert compose.section_lines(units, [], asked=("duration",))[0] == units[3].text
    assert compose.second_section_lines(units, [], asked=("duration",)) == [units[3].text]


def test_a_run_too_long_to_give_whole_gives_its_relevant_items_and_an_intro_never_stands_alone():
    # 「洗手洗几秒」 was answered 「必须洗手的时机：」 and nothing else: the line with 「不少于 20 秒」
    # sat in a run of fourteen items, too long to give whole, so none of it was given.
    from knowledge.selectors import SectionUnit

    intro = SectionUnit("sentence", "必须洗手的时机：", 1, similarity=0.922)
    items = [SectionUnit("item", f"{i}. 第{i}种情况后。", 2, similarity=0.86) for i in range(1, 13)]
    how = SectionUnit("item", "洗手方法：按六步洗手法揉搓不少于 20 秒，流动水冲净。", 2, similarity=0.918)
    units = [intro, *items[:8], how, *items[8:]]
    lines = compose.section_lines(units, [])
    assert lines[0] == intro.text and how.text in lines
    assert len(lines) <= compose.MAX_LINES
    # With nothing close enough in the run, the intro still brings its closest item.
    how.similarity = 0.70
    items[4].similarity = 0.87
    assert compose.section_lines(units, []) == [intro.text, items[4].text]


def test_past_the_budget_the_closest_lines_are_kept_not_the_first():
    # Lines sharing a word with the question filled the answer in the document's order, and the
    # line closest to it, near the end of the section, was cut.
    from knowledge.selectors import SectionUnit

    units = [SectionUnit("sentence", "冰柜的日常要求如下。", 0, similarity=0.90)]
    units += [SectionUnit("sentence", f"冰柜第{i}项检查。", i, similarity=0.5) for i in range(1, 10)]
    units.append(SectionUnit("sentence", "除霜每 2 周一次，霜层超过 5 毫米立即除霜。", 10, similarity=0.88))
    lines = compose.section_lines(units, ["冰柜"])
    assert len(lines) == compose.MAX_LINES
    assert lines[0] == units[0].text and lines[-1] == units[10].text  # still in the document's order


def test_a_long_table_shows_the_rows_the_question_names():
    # A 30-row storage chart answered 「汤底能放多久」 with every row of the chart.
    from knowledge.selectors import SectionUnit

    rows = [f"| 食材{i} | 冷藏 | {i} 天 |" for i in range(28)] + ["| 牛骨汤底 | 冷藏库上层 | 48 小时 |", "| 鸡汤汤底 | 冷藏库上层 | 24 小时 |"]
    chart = SectionUnit("table", "\n".join(["| 食材 | 存放位置 | 最长存放 |", "|---|---|---|", *rows]), 0, similarity=0.9)
    lines = compose.section_lines([chart], ["汤底", "放", "多久"])
    assert lines == ["（表中共 30 行，这里列出与问题相关的 2 行）\n| 食材 | 存放位置 | 最长存放 |\n|---|---|---|\n"
                     "| 牛骨汤底 | 冷藏库上层 | 48 小时 |\n| 鸡汤汤底 | 冷藏库上层 | 24 小时 |"]
    assert compose.second_section_lines([chart], ["汤底"]) == lines
    # Naming no row, or a short table: the table stays whole.
    assert compose.section_lines([chart], ["哪种", "最久"]) == [chart.text]
    short = SectionUnit("table", "\n".join(["| 食材 | 最长存放 |", "|---|---|", "| 牛骨汤底 | 48 小时 |", "| 面条 | 24 小时 |"]), 0, similarity=0.9)
    assert compose.section_lines([short], ["汤底"]) == [short.text]


def test_a_second_section_is_cited_only_when_it_answers_on_its_own(staff):
    from knowledge.embedders import get_embedder

    question = "满减券和折扣券能叠加吗"
    qvec = get_embedder().embed_query(question)
    answer = _section_hit("活动核销规则 > 叠加规则", 1.0)
    unrelated = _section_hit("设备使用与保养 > 制冰机", 0.99)  # fused almost as high, says nothing about coupons
    assert compose.select_citation_hits([answer, unrelated], qvec=qvec) == [answer]
    same_again = _section_hit("活动核销规则 > 叠加规则", 0.98)
    assert compose.select_citation_hits([answer, same_again], qvec=qvec) == [answer]  # one section, cited once


def test_a_clause_from_the_middle_of_an_enumeration_does_not_lead_without_its_opening():
    # 「安排员工关注，防止跌倒；」 led the answer, without 「对醉酒客人：」 that it belongs to.
    from knowledge.selectors import SectionUnit

    texts = ["对醉酒客人：停止向其出售含酒精饮品；", "安排员工关注，防止跌倒；", "协助联系其同伴或代驾；", "客人失去意识时立即拨打 120。",
             "另起一段的规定。"]
    units = [SectionUnit("sentence", t, 0 if i < 4 else 1, similarity=0.9 if i == 1 else 0.5) for i, t in enumerate(texts)]
    lines = compose.section_lines(units, [])
    assert lines[0] == "对醉酒客人：停止向其出售含酒精饮品；" and lines[1] == "安排员工关注，防止跌倒；"
    units[4].similarity = 0.95  # a clause that opens its own paragraph still leads
    assert compose.section_lines(units, [])[0] == "另起一段的规定。"
    units[4].similarity = 0.5  # a one-line extract keeps the clause that answers
    assert compose.section_lines(units, [], budget=1)[0] == "安排员工关注，防止跌倒；"


def test_a_second_sections_line_keeps_what_it_cannot_stand_without():
    # 「我把后台今天卖了多少截图发朋友圈」 ended 「会员信息、订单截图、销售数据和后台系统页面；」 without
    # 「禁止发布：」, and 「客人骂完说要去网上曝光我们」 with 「出现以下任一情况…必须立即叫店长：」 and no list.
    from knowledge.selectors import SectionUnit

    run = ["禁止发布：客人的正脸或可识别身份的信息（未获本人同意）；", "会员信息、订单截图、销售数据和后台系统页面；", "对竞争对手的评价。"]
    units = [SectionUnit("sentence", t, 0, similarity=0.9 if i == 1 else 0.5) for i, t in enumerate(run)]
    assert compose.second_section_lines(units, []) == run[:2]
    intro = SectionUnit("sentence", "出现以下任一情况，当班员工必须立即叫店长：", 0, similarity=0.5)
    items = [SectionUnit("item", f"{i}. {t}", 1, similarity=s) for i, (t, s) in
             enumerate([("客人身体不适。", 0.5), ("客人表示要投诉到媒体。", 0.8), ("同一客人第二次投诉。", 0.6)], 1)]
    assert compose.second_section_lines([intro, *items], []) == [intro.text, items[1].text]  # an item leads: with its intro
    intro.similarity = 0.95  # the intro leads: with the closest item of its list
    assert compose.second_section_lines([intro, *items], []) == [intro.text, items[1].text]
    # A run whose opening has no colon still opens it: 「300 元至 2000 元由区域经理审批；」 lacked 「单次报损金额」.
    limits = ["单次报损金额 300 元以内由店长审批；", "300 元至 2000 元由区域经理审批；", "超过 2000 元需运营总监审批。"]
    units = [SectionUnit("sentence", t, 0, similarity=0.9 if i == 1 else 0.5) for i, t in enumerate(limits)]
    assert compose.second_section_lines(units, []) == limits[:2]
    alone = [SectionUnit("sentence", "存酒期限 90 天。", 0, similarity=0.9), SectionUnit("sentence", "到期前提醒。", 0, similarity=0.4)]
    assert compose.second_section_lines(alone, []) == ["存酒期限 90 天。"]


def test_a_sentence_that_points_back_leads_after_what_it_points_to():
    # 「客人要求赔钱 我能答应吗」 began 「超出以上权限的一律交给店长」, without the 权限 above it.
    from knowledge.selectors import SectionUnit

    texts = ["普通店员可以：道歉、更换酒水或菜品。", "值班主管可以：赠送不超过 50 元的代金券。", "超出以上权限的一律交给店长，员工不得口头承诺。",
             "工单要写明类别。", "工单在 24 小时内必须有人跟进。", "严重程度分为三级。", "回访要记录。", "每月汇总一次。", "另一条规定。"]
    units = [SectionUnit("sentence", t, 0 if i < 3 else 1, similarity=0.9 if i == 2 else 0.5) for i, t in enumerate(texts)]
    lines = compose.section_lines(units, [])
    assert lines[:3] == texts[:3], lines
    assert compose.section_lines(units, [], budget=1) == [texts[2]]  # a one-line extract: the clause itself
    units[2].similarity, units[5].similarity = 0.5, 0.9  # a sentence that points at nothing leads as it is
    assert compose.section_lines(units, [])[0] == "严重程度分为三级。"


@pytest.mark.parametrize("question,quantity", [
    ("交班现金差了20块", (20.0, "元")), ("报损两百元谁批", (200.0, "元")), ("迟到15分钟怎么算", (15.0, "分钟")),
    ("会员卡能跨店用吗", None), ("3号桌差了20块，又多收了5块", None),  # none, or two: no threshold to pick with
])
def test_the_amount_a_question_states(question, quantity):
    assert compose.question_quantity(question) == quantity


def test_a_threshold_the_questions_amount_meets_leads():
    # 「交班现金差了20块」 led with 「10 元以内的记录在交接单上」; the rule for 20 is 「超过 10 元的…」.
    from knowledge.selectors import SectionUnit

    texts = ["每班结束前，收银员打印交班报表。", "现金长短款在 10 元以内的记录在交接单上；", "超过 10 元的当场报告值班主管查找原因。"]
    units = [SectionUnit("sentence", t, 0, similarity=s) for t, s in zip(texts, (0.86, 0.9, 0.88))]
    assert compose.section_lines(units, [], quantity=(20.0, "元"))[0] == texts[2]
    assert compose.section_lines(units, [], quantity=(5.0, "元"))[0] == texts[1]
    assert compose.section_lines(units, [])[0] == texts[1]  # no amount asked: the closest
    assert compose.condition_fit("报损 500 元至 2000 元由店长审批", (800.0, "元")) == 1
    assert compose.condition_fit("不超过 50 元的代金券", (80.0, "元")) == -1
    assert compose.condition_fit("迟到超过 30 分钟记旷工半天", (30.0, "分钟")) == -1
    assert compose.condition_fit("超过 10 元的当场报告", (20.0, "分钟")) == 0  # another unit


def test_an_answer_that_only_just_passed_says_it_is_the_closest_rule(staff, settings, fake_http):
    # 「客人想带狗进来坐行不行」 was answered from 包厢服务标准 as if that were the rule on dogs.
    meta = coverage_model(threshold=0.5)  # p = sigmoid(10 × coverage − 5): full coverage 0.99, none 0.007
    confident, _ = answer_question("满减券和折扣券能叠加吗", user=staff)
    assert not confident.refused and "制度里没有找到完全对应的规定" not in confident.answer
    meta.answerability["threshold"] = 0.988  # the same question (0.993) now passes by a hair
    meta.save(update_fields=["answerability"])
    barely, _ = answer_question("满减券和折扣券能叠加吗", user=staff)
    assert not barely.refused and barely.answer.startswith("制度里没有找到完全对应的规定，下面是最接近的《")
    assert "不能叠加" in barely.answer  # the answer itself follows
    step = next(s for s in barely.trace if s["step"] == "answer")["detail"]
    assert step["hedged"] is True
    # An LLM judge that read the section and said OK decided the round: no hedge, even when the
    # answer itself then falls back to the extractive one (the answer call fails).
    settings.SM_LLM_BACKEND, settings.SM_OPENAI_BASE = "openai", fake_http.url + "/v1"
    fake_http.routes["/v1/chat/completions"] = lambda body: (openai_chat("OK")(body) if "判断参考资料" in body["messages"][0]["content"]
                                                           else (503, {"error": {"message": "overloaded"}}))
    judged, _ = answer_question("满减券和折扣券能叠加吗", user=staff)
    judge_step = next(s for s in judged.trace if s["step"] == "judge")["detail"]
    answer_step = next(s for s in judged.trace if s["step"] == "answer")["detail"]
    assert judge_step["layer"] == "llm" and answer_step["mode"] == "extractive" and "degraded" in answer_step
    assert "不能叠加" in judged.answer and "制度里没有找到完全对应的规定" not in judged.answer


def test_a_question_that_also_asks_for_figures_is_hedged_when_its_rule_part_did_not_pass(staff):
    # Below the threshold, a question that also asked for figures is still answered from the closest
    # rules (the figures stand either way): that part says it is the closest rule. A round an LLM
    # judge decided is not hedged.
    from knowledge.answerability import Verdict

    state = state_for("上周天河店卖了多少，满减券的规则是什么", staff)
    state.route = Route("both", "test")
    state.chosen = _round([])
    state.chosen.layer, state.chosen.verdict = "answerability", Verdict(0.3, False, 0.5, {})
    assert pipeline.answer.barely_enough(state)
    state.route = Route("policy", "test")
    assert not pipeline.answer.barely_enough(state)  # a rule question below the threshold is refused, not hedged
    state.chosen.verdict = Verdict(0.6, True, 0.5, {})
    assert pipeline.answer.barely_enough(state)  # within the band
    state.chosen.verdict = Verdict(0.95, True, 0.5, {})
    assert not pipeline.answer.barely_enough(state)
    state.chosen.layer, state.chosen.verdict = "llm", Verdict(0.6, True, 0.5, {})
    assert not pipeline.answer.barely_enough(state)


def test_a_stores_own_rule_beside_the_chains_is_named_as_the_one_for_that_store():
    # Seen: a store's own upload (滤芯每 2 个月更换, 天河店 only) and the chain's (每 3 个月) were
    # quoted side by side, 「…每 3 个月…[1] … 每 2 个月…[2]」, with no word on which applies.
    from agent.pipeline.answer import scope_note

    chain = {"ref": "1", "document": "设备使用与保养"}
    own = {"ref": "2", "document": "制冰机清洁规范", "scope": "广州天河店"}
    note = scope_note([chain, own])
    assert note.startswith("注意：《制冰机清洁规范》[2]是广州天河店自己的规定") and "以门店规定为准" in note
    assert scope_note([chain]) == "" and scope_note([own]) == ""  # one kind of rule: nothing to weigh


def test_a_chat_answer_quoting_a_stores_upload_and_the_chains_rule_says_whose_each_is():
    from knowledge.documents import document_publish, document_upload
    from knowledge.tests.files import docx
    from ops.tests.factories import make_user

    manager = make_user("scope_note_manager", role="manager", stores=["GZ-TH"])
    version = document_upload(user=manager, name="制冰机.docx", stores=["GZ-TH"],
                              data=docx("制冰机清洁规范", {"一、滤芯": "制冰机滤芯每 2 个月更换一次，更换日期写在机身标签上。"}))
    document_publish(version=version, user=manager, run_now=True)
    staff = make_user("scope_note_staff", role="staff", stores=["GZ-TH"])
    result, _ = answer_question("制冰机滤芯多久换", user=staff)
    docs = {c["document"]: c for c in result.citations}
    assert docs["制冰机清洁规范"]["scope"] == "广州天河店" and any("scope" not in c for c in result.citations), result.citations
    assert "《制冰机清洁规范》" in result.answer.splitlines()[-1] and "以门店规定为准" in result.answer
