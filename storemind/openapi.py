"""The OpenAPI contract tells the truth about errors and request bodies.

A drf-spectacular post-processing hook: every operation documents the error statuses it
can really return (400 bad input, 401 no/invalid token, 403 denied, 404 unknown id, 409
conflict, 415 not JSON, 429 throttled with Retry-After, 503 database or queue down with
Retry-After) with the one error body all API errors share, and request bodies refuse
unknown fields (additionalProperties: false), as the services do.
"""
from __future__ import annotations

import re

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
    "404": "没有这个对象（或请求体引用的对象不存在，如会员）",
    "409": "与已记录的内容冲突（幂等键、单号、状态，或调整后库存为负）",
    "415": "请求体必须是 application/json",
    "429": "请求太频繁（每个用户限流）",
    "503": "数据库或后台队列暂时不可用",
}
# Operations that can conflict (409); throttled ones (429) are read off the views.
CONFLICTS = {("post", "/api/v1/orders"), ("post", "/api/v1/inventory/adjustments"), ("post", "/api/v1/proposals"),
             ("post", "/api/v1/proposals/{id}/confirm"), ("post", "/api/v1/proposals/{id}/reject"),
             ("post", "/api/v1/proposals/{id}/withdraw"), ("patch", "/api/v1/proposals/{id}"),
             ("post", "/api/v1/knowledge/documents/{id}/publish")}


# Bodies that name an object by id (a new version of document N): 404 when it names nothing of yours.
REFERS_BY_ID = {("post", "/api/v1/knowledge/documents"), ("post", "/api/v1/proposals"),
                ("post", "/api/v1/orders")}  # an order naming a member who is not there


def _throttled(generator) -> set[tuple[str, str]]:
    """(method, path) of every operation whose view names a throttle_scope (DRF throttles every
    method of such a view), read off the views rather than listed by hand."""
    found = set()
    for path, _regex, method, view in getattr(generator, "endpoints", None) or []:
        if getattr(getattr(view, "cls", view), "throttle_scope", None):
            found.add((method.lower(), _shape(path)))
    return found


def _shape(path: str) -> str:
    """/a/{pk}/b and /a/{id}/b are one path (the schema names path parameters its own way)."""
    return re.sub(r"\{[^}]+\}", "{}", path)


def _codes(method: str, path: str, operation: dict, throttled: set = frozenset()) -> set[str]:
    codes = {"401", "403", "503"}
    if operation.get("parameters") or "requestBody" in operation or method in ("post", "put", "patch"):
        codes.add("400")
    if "requestBody" in operation or method in ("post", "put", "patch"):
        codes.add("415")
    if "{" in path or (method, path) in REFERS_BY_ID:
        codes.add("404")
    if (method, _shape(path)) in throttled:
        codes.add("429")
    if (method, path) in CONFLICTS:
        codes.add("409")
    return codes


def _close_request_schemas(schemas: dict) -> None:
    for name, schema in schemas.items():
        if name.endswith("Request") and schema.get("type") == "object" and "additionalProperties" not in schema:
            schema["additionalProperties"] = False


# drf-spectacular's pattern for max_digits=11, decimal_places=2 admits "", "-", "." and 999,999,999;
# core.validation.money_problem wants a number of at most 10^8 with at most two decimals.
SPECTACULAR_MONEY = r"^-?\d{0,9}(?:\.\d{0,2})?$"
MONEY_PATTERN = r"^-?(?:\d{1,8}(?:\.\d{0,2})?|\.\d{1,2}|100000000(?:\.0{0,2})?)$"
# A line's unit price is never negative (min_value=0, which a string's pattern must say itself), nor,
# with qty ≥ 1, its amount.
MONEY_PATTERN_NOT_NEGATIVE = MONEY_PATTERN.replace("^-?", "^", 1)


# Text may not hold NUL (core.validation.find_bad_text; lone surrogates cannot be encoded in JSON
# or a URL as UTF-8 anyway).
NO_NUL = r"^[^\x00]*$"


def _query_strings_not_empty(result: dict, components: dict) -> None:
    """Every query filter is refused empty (core.validation.known_query) and without NUL."""
    for item in result.get("paths", {}).values():
        for operation in item.values():
            for param in operation.get("parameters", []) if isinstance(operation, dict) else []:
                schema = param.get("schema", {})
                if param.get("in") == "query" and schema.get("type") == "string" and "enum" not in schema:
                    schema.setdefault("minLength", 1)
                    schema.setdefault("pattern", NO_NUL)


