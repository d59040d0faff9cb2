"""The facts side of StoreMind: stores, products, orders, inventory, members."""
from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.contrib.postgres.indexes import BTreeIndex
from django.db import models
from django.db.models import Q

from core.scoping import StoreScopedQuerySet
from core.validation import MAX_KEY_LENGTH

from .trading_day import validate_time_zone


class StoreQuerySet(StoreScopedQuerySet):
    def for_user(self, user, action: str = "view"):
        """The stores `user` may exercise `action` on ('view', 'view_sales', 'workflow.add_proposal', ...)."""
        return self.restrict(user, action)


class Store(models.Model):
    code = models.CharField("编码", max_length=16, unique=True)
    name = models.CharField("名称", max_length=64, unique=True)
    city = models.CharField("城市", max_length=32)
    aliases = models.JSONField("别名", default=list, blank=True, help_text="如 天河店、天河")
    timezone = models.CharField("时区", max_length=64, default="Asia/Shanghai", validators=[validate_time_zone],
                                help_text="IANA 时区，如 Asia/Shanghai；营业日按本店时间 06:00 到次日 06:00 计")
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="stores", verbose_name="分配的员工/店长"
    )

    objects = StoreQuerySet.as_manager()
    store_path = "pk"

    class Meta:
        ordering = ["code"]
        verbose_name = verbose_name_plural = "门店"
        permissions = [
            ("view_sales", "查看营业数据（营业额、排行、高峰、对比）"),
            ("view_all_stores", "读取全部门店（总部）"),
        ]

    def __str__(self) -> str:
        return self.name


class Product(models.Model):
    class Category(models.TextChoices):
        BEER = "啤酒", "啤酒"
        WHISKY = "威士忌", "威士忌"
        COCKTAIL = "鸡尾酒", "鸡尾酒"
        SOFT = "软饮", "软饮"
        SNACK = "小吃", "小吃"
        WINE = "葡萄酒", "葡萄酒"

    # Groups of categories a question names as one (「哪个酒卖得最好」 listed 可口可乐 first): a
    # product tool's `category` may be one of these as well as a single category.
    ALCOHOL = "酒类"
    CATEGORY_GROUPS = {ALCOHOL: (Category.BEER.value, Category.WHISKY.value, Category.COCKTAIL.value, Category.WINE.value)}

    class Unit(models.TextChoices):
        BOTTLE = "瓶", "瓶"
        CASE = "箱", "箱"
        GLASS = "杯", "杯"
        PORTION = "份", "份"

    sku = models.CharField("商品编码（SKU）", max_length=32, unique=True)
    name = models.CharField("名称", max_length=64, unique=True)
    category = models.CharField("品类", max_length=16, choices=Category.choices)
    unit = models.CharField("单位", max_length=4, choices=Unit.choices)
    price = models.DecimalField("单价", max_digits=10, decimal_places=2)
    case_size = models.PositiveIntegerField("每箱数量", default=1, help_text="补货按箱时一箱的销售单位数")
    aliases = models.JSONField("别名", default=list, blank=True)
    active = models.BooleanField("在售", default=True)

    class Meta:
        ordering = ["sku"]
        verbose_name = verbose_name_plural = "商品"

    def __str__(self) -> str:
        return self.name

    @classmethod
    def category_label(cls, category: str) -> str:
        """「啤酒类」, and a group as it is named (「酒类」, not 「酒类类」)."""
        return category if category in cls.CATEGORY_GROUPS else f"{category}类"

    def in_sales_units(self, quantity: int, unit: str) -> int:
        """`quantity` of `unit` in the unit the bar sells: 箱 × case_size unless the product is sold by the 箱."""
        return quantity * self.case_size if unit == self.Unit.CASE and self.unit != self.Unit.CASE else quantity


def mask_phone(phone: str) -> str:
    return phone[:3] + "****" + phone[-4:] if len(phone) >= 7 else "****"


def mask_name(name: str) -> str:
    return name[:1] + "*" * max(1, len(name) - 1) if name else ""


class Member(models.Model):
    number = models.CharField("会员号", max_length=16, unique=True)
    phone = models.CharField("手机号", max_length=16, unique=True)
    name = models.CharField("姓名", max_length=32)
    home_store = models.ForeignKey(Store, on_delete=models.PROTECT, related_name="home_members", verbose_name="开卡门店")
    created_at = models.DateTimeField("开卡时间")

    objects = StoreScopedQuerySet.as_manager()
    store_path = "home_store"

    class Meta:
        ordering = ["number"]
        verbose_name = verbose_name_plural = "会员"
        permissions = [
            ("view_member_balance", "按会员号或完整手机号查询储值余额（脱敏）"),
            ("view_member_pii", "查看会员完整手机号和姓名"),
        ]

    def __str__(self) -> str:
        # What the admin's links, its history and every audit row (target_repr) show: the
        # surname only, as the privacy SOP requires 「在 POS、StoreMind 和任何系统中」.
        return f"{self.number} {mask_name(self.name)}"


