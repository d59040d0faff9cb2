"""WeCom end to end against a fake platform server: the callback verified and acknowledged,
the answer sent once per message, binding, proposals as cards decided by the right people,
tokens cached and refreshed, failures retried and shown."""
import time

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from channels.models import Delivery, Identity, Inbound
from channels.tests.fakes import CORP_ID, TOKEN, FakeWeCom, card_click, text_message, wecom_callback, wecom_settings
from core.models import AuditLog
from ops.tests.factories import make_user

pytestmark = pytest.mark.django_db
URL = "/channels/wecom/callback"


@pytest.fixture
def wecom(settings, fake_http):
    from django.core.cache import cache

    cache.delete("channels:wecom:access_token")
    wecom_settings(settings, fake_http)
    return FakeWeCom(fake_http)


@pytest.fixture
def post(django_capture_on_commit_callbacks):
    """A callback as WeCom sends it; the Celery work it queues runs (eagerly) before returning."""
    client = Client()

    def send(inner: str, **kw):
        query, body = wecom_callback(inner, **kw)
        from urllib.parse import urlencode

        with django_capture_on_commit_callbacks(execute=True):
            return client.post(f"{URL}?{urlencode(query)}", data=body, content_type="text/xml")
    return send


def bind(user, wecom_id: str):
    return Identity.objects.create(platform="wecom", external_id=wecom_id, user=user)


def test_not_configured_is_404(settings):
    settings.SM_WECOM_CORP_ID = ""
    assert Client().get(URL).status_code == 404 and Client().post(URL).status_code == 404


def test_url_verification_answers_the_decrypted_echostr(wecom):
    from channels.crypto import WeComCrypto, signature

    stamp, echo = str(int(time.time())), WeComCrypto(TOKEN, "6qkdMrq68nTKduznJYO1A37W2oEgpkMUvkttRToqhUt", CORP_ID).encrypt("8431263917")
    query = {"msg_signature": signature(TOKEN, stamp, "42", echo), "timestamp": stamp, "nonce": "42", "echostr": echo}
    r = Client().get(URL, query)
    assert r.status_code == 200 and r.content == b"8431263917"
    assert Client().get(URL, {**query, "msg_signature": "0" * 40}).status_code == 403
    assert Client().get(URL, {**query, "timestamp": str(int(time.time()) - 3600)}).status_code == 403
    assert Client().get(URL, {"echostr": echo}).status_code == 400


@pytest.mark.parametrize("case", ["signature", "corp", "replay", "malformed", "no_encrypt", "doctype", "entities"])
def test_a_callback_that_does_not_verify_is_refused_and_nothing_processed(wecom, case):
    from urllib.parse import urlencode

    inner = text_message("zhangsan", "客人说酒有异味怎么办", "m-bad-1")
    query, body = wecom_callback(inner, corp="ww0000000000000000" if case == "corp" else CORP_ID,
                                 timestamp=str(int(time.time()) - 3600) if case == "replay" else None)
    if case == "signature":
        query["msg_signature"] = "f" * 40
    if case == "malformed":
        body = b"<xml><Encrypt>"
    if case == "no_encrypt":
        body = b"<xml><ToUserName>x</ToUserName></xml>"
    if case in ("doctype", "entities"):  # before any signature is checked: a billion laughs must not expand
        dtd = b'<!DOCTYPE xml [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>' if case == "entities" else b"<!DOCTYPE xml>"
        body = dtd + body.replace(b"<Encrypt>", b"<Encrypt>&b;" if case == "entities" else b"<Encrypt>", 1)
    r = Client().post(f"{URL}?{urlencode(query)}", data=body, content_type="text/xml")
    assert r.status_code in (400, 403) and not Inbound.objects.exists() and not wecom.sent


def test_a_message_is_answered_once_with_its_sources_and_a_link(wecom, post, settings):
    staff = make_user("wx_staff", role="staff", stores=["GZ-TH"])
    bind(staff, "zhangsan")
    started = time.perf_counter()
    r = post(text_message("zhangsan", "客人说酒有异味怎么办", "m-1"))
    assert r.status_code == 200 and r.content == b"success"
    [sent] = wecom.sent
    assert sent["touser"] == "zhangsan" and sent["agentid"] == 1000002 and sent["msgtype"] == "markdown"
    text = sent["markdown"]["content"]
    assert "[1] 《" in text and "》› " in text and f"{settings.SM_PUBLIC_URL}/?thread=wecom." in text
    assert time.perf_counter() - started < 30
    again = post(text_message("zhangsan", "客人说酒有异味怎么办", "m-1"))  # the platform's retry: the same MsgId
    assert again.status_code == 200 and len(wecom.sent) == 1 and Inbound.objects.filter(external_id="zhangsan").count() == 1
    assert Delivery.objects.get(to="zhangsan").status == "sent" and wecom.token_calls == 1
    post(text_message("zhangsan", "会员卡能跨店用吗", "m-2"))  # the token is cached
    assert len(wecom.sent) == 2 and wecom.token_calls == 1
    # The thread is the person's: a follow-up keeps the store and period, on the channel's own thread.
    from agent.models import Conversation

    assert Conversation.objects.get(user=staff).channel == "wecom"


