"""Repairs between the wire and the SDK: schema violations in Chinese (never echoing the value),
integers sent as 2.0, and the lines the SDK would drop silently (broken JSON, a request it read as
a notification, bytes that were no UTF-8) answered with JSON-RPC errors."""
from __future__ import annotations

import json


def schema_error_text(exc) -> str:
    """A schema violation in Chinese, never echoing the value (a 100,000-character query came
    back whole inside jsonschema's English message)."""
    rule, limit = exc.validator, exc.validator_value
    kinds = {"integer": "整数", "number": "数字", "string": "字符串", "object": "对象", "array": "数组", "boolean": "布尔值", "null": "空值"}
    unknown = sorted(set(exc.instance or {}) - set(exc.schema.get("properties", {}))) if rule == "additionalProperties" else []
    texts = {
        "type": lambda: "应为" + "或".join(kinds.get(t, t) for t in (limit if isinstance(limit, list) else [limit])),
        "required": lambda: "缺少必填参数 " + "、".join(k for k in limit if k not in (exc.instance or {})),
        # The names as sent, each cut short: a 100,000-character key must not come back whole.
        "additionalProperties": lambda: "不认识的参数 " + "、".join(k[:20] + ("…" if len(k) > 20 else "") for k in unknown[:5])
                                        + (f" 等 {len(unknown)} 个" if len(unknown) > 5 else ""),
        "minLength": lambda: f"至少 {limit} 个字符", "maxLength": lambda: f"最多 {limit} 个字符",
        "minimum": lambda: f"不能小于 {limit}", "maximum": lambda: f"不能大于 {limit}",
        "minItems": lambda: f"至少 {limit} 项", "maxItems": lambda: f"最多 {limit} 项",
        "enum": lambda: "只能是 " + "、".join(str(v) for v in limit), "pattern": lambda: "格式不对",
    }
    return texts[rule]() if rule in texts else "不符合参数要求"


def integers_as_int(value, schema: dict):
    """JSON Schema counts 2.0 as an integer; the tools slice and count with it (k=2.0 was a
    TypeError inside search). Nested too: a restock line's quantity 2.0 was refused later."""
    kind = schema.get("type")
    if kind == "integer" and isinstance(value, float):
        return int(value)
    if kind == "object" and isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: integers_as_int(v, props[k]) if k in props else v for k, v in value.items()}
    if kind == "array" and isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [integers_as_int(v, schema["items"]) for v in value]
    return value


def unreadable_reply(exc: Exception):
    """The JSON-RPC error for a line the transport could not read (the SDK drops it silently,
    and the client waits for ever): -32700 for broken JSON, -32600 for JSON that is no request,
    and for valid JSON with a string PostgreSQL cannot store (a lone surrogate) -32602 under the
    request's own id."""
    import mcp.types as wire
    from mcp.shared.message import SessionMessage

    errors = exc.errors() if hasattr(exc, "errors") else []
    kind, line = (errors[0].get("type"), errors[0].get("input")) if errors else (None, None)
    code, message, request_id = wire.INVALID_REQUEST, "不是有效的 JSON-RPC 请求。", None
    if kind == "json_invalid":
        code, message = wire.PARSE_ERROR, "无法解析的 JSON。"
        try:
            parsed = json.loads(line) if isinstance(line, str) else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("id"), (int, str)) and not isinstance(parsed.get("id"), bool):
            code, message, request_id = wire.INVALID_PARAMS, "包含无效的 Unicode 字符（单独的代理项，如 \\ud800）。", parsed["id"]
    return SessionMessage(wire.JSONRPCError(jsonrpc="2.0", id=request_id, error=wire.ErrorData(code=code, message=message)))


def malformed_reply(item):
    """A request the SDK read as something else: with an id that is no string or integer
    (null, an object, 1.5) it becomes a notification and gets no reply, so the client waits for
    ever; a notification never names a request's method, so that is answered -32600. Bytes that
    were no UTF-8 arrive as U+FFFD and were answered as a question: -32602 under their id."""
    import mcp.types as wire
    from mcp.shared.message import SessionMessage

    message = item.message
    if isinstance(message, wire.JSONRPCNotification) and not message.method.startswith("notifications/"):
        return SessionMessage(wire.JSONRPCError(jsonrpc="2.0", id=None, error=wire.ErrorData(
            code=wire.INVALID_REQUEST, message="请求的 id 必须是字符串或整数（通知不能调用方法）。")))
    if isinstance(message, wire.JSONRPCRequest) and "\ufffd" in json.dumps(message.params or {}, ensure_ascii=False):
        return SessionMessage(wire.JSONRPCError(jsonrpc="2.0", id=message.id, error=wire.ErrorData(
            code=wire.INVALID_PARAMS, message="请求里有无法解码的字节（不是有效的 UTF-8）。")))
    return None
