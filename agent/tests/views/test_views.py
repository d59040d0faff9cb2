"""The HTMX pages: full page vs partial on the same URL, permission-dependent buttons,
errors rendered as messages, CSRF."""
import uuid

import pytest
from django.test import Client

from agent.models import Message, UnansweredQuestion
from ops.models import Store
from ops.tests.factories import make_user
from workflow.services import proposal_create

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def staff_client():
    c = Client()
    c.force_login(make_user("view_staff", role="staff", stores=["GZ-TH"]))
    return c


@pytest.fixture
def manager_client():
    c = Client()
    c.force_login(make_user("view_manager", role="manager", stores=["GZ-TH"]))
    return c


def test_every_page_requires_login():
    for url in ("/", "/proposals/"):
        r = Client().get(url)
        assert r.status_code == 302 and r["Location"].startswith("/accounts/login/")


def test_chat_full_page_vs_partial(staff_client):
    r = staff_client.post("/", {"query": "会员卡能跨店用吗"}, **HX)
    body = r.content.decode()
    assert r.status_code == 200 and 'class="turn"' in body and "<html" not in body
    assert 'data-intent="policy"' in body and 'class="cite cite-doc"' in body
    assert "查看执行过程" not in body and "route_reason" not in body  # store staff see the answer, not the machinery
    assert 'hx-swap-oob="true"' in body  # the new thread id and conversation list come along
    thread = Message.objects.filter(conversation__user__username="view_staff").first().conversation.thread_id
    full = staff_client.get(f"/?thread={thread}")
    assert "<html" in full.content.decode() and "会员卡能跨店用吗" in full.content.decode()
    partial = staff_client.get(f"/?thread={thread}", **HX)
    assert "<html" not in partial.content.decode() and 'class="turn"' in partial.content.decode()
    plain = staff_client.post("/", {"query": "那退卡呢", "thread_id": thread})
    assert plain.status_code == 302 and plain["Location"].endswith(f"?thread={thread}")


def test_errors_render_as_messages(staff_client):
    r = staff_client.post("/", {"query": "   "}, **HX)
    assert r.status_code == 200 and 'class="error"' in r.content.decode() and "问题不能为空" in r.content.decode()
    r = staff_client.post("/", {"query": "酒" * 2001})
    assert r.status_code == 400 and "不能超过 2000" in r.content.decode()
    # A deleted or unknown thread's link: the chat page itself, in Chinese (it was Django's English
    # debug page under `make run`), still a 404; the same sentence for an HTMX request.
    missing = staff_client.get("/?thread=does-not-exist")
    assert missing.status_code == 404 and "这个会话不存在或已被删除" in missing.content.decode()
    assert 'name="query"' in missing.content.decode()
    partial = staff_client.get("/?thread=does-not-exist", **HX)
    assert partial.status_code == 404 and 'class="error"' in partial.content.decode()


def test_llm_backend_down_still_answers(manager_client, settings):
    settings.SM_LLM_BACKEND, settings.SM_OPENAI_BASE, settings.SM_LLM_TIMEOUT = "openai", "http://127.0.0.1:9/v1", 1.0
    manager_client.post("/preferences", {"show_details": "1"})  # the degradation note is in the execution trace
    r = manager_client.post("/", {"query": "会员卡能跨店用吗"}, **HX)
    body = r.content.decode()
    assert r.status_code == 200 and "降级" in body and 'class="cite cite-doc"' in body


def _proposal(kind):
    staff = make_user(f"p_{uuid.uuid4().hex[:6]}", role="staff", stores=["GZ-TH"])
    payload = {"lines": [{"sku": "B001", "quantity": 5, "unit": "箱"}]} if kind == "restock" else \
        {"category": "酒水品质", "severity": "一般", "description": "啤酒有异味，已更换。"}
    return proposal_create(user=staff, kind=kind, store=Store.objects.get(code="GZ-TH"), payload=payload, source="api")[0]