def _texts_and_money(result: dict, components: dict) -> None:
    """Every free text of a request body has no NUL (core.validation.find_bad_text); money is the
    server's pattern; an adjustment's delta is never 0 (±1 to ±MAX_QTY)."""
    for schema in components.values():
        for prop in (schema.get("properties") or {}).values():
            if prop.get("type") == "string" and not ({"enum", "pattern", "format"} & set(prop)):
                prop["pattern"] = NO_NUL
    for schema in components.values():
        for prop in (schema.get("properties") or {}).values():
            if prop.get("format") == "decimal" and prop.get("pattern") == SPECTACULAR_MONEY:
                prop["pattern"] = MONEY_PATTERN
    delta = components.get("AdjustmentInRequest", {}).get("properties", {}).get("delta")
    if delta is not None and "minimum" in delta:
        low, high = delta.pop("minimum"), delta.pop("maximum")
        delta["anyOf"] = [{"minimum": low, "maximum": -1}, {"minimum": 1, "maximum": high}]


def _pos_and_chat_limits(result: dict, components: dict) -> None:
    """Order lines and batches, external ids, line money and the chat's thread id, as the services check them."""
    from django.conf import settings

    from agent.services import THREAD_ID
    from core.validation import EXTERNAL_ID
    from ops.services import MAX_LINES_PER_ORDER

    order_lines = components.get("OrderInRequest", {}).get("properties", {}).get("lines")
    if order_lines is not None:  # drf-spectacular drops min_length/max_length of a many=True serializer
        order_lines.update(minItems=1, maxItems=MAX_LINES_PER_ORDER)
    for name in ("OrderInRequest", "AdjustmentInRequest"):  # core.validation.key_problem
        external_id = components.get(name, {}).get("properties", {}).get("external_id")
        if external_id is not None:
            external_id.update(pattern=EXTERNAL_ID.pattern, minLength=1, maxLength=64)
    for field in ("unit_price", "amount"):
        line_money = components.get("OrderLineInRequest", {}).get("properties", {}).get(field)
        if line_money is not None:
            line_money["pattern"] = MONEY_PATTERN_NOT_NEGATIVE
    chat_thread = components.get("ChatRequestRequest", {}).get("properties", {}).get("thread_id")
    if chat_thread is not None:  # part of the page's URLs (agent.services.validate_thread_id)
        chat_thread["pattern"] = rf"^(?:{THREAD_ID.pattern})?$"
    batch = components.get("OrderBatchInRequest", {}).get("properties", {}).get("orders")
    if batch is not None:
        batch.update(minItems=1, maxItems=settings.SM_POS_MAX_BATCH)


def _payload_shapes() -> tuple[dict, dict]:
    """A restock's and a ticket's payload, as workflow.payloads checks them."""
    from workflow.payloads import (
        DESCRIPTION_MAX,
        DESCRIPTION_MIN,
        MAX_REASON,
        MAX_RESTOCK_LINES,
        MAX_RESTOCK_QTY,
        TICKET_CATEGORIES,
        TICKET_SEVERITIES,
    )

    restock_line = {"type": "object", "additionalProperties": False, "required": ["quantity"],
                    "anyOf": [{"required": ["sku"]}, {"required": ["product"]}], "properties": {
        "sku": {"type": "string", "minLength": 1, "maxLength": 64, "description": "SKU、商品名或别名"},
        # What the server returns in each line (the product's name) is accepted back as it is:
        # a client amends a proposal by sending its lines again (make fuzz, stateful phase).
        "product": {"type": "string", "minLength": 1, "maxLength": 64, "description": "商品名或别名；与 sku 同时给出时必须是同一个商品"},
        "quantity": {"type": "integer", "minimum": 1, "maximum": MAX_RESTOCK_QTY},
        "unit": {"type": "string", "description": "商品的单位或 箱；省略时为商品的单位"},
        # null is read as no reason (many POS serializers write an unset field so)
        "reason": {"type": "string", "nullable": True, "maxLength": MAX_REASON, "pattern": NO_NUL}}}
    restock = {"type": "object", "additionalProperties": False, "required": ["lines"], "properties": {
        "lines": {"type": "array", "minItems": 1, "maxItems": MAX_RESTOCK_LINES, "items": restock_line}}}
    ticket = {"type": "object", "additionalProperties": False, "required": ["category", "severity", "description"], "properties": {
        "category": {"type": "string", "enum": TICKET_CATEGORIES},
        "severity": {"type": "string", "enum": TICKET_SEVERITIES},
        # DESCRIPTION_MIN to DESCRIPTION_MAX characters once the spaces around it are removed.
        "description": {"type": "string", "minLength": DESCRIPTION_MIN, "maxLength": DESCRIPTION_MAX,
                        "pattern": rf"^\s*[^\s\x00][^\x00]{{{DESCRIPTION_MIN - 2},}}[^\s\x00]\s*$"},
        "order": {"type": "string", "minLength": 1, "pattern": NO_NUL, "description": "相关的 POS 单号（可选）"},
        "member": {"type": "string", "minLength": 1, "pattern": NO_NUL, "description": "相关的会员号或完整手机号（可选）"}}}
    return restock, ticket


