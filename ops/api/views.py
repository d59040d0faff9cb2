"""POS REST API: thin views that call ops services and tools."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.validation import known_query, reject_unknown

from .. import selectors, services, tools
from ..models import Order, Store
from .serializers import (
    AdjustmentInSerializer,
    AdjustmentResultSerializer,
    CatalogSerializer,
    InventorySerializer,
    OrderBatchInSerializer,
    OrderBatchResultSerializer,
    OrderInSerializer,
    OrderSerializer,
    OrderWrittenSerializer,
    StoreSerializer,
    ToolResultSerializer,
)

# Swagger's examples are real demo SKUs at their list prices, with amounts and totals that add up
# (generated samples were 「"total": "-997304855."」, 「"sku": "string"」).
_LINES = [{"sku": "B001", "qty": 2, "unit_price": "15.00", "amount": "30.00"},
          {"sku": "F001", "qty": 1, "unit_price": "28.00", "amount": "28.00"}]
ORDER_EXAMPLE = {"external_id": "TH-POS1-000001", "created_at": "2026-11-28T21:15:00+08:00", "channel": "堂食",
                 "total": "58.00", "lines": _LINES}
ORDER_EXAMPLES = [
    OpenApiExample("一张订单", request_only=True, value=ORDER_EXAMPLE,
                   description="两瓶青岛啤酒（B001，标价 15.00）和一份薯条（F001，28.00）：amount = qty × unit_price，total = 各行之和"),
    OpenApiExample("一个批次", request_only=True, value={"orders": [
        {**ORDER_EXAMPLE, "external_id": "TH-POS1-000002"},
        {"external_id": "TH-POS1-000003", "created_at": "2026-11-28T21:40:00+08:00", "channel": "外卖", "total": "24.00",
         "lines": [{"sku": "S001", "qty": 3, "unit_price": "8.00", "amount": "24.00"}]}]},
        description="最多 500 个订单，全部写入或都不写"),
]
ADJUSTMENT_EXAMPLES = [
    OpenApiExample("到货入库", request_only=True, value={"sku": "B001", "delta": 24, "reason": "receive", "external_id": "TH-IN-20261128-01",
                                                     "note": "青岛啤酒一箱到货"}),
    OpenApiExample("报损", request_only=True, value={"sku": "B001", "delta": -1, "reason": "damage", "external_id": "TH-DMG-20261128-01",
                                                   "note": "搬运时摔碎一瓶"}),
]


def _query(request, allowed: tuple[str, ...]) -> dict:
    return known_query(request.query_params, allowed)


def _token(request):
    return request.auth if hasattr(request.auth, "store_id") else None


class OrdersView(APIView):
    pos_endpoint = True
    throttle_scope = "pos_write"

    @extend_schema(
        summary="写入 POS 订单（单个或最多 500 个的批次）",
        description="按 (门店, external_id) 幂等：原样重放返回 200 和原订单；同单号不同内容返回 409。批次要么全部写入，要么都不写。",
        examples=ORDER_EXAMPLES,
        request=PolymorphicProxySerializer("OrderWrite", serializers=[OrderInSerializer, OrderBatchInSerializer], resource_type_field_name=None),
        responses={code: PolymorphicProxySerializer("OrderWriteResult", serializers=[OrderWrittenSerializer, OrderBatchResultSerializer],
                                                    resource_type_field_name=None) for code in (201, 200)},
    )
    def post(self, request):
        body = request.data
        if not isinstance(body, dict):  # a bare JSON array too: the documented batch is {"orders": [...]}
            raise ValidationError({"non_field_errors": ["请求体必须是订单对象，或 {\"orders\": [...]}。"]})
        batch = "orders" in body
        if batch:
            reject_unknown(body, {"orders"})  # 「{"orders": [...], "x": 1}」 was a 201
        orders = body["orders"] if batch else [body]
        result = services.orders_ingest(orders=orders, user=request.user, token=_token(request), batch=batch)
        code = status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        if not batch:
            order = (result.created or result.replayed)[0]
            data = OrderSerializer(Order.objects.select_related("store", "member").prefetch_related("lines__product").get(pk=order.pk)).data
            data["result"] = "created" if result.created else "replayed"
            return Response(data, status=code)
        items = [{"external_id": o.external_id, "id": o.id, "result": "created"} for o in result.created]
        items += [{"external_id": o.external_id, "id": o.id, "result": "replayed"} for o in result.replayed]
        return Response({"created": len(result.created), "replayed": len(result.replayed), "orders": items}, status=code)


class InventoryAdjustmentsView(APIView):
    pos_endpoint = True
    throttle_scope = "pos_write"

    @extend_schema(summary="库存调整（入库、盘点差异、报损、调拨）", examples=ADJUSTMENT_EXAMPLES, request=AdjustmentInSerializer, responses={201: AdjustmentResultSerializer, 200: AdjustmentResultSerializer})
    def post(self, request):
        result = services.inventory_adjust(data=request.data, user=request.user, token=_token(request))
        data = {
            "id": result.adjustment.id,
            "external_id": result.adjustment.external_id,
            "result": "replayed" if result.replayed else "created",
            "inventory": InventorySerializer(result.inventory).data,
        }
        return Response(data, status=status.HTTP_200_OK if result.replayed else status.HTTP_201_CREATED)


class CatalogView(APIView):
    """What a POS needs to build its first order: every SKU with its name, unit, case size and
    list price. A POS token may read it (it may read nothing else), as may anyone with a role."""

    pos_endpoint = True

    @extend_schema(summary="商品目录（SKU、名称、单位、每箱数量、标价、是否在售）", responses=CatalogSerializer)
    def get(self, request):
        known_query(request.query_params, ())
        token = _token(request)
        products = selectors.catalog_for(request.user)
        return Response(CatalogSerializer({"store": token.store.code if token and token.store_id else None, "products": products}).data)


class StoresView(APIView):
    @extend_schema(summary="门店列表（你能查看的门店）", responses=StoreSerializer(many=True))
    def get(self, request):
        return Response(StoreSerializer(Store.objects.for_user(request.user, "view"), many=True).data)


# Examples a POS integrator can paste; each parameter's type, description and whether it is required
# are the tool's own (its JSON schema), so REST, chat and MCP describe a parameter in one wording.
_EXAMPLES = {
    "store": OpenApiExample("天河店", value="GZ-TH"), "period": OpenApiExample("上周", value="上周"),
    "product": OpenApiExample("青岛啤酒", value="B001"), "baseline": OpenApiExample("上上周", value="上上周"),
    "by_store": OpenApiExample("各店分开", value=True),
}
_TYPES = {"string": str, "boolean": bool, "integer": int}


def _tool_parameters(tool: str) -> list[OpenApiParameter]:
    """The tool's parameters as query parameters, in the schema's order."""
    schema = tools.TOOLS[tool].schema
    params = []
    for name, prop in schema["properties"].items():
        kind = prop["type"][0] if isinstance(prop["type"], list) else prop["type"]
        params.append(OpenApiParameter(name, _TYPES[kind], required=name in schema.get("required", ()),
                                       description=prop.get("description", ""),
                                       examples=[_EXAMPLES[name]] if name in _EXAMPLES else []))
    return params


def _tool_view(tool: str, summary: str) -> type[APIView]:
    """A read endpoint that is one query tool (the same one chat and MCP run, with the caller's
    scope): its query parameters are the tool's parameters, an unknown one is a 400."""
    params = _tool_parameters(tool)
    names = tuple(p.name for p in params)
    flags = {p.name for p in params if p.type is bool}

    class ToolView(APIView):
        @extend_schema(summary=f"{summary}（与问答用的是同一个工具 {tool}）", parameters=params, responses=ToolResultSerializer)
        def get(self, request):
            query = _query(request, names)
            for name in flags:  # a query string says true/false; the tool's schema wants a boolean
                if name in query and query[name] in ("true", "false"):
                    query[name] = query[name] == "true"
            return Response(tools.run_tool(tool, query, user=request.user).as_dict())

    ToolView.__name__ = ToolView.__qualname__ = "".join(part.title() for part in tool.split("_")) + "View"
    return ToolView


SalesSummaryView = _tool_view("store_sales", "营业额汇总")
SalesDailyView = _tool_view("daily_trend", "每日营业额趋势（最多 92 天）")
SalesProductView = _tool_view("product_sales", "单品销量")
SalesProductDailyView = _tool_view("product_daily", "单品每日销量（最多 92 天）")
SalesChannelView = _tool_view("channel_sales", "按渠道的营业额和退款")
SalesCompareView = _tool_view("period_compare", "两段时间的营业额对比")
StockProductView = _tool_view("product_stock", "单品库存")


__all__ = ["OrdersView", "CatalogView", "InventoryAdjustmentsView", "StoresView", "SalesSummaryView", "SalesDailyView", "SalesProductView", "SalesProductDailyView",
           "SalesChannelView", "SalesCompareView", "StockProductView", "InventorySerializer"]
