"""`eval retrieval`, `eval agent` and `eval tune-fusion` report the tuning and the held-out set
side by side, with the answer-level keys integrators script against."""
import json

import pytest
from django.core.management import call_command

from knowledge import evaluation

pytestmark = pytest.mark.django_db

TUNE = [
    {"id": "r1", "kind": "policy", "query": "满减券和折扣券能叠加吗", "expect_doc": "活动核销规则", "expect_section": "叠加规则",
     "expect_intent": "policy", "expect_answer_contains": ["叠加"]},
    {"id": "x1", "kind": "refuse", "scope": "far", "query": "今天天气怎么样", "expect_intent": "out_of_scope", "expect_refused": True},
]
HOLDOUT = [
    {"id": "h1", "kind": "policy", "query": "会员卡能不能在别的店用", "expect_doc": "会员与储值规则", "expect_section": "跨店使用储值",
     "expect_intent": "policy", "expect_answer_contains": ["储值"]},
    {"id": "n1", "kind": "refuse", "scope": "near", "query": "员工可以带宠物狗来上班吗", "expect_intent": "policy", "expect_refused": True},
]
ANSWER_KEYS = {"key_fact_hit", "answer_top1", "near_refusal", "far_refusal", "false_refusals"}


@pytest.fixture
def small_sets(monkeypatch):
    monkeypatch.setattr(evaluation, "load_sets", lambda: {"tune": TUNE, "holdout": HOLDOUT})
    monkeypatch.setattr("agent.evaluation.runs.load_sets", lambda: {"tune": TUNE, "holdout": HOLDOUT})


def test_eval_retrieval_writes_tune_and_holdout(small_sets, tmp_path, capsys):
    path = tmp_path / "r.json"
    call_command("eval", "retrieval", "--json", str(path))
    report = json.loads(path.read_text())
    assert set(report) == {"tune", "holdout"}
    for name in ("tune", "holdout"):
        assert {"hybrid", "vector", "lexical", "sentence", "alias", "gram", "misses"} | ANSWER_KEYS <= set(report[name])
    assert report["tune"]["far_refusal"] == 1.0 and report["holdout"]["far_refusal"] is None
    out = capsys.readouterr().out
    assert "tune" in out and "holdout" in out and "key_fact_hit" in out


def test_eval_agent_writes_tune_and_holdout(small_sets, tmp_path):
    path = tmp_path / "a.json"
    call_command("eval", "agent", "--json", str(path))
    report = json.loads(path.read_text())
    assert {"tune", "holdout", "data_phrasings"} <= set(report)
    assert ANSWER_KEYS | {"routing_accuracy", "recall@1_agent_on"} <= set(report["holdout"])
    assert report["holdout"]["n"] == 2


def test_tune_fusion_dry_run_stores_nothing(small_sets, tmp_path):
    from knowledge.models import IndexMeta

    before = IndexMeta.objects.get().fusion
    path = tmp_path / "f.json"
    call_command("eval", "tune-fusion", "--dry-run", "--json", str(path))
    report = json.loads(path.read_text())
    assert report["grid_size"] > 1000 and set(report["chosen"]) == {"weights", "k", "candidates", "title_boost"}
    assert report["holdout"]["after"]["recall@1"] is not None
    assert IndexMeta.objects.get().fusion == before


def test_eval_agent_leaves_no_pending_proposal_behind(monkeypatch, tmp_path):
    # A stock question in the sets offered a restock: 「eval_staff 提交」 proposals stood pending on
    # the stores' desks after every run, for a manager to confirm.
    from core.models import AuditLog
    from workflow.models import Proposal

    # A stock answer only offers a restock now; a restock request in one turn still proposes one.
    sets = {"tune": [{"id": "d05", "kind": "data", "query": "天河店哪些商品低于安全库存", "expect_intent": "data",
                      "expect_tool": "low_stock", "expect_params": {"store": "广州天河店"}},
                     {"id": "a01", "kind": "data", "query": "给天河店补5箱百威，快卖完了", "expect_intent": "action"}]}
    monkeypatch.setattr("agent.evaluation.runs.load_sets", lambda: sets)
    call_command("eval", "agent", "--json", str(tmp_path / "a.json"))
    made = Proposal.objects.filter(proposed_by__username__startswith="eval_")
    assert made.exists(), "the restock request proposed one (else this test shows nothing)"
    assert not made.filter(status="pending").exists()
    assert AuditLog.objects.filter(action="expired", after__reason="评测生成的提案，评测结束时撤回").exists()
