import uuid

from django import forms
from django.apps import apps as django_apps
from django.contrib import admin, messages
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group, User
from django.db import transaction

from core.admin_base import AuditedAdmin, ReadOnlyInline, ScopedAdmin, ScopedReadOnlyAdmin
from core.roles import ROLE_LABELS

from .models import (
    ApiToken,
    Inventory,
    InventoryAdjustment,
    Member,
    Order,
    OrderLine,
    Product,
    Store,
    StoreDaySales,
    StoredValueAccount,
    StoredValueTxn,
    mask_name,
    mask_phone,
)
from .services import api_token_issue, api_token_revoke, inventory_adjust, token_store_problem


@admin.register(Store)
class StoreAdmin(ScopedAdmin):
    list_display = ["code", "name", "city", "aliases", "timezone"]
    list_filter = ["city"]
    search_fields = ["code", "name"]
    filter_horizontal = ["members"]


@admin.register(Product)
class ProductAdmin(AuditedAdmin):  # chain-wide: no store scope
    list_display = ["sku", "name", "category", "unit", "price", "case_size", "active"]
    list_filter = ["category", "unit", "active"]
    search_fields = ["sku", "name"]


class OrderLineInline(ReadOnlyInline):
    model = OrderLine
    fields = ["product", "qty", "unit_price", "amount"]


@admin.register(Order)
class OrderAdmin(ScopedReadOnlyAdmin):
    list_display = ["external_id", "store", "created_at", "channel", "status", "total", "member"]
    list_filter = ["store", "channel", "status", ("created_at", admin.DateFieldListFilter)]
    search_fields = ["external_id", "member__number"]
    date_hierarchy = "created_at"
    list_select_related = ["store", "member"]
    inlines = [OrderLineInline]
    show_full_result_count = False


@admin.register(StoreDaySales)
class StoreDaySalesAdmin(ScopedReadOnlyAdmin):
    """The daily rollup the sales tools read; kept by database triggers, never edited."""

    list_display = ["day", "store", "revenue", "orders"]
    list_filter = ["store"]
    date_hierarchy = "day"
    list_select_related = ["store"]
    ordering = ["-day", "store"]


class InventoryAdminForm(forms.ModelForm):
    """The stock count as the adjustment service will take it: a count below zero, or a change
    larger than one adjustment may be, is a message on the field (it was a 500 from save_model)."""

    def clean_on_hand(self):
        from core.validation import MAX_QTY

        value = self.cleaned_data["on_hand"]
        if value is not None and value < 0:
            raise forms.ValidationError(f"库存数量不能小于 0（填的是 {value}）。出库请减到 0 为止，差异请盘点后再改。")
        if self.instance.pk and value is not None and abs(value - self.instance.on_hand) > MAX_QTY:
            raise forms.ValidationError(f"一次最多调整 {MAX_QTY}（当前 {self.instance.on_hand}）。")
        return value


@admin.register(Inventory)
class InventoryAdmin(ScopedAdmin):
    form = InventoryAdminForm
    list_display = ["store", "product", "on_hand", "safety_stock", "below_safety", "updated_at"]
    list_filter = ["store", "product__category"]
    search_fields = ["product__name", "product__sku", "store__name"]
    list_select_related = ["store", "product"]

    @admin.display(description="低于安全库存")
    def below_safety(self, obj):
        # Not boolean=True: Django draws True as a green tick, which read as "fine" on the rows
        # that need a restock and a red cross on the healthy ones.
        return "⚠ 低于" if obj.on_hand < obj.safety_stock else ""

    def get_readonly_fields(self, request, obj=None):
        """A saved row is one product's stock: changing its product collided with that product's
        own row (inventory_unique_store_product, a 500) or relabelled one product's count as another's."""
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and "product" not in fields:
            fields.append("product")
        return fields

    def save_model(self, request, obj, form, change):
        """A count corrected here goes through the ledger like any other adjustment (盘点差异, the
        difference from the stock as it stands now, audited): saving on_hand directly left no
        InventoryAdjustment row. The other fields (the safety stock) save as usual."""
        if change and "on_hand" in form.changed_data:
            with transaction.atomic():
                current = Inventory.objects.select_for_update().get(pk=obj.pk).on_hand
                if delta := form.cleaned_data["on_hand"] - current:
                    inventory_adjust(user=request.user, data={
                        "store": obj.store.code, "sku": obj.product.sku, "delta": delta, "reason": "count",
                        "external_id": f"admin-{uuid.uuid4().hex[:16]}", "note": "后台修改库存数量"})
                super().save_model(request, obj, form, change)
            return
        super().save_model(request, obj, form, change)


@admin.register(InventoryAdjustment)
class InventoryAdjustmentAdmin(ScopedReadOnlyAdmin):
    list_display = ["external_id", "store", "product", "delta", "reason", "created_by", "created_at"]
    list_filter = ["store", "reason"]
    search_fields = ["external_id", "product__name"]


class AccountInline(ReadOnlyInline):
    model = StoredValueAccount
    fields = ["principal_balance", "bonus_balance", "updated_at"]


