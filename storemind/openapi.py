"""The OpenAPI contract tells the truth about errors and request bodies.

A drf-spectacular post-processing hook: every operation documents the error statuses it
can really return (400 bad input, 401 no/invalid token, 403 denied, 404 unknown id, 409
conflict, 415 not JSON, 429 throttled with Retry-After, 503 database or queue down with
Retry-After) with the one error body all API errors share, and request bodies refuse
unknown fields (additionalProperties: false), as the services do.
"""
from __future__ import annotations

ERROR_SCHEMA = {
    "type": "object",
    "description": "错误。`detail` 说明原因；字段错误以字段路径为键（如 `lines[0].sku`），值是错误信息列表。",
    "properties": {
        "detail": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
    },
    "additionalProperties": {},
}
RETRY_AFTER = {"Retry-After": {"schema": {"type": "integer"}, "description": "建议等待的秒数", "required": True}}
DESCRIPTIONS = {
    "400": "输入不合法：字段错误（键是字段路径）或 detail",
    "401": "没有或无效的 API 令牌 / 登录",
    "403": "没有权限（原因在 detail）",
    "404": "没有这个对象",
    "409": "与已记录的内容冲突（幂等键、单号或状态）",
    "415": "请求体必须是 application/json",
    "429": "请求太频繁（每个用户限流）",
    "503": "数据库或后台队列暂时不可用",
}
# Operations whose view has a throttle_scope, or can conflict: (method, path) → extra codes.
THROTTLED = {("post", "/api/v1/orders"), ("post", "/api/v1/inventory/adjustments"), ("post", "/api/v1/proposals"),
             ("post", "/api/v1/proposals/{id}/confirm"), ("post", "/api/v1/proposals/{id}/reject"), ("post", "/api/v1/chat")}
CONFLICTS = {("post", "/api/v1/orders"), ("post", "/api/v1/inventory/adjustments"), ("post", "/api/v1/proposals"),
             ("post", "/api/v1/proposals/{id}/confirm"), ("post", "/api/v1/proposals/{id}/reject")}


def _codes(method: str, path: str, operation: dict) -> set[str]:
    codes = {"401", "403", "503"}
    if operation.get("parameters") or "requestBody" in operation or method in ("post", "put", "patch"):
        codes.add("400")
    if "requestBody" in operation or method in ("post", "put", "patch"):
        codes.add("415")
    if "{" in path:
        codes.add("404")
    if (method, path) in THROTTLED:
        codes.add("429")
    if (method, path) in CONFLICTS:
        codes.add("409")
    return codes


def _close_request_schemas(schemas: dict) -> None:
    for name, schema in schemas.items():
        if name.endswith("Request") and schema.get("type") == "object" and "additionalProperties" not in schema:
            schema["additionalProperties"] = False


def postprocess(result, generator, request, public):
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["Error"] = ERROR_SCHEMA
    _close_request_schemas(components)
    for path, item in result.get("paths", {}).items():
        for method, operation in item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            responses = operation.setdefault("responses", {})
            for code in sorted(_codes(method, path, operation)):
                if code in responses:
                    continue
                response = {"description": DESCRIPTIONS[code],
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
                if code in ("429", "503"):
                    response["headers"] = RETRY_AFTER
                responses[code] = response
    return result