def test_an_unbound_or_disabled_user_gets_one_line_and_binding_is_audited(wecom, post):
    post(text_message("lisi", "上周卖了多少", "m-10"))
    [line] = wecom.markdowns("lisi")
    assert "还没有绑定" in line and "/channels/bind/" in line and "\n" not in line
    token = line.split("/channels/bind/")[1].split()[0]
    user = make_user("wx_lisi", role="staff", stores=["GZ-TH"])
    browser = Client()
    browser.force_login(user)
    assert "绑定" in browser.get(f"/channels/bind/{token}").content.decode()
    assert browser.post(f"/channels/bind/{token}").status_code == 200
    identity = Identity.objects.get(platform="wecom", external_id="lisi")
    assert identity.user == user and AuditLog.objects.filter(action="channel_bound", actor=user).exists()
    assert browser.post(f"/channels/bind/{token}").status_code == 404  # one use
    post(text_message("lisi", "会员卡能跨店用吗", "m-11"))
    assert "还没有绑定" not in wecom.markdowns("lisi")[-1]
    user.is_active = False
    user.save()
    post(text_message("lisi", "会员卡能跨店用吗", "m-12"))
    assert wecom.markdowns("lisi")[-1] == "这个账号已停用，请联系店长。"


def restock_from_chat(post, staff, wecom_id: str, text: str, msg_id: str):
    """`staff`'s restock proposal for 天河店, made in WeCom, the only one pending there (so each
    manager gets exactly its card)."""
    from workflow.models import Proposal

    Proposal.objects.filter(kind="restock", store__code="GZ-TH", status="pending").update(status="rejected")
    post(text_message(wecom_id, text, msg_id))
    return Proposal.objects.filter(proposed_by=staff).latest("id")


def test_a_proposal_arrives_as_a_card_and_a_manager_confirms_it_from_the_card(wecom, post):
    from workflow.models import RestockRequest

    staff = make_user("wx_card_staff", role="staff", stores=["GZ-TH"])
    manager = make_user("wx_card_manager", role="manager", stores=["GZ-TH"])
    other = make_user("wx_card_manager_ft", role="manager", stores=["SZ-FT"])
    bind(staff, "staff1"), bind(manager, "boss1"), bind(other, "boss2")
    proposal = restock_from_chat(post, staff, "staff1", "帮我给天河店补3箱科罗娜", "m-20")
    [staff_card] = wecom.cards("staff1")
    [manager_card] = wecom.cards("boss1")
    assert not wecom.cards("boss2")  # another store's manager is not told
    assert "button_list" not in staff_card and staff_card["card_type"] == "text_notice"  # staff: the status only
    keys = [b["key"] for b in manager_card["button_list"]]
    assert keys == [f"confirm:{proposal.pk}", f"reject:{proposal.pk}"]
    # Staff pressing 确认 (a forged click) is refused and audited, as from WeCom.
    post(card_click("staff1", f"confirm:{proposal.pk}", "t-1"))
    assert "没有权限" in wecom.markdowns("staff1")[-1]
    denial = AuditLog.objects.filter(action="permission_denied", actor=staff, target_id=proposal.pk).get()
    assert denial.after.get("channel") == "wecom"
    # The manager confirms; pressing again confirms nothing more.
    post(card_click("boss1", f"confirm:{proposal.pk}", "t-2"))
    post(card_click("boss1", f"confirm:{proposal.pk}", "t-3"))
    proposal.refresh_from_db()
    assert proposal.status == "confirmed" and RestockRequest.objects.filter(proposal=proposal).count() == 1
    assert "已确认" in wecom.markdowns("boss1")[-1]
    confirmed = AuditLog.objects.get(action="confirmed", target_id=proposal.pk)
    assert confirmed.actor == manager and AuditLog.objects.filter(action="confirmed", target_id=proposal.pk).count() == 1
    assert confirmed.request_id.startswith("wecom:card:")  # from that channel: the platform's event it came with