@admin.register(Member)
class MemberAdmin(ScopedReadOnlyAdmin):
    """Head office only (ops.view_member); phone and name masked without ops.view_member_pii."""

    list_display = ["number", "name_shown", "phone_shown", "home_store", "created_at"]
    list_filter = ["home_store"]
    search_fields = ["number", "=phone"]
    fields = ["number", "name_shown", "phone_shown", "home_store", "created_at"]
    readonly_fields = fields
    inlines = [AccountInline]

    def get_queryset(self, request):
        self._pii = request.user.has_perm("ops.view_member_pii")
        return super().get_queryset(request)

    @admin.display(description="姓名")
    def name_shown(self, obj):
        return obj.name if getattr(self, "_pii", False) else mask_name(obj.name)

    @admin.display(description="手机号")
    def phone_shown(self, obj):
        return obj.phone if getattr(self, "_pii", False) else mask_phone(obj.phone)


@admin.register(StoredValueTxn)
class StoredValueTxnAdmin(ScopedReadOnlyAdmin):
    list_display = ["account", "store", "kind", "principal_delta", "bonus_delta", "created_at", "note"]
    list_filter = ["kind", "store"]
    search_fields = ["account__member__number"]


class ApiTokenForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["user", "store", "name", "revoked"]

    def clean(self):
        cleaned = super().clean()
        problem = token_store_problem(cleaned.get("user"), cleaned.get("store")) if cleaned.get("user") else None
        if problem and not self.instance.pk:
            self.add_error("store", problem)
        return cleaned


@admin.register(ApiToken)
class ApiTokenAdmin(ScopedAdmin):
    form = ApiTokenForm
    list_display = ["name", "prefix", "user", "store", "created_at", "last_used_at", "revoked"]
    list_filter = ["revoked", "store"]
    search_fields = ["name", "user__username", "prefix"]
    fields = ["user", "store", "name", "revoked", "prefix", "created_at", "last_used_at"]
    readonly_fields = ["prefix", "created_at", "last_used_at"]

    def get_readonly_fields(self, request, obj=None):
        return self.readonly_fields + (["user", "store", "name"] if obj is not None else [])

    def save_model(self, request, obj, form, change):
        # The services issue and revoke (and audit); the admin never writes a token itself.
        if change:
            if obj.revoked and "revoked" in form.changed_data:  # revoking is final: un-ticking changes nothing
                api_token_revoke(token=ApiToken.objects.get(pk=obj.pk), revoked_by=request.user)
            return
        token, key = api_token_issue(user=obj.user, name=obj.name, store=obj.store, issued_by=request.user)
        obj.pk = token.pk
        messages.warning(request, f"新令牌（只显示这一次，请立即复制）：{key}")


@admin.register(StoredValueAccount)
class StoredValueAccountAdmin(ScopedReadOnlyAdmin):
    """Balances change only through the ledger (top-ups, spending, refunds)."""

    list_display = ["member", "principal_balance", "bonus_balance", "updated_at"]
    list_filter = ["member__home_store"]
    search_fields = ["member__number"]
    list_select_related = ["member"]


@admin.register(OrderLine)
class OrderLineAdmin(ScopedReadOnlyAdmin):
    list_display = ["order", "product", "qty", "unit_price", "amount"]
    list_filter = ["product__category", "order__store"]
    search_fields = ["order__external_id", "product__name", "product__sku"]
    list_select_related = ["order__store", "product"]
    show_full_result_count = False


# --- users, roles and permissions read in Chinese ------------------------------------------
# Permission names are stored in English by Django ("Can add group"); the forms show them as
# 「门店经营 | 商品 | 可修改商品」 from the models' own verbose names. Role groups keep their code
# names (the services check them) and show their Chinese role next to it.

PERMISSION_VERBS = {"add": "添加", "change": "修改", "delete": "删除", "view": "查看"}


def permission_label(permission) -> str:
    ct = permission.content_type
    model = ct.model_class()
    # a model that was moved or removed leaves its permissions behind until remove_stale_contenttypes
    model_name = str(model._meta.verbose_name) if model else f"已删除的模型（{ct.app_label}.{ct.model}）"
    try:
        app_name = str(django_apps.get_app_config(ct.app_label).verbose_name)
    except LookupError:
        app_name = ct.app_label
    verb = PERMISSION_VERBS.get(permission.codename.partition("_")[0])
    return f"{app_name} | {model_name} | " + (f"可{verb}{model_name}" if verb else permission.name)


def role_label(group) -> str:
    return f"{ROLE_LABELS[group.name]}（{group.name}）" if group.name in ROLE_LABELS else group.name


class ChineseAuthLabels:
    def formfield_for_manytomany(self, db_field, request, **kwargs):
        field = super().formfield_for_manytomany(db_field, request, **kwargs)
        if db_field.name in ("permissions", "user_permissions"):
            field.label_from_instance = permission_label
        elif db_field.name == "groups":
            field.label_from_instance = role_label
        return field


admin.site.unregister(User)
admin.site.unregister(Group)


@admin.register(User)
class StoreMindUserAdmin(ChineseAuthLabels, UserAdmin):
    pass


@admin.register(Group)
class StoreMindGroupAdmin(ChineseAuthLabels, GroupAdmin):
    pass
