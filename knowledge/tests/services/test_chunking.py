from knowledge.chunking import parse_markdown, split_sentences

DOC = """---
title: 活动核销规则
doc_type: rule
audience: staff
---
# 活动核销规则

## 叠加规则

满减券和折扣券不能叠加。单品券可以和满减券叠加。

### 例外

店庆期间另行通知。

## 档位

| 充值 | 赠送 |
| --- | --- |
| 500 | 30 |
| 2000 | 300 |

表格之后的一句话。
"""


def test_section_paths_follow_heading_hierarchy():
    doc = parse_markdown(DOC)
    assert doc.title == "活动核销规则" and doc.meta["doc_type"] == "rule"
    assert [c.section_path for c in doc.chunks] == [
        "活动核销规则 > 叠加规则",
        "活动核销规则 > 叠加规则 > 例外",
        "活动核销规则 > 档位",
    ]
    assert doc.chunks[0].embed_text.startswith("活动核销规则 > 叠加规则\n满减券")


def test_tables_stay_whole_with_their_header():
    doc = parse_markdown(DOC, max_chars=80, overlap_chars=10)
    tables = [c.text for c in doc.chunks if "|" in c.text]
    assert len(tables) == 1
    assert tables[0].startswith("| 充值 | 赠送 |") and "| 2000 | 300 |" in tables[0]


def test_a_table_longer_than_a_chunk_is_split_into_whole_rows_each_with_the_header():
    # A 300-row price list was one chunk: a row deep in it was never the closest thing to a question.
    doc = parse_markdown(DOC, max_chars=20, overlap_chars=10)
    tables = [c.text for c in doc.chunks if "|" in c.text]
    assert tables == ["| 充值 | 赠送 |\n| --- | --- |\n| 500 | 30 |", "| 充值 | 赠送 |\n| --- | --- |\n| 2000 | 300 |"]


def test_long_sections_split_at_sentences_with_whole_sentence_overlap_inside_the_section():
    sentences = [f"第{i}条规定的内容写在这里。" for i in range(1, 13)]
    source = "# 手册\n\n## 甲\n\n" + "".join(sentences) + "\n\n## 乙\n\n乙节只有一句。\n"
    doc = parse_markdown(source, max_chars=60, overlap_chars=30)
    first = [c for c in doc.chunks if c.section_path == "手册 > 甲"]
    assert len(first) >= 3
    for chunk in first:
        assert chunk.text.endswith("。") and chunk.text.startswith("第")  # whole sentences only
        assert len(chunk.text) <= 60
    # Consecutive chunks share whole sentences (overlap), never half a sentence.
    for a, b in zip(first, first[1:]):
        head = split_sentences(b.text)[0]
        assert head in split_sentences(a.text)
    # No overlap crosses into another section.
    second = [c for c in doc.chunks if c.section_path == "手册 > 乙"]
    assert [c.text for c in second] == ["乙节只有一句。"]


def test_document_without_headings_falls_back_to_paragraph_windows():
    source = "\n\n".join(f"第{i}段。这一段讲的是规则{i}。" for i in range(10))
    doc = parse_markdown(source, fallback_title="无标题文档", max_chars=40, overlap_chars=0)
    assert doc.title == "无标题文档"
    assert len(doc.chunks) > 2
    assert all(c.section_path == "无标题文档" for c in doc.chunks)


def test_real_corpus_has_enough_documents_and_chunks(settings):
    docs = [parse_markdown(p.read_text()) for p in sorted(settings.SM_CORPUS_DIR.glob("*.md"))]
    assert len(docs) >= 22
    assert sum(len(d.chunks) for d in docs) >= 150
    for d in docs:
        assert {"title", "doc_type", "audience", "version", "updated"} <= set(d.meta), d.title
    assert any(d.meta["audience"] == "manager" for d in docs)


def test_a_table_rule_is_the_whole_separator_line_one_pattern_for_chunking_and_rendering():
    # Two patterns (a prefix `-{2,}` here, `-{3,}` in the preview) took a body row whose first
    # cell says 「--」 (nothing) for the rule and dropped it from the table.
    from knowledge.chunking import TABLE_RULE
    from knowledge.rendering import text_html

    assert TABLE_RULE.match("|---|:---:|") and TABLE_RULE.match("| --- | --- |") and TABLE_RULE.match("---|---")
    assert not TABLE_RULE.match("| -- | 无需登记 |") and not TABLE_RULE.match("-- 注意：冰块现用现取")
    html = str(text_html("| 金额 | 处理 |\n| --- | --- |\n| -- | 无需登记 |\n| 50 元以上 | 报店长 |"))
    assert "<td>--</td><td>无需登记</td>" in html and html.count("<tr>") == 3
