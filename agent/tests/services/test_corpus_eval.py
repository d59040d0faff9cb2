"""Evaluation across corpora (agent/corpus_eval.py): a corpus is evaluated in a process and a
database of its own with nothing but `ingest`, and its figures come out in the keys `eval all` prints."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from knowledge.corpora import build_bare_copy, strip_alias_lines

TEA = """---
title: 青禾冰饮作业标准
doc_type: sop
audience: staff
---
# 青禾冰饮作业标准

## 一、冰桶管理

冰桶每 4 小时更换一次，冰铲单独存放在消毒盒里，不得插在冰里。

## 二、鲜奶储存

鲜奶开封后冷藏 0–5℃，48 小时内用完，超过即报废。

## 三、珍珠熬煮

珍珠煮好后保温 4 小时，到时未用完的全部报废。
"""
QUESTIONS = [
    {"id": "a1", "kind": "policy", "query": "冰桶多久要换一次", "expect_doc": "青禾冰饮作业标准", "expect_section": "一、冰桶管理",
     "expect_intent": "policy", "expect_answer_contains": ["4 小时"]},
    {"id": "a2", "kind": "policy", "query": "鲜奶开了能放几天", "expect_doc": "青禾冰饮作业标准", "expect_section": "二、鲜奶储存",
     "expect_intent": "policy", "expect_answer_contains": ["48 小时"]},
    {"id": "n1", "kind": "refuse", "scope": "near", "query": "员工的公积金每个月交多少", "expect_intent": "policy", "expect_refused": True},
    {"id": "f1", "kind": "refuse", "scope": "far", "query": "周杰伦最近有新专辑吗", "expect_intent": "out_of_scope", "expect_refused": True},
]


def test_the_bare_copy_has_no_alias_lines_and_no_lists(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.md").write_text("# 甲\n\n## 一\n\n内容。\n\n常见问法：甲怎么办；乙呢\n", encoding="utf-8")
    (src / "synonyms.txt").write_text("醉酒 <= 喝多了\n", encoding="utf-8")
    out = build_bare_copy(src, tmp_path / "bare")
    assert sorted(p.name for p in out.iterdir()) == ["a.md"]
    assert "常见问法" not in (out / "a.md").read_text("utf-8") and "内容。" in (out / "a.md").read_text("utf-8")
    assert strip_alias_lines("x\n> 常见问法：y\nz\n") == "x\nz\n"


@pytest.mark.e5
@pytest.mark.django_db
def test_a_new_chains_corpus_is_answered_and_refused_with_nothing_but_ingest(tmp_path):
    corpus = tmp_path / "corpora" / "tiny"
    (corpus / "docs").mkdir(parents=True)
    (corpus / "docs" / "ice.md").write_text(TEA, encoding="utf-8")
    for name, rows in (("tune", QUESTIONS[:1]), ("holdout", QUESTIONS)):
        (corpus / f"{name}.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "figures.json"
    env = {**os.environ, "SM_EVAL_CORPORA_DIR": str(tmp_path / "corpora"), "SM_DB_NAME": connection.settings_dict["NAME"]}
    env.pop("SM_EMBED_BACKEND", None)  # the default configuration: e5, no LLM
    run = subprocess.run([sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "eval", "figures", "--corpus", "tiny",
                          "--json", str(out)], env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(out.read_text("utf-8"))
    # Its own database (kept between runs: a second run finds the document unchanged).
    assert report["database"].endswith("_eval_tiny") and "3 chunks in index" in report["ingest"]
    assert report["fits_without_this_corpus"] == []  # a corpus the shipped fits never saw: they apply as they are
    hold = report["holdout"]
    assert {"R@1", "R@5", "MRR", "answer_top1", "key_fact_hit", "false_refusals", "near_refusal", "far_refusal", "routing"} <= set(hold)
    assert hold["false_refusals"] == 0 and hold["key_fact_hit"] == 1.0, hold["misses"]
    assert hold["near_refusal"] == 1.0 and hold["far_refusal"] == 1.0, hold["misses"]
