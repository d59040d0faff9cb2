"""钉钉 (DingTalk) enterprise robot, HTTP callback mode: the `sign` header is base64 of
HMAC-SHA256 over 「timestamp\\nAppSecret」 with the AppSecret; replies go to the message's own
sessionWebhook (on the platform's host only).

Settings: SM_DINGTALK_APP_SECRET, SM_DINGTALK_API_BASE (https://oapi.dingtalk.com). The
callback URL to register: /channels/dingtalk/callback.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from urllib.parse import urlparse

from django.conf import settings
from django.core.cache import cache

from .base import REPLAY_WINDOW_S, CallbackRejected, Card, Event, PlatformError, check_timestamp, checked, client

NAME = "dingtalk"
_MENTION = re.compile(r"^\s*@\S+\s*")


def configured() -> bool:
    return bool(settings.SM_DINGTALK_APP_SECRET)


def sign(timestamp: str, secret: str) -> str:
    digest = hmac.new(secret.encode(), f"{timestamp}\n{secret}".encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def parse(headers, body: bytes) -> list[Event]:
    stamp, given = headers.get("timestamp", ""), headers.get("sign", "")
    if not stamp or not given:
        raise CallbackRejected("timestamp and sign headers are required")
    check_timestamp(stamp, milliseconds=True)
    if not hmac.compare_digest(sign(stamp, settings.SM_DINGTALK_APP_SECRET), given):
        raise CallbackRejected("sign does not match", status=403)
    try:
        msg = json.loads(body)
    except ValueError:
        raise CallbackRejected("malformed JSON") from None
    if not isinstance(msg, dict) or not msg.get("msgId") or not isinstance(msg.get("text") or {}, dict):
        raise CallbackRejected("no msgId, or a body of the wrong shape")
    # The sign covers the timestamp, not the body: a captured header pair is good for one message
    # only (the same msgId again is the platform's retry; another is a replay).
    seen = cache.get_or_set(f"channels:dingtalk:sign:{stamp}:{given}", str(msg["msgId"]), timeout=2 * REPLAY_WINDOW_S)
    if seen != str(msg["msgId"]):
        raise CallbackRejected("this sign was already used for another message", status=403)
    sender = str(msg.get("senderStaffId") or msg.get("senderId") or "")
    if not sender:
        raise CallbackRejected("no sender")
    reply_to = str(msg.get("sessionWebhook") or "")
    group = str(msg.get("conversationType")) == "2"
    if msg.get("msgtype") != "text":
        return [Event(message_id=str(msg["msgId"]), external_id=sender, kind="other", reply_to=reply_to)]
    text = _MENTION.sub("", (msg.get("text") or {}).get("content") or "", count=1).strip()
    return [Event(message_id=str(msg["msgId"]), external_id=sender, text=text, reply_to=reply_to,
                  chat_id=str(msg.get("conversationId") or "") if group else "")]


def _allowed(url: str) -> bool:
    return bool(url) and urlparse(url).netloc == urlparse(settings.SM_DINGTALK_API_BASE).netloc


def send_markdown(to: str, text: str, *, reply_to: str = "", chat_id: str = "") -> dict:
    if not _allowed(reply_to):
        raise PlatformError("no sessionWebhook on the platform's host to answer through", retryable=False)
    with client(settings.SM_DINGTALK_API_BASE) as c:
        r = c.post(reply_to, json={"msgtype": "markdown", "markdown": {"title": "StoreMind", "text": text}})
    return checked(r, platform="DingTalk", code_key="errcode", message_key="errmsg", retry_codes={-1, 130101, 660026})


def send_card(to: str, card: Card) -> dict:
    raise PlatformError("DingTalk cards are not sent: proposals arrive as text with a link", retryable=False)
