"""LLM clients: none (extractive, the default), ollama, and any OpenAI-compatible endpoint.

All over httpx with timeouts; `trust_env=False` for local endpoints (a system proxy
would otherwise hijack localhost); temperature 0.2; reasoning text (<think>…</think>,
`reasoning_content`) is stripped. A failure raises LLMUnavailable, and callers degrade
to extractive answers rather than return an error to the user.

Time is bounded twice: every call connects within 2 s and waits no longer than what is
left of the question's budget (`llm_budget`, SM_LLM_BUDGET, default 8 s, shared by
judge, rewrite and answer); and a process-wide circuit breaker skips the LLM for
SM_LLM_BREAKER_SECONDS after SM_LLM_BREAKER_FAILURES failures or timeouts in a row.
"""
from __future__ import annotations

import contextvars
import re
import threading
import time
from contextlib import contextmanager
from functools import lru_cache

import httpx
from django.conf import settings

from knowledge.embedders import http_client

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_LEAD_NOISE = re.compile(r"^\s*(好的[，,。]?|根据(提供的)?(参考)?资料[，,]?)")


class LLMUnavailable(RuntimeError):
    pass


CONNECT_TIMEOUT = 2.0
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("llm_deadline", default=None)


@contextmanager
def llm_budget(seconds: float | None = None):
    """All LLM calls inside share one deadline (one question: judge, rewrite, answer)."""
    token = _deadline.set(time.monotonic() + (settings.SM_LLM_BUDGET if seconds is None else seconds))
    try:
        yield
    finally:
        _deadline.reset(token)


def _call_timeout(configured: float) -> httpx.Timeout:
    deadline = _deadline.get()
    left = configured if deadline is None else min(configured, deadline - time.monotonic())
    if deadline is None:
        left = min(left, settings.SM_LLM_BUDGET)
    if left <= 0.05:
        raise LLMUnavailable(f"本题的 LLM 时间预算（{settings.SM_LLM_BUDGET:g} 秒）已用完")
    return httpx.Timeout(left, connect=min(CONNECT_TIMEOUT, left))


class CircuitBreaker:
    """Consecutive failures open the circuit; while open, calls fail at once (no waiting on
    a hung endpoint); after the cool-down one call is let through to probe it."""

    def __init__(self):
        self._lock = threading.Lock()
        self.failures = 0
        self.open_until = 0.0
        self.last_error = ""

    def check(self) -> None:
        with self._lock:
            left = self.open_until - time.monotonic()
            if left > 0:
                raise LLMUnavailable(f"LLM 熔断中（连续 {self.failures} 次失败或超时），{left:.0f} 秒内跳过 LLM")

    def success(self) -> None:
        with self._lock:
            self.failures, self.open_until, self.last_error = 0, 0.0, ""

    def failure(self, error: str) -> None:
        with self._lock:
            self.failures += 1
            self.last_error = error[:200]
            if self.failures >= settings.SM_LLM_BREAKER_FAILURES:
                self.open_until = time.monotonic() + settings.SM_LLM_BREAKER_SECONDS

    def state(self) -> dict:
        with self._lock:
            left = max(0.0, self.open_until - time.monotonic())
            return {"state": "open" if left else "closed", "consecutive_failures": self.failures,
                    "open_for_seconds": round(left, 1), "last_error": self.last_error}

    def reset(self) -> None:
        self.success()


breaker = CircuitBreaker()


def _guarded(backend: str, base_url: str, send):
    """Run one HTTP call under the breaker and the budget; `send(timeout)` returns text."""
    breaker.check()
    timeout = _call_timeout(getattr(send, "configured_timeout", 30.0))
    try:
        text = send(timeout)
    except (httpx.HTTPError, KeyError, IndexError, ValueError, TypeError) as exc:
        message = f"{backend} at {base_url}: {type(exc).__name__}: {exc}"
        breaker.failure(message)
        raise LLMUnavailable(message) from exc
    breaker.success()
    return text


def strip_reasoning(text: str) -> str:
    text = _THINK.sub("", text or "")
    if "</think>" in text:  # an opening tag cut off by the server
        text = text.split("</think>", 1)[1]
    return _LEAD_NOISE.sub("", text).strip()


class VisibleText:
    """Pieces of a streamed reply as a reader should see them: reasoning inside <think>…</think>
    is held back (it is stripped from the final answer too)."""

    def __init__(self, on_delta):
        self.on_delta, self.raw, self.shown = on_delta, "", 0

    def add(self, piece: str) -> None:
        self.raw += piece or ""
        text = _THINK.sub("", self.raw)
        if "<think>" in text.lower():  # a reasoning block still open: show what came before it
            text = text[: text.lower().index("<think>")]
        elif "</think>" in text:  # its opening was cut off by the server
            text = text.split("</think>", 1)[1]
        if len(text) > self.shown:
            self.on_delta(text[self.shown:])
            self.shown = len(text)


class NoLLM:
    """SM_LLM_BACKEND=none: nothing to call; the pipeline answers extractively."""

    name = "none"
    available = False

    def chat(self, messages, *, max_tokens: int = 512) -> str:
        raise LLMUnavailable("no LLM configured")

    def chat_stream(self, messages, *, on_delta, max_tokens: int = 512) -> str:
        raise LLMUnavailable("no LLM configured")