class StoredValueAccount(models.Model):
    member = models.OneToOneField(Member, on_delete=models.CASCADE, related_name="account", verbose_name="会员")
    principal_balance = models.DecimalField("本金余额", max_digits=12, decimal_places=2, default=0)
    bonus_balance = models.DecimalField("赠送余额", max_digits=12, decimal_places=2, default=0)
    updated_at = models.DateTimeField("更新时间", auto_now=True)

    objects = StoreScopedQuerySet.as_manager()
    store_path = "member__home_store"

    class Meta:
        verbose_name = verbose_name_plural = "储值账户"
        constraints = [
            models.CheckConstraint(condition=Q(principal_balance__gte=0), name="account_principal_nonnegative"),
            models.CheckConstraint(condition=Q(bonus_balance__gte=0), name="account_bonus_nonnegative"),
        ]

    def __str__(self) -> str:
        return f"{self.member} 储值"


class StoredValueTxn(models.Model):
    class Kind(models.TextChoices):
        TOPUP = "topup", "充值"
        SPEND = "spend", "消费"
        REFUND = "refund", "退卡"

    account = models.ForeignKey(StoredValueAccount, on_delete=models.CASCADE, related_name="txns", verbose_name="账户")
    store = models.ForeignKey(Store, on_delete=models.PROTECT, verbose_name="门店")
    kind = models.CharField("类型", max_length=8, choices=Kind.choices)
    principal_delta = models.DecimalField("本金变动", max_digits=12, decimal_places=2)
    bonus_delta = models.DecimalField("赠送变动", max_digits=12, decimal_places=2)
    created_at = models.DateTimeField("时间")
    note = models.CharField("备注", max_length=128, blank=True)

    objects = StoreScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = verbose_name_plural = "储值流水"

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.principal_delta}+{self.bonus_delta}"


class Order(models.Model):
    class Channel(models.TextChoices):
        DINE_IN = "堂食", "堂食"
        TAKEAWAY = "外卖", "外卖"
        GROUP_BUY = "团购", "团购"

    class Status(models.TextChoices):
        PAID = "paid", "已支付"
        REFUNDED = "refunded", "已退款"

    store = models.ForeignKey(Store, on_delete=models.PROTECT, related_name="orders", verbose_name="门店")
    external_id = models.CharField("POS 单号", max_length=MAX_KEY_LENGTH)
    created_at = models.DateTimeField("下单时间")
    channel = models.CharField("渠道", max_length=4, choices=Channel.choices)
    status = models.CharField("状态", max_length=8, choices=Status.choices, default=Status.PAID)
    total = models.DecimalField("金额", max_digits=12, decimal_places=2)
    member = models.ForeignKey(Member, on_delete=models.SET_NULL, null=True, blank=True, related_name="orders", verbose_name="会员")
    payload_hash = models.CharField("载荷指纹", max_length=64, editable=False)
    received_at = models.DateTimeField("接收时间", auto_now_add=True)

    objects = StoreScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = verbose_name_plural = "订单"
        constraints = [
            models.UniqueConstraint(fields=["store", "external_id"], name="order_unique_external_id_per_store"),
            models.CheckConstraint(condition=Q(total__gte=0), name="order_total_nonnegative"),
        ]
        indexes = [
            # Period queries are (store, created_at) ranges; INCLUDE keeps them index-only.
            BTreeIndex(fields=["store", "created_at"], name="order_store_created_idx", include=["total", "status"]),
            BTreeIndex(fields=["created_at"], name="order_created_idx", include=["store", "total", "status"]),
        ]

    def __str__(self) -> str:
        return f"{self.store.code}/{self.external_id}"