def _proposal_payloads(result: dict, components: dict) -> None:
    """A proposal's payload has the shape of its kind: one schema per kind, for creating and amending."""
    create = components.get("ProposalCreateRequest")
    if create is None:
        return
    restock, ticket = _payload_shapes()
    amend = components.get("PatchedProposalAmendRequest")
    if amend is not None:  # PATCH bodies are partial by default; this one must say what the proposal becomes
        amend["required"] = ["payload"]
        amend.setdefault("properties", {})["payload"] = {
            "anyOf": [restock, ticket], "description": "整份新内容，形状与提案的类型一致：补货写 lines，工单写 category、severity、description"}
    base = {k: v for k, v in create.items() if k != "properties"}
    props = create.get("properties", {})
    components["ProposalCreateRequest"] = {
        "oneOf": [
            {**base, "properties": {**props, "kind": {"type": "string", "enum": ["restock"]}, "payload": restock}},
            {**base, "properties": {**props, "kind": {"type": "string", "enum": ["ticket"]}, "payload": ticket}},
        ],
        "description": create.get("description", "提案：补货（restock）或客诉工单（ticket），payload 按类型。"),
    }


def _state_what_the_server_enforces(result: dict, components: dict) -> None:
    """Constraints the services enforce that the serializers cannot say, each step in its order."""
    for step in (_query_strings_not_empty, _texts_and_money, _pos_and_chat_limits, _proposal_payloads):
        step(result, components)


# Everyday time phrases offered as the enum of `period` and `baseline` (the server reads many more
# Chinese phrases and {start, end}; the description says so). Only those that parse today and
# lie within the data are stated, so a caller who picks one from the schema is never refused.
PERIOD_PHRASES = ("今天", "昨天", "前天", "本周", "上周", "上上周", "本月", "上月", "最近7天", "最近14天", "最近30天")
ACCEPTS_MORE = {
    "store": "也接受门店名称或别名",
    "product": "也接受商品名称或别名",
    "period": "也接受其他中文时间说法，如 11月1日到7日、最近3天",
    "baseline": "也接受其他中文时间说法，如 11月1日到7日、最近3天",
}


def _references_for(user, token) -> dict[str, list[str]]:
    """The values of `store`, `product`/`sku` and `period`/`baseline` this caller may send and be
    answered: the codes of the stores in their scope, the SKUs on sale and the period phrases."""
    from ops.models import Product, Store
    from ops.periods import PeriodError, bound_to_data, parse_period
    from ops.selectors import first_sale_date
    from ops.tools import MAX_TREND_DAYS, local_today

    today, since = local_today(), first_sale_date()
    periods = []
    for phrase in PERIOD_PHRASES:
        try:
            period = bound_to_data(parse_period(phrase, today), since)
        except PeriodError:
            continue
        if period.days <= MAX_TREND_DAYS:
            periods.append(phrase)
    stores = set(Store.objects.for_user(user, "view").values_list("code", flat=True))
    if getattr(token, "store_id", None):  # a POS device writes for its one store
        stores.add(token.store.code)
    return {"store": sorted(stores),
            "product": list(Product.objects.filter(active=True).order_by("sku").values_list("sku", flat=True)),
            "period": periods}


