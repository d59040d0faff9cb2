"""A fake WeCom / DingTalk / Feishu API on the test's FakeHTTPServer, answering what the real
ones answer (paths, fields, error codes as their API references give them)."""
from __future__ import annotations

import itertools
import time

from channels.crypto import WeComCrypto, signature

TOKEN = "hJqcu3uJ9Tn2gXPmxx2w9kkCkCE2EPYo"  # the platform's published sample values
AES_KEY = "6qkdMrq68nTKduznJYO1A37W2oEgpkMUvkttRToqhUt"
CORP_ID = "ww1436e0e65a779aee"
AGENT_ID = "1000002"
SECRET = "fake-wecom-secret"


class FakeWeCom:
    """/cgi-bin/gettoken and /cgi-bin/message/send as WeCom serves them. `fail` holds errcodes
    the next sends answer with (45009 rate limit, 42001 token expired, 40003 bad user …)."""

    def __init__(self, http):
        self.http, self.sent, self.fail, self.token_calls = http, [], [], 0
        self._ids = itertools.count(1)
        self.tokens: set[str] = set()
        http.routes["/cgi-bin/gettoken"] = self.gettoken
        send = self.send
        send.__func__.wants_query = True
        http.routes["/cgi-bin/message/send"] = send
        http.routes["/cgi-bin/aibot/response"] = self.bot_response

    def gettoken(self, query):
        if query.get("corpid") != CORP_ID or query.get("corpsecret") != SECRET:
            return 200, {"errcode": 40001, "errmsg": "invalid credential, hint: [fake]"}
        self.token_calls += 1
        token = f"ACCESS_TOKEN_{self.token_calls}"
        self.tokens.add(token)
        return 200, {"errcode": 0, "errmsg": "ok", "access_token": token, "expires_in": 7200}

    def send(self, body, query):
        token = query.get("access_token", "")
        if not token:
            return 200, {"errcode": 41001, "errmsg": "access_token missing"}
        if token not in self.tokens:
            return 200, {"errcode": 40014, "errmsg": "invalid access_token"}
        if self.fail:
            code = self.fail.pop(0)
            if code == 42001:
                self.tokens.discard(token)
            return 200, {"errcode": code, "errmsg": {45009: "api freq out of limit", 42001: "access_token expired",
                                                     40003: "invalid userid"}.get(code, "error")}
        for field in ("touser", "msgtype", "agentid"):
            if field not in body:
                return 200, {"errcode": 41011, "errmsg": f"missing {field}"}
        if body["msgtype"] == "markdown" and not (body.get("markdown") or {}).get("content"):
            return 200, {"errcode": 44004, "errmsg": "empty content"}
        self.sent.append(body)
        return 200, {"errcode": 0, "errmsg": "ok", "invaliduser": "", "msgid": f"msg{next(self._ids)}"}

    def bot_response(self, body):
        self.sent.append({"bot": True, **body})
        return 200, {"errcode": 0, "errmsg": "ok"}

    def markdowns(self, to: str | None = None) -> list[str]:
        return [b["markdown"]["content"] for b in self.sent if b.get("msgtype") == "markdown" and (to is None or b.get("touser") == to)]

    def cards(self, to: str | None = None) -> list[dict]:
        return [b["template_card"] for b in self.sent if b.get("msgtype") == "template_card" and (to is None or b.get("touser") == to)]


def wecom_settings(settings, http) -> None:
    settings.SM_WECOM_CORP_ID, settings.SM_WECOM_AGENT_ID, settings.SM_WECOM_SECRET = CORP_ID, AGENT_ID, SECRET
    settings.SM_WECOM_TOKEN, settings.SM_WECOM_AES_KEY, settings.SM_WECOM_API_BASE = TOKEN, AES_KEY, http.url
    settings.SM_CHANNEL_RETRY_BASE_S = 0


def wecom_callback(inner_xml: str, *, timestamp: str | None = None, corp: str = CORP_ID, token: str = TOKEN) -> tuple[dict, bytes]:
    """What WeCom POSTs for one message: the query it signs and the XML around the ciphertext."""
    timestamp = timestamp or str(int(time.time()))
    encrypted = WeComCrypto(TOKEN, AES_KEY, corp).encrypt(inner_xml)
    query = {"msg_signature": signature(token, timestamp, "1597212914", encrypted), "timestamp": timestamp, "nonce": "1597212914"}
    body = (f"<xml><ToUserName><![CDATA[{CORP_ID}]]></ToUserName><Encrypt><![CDATA[{encrypted}]]></Encrypt>"
            f"<AgentID><![CDATA[{AGENT_ID}]]></AgentID></xml>").encode()
    return query, body


def text_message(user: str, text: str, msg_id: str) -> str:
    return (f"<xml><ToUserName><![CDATA[{CORP_ID}]]></ToUserName><FromUserName><![CDATA[{user}]]></FromUserName>"
            f"<CreateTime>{int(time.time())}</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[{text}]]></Content>"
            f"<MsgId>{msg_id}</MsgId><AgentID>{AGENT_ID}</AgentID></xml>")


def card_click(user: str, key: str, task_id: str) -> str:
    return (f"<xml><ToUserName><![CDATA[{CORP_ID}]]></ToUserName><FromUserName><![CDATA[{user}]]></FromUserName>"
            f"<CreateTime>{int(time.time())}</CreateTime><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[template_card_event]]></Event>"
            f"<EventKey><![CDATA[{key}]]></EventKey><TaskId><![CDATA[{task_id}]]></TaskId><CardType><![CDATA[button_interaction]]></CardType>"
            f"<ResponseCode><![CDATA[rc-{task_id}]]></ResponseCode><AgentID>{AGENT_ID}</AgentID></xml>")
