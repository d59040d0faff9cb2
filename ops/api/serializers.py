"""Serializers for the ops API: output shapes and the OpenAPI documentation of inputs.

Input validation of orders lives in ops.services (one code path for API, bench and
tests); these input serializers only document the payload.
"""
from rest_framework import serializers

from ..models import Inventory, InventoryAdjustment, Order, OrderLine, Store
from ..tools import COLUMNS


class StoreSerializer(serializers.ModelSerializer):
    class Meta:
        model = Store
        fields = ["code", "name", "city", "aliases", "timezone"]


class OrderLineInSerializer(serializers.Serializer):
    sku = serializers.CharField()
    qty = serializers.IntegerField(min_value=1)
    unit_price = serializers.DecimalField(max_digits=10, decimal_places=2)
    amount = serializers.DecimalField(max_digits=12, decimal_places=2)


class OrderInSerializer(serializers.Serializer):
    store = serializers.CharField(help_text="门店编码；POS 令牌绑定门店时可省略")
    external_id = serializers.CharField(max_length=64, help_text="POS 单号，同一门店内唯一（幂等键）")
    created_at = serializers.DateTimeField()
    channel = serializers.ChoiceField(choices=Order.Channel.choices)
    status = serializers.ChoiceField(choices=Order.Status.choices, default="paid")
    total = serializers.DecimalField(max_digits=12, decimal_places=2)
    member = serializers.CharField(required=False, help_text="会员号或手机号")
    lines = OrderLineInSerializer(many=True)


class OrderBatchInSerializer(serializers.Serializer):
    orders = OrderInSerializer(many=True, help_text="最多 500 单，全部成功或全部不写")


class OrderLineSerializer(serializers.ModelSerializer):
    sku = serializers.CharField(source="product.sku")

    class Meta:
        model = OrderLine
        fields = ["sku", "qty", "unit_price", "amount"]


class OrderSerializer(serializers.ModelSerializer):
    store = serializers.CharField(source="store.code")
    member = serializers.CharField(source="member.number", default=None)
    lines = OrderLineSerializer(many=True)

    class Meta:
        model = Order
        fields = ["id", "store", "external_id", "created_at", "channel", "status", "total", "member", "lines"]


class OrderResultSerializer(serializers.Serializer):
    external_id = serializers.CharField()
    id = serializers.IntegerField()
    result = serializers.ChoiceField(choices=["created", "replayed"])


class OrderBatchResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    replayed = serializers.IntegerField()
    orders = OrderResultSerializer(many=True)


class AdjustmentInSerializer(serializers.Serializer):
    store = serializers.CharField(required=False)
    sku = serializers.CharField()
    delta = serializers.IntegerField()
    reason = serializers.ChoiceField(choices=InventoryAdjustment.Reason.choices)
    external_id = serializers.CharField(max_length=64)
    note = serializers.CharField(required=False, allow_blank=True)


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