def _state_the_callers_references(result: dict, components: dict, request) -> None:
    """A store, product or period the server does not know is a 400, so the schema served to a
    signed-in caller names the ones it knows for them (enums), as `GET /api/v1/stores` and
    `GET /api/v1/catalog` would; the anonymous schema leaves them free text."""
    user = getattr(request, "user", None)
    if user is None or not getattr(user, "is_authenticated", False):
        return
    known = _references_for(user, getattr(request, "auth", None))
    by_name = {"store": known["store"], "product": known["product"], "sku": known["product"],
               "period": known["period"], "baseline": known["period"]}
    for item in result.get("paths", {}).values():
        for operation in item.values():
            for param in operation.get("parameters", []) if isinstance(operation, dict) else []:
                if param.get("in") == "query" and param.get("name") in by_name:
                    _narrow(param.setdefault("schema", {}), by_name[param["name"]])
                    if param["name"] in ACCEPTS_MORE and "enum" in param["schema"]:
                        param["description"] = f"{param.get('description', '')}（枚举是你可用的值；{ACCEPTS_MORE[param['name']]}）"
    for name, schema in components.items():
        if name.endswith("Request"):
            _narrow_bodies(schema, by_name)
    _restock_units_by_product(components)


def _narrow(schema: dict, values: list | None) -> None:
    """A free-text string parameter becomes the enum of `values` (nothing to narrow: unchanged)."""
    if not values or schema.get("type") != "string" or "enum" in schema:
        return
    for key in ("minLength", "pattern"):
        schema.pop(key, None)
    # OpenAPI 3.0: an enum lists every allowed value, so a nullable field's null is one of them
    # (「"store": null」 is read as omitted; without null here the schema refused it).
    schema["enum"] = [*values, None] if schema.get("nullable") else values


def _narrow_bodies(schema, by_name: dict) -> None:
    """Every `store` and `sku` property of a request body, however deep (a batch's orders' lines)."""
    if isinstance(schema, dict):
        for name, prop in (schema.get("properties") or {}).items():
            if name in ("store", "sku"):
                _narrow(prop, by_name.get(name))
        for value in schema.values():
            _narrow_bodies(value, by_name)
    elif isinstance(schema, list):
        for value in schema:
            _narrow_bodies(value, by_name)


def _restock_units_by_product(components: dict) -> None:
    """A restock line names one product, by its SKU, its name or both (then the same product,
    workflow.services), in its unit or 箱: one branch per product on sale, so 「W005 in 瓶」 or
    「F001 named 水果拼盘」 is never offered."""
    from ops.models import Product

    for branch in components.get("ProposalCreateRequest", {}).get("oneOf", []):
        lines = branch.get("properties", {}).get("payload", {}).get("properties", {}).get("lines")
        if not lines or "sku" not in lines.get("items", {}).get("properties", {}):
            continue
        line = lines["items"]
        props = line["properties"]
        lines["items"] = {"anyOf": [
            {**line, "properties": {**props, "sku": {**props["sku"], "enum": [sku]},
                                    **({"product": {**props["product"], "enum": [name]}} if "product" in props else {}),
                                    "unit": {**props["unit"], "enum": list(dict.fromkeys([unit, "箱"]))}}}
            for sku, name, unit in Product.objects.filter(active=True).order_by("sku").values_list("sku", "name", "unit")]}


def _bodies_with_required_fields_are_required(result: dict, components: dict) -> None:
    """A body with required fields cannot be left out: POST /api/v1/orders with no body was
    schema-valid (requestBody not required) and refused 400 (make fuzz)."""
    def needs_fields(schema: dict) -> bool:
        if "$ref" in schema:
            schema = components.get(schema["$ref"].rsplit("/", 1)[-1], {})
        branches = schema.get("oneOf") or schema.get("anyOf")
        if branches:
            return all(needs_fields(b) for b in branches)
        return bool(schema.get("required"))

    for item in result.get("paths", {}).values():
        for operation in item.values():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            if body and any(needs_fields(media.get("schema", {})) for media in body.get("content", {}).values()):
                body["required"] = True


def postprocess(result, generator, request, public):
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["Error"] = ERROR_SCHEMA
    _close_request_schemas(components)
    _state_what_the_server_enforces(result, components)
    _state_the_callers_references(result, components, request)
    _bodies_with_required_fields_are_required(result, components)  # after the above: they make fields required too
    throttled = _throttled(generator)
    for path, item in result.get("paths", {}).items():
        for method, operation in item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            responses = operation.setdefault("responses", {})
            for code in sorted(_codes(method, path, operation, throttled)):
                if code in responses:
                    continue
                response = {"description": DESCRIPTIONS[code],
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
                if code in ("429", "503"):
                    response["headers"] = RETRY_AFTER
                responses[code] = response
    return result