def test_buttons_depend_on_the_role(staff_client, manager_client):
    restock, ticket = _proposal("restock"), _proposal("ticket")
    staff_page = staff_client.get("/proposals/").content.decode()
    manager_page = manager_client.get("/proposals/").content.decode()

    def card(page, p):
        start = page.index(f'id="proposal-{p.pk}"')
        return page[start: page.index('<div class="proposal"', start + 10) if '<div class="proposal"' in page[start + 10:] else len(page)]

    assert f"/proposals/{restock.pk}/confirm" not in staff_page and "必须由店长确认" in card(staff_page, restock)
    assert f"/proposals/{ticket.pk}/confirm" in staff_page
    assert f"/proposals/{restock.pk}/confirm" in manager_page


def test_decide_in_place_returns_the_card_and_the_audit_list(staff_client, manager_client):
    restock = _proposal("restock")
    denied = staff_client.post(f"/proposals/{restock.pk}/confirm", **HX).content.decode()
    assert 'data-status="pending"' in denied and "必须由店长确认" in denied
    assert denied.count("必须由店长确认") == 1  # the refusal once, not again as 「等待有权限的人确认：…」
    done = manager_client.post(f"/proposals/{restock.pk}/confirm", {"with_audit": "1"}, **HX).content.decode()
    assert 'data-status="confirmed"' in done and 'id="audit-list" hx-swap-oob="true"' in done and "view_manager" in done
    # On the chat page there is no audit list to update: only the card comes back (htmx reported
    # the missing #audit-list target).
    ticket = _proposal("ticket")
    in_chat = manager_client.post(f"/proposals/{ticket.pk}/confirm", **HX).content.decode()
    assert 'data-status="confirmed"' in in_chat and 'id="audit-list"' not in in_chat
    assert "<html" not in done
    again = manager_client.post(f"/proposals/{restock.pk}/reject", {"reason": "x"}, **HX).content.decode()
    assert "不能再拒绝" in again


def test_feedback_thumbs_down_files_the_question(staff_client):
    staff_client.post("/", {"query": "会员卡能跨店用吗"}, **HX)
    reply = Message.objects.filter(conversation__user__username="view_staff", role="assistant").last()
    for junk in ("abc", "", "2"):  # each counted as 没用 and filed the question
        bad = staff_client.post(f"/messages/{reply.pk}/feedback", {"helpful": junk})  # htmx gets the same text with a 200
        assert bad.status_code == 400 and "helpful" in bad.content.decode(), junk
    assert not UnansweredQuestion.objects.filter(message=reply).exists()
    r = staff_client.post(f"/messages/{reply.pk}/feedback", {"helpful": "0", "reason": "没说退卡"}, **HX)
    assert "已记录反馈" in r.content.decode()
    item = UnansweredQuestion.objects.get(message=reply, source="feedback")
    assert item.question == "会员卡能跨店用吗" and "没说退卡" in item.reason
    other = Client()
    other.force_login(make_user("intruder", role="staff"))
    # Another user's answer reads exactly like one that does not exist (it was a 403 naming it).
    theirs = other.post(f"/messages/{reply.pk}/feedback", {"helpful": "1"}, **HX)
    missing = other.post("/messages/999999999/feedback", {"helpful": "1"}, **HX)
    assert theirs.status_code == missing.status_code == 404 and theirs.content == missing.content


def test_csrf_is_enforced():
    c = Client(enforce_csrf_checks=True)
    c.force_login(make_user("csrf_staff", role="staff"))
    assert c.post("/", {"query": "会员卡能跨店用吗"}).status_code == 403
    page = c.get("/").content.decode()
    assert 'hx-headers=\'{"X-CSRFToken": "' in page  # htmx sends the token with every request


