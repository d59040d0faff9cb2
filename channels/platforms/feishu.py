"""飞书 (Feishu) event subscription v2: `url_verification` answered with its challenge, the
Verification Token checked on every event, and with an Encrypt Key the body decrypted
(AES-256-CBC, key SHA-256 of the Encrypt Key, IV the ciphertext's first 16 bytes) and the
X-Lark-Signature checked (SHA-256 of timestamp + nonce + Encrypt Key + body). Replies go
through the IM API with a cached tenant_access_token.

Settings: SM_FEISHU_APP_ID, SM_FEISHU_APP_SECRET, SM_FEISHU_VERIFICATION_TOKEN,
SM_FEISHU_ENCRYPT_KEY (optional), SM_FEISHU_API_BASE (https://open.feishu.cn). The callback
URL to register: /channels/feishu/callback.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from django.conf import settings

from .base import CallbackRejected, Card, Event, PlatformError, cached_token, check_timestamp, checked, client

NAME = "feishu"
TOKEN_KEY = "channels:feishu:tenant_token"
TOKEN_CODES = {99991661, 99991663, 99991668}
RETRY_CODES = TOKEN_CODES | {99991400, 230020}
_MENTION = re.compile(r"@_user_\d+\s*")


class Challenge(Exception):
    """url_verification: answered with {"challenge": …}."""

    def __init__(self, challenge: str):
        super().__init__(challenge)
        self.challenge = challenge


def configured() -> bool:
    """With an Encrypt Key only: without one, Feishu signs nothing and a body carrying the
    Verification Token could name any sender."""
    return all((settings.SM_FEISHU_APP_ID, settings.SM_FEISHU_APP_SECRET, settings.SM_FEISHU_VERIFICATION_TOKEN,
                settings.SM_FEISHU_ENCRYPT_KEY))


def decrypt(encrypted: str, key: str) -> str:
    try:
        data = base64.b64decode(encrypted, validate=True)
    except (ValueError, TypeError):
        raise CallbackRejected("encrypt is not base64") from None
    if len(data) < 32 or len(data) % 16:
        raise CallbackRejected("encrypt has the wrong length")
    decryptor = Cipher(algorithms.AES(hashlib.sha256(key.encode()).digest()), modes.CBC(data[:16])).decryptor()
    plain = decryptor.update(data[16:]) + decryptor.finalize()
    pad = plain[-1]
    if not 1 <= pad <= 16 or plain[-pad:] != bytes([pad]) * pad:
        raise CallbackRejected("bad padding", status=403)
    try:
        return plain[:-pad].decode("utf-8")
    except UnicodeDecodeError:
        raise CallbackRejected("not UTF-8", status=403) from None


def encrypt(plain: str, key: str, iv: bytes) -> str:
    """The platform's side (tests build callbacks with it)."""
    data = plain.encode()
    pad = 16 - len(data) % 16
    encryptor = Cipher(algorithms.AES(hashlib.sha256(key.encode()).digest()), modes.CBC(iv)).encryptor()
    return base64.b64encode(iv + encryptor.update(data + bytes([pad]) * pad) + encryptor.finalize()).decode()


def request_signature(timestamp: str, nonce: str, key: str, body: bytes) -> str:
    return hashlib.sha256(timestamp.encode() + nonce.encode() + key.encode() + body).hexdigest()


def parse(headers, body: bytes) -> list[Event]:
    key = settings.SM_FEISHU_ENCRYPT_KEY
    stamp, nonce, given = (headers.get(h, "") for h in ("X-Lark-Request-Timestamp", "X-Lark-Request-Nonce", "X-Lark-Signature"))
    signed = bool(given)
    if signed:  # checked on the raw body before anything is decrypted (no padding oracle)
        check_timestamp(stamp)
        if not hmac.compare_digest(request_signature(stamp, nonce, key, body), given):
            raise CallbackRejected("refused", status=403)
    try:
        outer = json.loads(body)
        payload = json.loads(decrypt(str(outer["encrypt"]), key))
    except (ValueError, KeyError, TypeError, CallbackRejected):
        raise CallbackRejected("refused", status=403) from None
    if not isinstance(payload, dict):
        raise CallbackRejected("refused", status=403)
    if payload.get("type") == "url_verification":  # the one request Feishu sends unsigned
        if not hmac.compare_digest(str(payload.get("token") or ""), settings.SM_FEISHU_VERIFICATION_TOKEN):
            raise CallbackRejected("refused", status=403)
        raise Challenge(str(payload.get("challenge") or ""))
    header = payload.get("header") if isinstance(payload.get("header"), dict) else {}
    if not signed or not hmac.compare_digest(str(header.get("token") or ""), settings.SM_FEISHU_VERIFICATION_TOKEN):
        raise CallbackRejected("refused", status=403)
    event = payload.get("event") if isinstance(payload.get("event"), dict) else {}
    message = event.get("message") if isinstance(event.get("message"), dict) else {}
    sender_id = (event.get("sender") or {}).get("sender_id") if isinstance(event.get("sender"), dict) else None
    sender = str((sender_id or {}).get("open_id") or "") if isinstance(sender_id, dict) else ""
    if header.get("event_type") != "im.message.receive_v1" or not sender or not message.get("message_id"):
        return [Event(message_id=str(header.get("event_id") or "-"), external_id=sender or "-", kind="other")]
    text = ""
    if message.get("message_type") == "text":
        try:
            content = json.loads(message.get("content") or "{}")
        except (ValueError, TypeError):
            raise CallbackRejected("message content is not JSON") from None
        text = _MENTION.sub("", str(content.get("text") or "") if isinstance(content, dict) else "").strip()
    return [Event(message_id=str(message["message_id"]), external_id=sender, text=text,
                  kind="text" if message.get("message_type") == "text" else "other",
                  chat_id=str(message.get("chat_id") or "") if message.get("chat_type") == "group" else "")]


def _checked(response) -> dict:
    return checked(response, platform="Feishu", code_key="code", message_key="msg", retry_codes=RETRY_CODES,
                   token_codes=TOKEN_CODES, token_key=TOKEN_KEY)


def _token() -> str:
    def fetch():
        with client(settings.SM_FEISHU_API_BASE) as c:
            data = _checked(c.post("/open-apis/auth/v3/tenant_access_token/internal",
                                   json={"app_id": settings.SM_FEISHU_APP_ID, "app_secret": settings.SM_FEISHU_APP_SECRET}))
        return data["tenant_access_token"], data.get("expire", 7200)

    return cached_token(TOKEN_KEY, fetch)


def send_markdown(to: str, text: str, *, reply_to: str = "", chat_id: str = "") -> dict:
    receive_type, receive_id = ("chat_id", chat_id) if chat_id else ("open_id", to)
    card = {"config": {"wide_screen_mode": True}, "elements": [{"tag": "markdown", "content": text}]}
    with client(settings.SM_FEISHU_API_BASE) as c:
        return _checked(c.post("/open-apis/im/v1/messages", params={"receive_id_type": receive_type},
                               headers={"Authorization": f"Bearer {_token()}"},
                               json={"receive_id": receive_id, "msg_type": "interactive", "content": json.dumps(card, ensure_ascii=False)}))


def send_card(to: str, card: Card) -> dict:
    raise PlatformError("Feishu proposal cards are not sent: proposals arrive as text with a link", retryable=False)