def test_tokens_refresh_rate_limits_retry_and_a_permanent_error_is_shown(wecom, post):
    staff = make_user("wx_retry_staff", role="staff", stores=["GZ-TH"])
    bind(staff, "retry1")
    wecom.fail = [42001, 45009]  # the token expired, then a rate limit: both retried
    post(text_message("retry1", "会员卡能跨店用吗", "m-30"))
    delivery = Delivery.objects.filter(to="retry1").latest("id")
    assert delivery.status == "sent" and delivery.attempts == 3 and wecom.token_calls == 2 and len(wecom.sent) == 1
    wecom.fail = [40003]  # an unknown user: not worth retrying, visible in the admin
    post(text_message("retry1", "会员卡能跨店用吗", "m-31"))
    failed = Delivery.objects.filter(to="retry1").latest("id")
    assert failed.status == "failed" and failed.attempts == 1 and "40003" in failed.last_error
    admin = make_user("wx_admin", role=None, is_staff=True, is_superuser=True)
    c = Client()
    c.force_login(admin)
    page = c.get("/admin/channels/delivery/").content.decode()
    assert "40003" in page and "失败" in page


def test_a_group_at_mention_through_the_smart_bot_is_answered_in_the_group(wecom, settings, django_capture_on_commit_callbacks):
    import json
    from urllib.parse import urlencode

    from channels.crypto import WeComCrypto, signature

    staff = make_user("wx_group_staff", role="staff", stores=["GZ-TH"])
    bind(staff, "groupuser")
    msg = {"msgid": "bot-1", "aibotid": "AIBOT", "chatid": "CHAT1", "chattype": "group", "from": {"userid": "groupuser"},
           "response_url": f"{settings.SM_WECOM_API_BASE}/cgi-bin/aibot/response?response_code=abc", "msgtype": "text",
           "text": {"content": "@StoreMind 会员卡能跨店用吗"}}
    encrypted = WeComCrypto(TOKEN, "6qkdMrq68nTKduznJYO1A37W2oEgpkMUvkttRToqhUt", "").encrypt(json.dumps(msg, ensure_ascii=False))
    stamp = str(int(time.time()))
    query = {"msg_signature": signature(TOKEN, stamp, "9", encrypted), "timestamp": stamp, "nonce": "9"}
    with django_capture_on_commit_callbacks(execute=True):
        r = Client().post(f"{URL}?{urlencode(query)}", data=json.dumps({"encrypt": encrypted}), content_type="application/json")
    assert r.status_code == 200
    [reply] = wecom.sent
    assert reply["bot"] and reply["msgtype"] == "markdown" and "《" in reply["markdown"]["content"]
    assert Inbound.objects.get().text == "会员卡能跨店用吗"  # the @-mention is not part of the question


def test_an_admin_binds_and_unbinds_with_an_audit_row_each(wecom):
    user = make_user("wx_bound_by_admin", role="staff", stores=["GZ-TH"])
    admin = make_user("wx_admin2", role=None, is_staff=True, is_superuser=True)
    c = Client()
    c.force_login(admin)
    r = c.post("/admin/channels/identity/add/", {"platform": "wecom", "external_id": "wangwu", "user": user.pk})
    assert r.status_code == 302, [line for line in r.content.decode().splitlines() if "errorlist" in line or "errornote" in line]
    assert Identity.objects.filter(external_id="wangwu", user=user, bound_by=admin).exists()
    identity = Identity.objects.get(external_id="wangwu")
    c.post(f"/admin/channels/identity/{identity.pk}/delete/", {"post": "yes"})
    assert not Identity.objects.filter(external_id="wangwu").exists()
    actions = list(AuditLog.objects.filter(actor=admin, action__in=("channel_bound", "channel_unbound")).values_list("action", flat=True))
    assert sorted(actions) == ["channel_bound", "channel_unbound"]
    assert get_user_model().objects.filter(pk=user.pk).exists()


def _bot_post(settings, user_id: str, text: str, msg_id: str, capture):
    import json
    from urllib.parse import urlencode

    from channels.crypto import WeComCrypto, signature

    msg = {"msgid": msg_id, "aibotid": "AIBOT", "chatid": "CHAT1", "chattype": "group", "from": {"userid": user_id},
           "response_url": f"{settings.SM_WECOM_API_BASE}/cgi-bin/aibot/response?response_code={msg_id}", "msgtype": "text",
           "text": {"content": f"@StoreMind {text}"}}
    encrypted = WeComCrypto(TOKEN, "6qkdMrq68nTKduznJYO1A37W2oEgpkMUvkttRToqhUt", "").encrypt(json.dumps(msg, ensure_ascii=False))
    stamp = str(int(time.time()))
    query = {"msg_signature": signature(TOKEN, stamp, "9", encrypted), "timestamp": stamp, "nonce": "9"}
    with capture(execute=True):
        return Client().post(f"{URL}?{urlencode(query)}", data=json.dumps({"encrypt": encrypted}), content_type="application/json")