def test_async_mode_polls_the_task_until_the_turn_arrives(staff_client):
    response = staff_client.post("/", {"query": "会员卡能跨店用吗", "async": "1"}, **HX)
    pending = response.content.decode()
    # The address names the new thread, so a reload reopens it (it stayed ?new=1 and showed an empty thread).
    assert response["HX-Replace-Url"].startswith("/?thread=")
    assert "后台处理中" in pending and 'hx-trigger="load delay:1s"' in pending
    task_url = pending.split('hx-get="')[1].split('"')[0]
    turn = staff_client.get(task_url, **HX).content.decode()  # eager here; with Redis the first polls return pending
    assert 'class="turn"' in turn and 'data-intent="policy"' in turn
    other = Client()
    other.force_login(make_user("poll_intruder", role="staff"))
    assert other.get(task_url, **HX).status_code == 404


def test_data_table_keeps_its_column_order_after_a_reload(staff_client):
    # jsonb sorts object keys (shorter first), so a reloaded row dict comes back shuffled;
    # the column order is stored with the rows.
    staff_client.post("/", {"query": "上周天河店卖了多少"}, **HX)
    reply = Message.objects.filter(conversation__user__username="view_staff", role="assistant").latest("id")
    reply.refresh_from_db()
    assert list(reply.data[0]["row"]) != ["store", "revenue", "orders", "avg_ticket"]  # what jsonb does to the dict
    assert reply.data[0]["columns"] == ["store", "revenue", "orders", "avg_ticket"]
    body = staff_client.get(f"/?thread={reply.conversation.thread_id}", **HX).content.decode()
    header = body[body.index("<thead>"):body.index("</thead>")]
    assert header.index(">门店</th>") < header.index(">营业额</th>") < header.index(">订单数</th>") < header.index(">客单价</th>")
    row = reply.data[0]["row"]
    cells = body[body.index(f'id="row-{reply.pk}-D1"'):]
    cells = cells[:cells.index("</tr>")]
    assert cells.index(f">{row['store']}</td>") < cells.index(f">¥{row['revenue']:,.2f}</td>") < cells.index(f">¥{row['avg_ticket']:,.2f}</td>")


def test_a_reopened_thread_shows_each_card_as_it_stands_now_and_keeps_given_feedback(staff_client):
    # Was the card as saved (待确认 after the manager confirmed it) and the 有用/没用 buttons again.
    from django.contrib.auth import get_user_model

    from agent.services import chat_ask, feedback_submit
    from workflow.services import proposal_confirm

    staff = get_user_model().objects.get(username="view_staff")
    result, conv, reply = chat_ask(user=staff, query="帮我给天河店补 10 箱科罗娜", thread_id=f"card-{uuid.uuid4().hex[:8]}")
    assert result.proposal and result.proposal["status"] == "pending"
    proposal_confirm(proposal=result.proposal["id"], user=make_user("view_mgr2", role="manager", stores=["GZ-TH"]))
    feedback_submit(message=reply, user=staff, helpful=True)
    page = staff_client.get(f"/?thread={conv.thread_id}").content.decode()
    card = page[page.index(f'id="proposal-{result.proposal["id"]}"'):]
    assert 'data-status="confirmed"' in page and "已确认" in card[:600]
    feedback = page[page.index(f'id="feedback-{reply.pk}"'):][:400]
    assert "已记录反馈" in feedback and "有帮助吗" not in feedback


