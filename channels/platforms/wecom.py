"""企业微信 (WeCom) self-built app: callback verification and messages (XML, AES), and the
smart bot's group @-mentions (JSON, the same crypto with an empty receiver id); sending
through the app's message API with a cached access token.

Settings: SM_WECOM_CORP_ID, SM_WECOM_AGENT_ID, SM_WECOM_SECRET, SM_WECOM_TOKEN,
SM_WECOM_AES_KEY, SM_WECOM_API_BASE (https://qyapi.weixin.qq.com; tests and proxies point it
elsewhere). The callback URL to register: /channels/wecom/callback.
"""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from urllib.parse import urlparse

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException
from django.conf import settings

from ..crypto import CryptoError, WeComCrypto, signature
from .base import CallbackRejected, Card, Event, PlatformError, cached_token, check_timestamp, checked, client

NAME = "wecom"
TOKEN_KEY = "channels:wecom:access_token"
# errcode → retryable: an expired or invalid token (refreshed first), rate limits, a busy server.
RETRY_CODES = {-1, 40001, 40014, 42001, 45009, 45033, 45047}
TOKEN_CODES = {40001, 40014, 42001}
_MENTION = re.compile(r"^\s*@\S+\s*")


def configured() -> bool:
    return all((settings.SM_WECOM_CORP_ID, settings.SM_WECOM_AGENT_ID, settings.SM_WECOM_SECRET,
                settings.SM_WECOM_TOKEN, settings.SM_WECOM_AES_KEY))


def _crypto(receive_id: str | None = None) -> WeComCrypto:
    try:
        return WeComCrypto(settings.SM_WECOM_TOKEN, settings.SM_WECOM_AES_KEY,
                           settings.SM_WECOM_CORP_ID if receive_id is None else receive_id)
    except CryptoError as exc:  # logged for the operator; the caller learns nothing about the setup
        raise CallbackRejected("refused", status=503) from exc


def _xml(text: str) -> ET.Element:
    """The envelope is parsed before its signature can be checked (the signature covers the
    Encrypt field inside it): defusedxml, with no DTD at all, so no entity of any kind expands."""
    try:
        return SafeET.fromstring(text, forbid_dtd=True)
    except DefusedXmlException:
        raise CallbackRejected("XML with a DOCTYPE or entities is not accepted") from None
    except ET.ParseError as exc:
        raise CallbackRejected(f"malformed XML: {exc}") from None


def verify_url(params) -> str:
    """GET: the echostr decrypted, to be answered as it is (the platform checks it)."""
    sig, ts, nonce, echo = (params.get(k, "") for k in ("msg_signature", "timestamp", "nonce", "echostr"))
    if not all((sig, ts, nonce, echo)):
        raise CallbackRejected("msg_signature, timestamp, nonce and echostr are required")
    check_timestamp(ts)
    try:
        return _crypto().verify_and_decrypt(sig, ts, nonce, echo)
    except CryptoError as exc:
        raise CallbackRejected(str(exc), status=403) from None


def parse(params, body: bytes, content_type: str) -> list[Event]:
    """POST: the events a callback carries (one message, or one card button pressed)."""
    sig, ts, nonce = (params.get(k, "") for k in ("msg_signature", "timestamp", "nonce"))
    if not all((sig, ts, nonce)):
        raise CallbackRejected("msg_signature, timestamp and nonce are required")
    check_timestamp(ts)
    text = body.decode("utf-8", "replace").strip()
    if text.startswith("{"):  # the smart bot (group @-mentions): JSON, receiver id empty
        try:
            encrypted = str(json.loads(text)["encrypt"])
        except (ValueError, KeyError, TypeError):
            raise CallbackRejected("malformed JSON: no encrypt") from None
        inner = _decrypt(sig, ts, nonce, encrypted, receive_id="")
        try:
            message = json.loads(inner)
        except ValueError:
            raise CallbackRejected("the decrypted message is not JSON") from None
        if not isinstance(message, dict) or not isinstance(message.get("from") or {}, dict) or not isinstance(message.get("text") or {}, dict):
            raise CallbackRejected("the decrypted message has the wrong shape")
        return _bot_events(message)
    outer = _xml(text)
    encrypted = outer.findtext("Encrypt") or ""
    if not encrypted:
        raise CallbackRejected("no Encrypt element")
    return _app_events(_xml(_decrypt(sig, ts, nonce, encrypted)))


def _decrypt(sig, ts, nonce, encrypted, receive_id=None) -> str:
    try:
        return _crypto(receive_id).verify_and_decrypt(sig, ts, nonce, encrypted)
    except CryptoError as exc:
        raise CallbackRejected(str(exc), status=403) from None


