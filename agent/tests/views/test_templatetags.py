"""The chat page's answer text: citations become links, a SOP table becomes a table."""
from agent.templatetags.storemind import cite_links


def test_a_table_in_an_answer_is_rendered_as_a_table_with_its_citation():
    # Was shown as raw 「| 充值金额 | … |\\n| --- | --- |」 text on the chat page.
    answer = "| 充值金额 | 赠送金额 |\n| --- | --- |\n| 500 元 | 30 元 |\n| 1000 元 | 100 元 |[1]\n储值不设有效期。[2]"
    html = str(cite_links(answer, 7))
    assert "| ---" not in html and "<table" in html
    assert "<th>充值金额</th>" in html and "<td>1000 元</td><td>100 元</td>" in html
    assert html.count('data-target="src-7-1"') == 1 and 'data-target="src-7-2"' in html
    assert html.endswith('储值不设有效期。<a href="#src-7-2" class="cite cite-doc" data-target="src-7-2">[2]</a>')


def test_answer_text_is_escaped_and_lines_are_kept():
    html = str(cite_links("<script>x</script>[1]\n第二行", 3))
    assert "<script>" not in html and "&lt;script&gt;" in html and "<br>第二行" in html


def test_a_taught_source_is_graded_high_whatever_its_similarity():
    # After a manager's teaching the sources read 「[1] 中」 above 「[2] 高」: the section the
    # manager chose goes first, and its grade came from its similarity alone.
    from django.template import Context

    from agent.templatetags.storemind import relevance

    context = Context({})
    context.render_context["relevance_bounds"] = (0.80, 0.87)
    assert relevance(context, {"vector_score": 0.82})["label"] == "中"
    taught = relevance(context, {"vector_score": 0.82, "taught": True})
    assert taught["label"] == "高" and "店长" in taught["title"]


def test_one_sources_citation_is_shown_once_per_run_of_lines():
    # 「[1]」 after every sentence of one source cluttered the page; the stored answer keeps each one.
    html = str(cite_links("按以下顺序处理：[1]\n1. 先道歉。[1]\n2. 换一瓶。[1]\n另见：[2]\n- 天河店 ¥1.00 [D1]\n- 福田店 ¥2.00 [D2]", 9))
    assert html.count('data-target="src-9-1"') == 1 and html.index("换一瓶。") < html.index('data-target="src-9-1"')
    assert html.count('data-target="src-9-2"') == 1
    assert 'data-target="row-9-D1"' in html and 'data-target="row-9-D2"' in html  # each data row keeps its own


def test_a_category_group_is_named_once_in_the_chart_caption():
    # Seen: 「热销商品 · 广州天河店 · 上周… · 酒类类 · 前 5 名」.
    from agent.templatetags.storemind import _describe_params

    assert _describe_params({"category": "酒类", "n": 5}) == "酒类 · 前 5 名"
    assert _describe_params({"category": "啤酒"}) == "啤酒类"


def test_small_talk_is_badged_as_talk_not_as_an_action():
    # Seen: 「你好」 and 「谢谢」 wore the 「操作」 badge, read as something having been done.
    from types import SimpleNamespace

    from agent.templatetags.storemind import answer_badge

    badge = answer_badge(SimpleNamespace(route_reason="寒暄或回应，不是问题，也不是请求", refused=False, intent="action"))
    assert badge["label"] == "闲聊" and "没有任何操作" in badge["reason"]
    assert answer_badge(SimpleNamespace(route_reason="动作请求 — action：请求补货×1（3 分）", refused=False, intent="action"))["label"] == "操作"