class OllamaLLM:
    name = "ollama"
    available = True

    def __init__(self, base_url: str, model: str, timeout: float = 30.0):
        self.base_url, self.model, self.timeout = base_url, model, timeout
        self._client = http_client(base_url, timeout)

    def chat(self, messages, *, max_tokens: int = 512) -> str:
        payload = {
            "model": self.model,
            "messages": messages,
            "stream": False,
            # Ollama unloads a model after 5 idle minutes; reloading costs seconds per request.
            "keep_alive": "30m",
            "options": {"temperature": 0.2, "num_predict": max_tokens},
        }

        def send(timeout):
            r = self._client.post("/api/chat", json=payload, timeout=timeout)
            r.raise_for_status()
            return strip_reasoning(r.json()["message"]["content"])

        send.configured_timeout = self.timeout
        return _guarded("ollama", self.base_url, send)

    def chat_stream(self, messages, *, on_delta, max_tokens: int = 512) -> str:
        """As chat(), with each piece of the reply passed to on_delta as it arrives (Ollama's
        NDJSON stream: one object per line, `message.content`, the last with `done: true`)."""
        import json

        payload = {"model": self.model, "messages": messages, "stream": True, "keep_alive": "30m",
                   "options": {"temperature": 0.2, "num_predict": max_tokens}}

        def send(timeout):
            shown = VisibleText(on_delta)
            with self._client.stream("POST", "/api/chat", json=payload, timeout=timeout) as r:
                r.raise_for_status()
                for line in r.iter_lines():
                    if line.strip():
                        event = json.loads(line)
                        shown.add((event.get("message") or {}).get("content") or "")
                        if event.get("done"):
                            break
            return strip_reasoning(shown.raw)

        send.configured_timeout = self.timeout
        return _guarded("ollama", self.base_url, send)


class OpenAICompatibleLLM:
    name = "openai"
    available = True

    def __init__(self, base_url: str, model: str, api_key: str = "", timeout: float = 30.0):
        self.base_url, self.model, self.api_key, self.timeout = base_url, model, api_key, timeout
        self._client = http_client(base_url, timeout)

    def chat(self, messages, *, max_tokens: int = 512) -> str:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        payload = {"model": self.model, "messages": messages, "temperature": 0.2, "max_tokens": max_tokens, "stream": False}

        def send(timeout):
            r = self._client.post("/chat/completions", json=payload, headers=headers, timeout=timeout)
            r.raise_for_status()
            return strip_reasoning(r.json()["choices"][0]["message"]["content"] or "")

        send.configured_timeout = self.timeout
        return _guarded("openai-compatible", self.base_url, send)

    def chat_stream(self, messages, *, on_delta, max_tokens: int = 512) -> str:
        """As chat(), with each piece of the reply passed to on_delta as it arrives (server-sent
        events: `data: {chat.completion.chunk}` lines with `choices[0].delta.content`, then
        `data: [DONE]`; `reasoning_content` deltas are not the answer)."""
        import json

        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        payload = {"model": self.model, "messages": messages, "temperature": 0.2, "max_tokens": max_tokens, "stream": True}

        def send(timeout):
            shown = VisibleText(on_delta)
            with self._client.stream("POST", "/chat/completions", json=payload, headers=headers, timeout=timeout) as r:
                r.raise_for_status()
                for line in r.iter_lines():
                    if not line.startswith("data:"):
                        continue  # comments, event names, keep-alives
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    for choice in json.loads(data).get("choices") or []:
                        shown.add((choice.get("delta") or {}).get("content") or "")
            return strip_reasoning(shown.raw)

        send.configured_timeout = self.timeout
        return _guarded("openai-compatible", self.base_url, send)


@lru_cache(maxsize=4)
def _build(backend: str, model: str, ollama: str, openai: str, openai_model: str, key: str, timeout: float):
    if backend == "none":
        return NoLLM()
    if backend == "ollama":
        return OllamaLLM(ollama, model, timeout)
    if backend == "openai":
        return OpenAICompatibleLLM(openai, openai_model, key, timeout)
    raise ValueError(f"unknown SM_LLM_BACKEND {backend!r} (none, ollama, openai)")


def get_llm():
    """The configured client, reused for the life of the process."""
    return _build(settings.SM_LLM_BACKEND, settings.SM_LLM_MODEL, settings.SM_OLLAMA_BASE, settings.SM_OPENAI_BASE,
                  settings.SM_OPENAI_MODEL, settings.SM_OPENAI_KEY, settings.SM_LLM_TIMEOUT)


def estimate_tokens(text: str) -> int:
    """Rough count for budgeting: CJK characters ≈ 1 token each, other text ≈ 4 chars/token."""
    cjk = sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")
    return cjk + (len(text) - cjk) // 4 + 1


def trim_history(turns: list[tuple[str, str]], budget: int) -> list[dict]:
    """Keep the most recent whole turns (question + answer) that fit in `budget` tokens.
    A turn is never split, so the window always starts with a user message."""
    kept: list[tuple[str, str]] = []
    used = 0
    for question, answer in reversed(turns):
        cost = estimate_tokens(question) + estimate_tokens(answer)
        if used + cost > budget:
            break
        kept.insert(0, (question, answer))
        used += cost
    messages = []
    for question, answer in kept:
        messages += [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
    return messages
