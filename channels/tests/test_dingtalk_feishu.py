"""钉钉 and 飞书 through the same app: each platform's signature or token checked, its challenge
answered, a message answered through its own API (a fake server mirroring it)."""
import json
import time

import pytest
from django.test import Client

from channels.models import Identity, Inbound
from channels.platforms import dingtalk, feishu
from ops.tests.factories import make_user

pytestmark = pytest.mark.django_db
SECRET = "dingtalk-app-secret"


@pytest.fixture
def ding(settings, fake_http):
    settings.SM_DINGTALK_APP_SECRET, settings.SM_DINGTALK_API_BASE = SECRET, fake_http.url
    sent = []
    fake_http.routes["/robot/sendBySession"] = lambda body: (sent.append(body), (200, {"errcode": 0, "errmsg": "ok"}))[1]
    return sent


def ding_post(capture, body: dict, *, stamp: str | None = None, secret: str = SECRET):
    stamp = stamp or str(int(time.time() * 1000))
    with capture(execute=True):
        return Client().post("/channels/dingtalk/callback", data=json.dumps(body, ensure_ascii=False), content_type="application/json",
                             HTTP_TIMESTAMP=stamp, HTTP_SIGN=dingtalk.sign(stamp, secret))


def ding_message(url: str, sender: str, text: str, msg_id: str, group: bool = False) -> dict:
    return {"msgId": msg_id, "msgtype": "text", "text": {"content": text}, "senderStaffId": sender, "senderNick": "店员",
            "conversationType": "2" if group else "1", "conversationId": "cid-1", "isInAtList": group,
            "sessionWebhook": f"{url}/robot/sendBySession?session=abc", "sessionWebhookExpiredTime": int(time.time() * 1000) + 60000}


def test_dingtalk_signature_window_and_an_answer_through_the_session_webhook(ding, fake_http, django_capture_on_commit_callbacks):
    staff = make_user("dt_staff", role="staff", stores=["GZ-TH"])
    Identity.objects.create(platform="dingtalk", external_id="dt001", user=staff)
    bad = ding_post(django_capture_on_commit_callbacks, ding_message(fake_http.url, "dt001", "会员卡能跨店用吗", "d-1"), secret="wrong")
    old = ding_post(django_capture_on_commit_callbacks, ding_message(fake_http.url, "dt001", "会员卡能跨店用吗", "d-1"),
                    stamp=str(int(time.time() * 1000) - 3_600_000))
    assert bad.status_code == 403 and old.status_code == 403 and not Inbound.objects.exists() and not ding
    r = ding_post(django_capture_on_commit_callbacks, ding_message(fake_http.url, "dt001", "@StoreMind 会员卡能跨店用吗", "d-2", group=True))
    assert r.status_code == 200
    [reply] = ding
    assert reply["msgtype"] == "markdown" and "《" in reply["markdown"]["text"] and Inbound.objects.get().text == "会员卡能跨店用吗"
    ding_post(django_capture_on_commit_callbacks, ding_message(fake_http.url, "dt001", "会员卡能跨店用吗", "d-2", group=True))
    assert len(ding) == 1  # a retried delivery: answered once
    # A sessionWebhook on another host is never followed.
    forged = ding_message("http://attacker.example", "dt001", "会员卡能跨店用吗", "d-3")
    ding_post(django_capture_on_commit_callbacks, forged)
    assert len(ding) == 1 and "sessionWebhook" in Inbound.objects.get(message_id="d-3").deliveries.get().last_error


FEISHU_KEY = "feishu-encrypt-key"


@pytest.fixture
def lark(settings, fake_http):
    settings.SM_FEISHU_APP_ID, settings.SM_FEISHU_APP_SECRET = "cli_test", "feishu-secret"
    settings.SM_FEISHU_VERIFICATION_TOKEN, settings.SM_FEISHU_ENCRYPT_KEY, settings.SM_FEISHU_API_BASE = "vtoken", FEISHU_KEY, fake_http.url
    from django.core.cache import cache

    cache.delete("channels:feishu:tenant_token")
    sent = []

    def token(body):
        ok = body == {"app_id": "cli_test", "app_secret": "feishu-secret"}
        return 200, ({"code": 0, "msg": "ok", "tenant_access_token": "t-test", "expire": 7200} if ok else {"code": 10014, "msg": "app secret invalid"})

    def message(body, query):
        sent.append({"query": query, **body})
        return 200, {"code": 0, "msg": "success", "data": {"message_id": "om_1", "msg_type": body.get("msg_type")}}

    message.wants_query = True
    fake_http.routes["/open-apis/auth/v3/tenant_access_token/internal"] = token
    fake_http.routes["/open-apis/im/v1/messages"] = message
    return sent


