"""Question forms the product writes for each section at ingest (knowledge/questions.py):
every corpus gets them, with no LLM and no list written for it."""
import pytest

from knowledge.chunking import parse_markdown
from knowledge.embedders import HashingEmbedder
from knowledge.models import IndexMeta, SectionAlias, Sentence
from knowledge.questions import clean_heading, question_forms, section_question_forms
from knowledge.services import corpus_ingest, generated_alias_delete

DOC = """---
title: 原料验收与储存规范
doc_type: sop
audience: staff
---
# 原料验收与储存规范

## 一、目的

规范原料的验收与储存。

## 三、储存要求

### 3.2 鲜奶储存

| 物料 | 储存温度 | 保质期 |
|---|---|---|
| 鲜奶 | 0–5℃ | 48 小时 |
| R01 | 常温 | 4 小时 |

1. 鲜奶开封后贴效期标签。
2. 先进先出。
"""


def test_numbering_is_taken_off_a_heading():
    assert clean_heading("3.2 鲜奶储存") == "鲜奶储存"
    assert clean_heading("三、储存要求") == "储存要求"
    assert clean_heading("第一条 总则") == "总则"
    assert clean_heading("（一）收银准备") == "收银准备"


def test_a_generic_heading_is_asked_about_with_the_document_title():
    forms = question_forms("原料验收与储存规范", "原料验收与储存规范 > 一、目的", "规范原料的验收与储存。")
    assert forms[0] == "原料验收与储存规范的目的"
    assert not any(f == "目的" for f in forms)


def test_heading_table_rows_and_steps_each_give_forms():
    doc = parse_markdown(DOC)
    forms = dict.fromkeys(q for path, q in section_question_forms(doc.title, doc.chunks) if path.endswith("3.2 鲜奶储存"))
    assert "鲜奶储存" in forms and "鲜奶储存有什么要求" in forms
    assert "储存要求鲜奶储存" in forms  # the parent heading gives the context
    assert "鲜奶的储存温度和保质期是多少" in forms  # a table row, asked by its other columns' headers
    assert "鲜奶开封后贴效期标签" in forms  # a numbered step


def test_a_situation_a_rule_handles_and_a_prohibition_are_asked_as_staff_ask_them():
    # Staff ask about the situation (「TDS 超标怎么办」「剩奶能加热吗」), SOPs write the rule for it.
    text = ("1. 每天开店前测制茶用水 TDS，如遇 TDS 超标，改用备用桶装饮用水并报修。\n"
            "2. 当班时发现冷藏柜温度高于 5℃ 时，立即转移原料。\n"
            "3. 剩奶严禁二次加热。\n4. 当场拒收破损包装。\n| 物料 | 规定 |\n| --- | --- |\n| 鲜奶 | 不得超过 5℃ |")
    forms = question_forms("原料管理规范", "原料管理规范 > 3.1 用水与鲜奶", text, limit=30)
    assert "TDS 超标怎么办" in forms and "冷藏柜温度高于 5℃怎么办" in forms and "剩奶能不能二次加热" in forms
    assert not any(f.startswith("场") or "|" in f for f in forms)  # 「当场」 is no condition; a table row has its own form


def test_a_code_column_is_not_what_a_row_is_about():
    table = "| 编号 | 菜品 | 售价 |\n|---|---|---|\n| R01 | 卤肉饭 | 26 元 |\n| R02 | 牛腩饭 | 32 元 |"
    forms = question_forms("出品标准", "出品标准 > 饭类", table)
    assert "卤肉饭的售价是多少" in forms and not any(f.startswith("R01") for f in forms)


@pytest.mark.django_db
def test_ingest_stores_generated_forms_apart_and_a_deleted_one_is_not_written_again(tmp_path, django_user_model):
    from django.contrib.auth.models import Group

    (tmp_path / "a.md").write_text(DOC, encoding="utf-8")
    emb = HashingEmbedder(256)
    corpus_ingest(path=tmp_path, embedder=emb, rebuild=True)
    generated = SectionAlias.objects.filter(source=SectionAlias.Source.GENERATED, document_path="a.md")
    assert generated.filter(question="鲜奶储存有什么要求").exists()
    assert Sentence.objects.filter(kind=Sentence.Kind.ALIAS, generated=True, text="鲜奶储存有什么要求").count() == 1
    assert IndexMeta.objects.get().forms_version >= 1

    staff = django_user_model.objects.create_user("forms_staff")
    staff.groups.add(Group.objects.get(name="staff"))
    alias = generated.get(question="鲜奶储存有什么要求")
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        generated_alias_delete(alias=alias, user=staff)
    manager = django_user_model.objects.create_user("forms_manager")
    manager.groups.add(Group.objects.get(name="manager"))
    generated_alias_delete(alias=alias, user=manager)
    generated_alias_delete(alias=alias, user=manager)  # idempotent
    assert not Sentence.objects.filter(kind=Sentence.Kind.ALIAS, text="鲜奶储存有什么要求").exists()
    from core.models import AuditLog

    assert AuditLog.objects.filter(action="alias_deleted", actor=manager).count() == 1

    (tmp_path / "a.md").write_text(DOC + "\n3. 用完放回冷藏。\n", encoding="utf-8")  # the document changes: forms are written again
    corpus_ingest(path=tmp_path, embedder=emb)
    assert not Sentence.objects.filter(kind=Sentence.Kind.ALIAS, text="鲜奶储存有什么要求").exists()
    assert Sentence.objects.filter(kind=Sentence.Kind.ALIAS, generated=True, text="用完放回冷藏").exists()
