"""Serializers for the ops API: output shapes and the OpenAPI documentation of inputs.

Input validation of orders lives in ops.services (one code path for API, bench and
tests); these input serializers only document the payload.
"""
from django.conf import settings
from rest_framework import serializers

from core.validation import MAX_KEY_LENGTH, MAX_MONEY, MAX_QTY

from ..models import Inventory, InventoryAdjustment, Order, OrderLine, Product, Store
from ..services import MAX_LINES_PER_ORDER, MAX_PRICE_FACTOR
from ..tools import COLUMNS


class StoreSerializer(serializers.ModelSerializer):
    class Meta:
        model = Store
        fields = ["code", "name", "city", "aliases", "timezone"]


class CatalogProductSerializer(serializers.ModelSerializer):
    price = serializers.DecimalField(max_digits=10, decimal_places=2, help_text="标价（元），订单行的 unit_price 通常就是它")
    case_size = serializers.IntegerField(help_text="一箱的销售单位数（补货按箱时用）")
    active = serializers.BooleanField(help_text="在售；停售的 SKU 仍可写入历史订单")

    class Meta:
        model = Product
        fields = ["sku", "name", "category", "unit", "case_size", "price", "active", "aliases"]


class CatalogSerializer(serializers.Serializer):
    store = serializers.CharField(allow_null=True, help_text="POS 令牌绑定的门店编码；个人令牌为 null（价格全连锁统一）")
    products = CatalogProductSerializer(many=True)


class OrderLineInSerializer(serializers.Serializer):
    sku = serializers.CharField()
    qty = serializers.IntegerField(min_value=1, max_value=MAX_QTY)
    unit_price = serializers.DecimalField(max_digits=11, decimal_places=2, min_value=0, max_value=MAX_MONEY, help_text=f"最多两位小数，不四舍五入；不超过该商品标价（GET /api/v1/catalog 的 price）的 {MAX_PRICE_FACTOR} 倍")
    amount = serializers.DecimalField(max_digits=11, decimal_places=2, required=False, max_value=MAX_MONEY, help_text="必须等于 数量 × 单价（精确到分）；省略时按此计算")


class OrderInSerializer(serializers.Serializer):
    # 「"store": null」 is how many POS serializers write an unset field: it is read as omitted.
    store = serializers.CharField(required=False, allow_null=True, help_text="门店编码；POS 令牌绑定门店时可省略或为 null")
    external_id = serializers.CharField(max_length=MAX_KEY_LENGTH, help_text="POS 单号，同一门店内唯一（幂等键）")
    created_at = serializers.DateTimeField(help_text="ISO 8601，如 2026-11-20T21:15:00+08:00；年份 2000–2100，时区偏移在 -14:00 到 +14:00 之间；不带时区时按门店所在时区；不能在未来（容许 5 分钟时钟误差），也不能早于 SM_ORDER_MAX_AGE_DAYS 天前（默认 731）")
    channel = serializers.ChoiceField(choices=Order.Channel.choices, default=Order.Channel.DINE_IN)
    status = serializers.ChoiceField(choices=Order.Status.choices, default="paid")
    total = serializers.DecimalField(max_digits=11, decimal_places=2, max_value=MAX_MONEY, min_value=-MAX_MONEY,
                                     help_text="订单金额，必须等于各行金额之和（精确到分）")
    member = serializers.CharField(required=False, allow_blank=True, allow_null=True, help_text="会员号或手机号；空或 null 表示非会员；没有这个会员时整批不写、返回 404")
    lines = OrderLineInSerializer(many=True, min_length=1, max_length=MAX_LINES_PER_ORDER)


class OrderBatchInSerializer(serializers.Serializer):
    orders = OrderInSerializer(many=True, min_length=1, max_length=settings.SM_POS_MAX_BATCH,
                               help_text=f"最多 {settings.SM_POS_MAX_BATCH} 单，全部成功或全部不写")


class OrderLineSerializer(serializers.ModelSerializer):
    sku = serializers.CharField(source="product.sku")

    class Meta:
        model = OrderLine
        fields = ["sku", "qty", "unit_price", "amount"]


class OrderSerializer(serializers.ModelSerializer):
    store = serializers.CharField(source="store.code")
    member = serializers.CharField(source="member.number", default=None, allow_null=True)
    lines = OrderLineSerializer(many=True)

    class Meta:
        model = Order
        fields = ["id", "store", "external_id", "created_at", "channel", "status", "total", "member", "lines"]


class OrderWrittenSerializer(OrderSerializer):
    result = serializers.ChoiceField(choices=["created", "replayed"], read_only=True)

    class Meta(OrderSerializer.Meta):
        fields = [*OrderSerializer.Meta.fields, "result"]


class OrderResultSerializer(serializers.Serializer):
    external_id = serializers.CharField()
    id = serializers.IntegerField()
    result = serializers.ChoiceField(choices=["created", "replayed"])


class OrderBatchResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    replayed = serializers.IntegerField()
    orders = OrderResultSerializer(many=True)


class AdjustmentInSerializer(serializers.Serializer):
    store = serializers.CharField(required=False, allow_null=True, help_text="门店编码；POS 令牌绑定门店时可省略或为 null")
    sku = serializers.CharField()
    delta = serializers.IntegerField(min_value=-MAX_QTY, max_value=MAX_QTY, help_text="非零：正数入库，负数出库")
    reason = serializers.ChoiceField(choices=InventoryAdjustment.Reason.choices + [(label, label) for _, label in InventoryAdjustment.Reason.choices],
                                     help_text="原因：count（盘点差异）、receive（到货入库）、damage（报损）、transfer（调拨）；也可以直接写中文")
    external_id = serializers.CharField(max_length=MAX_KEY_LENGTH)
    note = serializers.CharField(required=False, allow_blank=True, max_length=200)


class InventorySerializer(serializers.ModelSerializer):
    store = serializers.CharField(source="store.code")
    sku = serializers.CharField(source="product.sku")

    class Meta:
        model = Inventory
        fields = ["store", "sku", "on_hand", "safety_stock", "updated_at"]


class AdjustmentResultSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    external_id = serializers.CharField()
    result = serializers.ChoiceField(choices=["created", "replayed"])
    inventory = InventorySerializer()


class ToolResultSerializer(serializers.Serializer):
    tool = serializers.CharField()
    params = serializers.DictField()
    rows = serializers.ListField(child=serializers.DictField())
    summary = serializers.CharField()
    columns = serializers.ListField(
        child=serializers.CharField(),
        help_text="行里的字段（显示顺序）。含义：" + "；".join(f"{k} = {c.label}" for k, c in COLUMNS.items()),
    )
    column_labels = serializers.DictField(child=serializers.CharField(), help_text="字段 → 中文列名（与问答页表头相同）")