def _app_events(msg: ET.Element) -> list[Event]:
    kind, sender = msg.findtext("MsgType") or "", msg.findtext("FromUserName") or ""
    if not sender:
        raise CallbackRejected("no FromUserName")
    if kind == "text":
        return [Event(message_id=msg.findtext("MsgId") or f"{sender}:{msg.findtext('CreateTime')}", external_id=sender,
                      text=(msg.findtext("Content") or "").strip())]
    if kind == "event" and msg.findtext("Event") == "template_card_event":
        key, task = msg.findtext("EventKey") or "", msg.findtext("TaskId") or ""
        # Each press is its own event (a press after a failure is answered again); the decision
        # itself is idempotent in the workflow services.
        return [Event(message_id=f"card:{task}:{key}:{sender}:{msg.findtext('CreateTime') or ''}", external_id=sender, kind="card", action=key,
                      extra={"response_code": msg.findtext("ResponseCode") or "", "task_id": task})]
    return [Event(message_id=msg.findtext("MsgId") or f"{sender}:{msg.findtext('CreateTime')}:{kind}", external_id=sender, kind="other")]


def _bot_events(msg: dict) -> list[Event]:
    sender = ((msg.get("from") or {}).get("userid") or "").strip()
    if not sender or not msg.get("msgid"):
        raise CallbackRejected("no sender or msgid")
    if msg.get("msgtype") != "text":
        return [Event(message_id=str(msg["msgid"]), external_id=sender, kind="other")]
    content = _MENTION.sub("", ((msg.get("text") or {}).get("content") or ""), count=1).strip()
    return [Event(message_id=str(msg["msgid"]), external_id=sender, text=content,
                  chat_id=str(msg.get("chatid") or "") if msg.get("chattype") == "group" else "",
                  reply_to=str(msg.get("response_url") or ""))]


def _token() -> str:
    def fetch():
        with client(settings.SM_WECOM_API_BASE) as c:
            r = c.get("/cgi-bin/gettoken", params={"corpid": settings.SM_WECOM_CORP_ID, "corpsecret": settings.SM_WECOM_SECRET})
        data = _checked(r)
        return data["access_token"], data.get("expires_in", 7200)

    return cached_token(TOKEN_KEY, fetch)


def _checked(response) -> dict:
    return checked(response, platform="WeCom", code_key="errcode", message_key="errmsg", retry_codes=RETRY_CODES,
                   token_codes=TOKEN_CODES, token_key=TOKEN_KEY)


def _post_message(body: dict) -> dict:
    with client(settings.SM_WECOM_API_BASE) as c:
        r = c.post("/cgi-bin/message/send", params={"access_token": _token()}, json=body)
    return _checked(r)


def _allowed_reply_url(url: str) -> bool:
    """A bot's response_url is only followed to the platform's own host (never to an address a
    forged body names)."""
    return bool(url) and urlparse(url).netloc == urlparse(settings.SM_WECOM_API_BASE).netloc


def send_markdown(to: str, text: str, *, reply_to: str = "", chat_id: str = "") -> dict:
    if chat_id or (reply_to and _allowed_reply_url(reply_to)):
        if not _allowed_reply_url(reply_to):
            raise PlatformError("a group message without a usable response_url", retryable=False)
        with client(settings.SM_WECOM_API_BASE) as c:
            return _checked(c.post(reply_to, json={"msgtype": "markdown", "markdown": {"content": text}}))
    return _post_message({"touser": to, "msgtype": "markdown", "agentid": int(settings.SM_WECOM_AGENT_ID),
                          "markdown": {"content": text}})


def send_card(to: str, card: Card) -> dict:
    template = {
        "card_type": "button_interaction",
        "main_title": {"title": card.title[:26], "desc": card.status[:30]},
        "horizontal_content_list": [{"keyname": k[:5], "value": v[:30]} for k, v in card.lines[:6]],
        "task_id": f"proposal-{card.proposal_id}-{to}"[:128],
    }
    if card.url:
        template["card_action"] = {"type": 1, "url": card.url}
    if card.buttons:
        template["button_list"] = [{"text": label, "style": 1 if i == 0 else 2, "key": key} for i, (label, key) in enumerate(card.buttons)]
    else:
        template["card_type"] = "text_notice"
    return _post_message({"touser": to, "msgtype": "template_card", "agentid": int(settings.SM_WECOM_AGENT_ID), "template_card": template})


def signed_query(timestamp: str, nonce: str, encrypted: str) -> dict:
    """What the platform adds to a callback URL (tests build callbacks with it)."""
    return {"msg_signature": signature(settings.SM_WECOM_TOKEN, timestamp, nonce, encrypted), "timestamp": timestamp, "nonce": nonce}
