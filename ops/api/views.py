"""POS REST API: thin views that call ops services and tools."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import services, tools
from ..models import Order, Store
from ..validation import known_query, reject_unknown
from .serializers import (
    AdjustmentInSerializer,
    AdjustmentResultSerializer,
    InventorySerializer,
    OrderBatchInSerializer,
    OrderBatchResultSerializer,
    OrderInSerializer,
    OrderSerializer,
    OrderWrittenSerializer,
    StoreSerializer,
    ToolResultSerializer,
)


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

    @extend_schema(summary="库存调整（入库、盘点差异、报损、调拨）", request=AdjustmentInSerializer, responses={201: AdjustmentResultSerializer, 200: AdjustmentResultSerializer})
    def post(self, request):
        result = services.inventory_adjust(data=request.data, user=request.user, token=_token(request))
        data = {
            "id": result.adjustment.id,
            "external_id": result.adjustment.external_id,
            "result": "replayed" if result.replayed else "created",
            "inventory": InventorySerializer(result.inventory).data,
        }
        return Response(data, status=status.HTTP_200_OK if result.replayed else status.HTTP_201_CREATED)


class StoresView(APIView):
    @extend_schema(summary="门店列表（你能查看的门店）", responses=StoreSerializer(many=True))
    def get(self, request):
        return Response(StoreSerializer(Store.objects.for_user(request.user, "view"), many=True).data)


def _tool_view(tool: str, summary: str, *params: OpenApiParameter) -> type[APIView]:
    """A read endpoint that is one query tool (the same one chat and MCP run, with the caller's
    scope): its query parameters are the tool's parameters, an unknown one is a 400."""
    names = tuple(p.name for p in params)

    class ToolView(APIView):
        @extend_schema(summary=f"{summary}（与问答用的是同一个工具 {tool}）", parameters=list(params), responses=ToolResultSerializer)
        def get(self, request):
            return Response(tools.run_tool(tool, _query(request, names), user=request.user).as_dict())

    ToolView.__name__ = ToolView.__qualname__ = "".join(part.title() for part in tool.split("_")) + "View"
    return ToolView


_STORE = OpenApiParameter("store", str, description="门店编码、名称或别名；省略表示你能查看的全部门店")
_PERIOD = OpenApiParameter("period", str, required=True, description="如 昨天、上周、本月、最近7天、11月1日到7日")
_PRODUCT = OpenApiParameter("product", str, required=True, description="商品名称、别名或商品编码，如 科罗娜、黑牌、B003")

SalesSummaryView = _tool_view("store_sales", "营业额汇总", _STORE, _PERIOD)
SalesDailyView = _tool_view("daily_trend", "每日营业额趋势（最多 92 天）", _STORE, _PERIOD)
SalesProductView = _tool_view("product_sales", "单品销量", _PRODUCT, _STORE, _PERIOD)
SalesChannelView = _tool_view("channel_sales", "按渠道的营业额和退款", _STORE, _PERIOD)
SalesCompareView = _tool_view("period_compare", "两段时间的营业额对比", _STORE, _PERIOD, OpenApiParameter(
    "baseline", str, required=True, description="对比的时间段，如 上上周、上月、11月1日到7日"))
StockProductView = _tool_view("product_stock", "单品库存", _PRODUCT, _STORE)


__all__ = ["OrdersView", "InventoryAdjustmentsView", "StoresView", "SalesSummaryView", "SalesDailyView", "SalesProductView",
           "SalesChannelView", "SalesCompareView", "StockProductView", "InventorySerializer"]