def lark_post(capture, payload: dict, *, signed: bool = True):
    body = json.dumps({"encrypt": feishu.encrypt(json.dumps(payload, ensure_ascii=False), FEISHU_KEY, b"0123456789abcdef")}).encode()
    stamp, nonce = str(int(time.time())), "n-1"
    headers = {"HTTP_X_LARK_REQUEST_TIMESTAMP": stamp, "HTTP_X_LARK_REQUEST_NONCE": nonce,
               "HTTP_X_LARK_SIGNATURE": feishu.request_signature(stamp, nonce, FEISHU_KEY, body) if signed else "0" * 64}
    with capture(execute=True):
        return Client().post("/channels/feishu/callback", data=body, content_type="application/json", **headers)


def test_feishu_url_verification_token_signature_and_an_answer_through_the_im_api(lark, django_capture_on_commit_callbacks):
    challenge = lark_post(django_capture_on_commit_callbacks, {"challenge": "ch-42", "token": "vtoken", "type": "url_verification"})
    assert challenge.status_code == 200 and challenge.json() == {"challenge": "ch-42"}
    wrong = lark_post(django_capture_on_commit_callbacks, {"challenge": "x", "token": "nope", "type": "url_verification"})
    assert wrong.status_code == 403
    staff = make_user("fs_staff", role="staff", stores=["GZ-TH"])
    Identity.objects.create(platform="feishu", external_id="ou_staff", user=staff)
    event = {"schema": "2.0", "header": {"event_id": "ev-1", "event_type": "im.message.receive_v1", "create_time": str(int(time.time() * 1000)),
                                         "token": "vtoken", "app_id": "cli_test", "tenant_key": "t1"},
             "event": {"sender": {"sender_id": {"open_id": "ou_staff", "user_id": "u1", "union_id": "on_1"}, "sender_type": "user"},
                       "message": {"message_id": "om_in_1", "chat_id": "oc_1", "chat_type": "p2p", "message_type": "text",
                                   "content": json.dumps({"text": "会员卡能跨店用吗"}, ensure_ascii=False)}}}
    assert lark_post(django_capture_on_commit_callbacks, event, signed=False).status_code == 403
    assert lark_post(django_capture_on_commit_callbacks, event).status_code == 200
    [reply] = lark
    assert reply["query"] == {"receive_id_type": "open_id"} and reply["receive_id"] == "ou_staff" and reply["msg_type"] == "interactive"
    assert "《" in json.loads(reply["content"])["elements"][0]["content"]


def test_a_dingtalk_header_pair_is_good_for_one_message(ding, fake_http, django_capture_on_commit_callbacks):
    # Review: the sign covers the timestamp only; a captured pair could carry any body for minutes.
    staff = make_user("dt_replay_staff", role="staff", stores=["GZ-TH"])
    Identity.objects.create(platform="dingtalk", external_id="dt002", user=staff)
    stamp = str(int(time.time() * 1000))
    first = ding_post(django_capture_on_commit_callbacks, ding_message(fake_http.url, "dt002", "会员卡能跨店用吗", "d-r1"), stamp=stamp)
    retry = ding_post(django_capture_on_commit_callbacks, ding_message(fake_http.url, "dt002", "会员卡能跨店用吗", "d-r1"), stamp=stamp)
    forged = ding_post(django_capture_on_commit_callbacks, ding_message(fake_http.url, "dt002", "上周卖了多少", "d-r2"), stamp=stamp)
    assert (first.status_code, retry.status_code, forged.status_code) == (200, 200, 403)
    assert not Inbound.objects.filter(message_id="d-r2").exists() and len(ding) == 1


def test_feishu_is_off_without_an_encrypt_key(lark, settings):
    settings.SM_FEISHU_ENCRYPT_KEY = ""
    assert Client().post("/channels/feishu/callback", data="{}", content_type="application/json").status_code == 404
