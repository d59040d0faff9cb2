"""One adapter interface; a platform is a small module (wecom, dingtalk, feishu).

An adapter reads a callback (verifies it, decrypts it, returns what it says) and sends
messages through the platform's API. Everything else — who the sender is, what to answer,
what a button press does — is the channels services', the same for every platform.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import httpx
from django.core.cache import cache

# A callback older or newer than this is a replay (or a clock far off): refused.
REPLAY_WINDOW_S = 300


class CallbackRejected(Exception):
    """A callback that does not verify or does not parse: 4xx, nothing processed."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class PlatformError(Exception):
    """The platform refused or failed a send. `retryable`: a token to refresh, a rate limit, a
    busy server; otherwise the message itself is wrong and retrying repeats the failure."""

    def __init__(self, message: str, *, code: int | None = None, retryable: bool = True):
        super().__init__(message)
        self.code, self.retryable = code, retryable


@dataclass
class Event:
    """What a callback said, whatever the platform."""

    message_id: str
    external_id: str  # the sender, in the platform's user ids
    kind: str = "text"  # text | card (a button pressed) | other
    text: str = ""
    chat_id: str = ""  # a group chat, when the message was an @-mention there
    reply_to: str = ""  # a platform-given reply address (DingTalk sessionWebhook, a bot's response_url)
    action: str = ""  # a card button's key: confirm:42 / reject:42
    extra: dict = field(default_factory=dict)


@dataclass
class Card:
    """A proposal as a card: title, lines of content, and the buttons a decider gets."""

    proposal_id: int
    title: str
    lines: list[tuple[str, str]]
    buttons: list[tuple[str, str]]  # (label, key) — empty for staff: the status only
    url: str = ""
    status: str = ""


def check_timestamp(value, *, now: float | None = None, milliseconds: bool = False) -> None:
    try:
        stamp = float(value) / (1000 if milliseconds else 1)
    except (TypeError, ValueError):
        raise CallbackRejected("timestamp missing or not a number") from None
    if abs((now or time.time()) - stamp) > REPLAY_WINDOW_S:
        raise CallbackRejected("timestamp outside the replay window", status=403)


def cached_token(key: str, fetch) -> str:
    """A platform access token, cached until shortly before it expires (fetch returns
    (token, expires_in seconds)); refreshed early so a send never carries an expired one."""
    token = cache.get(key)
    if token:
        return token
    token, expires_in = fetch()
    cache.set(key, token, timeout=max(60, int(expires_in) - 300))
    return token


def forget_token(key: str) -> None:
    cache.delete(key)


def client(base_url: str, timeout: float = 10.0) -> httpx.Client:
    return httpx.Client(base_url=base_url, timeout=timeout, trust_env=not base_url.startswith(("http://127.", "http://localhost")))


def checked(response, *, platform: str, code_key: str, message_key: str, retry_codes=frozenset(), token_codes=frozenset(),
            token_key: str = "") -> dict:
    """A platform API's JSON answer, or PlatformError: its error code (retryable when it is a
    rate limit, a busy server or a token to refresh — that token is forgotten first) or an HTTP
    5xx. Every platform answers `{<code>: 0, …}` on success, under its own key names."""
    try:
        data = response.json()
    except ValueError:
        raise PlatformError(f"{platform} answered HTTP {response.status_code} without JSON") from None
    if response.status_code >= 500:
        raise PlatformError(f"{platform} HTTP {response.status_code}")
    code = data.get(code_key, 0) if isinstance(data, dict) else None
    if code:
        if code in token_codes and token_key:
            forget_token(token_key)
        raise PlatformError(f"{platform} {code_key} {code}: {data.get(message_key, '')}"[:250], code=code, retryable=code in retry_codes)
    if not isinstance(data, dict):
        raise PlatformError(f"{platform} answered something other than a JSON object")
    return data