def test_in_a_group_no_binding_link_and_no_one_elses_figures(wecom, settings, django_capture_on_commit_callbacks):
    # Review: a binding link posted in a group could be opened by anyone there; figures computed
    # with the asker's stores were posted for the whole group to read.
    _bot_post(settings, "stranger", "上周卖了多少", "g-1", django_capture_on_commit_callbacks)
    [said] = wecom.sent
    assert said["bot"] and "单聊" in said["markdown"]["content"] and "/channels/bind/" not in said["markdown"]["content"]
    manager = make_user("wx_group_manager", role="manager", stores=["GZ-TH"])
    bind(manager, "groupboss")
    _bot_post(settings, "groupboss", "上周天河店卖了多少", "g-2", django_capture_on_commit_callbacks)
    group, private = wecom.sent[1], wecom.sent[2]
    assert group["bot"] and group["markdown"]["content"] == "已私信回复你。"
    assert private["touser"] == "groupboss" and "¥" in private["markdown"]["content"]


def test_a_message_is_answered_once_even_when_its_task_runs_twice(wecom):
    from channels.platforms.base import Event
    from channels.services import answer_inbound, inbound_record

    staff = make_user("wx_twice_staff", role="staff", stores=["GZ-TH"])
    bind(staff, "twice1")
    inbound, created = inbound_record("wecom", Event(message_id="twice-1", external_id="twice1", text="会员卡能跨店用吗"))
    assert created
    answer_inbound(inbound.pk)
    answer_inbound(inbound.pk)  # the broker delivered the task again
    assert Delivery.objects.filter(inbound=inbound).count() == 1
    again, created = inbound_record("wecom", Event(message_id="twice-1", external_id="twice1", text="会员卡能跨店用吗"))
    assert again.pk == inbound.pk and not created


def test_a_platform_that_does_not_answer_is_retried_and_shown(wecom, settings, post):
    staff = make_user("wx_down_staff", role="staff", stores=["GZ-TH"])
    bind(staff, "down1")
    settings.SM_WECOM_API_BASE = "http://127.0.0.1:9"  # nothing listens there
    post(text_message("down1", "会员卡能跨店用吗", "m-down"))
    delivery = Delivery.objects.get(to="down1")
    assert delivery.attempts == 6 and delivery.status == "failed" and ("网络" in delivery.last_error or "network" in delivery.last_error)


def test_a_second_decider_is_told_who_decided_and_binding_someone_else_needs_the_permission(wecom, post):
    from django.core.exceptions import PermissionDenied

    from channels.services import identity_bind

    staff = make_user("wx_two_staff", role="staff", stores=["GZ-TH"])
    first = make_user("wx_two_manager1", role="manager", stores=["GZ-TH"])
    second = make_user("wx_two_manager2", role="manager", stores=["GZ-TH"])
    bind(staff, "two0"), bind(first, "two1"), bind(second, "two2")
    proposal = restock_from_chat(post, staff, "two0", "帮我给天河店补2箱科罗娜", "m-two")
    post(card_click("two1", f"confirm:{proposal.pk}", "t-a"))
    post(card_click("two2", f"confirm:{proposal.pk}", "t-b"))
    assert "已由 wx_two_manager1 处理" in wecom.markdowns("two2")[-1]
    with pytest.raises(PermissionDenied):
        identity_bind(user=first, platform="wecom", external_id="someone", by=staff)
    assert AuditLog.objects.filter(action="permission_denied", actor=staff, after__attempt="channel bind").exists()


def test_a_figures_answer_names_what_its_data_markers_are(wecom, post):
    # Seen: data answers on the platforms ended in bare [D1]…[D5], while rule sources had a line each.
    manager = make_user("wx_manager_data", role="manager", stores=["GZ-TH"])
    bind(manager, "lisi")
    post(text_message("lisi", "上周天河店热销前五", "m-d1"))
    [sent] = wecom.sent
    text = sent["markdown"]["content"]
    assert "[D1]" in text and "[D1]–[D5] 查询：热销商品（广州天河店 · 上周）" in text, text
