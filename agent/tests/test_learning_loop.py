"""Fixing a wrong answer once: in the admin a manager links an unanswered or 👎 question to
the section that answers it (it becomes that section's question alias, embedded at once and
audited) or marks it 「制度缺失」 with a note, listed on the corpus-gaps page. Real
PostgreSQL + pgvector, the real corpus (hashing embedder)."""
import uuid

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client

from agent.models import UnansweredQuestion
from agent.services import chat_ask, feedback_submit, unanswered_mark_gap
from core.models import AuditLog
from ops.tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def manager():
    return make_user("loop_manager", role="manager", stores=["GZ-TH"], is_staff=True)


@pytest.fixture
def staff():
    return make_user("loop_staff", role="staff", stores=["GZ-TH"], is_staff=True)


def thumbs_down(user, question):
    result, conv, reply = chat_ask(user=user, query=question, thread_id=uuid.uuid4().hex)
    feedback_submit(message=reply, user=user, helpful=False, reason="答非所问")
    return UnansweredQuestion.objects.get(message=reply, source="feedback")


def test_a_gap_needs_a_note_and_is_listed_on_the_gaps_page(manager, staff):
    item = thumbs_down(staff, "店里能不能养一只猫")
    with pytest.raises(ValidationError, match="缺少什么规定"):
        unanswered_mark_gap(item=item, user=manager, note="  ")
    item.refresh_from_db()
    assert not item.resolved and item.resolution == ""
    with pytest.raises(PermissionDenied):
        unanswered_mark_gap(item=item, user=staff, note="没有宠物规定")
    unanswered_mark_gap(item=item, user=manager, note="没有门店养宠物的规定")
    item.refresh_from_db()
    assert item.resolved and item.resolution == "gap" and item.resolved_by == manager
    assert AuditLog.objects.filter(action="unanswered_resolved", target_id=item.pk, after__resolution="gap").exists()
    c = Client()
    c.force_login(manager)
    page = c.get("/admin/agent/unansweredquestion/gaps/").content.decode()
    assert "店里能不能养一只猫" in page and "没有门店养宠物的规定" in page


def test_the_admin_gap_form_rejects_an_empty_note_with_a_400(manager, staff):
    item = thumbs_down(staff, "店里能不能养一只狗")
    c = Client()
    c.force_login(manager)
    r = c.post(f"/admin/agent/unansweredquestion/{item.pk}/learn/", {"action": "gap", "note": ""})
    assert r.status_code == 400 and "缺少什么规定" in r.content.decode()
    item.refresh_from_db()
    assert not item.resolved
    r = c.post(f"/admin/agent/unansweredquestion/{item.pk}/learn/", {"action": "gap", "note": "没有宠物规定"})
    assert r.status_code == 302 and r["Location"].endswith("/admin/agent/unansweredquestion/gaps/")


def test_the_learn_page_searches_sections_and_shows_their_text(manager, staff):
    item = thumbs_down(staff, "会员卡能跨店用吗")
    c = Client()
    c.force_login(manager)
    page = c.get(f"/admin/agent/unansweredquestion/{item.pk}/learn/").content.decode()
    assert "会员卡能跨店用吗" in page and 'class="section-choice module"' in page and "section-text" in page
    other = c.get(f"/admin/agent/unansweredquestion/{item.pk}/learn/", {"q": "扎啤机清洗"}).content.decode()
    assert "扎啤" in other
    s = Client()
    s.force_login(staff)
    assert s.get(f"/admin/agent/unansweredquestion/{item.pk}/learn/").status_code in (302, 403)