def test_an_ended_session_sends_an_htmx_request_to_the_login_page_instead_of_into_the_chat():
    # The login page was swapped into the chat as an answer and the question was wiped.
    here = {**HX, "HTTP_HX_CURRENT_URL": "http://testserver/?thread=abc"}
    r = Client().post("/", {"query": "科罗娜还剩几瓶"}, **here)
    assert r.status_code == 204 and r["HX-Redirect"] == "/accounts/login/?next=%2F%3Fthread%3Dabc"
    assert Client().post("/", {"query": "x"}).status_code == 302  # a plain form still gets the redirect
    # Every cookie gone: the CSRF check fails first; it was 「请求失败（403），请稍后重试」 for ever.
    strict = Client(enforce_csrf_checks=True)
    r = strict.post("/", {"query": "科罗娜还剩几瓶"}, **here)
    assert r.status_code == 204 and r["HX-Redirect"].startswith("/accounts/login/?next=")
    strict.force_login(make_user("csrf_stale", role="staff"))
    r = strict.post("/", {"query": "科罗娜还剩几瓶"}, **here)
    assert r.status_code == 403 and r["HX-Refresh"] == "true"  # logged in, stale token: reload the page
    assert "页面已过期" in strict.post("/", {"query": "x"}).content.decode()


def test_renaming_a_thread_to_spaces_keeps_the_list_and_says_why(staff_client):
    # The error replaced the whole conversation list: every thread vanished from the drawer.
    staff_client.post("/", {"query": "会员卡能跨店用吗"}, **HX)
    thread = Message.objects.filter(conversation__user__username="view_staff").first().conversation.thread_id
    r = staff_client.post(f"/threads/{thread}/rename", {"title": "   "}, **HX)
    body = r.content.decode()
    assert r.status_code == 200 and 'id="conversation-list"' in body and "标题不能为空" in body and f'data-thread="{thread}"' in body


def test_a_wrong_password_keeps_the_username_and_puts_the_cursor_in_the_password():
    make_user("login_keeps_name", role="staff")
    page = Client().post("/accounts/login/", {"username": "login_keeps_name", "password": "wrong"}).content.decode()
    assert 'value="login_keeps_name"' in page
    assert 'type="password" autocomplete="current-password" required autofocus' in page


def test_threads_from_the_api_and_mcp_are_kept_apart_from_the_chat_pages():
    # After one tour the sidebar held 21 threads mixed from the web page, the REST API and MCP.
    from rest_framework.test import APIClient

    from agent.models import Conversation
    from mcpserver.server import dispatch

    user = make_user("view_channels", role="staff", stores=["GZ-TH"])
    web = Client()
    web.force_login(user)
    web.post("/", {"query": "网页里问的：会员卡能跨店用吗"}, **HX)
    api = APIClient()
    api.force_authenticate(user)
    assert api.post("/api/v1/chat", {"query": "API 里问的：会员卡能跨店用吗"}, format="json").status_code == 200
    dispatch(user, "ask", {"query": "MCP 里问的：会员卡能跨店用吗"})
    channels = dict(Conversation.objects.filter(user=user).values_list("title", "channel"))
    assert sorted(channels.values()) == ["mcp", "rest", "web"], channels
    page = web.get("/").content.decode()
    assert "网页里问的" in page and "API 里问的" not in page and "MCP 里问的" not in page


def test_past_threads_are_searched_by_title_and_by_what_was_said():
    user = make_user("view_thread_search", role="staff", stores=["GZ-TH"])
    c = Client()
    c.force_login(user)
    c.post("/", {"query": "扎啤机多久清洗一次"}, **HX)
    c.post("/", {"query": "会员卡能跨店用吗"}, **HX)
    found = c.get("/threads/", {"q": "扎啤"}, **HX).content.decode()
    assert "扎啤机多久清洗一次" in found and "会员卡能跨店用吗" not in found
    by_answer = c.get("/threads/", {"q": "储值"}, **HX).content.decode()  # a word of the answer, not of the title
    assert "会员卡能跨店用吗" in by_answer
    nothing = c.get("/threads/", {"q": "没有这个词的会话"}, **HX).content.decode()
    assert "没有提到「没有这个词的会话」的会话" in nothing
    assert c.get("/threads/", {"q": "x\x00"}).status_code == 400 and "搜索词" in c.get("/threads/", {"q": "x\x00"}, **HX).content.decode()
    assert "扎啤机多久清洗一次" in c.get("/threads/", {"q": ""}, **HX).content.decode()

