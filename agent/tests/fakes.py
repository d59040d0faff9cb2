"""Routes for the fake LLM server that return exactly what Ollama and OpenAI-compatible
servers return (field names and nesting as in their API references)."""
import json
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


def openai_chat_stream(pieces: list[str], reasoning: list[str] | None = None):
    """`stream: true` as OpenAI-compatible servers send it: server-sent events, one
    `chat.completion.chunk` per `data:` line (the first with the role), a last chunk with
    `finish_reason`, then `data: [DONE]`."""
    def handler(body):
        assert body.get("stream") is True, body

        def chunk(delta, finish=None):
            payload = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": int(time.time()), "model": body["model"],
                       "system_fingerprint": "fp_test",
                       "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
            return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()

        events = [b": keep-alive\n\n", chunk({"role": "assistant", "content": ""})]
        events += [chunk({"reasoning_content": r}) for r in reasoning or []]
        events += [chunk({"content": p}) for p in pieces]
        events += [chunk({}, "stop"), b"data: [DONE]\n\n"]
        return 200, events, "text/event-stream"
    return handler


def ollama_chat_stream(pieces: list[str]):
    """`stream: true` as Ollama sends it: NDJSON, one object per line, the last with `done: true`."""
    def handler(body):
        assert body.get("stream") is True, body
        lines = [json.dumps({"model": body["model"], "created_at": "2026-11-29T12:00:00.000000Z",
                             "message": {"role": "assistant", "content": p}, "done": False}, ensure_ascii=False).encode() + b"\n"
                 for p in pieces]
        lines.append(json.dumps({"model": body["model"], "created_at": "2026-11-29T12:00:01.000000Z",
                                 "message": {"role": "assistant", "content": ""}, "done_reason": "stop", "done": True,
                                 "total_duration": 400_000_000, "eval_count": len(pieces)}).encode() + b"\n")
        return 200, lines, "application/x-ndjson"
    return handler
