"""Routes for the fake LLM server that return exactly what Ollama and OpenAI-compatible
servers return (field names and nesting as in their API references)."""
import time


def ollama_chat(reply: str):
    def handler(body):
        return 200, {
            "model": body["model"], "created_at": "2026-11-29T12:00:00.000000Z",
            "message": {"role": "assistant", "content": reply}, "done_reason": "stop", "done": True,
            "total_duration": 400_000_000, "load_duration": 1_000_000, "prompt_eval_count": 120,
            "prompt_eval_duration": 100_000_000, "eval_count": 40, "eval_duration": 290_000_000,
        }
    return handler


def openai_chat(reply: str, reasoning: str | None = None):
    def handler(body):
        message = {"role": "assistant", "content": reply}
        if reasoning is not None:
            message["reasoning_content"] = reasoning
        return 200, {
            "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": body["model"],
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160},
        }
    return handler
