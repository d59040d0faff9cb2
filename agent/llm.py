"""LLM clients: none (extractive, the default), ollama, and any OpenAI-compatible endpoint.

All over httpx with timeouts; `trust_env=False` for local endpoints (a system proxy
would otherwise hijack localhost); temperature 0.2; reasoning text (<think>…</think>,
`reasoning_content`) is stripped. A failure raises LLMUnavailable, and callers degrade
to extractive answers rather than return an error to the user.
"""
from __future__ import annotations

import re
from functools import lru_cache

import httpx
from django.conf import settings

from knowledge.embedders import http_client

_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_LEAD_NOISE = re.compile(r"^\s*(好的[，,。]?|根据(提供的)?(参考)?资料[，,]?)")


class LLMUnavailable(RuntimeError):
    pass


def strip_reasoning(text: str) -> str:
    text = _THINK.sub("", text or "")
    if "</think>" in text:  # an opening tag cut off by the server
        text = text.split("</think>", 1)[1]
    return _LEAD_NOISE.sub("", text).strip()


class NoLLM:
    """SM_LLM_BACKEND=none: nothing to call; the pipeline answers extractively."""

    name = "none"
    available = False

    def chat(self, messages, *, max_tokens: int = 512) -> str:
        raise LLMUnavailable("no LLM configured")


class OllamaLLM:
    name = "ollama"
    available = True

    def __init__(self, base_url: str, model: str, timeout: float = 30.0):
        self.base_url, self.model = base_url, model
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
        try:
            r = self._client.post("/api/chat", json=payload)
            r.raise_for_status()
            return strip_reasoning(r.json()["message"]["content"])
        except (httpx.HTTPError, KeyError, ValueError, TypeError) as exc:
            raise LLMUnavailable(f"ollama at {self.base_url}: {type(exc).__name__}: {exc}") from exc


class OpenAICompatibleLLM:
    name = "openai"
    available = True

    def __init__(self, base_url: str, model: str, api_key: str = "", timeout: float = 30.0):
        self.base_url, self.model, self.api_key = base_url, model, api_key
        self._client = http_client(base_url, timeout)

    def chat(self, messages, *, max_tokens: int = 512) -> str:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        payload = {"model": self.model, "messages": messages, "temperature": 0.2, "max_tokens": max_tokens, "stream": False}
        try:
            r = self._client.post("/chat/completions", json=payload, headers=headers)
            r.raise_for_status()
            return strip_reasoning(r.json()["choices"][0]["message"]["content"] or "")
        except (httpx.HTTPError, KeyError, IndexError, ValueError, TypeError) as exc:
            raise LLMUnavailable(f"openai-compatible at {self.base_url}: {type(exc).__name__}: {exc}") from exc


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