class StoreDaySales(models.Model):
    """Paid revenue and order count per store and trading day, on the store's own clock (ops.trading_day).

    Maintained by PostgreSQL triggers on ops_order (INSERT, UPDATE, DELETE, COPY and
    TRUNCATE; migrations 0003, 0005, 0006) and on ops_store (a store's time zone changed: its
    days are rebuilt, 0006), so every write path, the ORM's, the seeder's COPY and a
    manual fix in psql, keeps it exact. store_sales and compare_stores read about 30 rows
    per store instead of aggregating every order of the period. Never written by Python.
    """

    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="day_sales", verbose_name="门店")
    day = models.DateField("日期")
    revenue = models.DecimalField("营业额", max_digits=16, decimal_places=2, default=0)
    orders = models.IntegerField("已支付订单数", default=0)

    objects = StoreScopedQuerySet.as_manager()

    class Meta:
        verbose_name = verbose_name_plural = "门店日销售汇总"
        constraints = [models.UniqueConstraint(fields=["day", "store"], name="storedaysales_day_store_uniq")]

    def __str__(self) -> str:
        return f"{self.store_id} {self.day} {self.revenue}"


class OrderLine(models.Model):
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="lines", verbose_name="订单")
    product = models.ForeignKey(Product, on_delete=models.PROTECT, related_name="order_lines", verbose_name="商品")
    qty = models.PositiveIntegerField("数量")
    unit_price = models.DecimalField("单价", max_digits=10, decimal_places=2)
    amount = models.DecimalField("金额", max_digits=12, decimal_places=2)

    objects = StoreScopedQuerySet.as_manager()
    store_path = "order__store"

    class Meta:
        verbose_name = verbose_name_plural = "订单明细"
        constraints = [models.CheckConstraint(condition=Q(qty__gt=0), name="orderline_qty_positive")]

    def __str__(self) -> str:
        return f"{self.product_id} × {self.qty}"


class Inventory(models.Model):
    store = models.ForeignKey(Store, on_delete=models.CASCADE, related_name="inventory", verbose_name="门店")
    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="inventory", verbose_name="商品")
    on_hand = models.IntegerField("在库")
    safety_stock = models.PositiveIntegerField("安全库存")
    updated_at = models.DateTimeField("更新时间", auto_now=True)

    objects = StoreScopedQuerySet.as_manager()

    class Meta:
        ordering = ["store", "product"]
        verbose_name = verbose_name_plural = "库存"
        constraints = [models.UniqueConstraint(fields=["store", "product"], name="inventory_unique_store_product")]

    def __str__(self) -> str:
        return f"{self.store} · {self.product}: {self.on_hand}"


class InventoryAdjustment(models.Model):
    class Reason(models.TextChoices):
        COUNT = "count", "盘点差异"
        RECEIVE = "receive", "到货入库"
        DAMAGE = "damage", "报损"
        TRANSFER = "transfer", "调拨"

    store = models.ForeignKey(Store, on_delete=models.PROTECT, verbose_name="门店")
    product = models.ForeignKey(Product, on_delete=models.PROTECT, verbose_name="商品")
    external_id = models.CharField("POS 单号", max_length=MAX_KEY_LENGTH)
    delta = models.IntegerField("变动数量")
    reason = models.CharField("原因", max_length=16, choices=Reason.choices)
    note = models.CharField("备注", max_length=200, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, verbose_name="操作人")
    created_at = models.DateTimeField("时间", auto_now_add=True)

    objects = StoreScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = verbose_name_plural = "库存调整"
        constraints = [
            models.UniqueConstraint(fields=["store", "external_id"], name="adjustment_unique_external_id_per_store")
        ]

    def __str__(self) -> str:
        # What the audit list shows (target_repr): the product, not only the POS's number for it.
        return f"{self.product.name} {self.delta:+d}（{self.external_id}）"


def _hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiToken(models.Model):
    """A bearer token for the REST API (and MCP over HTTP). Only its hash is stored.

    A token tied to a store is a POS device token: it may write that store only.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens", verbose_name="用户")
    store = models.ForeignKey(Store, on_delete=models.CASCADE, null=True, blank=True, related_name="tokens", verbose_name="POS 门店")
    name = models.CharField("名称", max_length=64)
    prefix = models.CharField("前缀", max_length=8, editable=False)
    key_hash = models.CharField("密钥摘要", max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField("创建时间", auto_now_add=True)
    last_used_at = models.DateTimeField("最近使用", null=True, blank=True)
    revoked = models.BooleanField("已吊销", default=False)

    objects = StoreScopedQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = verbose_name_plural = "API 令牌"

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @staticmethod
    def generate_key() -> str:
        return "sm_" + secrets.token_urlsafe(32)

    def set_key(self, key: str) -> None:
        self.prefix = key[:8]
        self.key_hash = _hash_key(key)

    @classmethod
    def lookup(cls, key: str) -> ApiToken | None:
        return cls.objects.select_related("user", "store").filter(key_hash=_hash_key(key), revoked=False).first()
